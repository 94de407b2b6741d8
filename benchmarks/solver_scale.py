"""The solver at scale: time, peak memory and outcome of ``arenaplan solve`` on
generated problems of 1k to 1M buffers.

    python benchmarks/solver_scale.py [--sizes 1000,5000,10000,20000,100000,1000000]
                                      [--kinds realistic,dense] [--time-limit 30]
                                      [--keep DIR]

Four families, fixed seeds:
  realistic  lifetimes like a network's: most buffers live 1-8 steps, one in
             seven a third of the schedule (n/2 steps); sizes log-uniform from
             64 bytes to 1 MiB, 16-byte aligned
  dense      first and last steps uniform over 1,000 steps; same sizes
  short      lifetimes of 1-8 steps over n/10 steps; sizes log-uniform 64 B-8 KiB
  long       lifetimes of 1-100 steps over 1,000 steps; same sizes (an 80 MB load
             at a million buffers)
Each run is ``arenaplan solve F --time-limit S --json`` in a child process:
wall time, the child's peak resident memory (getrusage), the height against
the max-load bound, and the phase the time limit ended (if any). The issue's
figures (before this work, same machine; issue 12 at --time-limit 30, issue 23
at 10) are printed beside. Report the machine's load with the table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

BEFORE = {  # (kind, buffers) -> the figures: wall, peak memory, outcome
    ("realistic", 5_000): "1.1 s, 379 MB, optimal",
    ("realistic", 20_000): "31.9 s, 3,711 MB, greedy +3.3%",
    ("realistic", 100_000): "81.4 s, 106 MB, greedy +5.9%",
    ("dense", 5_000): "40.9 s, 814 MB, greedy +2.0%",
    ("dense", 100_000): "no answer in 600 s",
    # before issue 23 (7176255), --time-limit 10, load 9 on 2 cores: the skyline fallback
    ("short", 1_000_000): "26.6 s, 623 MB, 9,906x the bound",
    ("long", 1_000_000): "35.1 s, 686 MB, 19.6x the bound",
}


def _size(rng: random.Random) -> int:
    """Log-uniform bytes in [64, 1 MiB], a multiple of 16."""
    return max(16, int(math.exp(rng.uniform(math.log(64), math.log(1 << 20)))) // 16 * 16)


def realistic(n: int, seed: int = 0) -> list[tuple[int, int, int]]:
    """(lower, upper, size) rows, half-open lifetimes like a network's."""
    rng = random.Random(seed)
    steps = max(n // 2, 8)
    rows = []
    for _ in range(n):
        lower = rng.randrange(steps)
        life = steps // 3 if rng.random() < 1 / 7 else rng.choice([1, 1, 2, 3, 5, 8])
        rows.append((lower, min(lower + life, steps) + 1, _size(rng)))
    return rows


def dense(n: int, seed: int = 0) -> list[tuple[int, int, int]]:
    """(lower, upper, size) rows, both ends uniform over 1,000 steps."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = sorted((rng.randrange(1000), rng.randrange(1000)))
        rows.append((a, b + 1, _size(rng)))
    return rows


def _small_size(rng: random.Random) -> int:
    """Log-uniform bytes in [64, 8 KiB], a multiple of 16."""
    return max(16, int(math.exp(rng.uniform(math.log(64), math.log(8192)))) // 16 * 16)


def short(n: int, seed: int = 0) -> list[tuple[int, int, int]]:
    """(lower, upper, size) rows: lifetimes of 1-8 steps over n/10 steps, small sizes."""
    rng = random.Random(seed)
    steps = max(n // 10, 8)
    rows = []
    for _ in range(n):
        lower = rng.randrange(steps)
        rows.append((lower, lower + rng.randint(1, 8), _small_size(rng)))
    return rows


def long(n: int, seed: int = 0) -> list[tuple[int, int, int]]:
    """(lower, upper, size) rows: lifetimes of 1-100 steps over 1,000 steps (about
    n/20 buffers live at once), small sizes: an 80 MB load at a million."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        lower = rng.randrange(1000)
        rows.append((lower, lower + rng.randint(1, 100), _small_size(rng)))
    return rows


GENERATORS = {"realistic": realistic, "dense": dense, "short": short, "long": long}


def write_csv(path: Path, rows: list[tuple[int, int, int]]) -> None:
    with path.open("w") as f:
        f.write("id,lower,upper,size,alignment\n")
        f.writelines(f"b{i},{lo},{up},{size},16\n" for i, (lo, up, size) in enumerate(rows))


def run_solve(path: Path, seconds: float) -> dict:
    """One ``arenaplan solve`` in a child; its JSON summary plus wall time and peak RSS."""
    cmd = [sys.executable, "-m", "arenaplan.cli", "solve", str(path), "-q", "--json"]
    cmd += ["--time-limit", str(seconds)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS (KiB on Linux)
        wall = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, message = out.read(), err.read().strip()
    summary = json.loads(text) if code == 0 and text.strip() else {}
    return {
        "wall": wall,
        "peak_mb": usage.ru_maxrss / 1024,
        "code": code,
        "err": message,
        **summary,
    }


def outcome(r: dict) -> str:
    if r["code"] != 0:
        return f"exit {r['code']}: {r['err'][-80:]}"
    if r["optimal"]:
        text = "optimal"
    else:
        text = f"{r['how'].split(' (')[0]}, {r['gap']:+.1%} over the bound"
    if r.get("stopped"):
        text += f"; time limit ended {r['stopped']}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,10000,20000,100000,1000000")
    parser.add_argument("--kinds", default="realistic,dense")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--keep", type=Path, help="write the CSV files here (else a temp dir)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    table = Table(title=f"arenaplan solve --time-limit {args.time_limit:g} (load {load})")
    for col in ("problem", "buffers", "wall s", "peak MB", "x bound", "outcome", "before"):
        table.add_column(col, justify="left" if col in ("problem", "outcome") else "right")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for kind in args.kinds.split(","):
            for n in sizes:
                path = folder / f"{kind}-{n}.csv"
                if not path.exists():
                    write_csv(path, GENERATORS[kind](n))
                r = run_solve(path, args.time_limit)
                ratio = r["height"] / max(r["lower_bound"], 1) if r["code"] == 0 else math.nan
                row = (
                    kind, f"{n:,}", f"{r['wall']:.1f}", f"{r['peak_mb']:,.0f}", f"{ratio:.3f}",
                    outcome(r),
                )  # fmt: skip
                table.add_row(*row, BEFORE.get((kind, n), ""))
                print(" | ".join(row), flush=True)
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
