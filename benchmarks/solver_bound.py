"""Lower bounds beyond max-load on the minimalloc instances; prints a table.

    python benchmarks/solver_bound.py [--dir ../shared/benchmarks/minimalloc]
                                      [--widths 2,4,8,16] [--nodes 5000]

For each instance (A, C, D, E, G, I, K): the max-load bound, the best bound the
exhaustive refutation proves on time windows around the peak (each window a
relaxation; every refutation replayed by ``lower_bound_check`` before it
counts), the best-known height (the folder's README), the seconds, and the
widest window found to pack at the max-load bound (no bound above max-load can
come from inside it). Then, for D, the wide windows that the solver packs within
the max-load bound (``minimize``, each packing validated): the limits of any
relaxation inside them. Run on demand; it is not part of the tests.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from solver import best_known  # benchmarks/solver.py: the README's best-known heights

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.lower_bound import Bound, search_bound, time_windows, window
from arenaplan.allocation.lower_bound_check import check_refutation
from arenaplan.allocation.minimalloc_csv import read_problem
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.problem import Buffer, Problem, height_of
from arenaplan.allocation.validate import check_solution

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "minimalloc"
INSTANCES = ("A", "C", "D", "E", "G", "I", "K")
# Windows of D (inclusive steps) found to pack within its max-load bound, 986,112:
# elementary steps 0..91 (201 of its 213 buffers) and 40..101 (165 buffers); then
# the whole of D, for its height.
WITNESSES = {"D": ((0, 958_463), (323_584, 1_048_575), (0, 1_048_575))}


def checked(result: Bound) -> int:
    """The bound, once its refutation (if any) is replayed by the checker."""
    r = result.refutation
    if r is None:
        return result.max_load
    return check_refutation(r.problem, r.capacity, r.unit, r.units, r.tree)


def bound_row(problem: Problem, ceiling: int | None, widths: list[int], nodes: int) -> tuple:
    """(max-load, bound, widest window packed at max-load as 'first..last (n buffers)')."""
    load = live_bytes_bound(problem)
    best, packed, widest = load, "-", 0
    for width in widths:
        for first, last in time_windows(problem, width):
            part = window(problem, first, last)
            result = search_bound(part, ceiling, nodes)
            best = max(best, checked(result))
            at_load = result.optimal and result.bound == load
            if at_load and len(part.buffers) > widest:
                widest = len(part.buffers)
                packed = f"steps {first}..{last} ({widest} buffers)"
    return load, best, packed


def packed_in_units(problem: Problem, seconds: float) -> list[int]:
    """``minimize`` on the problem with sizes divided by their gcd and steps
    renumbered to elementary steps (the solver's orders weigh sizes and lengths,
    and do better so), offsets scaled back to bytes. Neither change alters which
    buffers share a step, and every offset found is a sum of sizes, so this is a
    packing of the problem itself (``check_solution`` confirms it)."""
    unit = math.gcd(*(b.size for b in problem.buffers))
    ends = sorted({b.first for b in problem.buffers} | {b.last + 1 for b in problem.buffers})
    rank = {t: k for k, t in enumerate(ends)}
    small = Problem(
        tuple(
            Buffer(b.id, rank[b.first], rank[b.last + 1] - 1, b.size // unit)
            for b in problem.buffers
        )
    )
    return [off * unit for off in minimize(small, seconds=seconds).offsets]


def witness_table(folder: Path, seconds: float) -> Table:
    """Wide windows packed within the max-load bound: no relaxation whose buffers
    and steps lie inside one of them can prove a bound above it."""
    table = Table(title="wide windows packed by minimize (validated; 'within': <= max-load)")
    for col in ("instance", "steps", "buffers", "max-load", "packed height", "seconds"):
        table.add_column(col, justify="left" if col in ("instance", "steps") else "right")
    for name, spans in WITNESSES.items():
        path = next(iter(sorted(folder.glob(f"{name}.*.csv"))), None)
        if path is None:
            continue
        problem = read_problem(path)
        load = live_bytes_bound(problem)
        for first, last in spans:
            part = window(problem, first, last)
            start = time.perf_counter()
            offsets = packed_in_units(part, seconds)
            elapsed = time.perf_counter() - start
            check_solution(part, offsets)
            height = height_of(part, offsets)
            mark = " (within)" if height <= load else ""
            table.add_row(
                name,
                f"{first:,}..{last:,}",
                str(len(part.buffers)),
                f"{load:,}",
                f"{height:,}{mark}",
                f"{elapsed:.1f}",
            )
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--widths", default="2,4,8,16,32", help="window widths (elementary steps)")
    parser.add_argument("--nodes", type=int, default=50_000, help="search nodes a try")
    parser.add_argument(
        "--witness-seconds", type=float, default=30.0, help="minimize's time a window (0: skip)"
    )
    args = parser.parse_args()
    if not args.dir.is_dir():
        print(f"no instances in {args.dir}", file=sys.stderr)
        return 2
    widths = [int(w) for w in args.widths.split(",")]
    known = best_known(args.dir / "README.md")
    table = Table(title=f"lower bounds ({args.dir}; windows {args.widths}, {args.nodes} nodes)")
    for col in ("instance", "max-load", "new bound", "best known", "seconds", "packs at max-load"):
        left = col in ("instance", "packs at max-load")
        table.add_column(col, justify="left" if left else "right")
    for name in INSTANCES:
        path = next(iter(sorted(args.dir.glob(f"{name}.*.csv"))), None)
        if path is None:
            table.add_row(name, "not in the folder", "", "", "", "")
            continue
        problem = read_problem(path)
        start = time.perf_counter()
        load, bound, packed = bound_row(problem, known.get(name), widths, args.nodes)
        elapsed = time.perf_counter() - start
        gain = f"{bound:,}" + (f" (+{bound - load:,})" if bound > load else "")
        table.add_row(name, f"{load:,}", gain, f"{known.get(name, 0):,}", f"{elapsed:.1f}", packed)
    console = Console(width=160)
    console.print(table)
    if args.witness_seconds > 0:
        console.print(witness_table(args.dir, args.witness_seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
