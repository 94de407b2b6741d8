"""Start-up time of the command line, against Arm's Vela on the same model.

    python benchmarks/startup.py [--runs 7] [--models DIR]
                                 [--arenaplan CMD] [--vela CMD]

Times whole processes (wall clock, seconds; one warm-up run first, then the
median and the minimum of --runs runs) of:
  arenaplan --help
  arenaplan plan MODEL -o TMP/out.tflite
  vela --help
  vela MODEL --output-dir TMP
where MODEL is mlcommons-tiny__vww_96_int8.tflite in --models (default: the
shared models beside the repository). --arenaplan defaults to the ``arenaplan``
script beside this Python; --vela to ``vela`` on PATH (install it with
``pip install ethos-u-vela``, best in a virtual environment of its own). Both
may be a command with arguments, e.g. --arenaplan "python -m arenaplan.cli".
Then prints the ratios arenaplan/vela for the help and for the model. The
machine's other work makes the figures noisy: compare medians.

Every process runs with a bytecode cache, as an installed package has one: the
warm-up run compiles into a temporary PYTHONPYCACHEPREFIX (so no source tree
is written to), even where PYTHONDONTWRITEBYTECODE is set.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MODEL = "mlcommons-tiny__vww_96_int8.tflite"
MODELS = Path(__file__).resolve().parent.parent.parent / "shared" / "models"
NOT_INSTALLED = "not installed: pip install ethos-u-vela"


@dataclass(frozen=True)
class Row:
    """One timed command line: the wall times of its runs (seconds), or why none."""

    name: str  # the command line as shown in the table
    times: tuple[float, ...]  # seconds, one per timed run (the warm-up excluded)
    note: str = ""  # why it has no times ("not installed ...", "exit status 2")

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None


def _wall(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Seconds one process takes from start to exit, and its exit status."""
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start, done.returncode


def time_command(name: str, argv: list[str] | None, runs: int, env: dict[str, str]) -> Row:
    """Run ``argv`` once to warm the caches, then ``runs`` times on the clock."""
    if argv is None:
        return Row(name, (), NOT_INSTALLED)
    _, status = _wall(argv, env)
    if status != 0:
        return Row(name, (), f"exit status {status}")
    return Row(name, tuple(_wall(argv, env)[0] for _ in range(runs)))


def _environment(tmp: Path) -> dict[str, str]:
    """This environment, with bytecode written to and read from ``tmp``/pycache."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def _default_arenaplan() -> str:
    return str(Path(sys.executable).parent / "arenaplan")


def _command(text: str | None) -> list[str] | None:
    """A command line given as text, or None when its program is not found."""
    if not text:
        return None
    argv = shlex.split(text)
    return argv if shutil.which(argv[0]) else None


def measure(arenaplan: list[str], vela: list[str] | None, model: Path, runs: int) -> list[Row]:
    """The four rows, in the order of the table."""
    with tempfile.TemporaryDirectory(prefix="startup-") as name:
        tmp = Path(name)
        env = _environment(tmp)
        plan = [*arenaplan, "plan", str(model), "-o", str(tmp / "out.tflite")]
        vela_help = [*vela, "--help"] if vela else None
        vela_model = [*vela, str(model), "--output-dir", str(tmp / "vela")] if vela else None
        return [
            time_command("arenaplan --help", [*arenaplan, "--help"], runs, env),
            time_command(f"arenaplan plan {model.name}", plan, runs, env),
            time_command("vela --help", vela_help, runs, env),
            time_command(f"vela {model.name}", vela_model, runs, env),
        ]


def _seconds(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def table(rows: list[Row]) -> str:
    """The rows as a fixed-width text table: command, median s, min s, runs."""
    width = max(len(r.name) for r in rows)
    lines = [f"{'command':<{width}}  {'median s':>8}  {'min s':>6}  runs"]
    for r in rows:
        least = min(r.times) if r.times else None
        tail = str(len(r.times)) if r.times else r.note
        lines.append(f"{r.name:<{width}}  {_seconds(r.median):>8}  {_seconds(least):>6}  {tail}")
    return "\n".join(lines)


def ratio(ours: Row, theirs: Row) -> str:
    """Our median over theirs, or why there is none."""
    if ours.median is None or theirs.median is None:
        return f"- ({ours.note or theirs.note})"
    return f"{ours.median / theirs.median:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command")
    parser.add_argument("--models", type=Path, default=MODELS, help=f"folder holding {MODEL}")
    parser.add_argument("--arenaplan", default=_default_arenaplan(), help="arenaplan command")
    parser.add_argument("--vela", default="vela", help="vela command")
    args = parser.parse_args()
    model = args.models / MODEL
    arenaplan = _command(args.arenaplan)
    if arenaplan is None:
        parser.error(f"no such command: {args.arenaplan}")
    if not model.is_file():
        parser.error(f"no model {model} (see --models)")
    rows = measure(arenaplan, _command(args.vela), model, args.runs)
    print(table(rows))
    print(f"arenaplan/vela  --help: {ratio(rows[0], rows[2])}  model: {ratio(rows[1], rows[3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
