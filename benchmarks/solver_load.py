#!/usr/bin/env python3
"""The solver's time limit on a busy machine: wall time against the limit with
0, 1 and 2 spinning processes per core beside it.

    python benchmarks/solver_load.py [--buffers 1000000] [--kinds short,dense]
                                     [--time-limit 10] [--loads 0,1,2] [--keep DIR]

Each row runs ``python -m arenaplan solve F --time-limit S -q --json`` in a child
while ``load x cores`` other processes spin (pure Python loops, started a second
before). The limit counts from the child's start (``Deadline.after(since_start)``);
the work after the deadline (the final check, the output, the exit) is kept back
as the CPU it measured over the share of a CPU the child is getting, so the
child should end by the limit + 1 s at every load. Printed per row: the child's
wall time and how far past the limit it ended, the CPU it got (user + system)
and that as a share of one core, the height against the max-load bound, its peak
resident memory and the phase the limit cut short. The problems are
``solver_scale.py``'s families (fixed seeds): ``short`` (lifetimes of 1-8 steps,
sizes 64 B-8 KiB) and ``dense`` (both ends uniform over 1,000 steps, sizes 64 B-1
MiB).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from solver_scale import GENERATORS, write_csv

SPIN = "while True: pass"


def spinners(count: int) -> list[subprocess.Popen]:
    """``count`` processes that keep a core busy each until killed."""
    return [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]


def solve(path: Path, seconds: float) -> dict:
    """One ``arenaplan solve`` as its own program: its JSON summary, wall and CPU
    seconds, peak resident memory."""
    import json

    cmd = [sys.executable, "-m", "arenaplan", "solve", str(path), "-q", "--json"]
    cmd += ["--time-limit", str(seconds)]
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        text = out.read()
    code = os.waitstatus_to_exitcode(status)
    summary = json.loads(text) if code == 0 and text.strip() else {}
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall": wall, "cpu": cpu, "peak_mb": usage.ru_maxrss / 1024, "code": code, **summary}


def row(kind: str, load: int, limit: float, r: dict) -> str:
    if r["code"] != 0:
        return f"| {kind} | {load} | {r['wall']:.2f} | exit {r['code']} | | | | | |"
    ratio = r["height"] / max(r["lower_bound"], 1)
    return (
        f"| {kind} | {load} | {r['wall']:.2f} | {r['wall'] - limit:+.2f} | {r['cpu']:.2f} | "
        f"{r['cpu'] / r['wall']:.2f} | {ratio:.4f} | {r['peak_mb']:,.0f} | "
        f"{r.get('stopped') or '-'} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--buffers", type=int, default=1_000_000)
    ap.add_argument("--kinds", default="short,dense")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--loads", default="0,1,2", help="spinning processes per core")
    ap.add_argument("--keep", type=Path, help="write the CSV files here (else a temp dir)")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    print(f"arenaplan solve --time-limit {args.time_limit:g}, {args.buffers:,} buffers, "
          f"{cores} cores\n")  # fmt: skip
    print("| problem | busy per core | wall s | past the limit s | CPU s | share | "
          "x bound | peak MB | limit ended |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for kind in args.kinds.split(","):
            path = folder / f"{kind}-{args.buffers}.csv"
            if not path.exists():
                write_csv(path, GENERATORS[kind](args.buffers))
            for load in (int(x) for x in args.loads.split(",")):
                busy = spinners(load * cores)
                try:
                    time.sleep(1.0 if busy else 0.0)
                    r = solve(path, args.time_limit)
                finally:
                    for p in busy:
                        p.kill()
                        p.wait()
                print(row(kind, load, args.time_limit, r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
