"""A large mutation run: corrupted real models through the command line, by outcome.

The same corruptions as the test suite's mutation run (``tests/cli/test_mutations.py``:
bit flips, zeroed ranges, inflated lengths, redirected offsets, truncation), on
more files and any seed, through ``plan`` (planned model, JSON, header), ``inspect``
and ``plan --target`` (memories, C++ planner) in turn. Prints the count of each exit
status; 70 is the internal-error guard (a bug), and any is reported with its line.

    python benchmarks/mutations.py [--files 3000] [--seed 99] [--models DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from cli.test_mutations import _argv, mutate  # the tests' corruptions

from arenaplan.cli import EXIT_INTERNAL, main

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
KINDS = ("plan -o --json --header", "inspect --all", "plan --target --planner-cpp")


def run(models: list[Path], files: int, seed: int) -> tuple[Counter, list[str], float]:
    rng = random.Random(seed)
    codes: Counter = Counter()
    bugs: list[str] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for k in range(files):
            source = rng.choice(models)
            model = folder / f"m{k}.tflite"
            model.write_bytes(mutate(source.read_bytes(), rng))
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = main(_argv(k, model, folder))
            codes[(KINDS[k % 3], code)] += 1
            if code == EXIT_INTERNAL:
                bugs.append(f"file {k} from {source.name}: {err.getvalue().strip()}")
            model.unlink()
    return codes, bugs, time.perf_counter() - start


def main_() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=99)
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    args = parser.parse_args()
    models = sorted(args.models.glob("*.tflite"))
    if not models:
        print(f"no models in {args.models}", file=sys.stderr)
        return 2
    codes, bugs, seconds = run(models, args.files, args.seed)
    table = Table(title=f"{args.files} corrupted models, seed {args.seed}: exit status")
    for col in ("command", "0 ok", "2 bad input", "3 refused", "70 internal error"):
        table.add_column(col, justify="left" if col == "command" else "right")
    for kind in KINDS:
        table.add_row(kind, *(str(codes[(kind, c)]) for c in (0, 2, 3, EXIT_INTERNAL)))
    console = Console()
    console.print(table)
    console.print(f"{seconds:.1f} s; internal errors: {len(bugs)}")
    for line in bugs[:20]:
        console.print(line)
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main_())
