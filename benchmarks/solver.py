"""The exact solver on the public hard instances and on random ones; prints tables.

    python benchmarks/solver.py [--dir ../shared/benchmarks/minimalloc]
                                [--time-limit 10] [--d-time-limit 60] [--random 8]

For each minimalloc instance: buffers, the lower bound, the best-known height
(from the folder's README), our height, whether it is proven optimal, the time,
and greedy-by-size (TFLM's planner) for scale. Then a family of random
instances (20-500 buffers, fixed seeds): bound, greedy, ours, proven, time.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.allocation import Buffer, Problem, check_solution, get_allocator
from arenaplan.allocation.bounds import lower_bound
from arenaplan.allocation.minimalloc_csv import read_problem
from arenaplan.allocation.minimize import minimize

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "minimalloc"


def best_known(readme: Path) -> dict[str, int]:
    """Instance name -> best-known height, from the README's table."""
    heights = {}
    for line in readme.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and re.fullmatch(r"[\d,]+", cells[3]):
            heights[cells[0]] = int(cells[3].replace(",", ""))
    return heights


def _run(problem: Problem, seconds: float) -> tuple[int, bool, float, int]:
    start = time.perf_counter()
    solution = minimize(problem, seconds=seconds)
    elapsed = time.perf_counter() - start
    check_solution(problem, solution.offsets)
    greedy = get_allocator("tflm-greedy").solve(
        Problem(tuple(Buffer(b.id, b.first, b.last, b.size) for b in problem.buffers))
    )
    return solution.height, solution.optimal, elapsed, greedy.height


def public_table(folder: Path, seconds: float, d_seconds: float) -> Table:
    known = best_known(folder / "README.md")
    table = Table(title=f"minimalloc challenging instances ({folder})")
    for col in (
        "instance",
        "buffers",
        "lower bound",
        "best known",
        "arenaplan",
        "proven",
        "seconds",
        "greedy by size",
    ):
        table.add_column(col, justify="left" if col == "instance" else "right")
    for path in sorted(folder.glob("*.csv")):
        name = path.name.split(".")[0] if not path.name.startswith("input") else "input.12"
        problem = read_problem(path)
        limit = d_seconds if name == "D" else seconds
        height, proven, elapsed, greedy = _run(problem, limit)
        mark = "" if name not in known else (" (new best)" if height < known[name] else "")
        table.add_row(
            name,
            str(len(problem.buffers)),
            f"{lower_bound(problem):,}",
            f"{known.get(name, 0):,}",
            f"{height:,}{mark}",
            "yes" if proven else "no",
            f"{elapsed:.2f}",
            f"{greedy:,} ({greedy / height:.2f}x)",
        )
    return table


def random_problem(n: int, seed: int) -> Problem:
    """Tensors of a random network-like schedule: mostly short lives, a few long."""
    rng = random.Random(seed)
    steps = max(n // 2, 4)
    buffers = []
    for i in range(n):
        first = rng.randrange(steps)
        life = rng.choice([1, 1, 2, 3, 5, 8, steps // 3])
        size = rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 24, 32]) * 1024
        buffers.append(Buffer(f"r{i}", first, min(first + life, steps), size, 16))
    return Problem.of(buffers)


def random_table(count: int, seconds: float) -> Table:
    table = Table(title="random instances")
    for col in (
        "buffers",
        "seed",
        "lower bound",
        "greedy by size",
        "arenaplan",
        "proven",
        "seconds",
    ):
        table.add_column(col, justify="right")
    sizes = [20, 50, 100, 200, 300, 400, 500]
    for k in range(count):
        n, seed = sizes[k % len(sizes)], k
        problem = random_problem(n, seed)
        height, proven, elapsed, greedy = _run(problem, seconds)
        table.add_row(
            str(n),
            str(seed),
            f"{lower_bound(problem):,}",
            f"{greedy:,}",
            f"{height:,}",
            "yes" if proven else "no",
            f"{elapsed:.2f}",
        )
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--d-time-limit", type=float, default=60.0)
    parser.add_argument("--random", type=int, default=7, help="random instances to run")
    args = parser.parse_args()
    if not args.dir.is_dir():
        print(f"no instances in {args.dir}", file=sys.stderr)
        return 2
    console = Console(width=160)
    console.print(public_table(args.dir, args.time_limit, args.d_time_limit))
    if args.random:
        console.print(random_table(args.random, args.time_limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
