"""arenaplan's solver beside omnimalloc's (a peer library); prints heights and times as ratios.

    pip install -r benchmarks/requirements-peers.txt   # omnimalloc 1.0.0, for this script only
    cd benchmarks && python solver_peers.py [--sets minimalloc,held-out,hard,scale]
                                            [--time-limit 10] [--scale-sizes 100000]
                                            [--peers default,supermalloc,telamalloc]

Sets: MiniMalloc's challenging A-K (``../shared/benchmarks/minimalloc``), the
generated families packed at their bound (``solver_decide.py``'s held-out ten,
``solver_hard.py``'s ten) and the scale problems (``solver_scale.py``'s
realistic, dense, short and long kinds). arenaplan minimises (``minimize``) within the time
limit; of omnimalloc, ``default`` is its default allocator (the greedy
portfolio, no time budget), ``supermalloc`` and ``telamalloc`` get the same
time limit as arenaplan. Every packing is checked by arenaplan's validator
("invalid" otherwise; "error": the peer refused the problem or went beyond
``--peer-memory``, each peer running in a child process). Per peer: its
height / arenaplan's and its seconds / arenaplan's (below 1: the peer is lower
or faster). Run on demand; it is not part of the tests, and omnimalloc is an
extra of the benchmarks only.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path

from rich.console import Console
from rich.table import Table
from solver_decide import held_out
from solver_hard import instances
from solver_scale import GENERATORS

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.minimalloc_csv import read_problem
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.problem import Buffer, Problem, height_of
from arenaplan.allocation.validate import check_solution
from arenaplan.errors import AllocationError

MINIMALLOC = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "minimalloc"
Run = Callable[[Problem], list[int]]  # offsets, one per buffer


def peers(names: list[str], seconds: float) -> dict[str, Run]:
    """omnimalloc's allocators by name, each as problem -> offsets."""
    import omnimalloc as om
    from omnimalloc.allocators import SupermallocAllocator, TelamallocAllocator

    made = {
        "default": lambda: None,
        "supermalloc": lambda: SupermallocAllocator(timeout=seconds),
        "telamalloc": lambda: TelamallocAllocator(timeout=seconds),
    }

    def runner(name: str) -> Run:
        def run(problem: Problem) -> list[int]:
            allocs = tuple(
                om.Allocation(id=i, size=b.size, start=b.first, end=b.last + 1)
                for i, b in enumerate(problem.buffers)
            )  # half-open lifetimes, as in the CSV
            pool = om.allocate(om.Pool(id="p", allocations=allocs), allocator=made[name]())
            offsets = [0] * len(problem.buffers)
            for a in pool.allocations:
                offsets[a.id] = a.offset
            return offsets

        return run

    return {name: runner(name) for name in names}


def problems(sets: list[str], sizes: list[int]) -> Iterator[tuple[str, str, Problem | None]]:
    """(set, instance, problem) in the order the table prints them."""
    for name in sets:
        if name == "minimalloc":
            for path in sorted(MINIMALLOC.glob("[A-K].*.csv")):
                yield name, path.name.split(".")[0], read_problem(path)
        elif name in ("held-out", "hard"):
            for label, problem in held_out() if name == "held-out" else instances():
                yield name, label, problem
        elif name == "scale":
            for kind, make in GENERATORS.items():  # realistic, dense, short, long
                for n in sizes:
                    rows = make(n)
                    bufs = [
                        Buffer(f"b{i}", lo, hi - 1, s, 16) for i, (lo, hi, s) in enumerate(rows)
                    ]
                    yield name, f"{kind}-{n:,}", Problem.of(bufs)


def _child(run: Run, problem: Problem, limit: int, out: Connection) -> None:
    """Run a peer under an address-space limit (bytes); send its offsets or None."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        out.send(run(problem))
    except (RuntimeError, ValueError, MemoryError):  # omnimalloc refusing the problem
        out.send(None)


def isolated(run: Run, limit: int) -> Run:
    """``run`` in a forked child process under ``limit`` bytes of memory, so that a
    peer running out of memory is an "error" row, not the end of the benchmark
    (omnimalloc on 100,000 dense buffers grew to 24 GB)."""

    def go(problem: Problem) -> list[int]:
        ctx = multiprocessing.get_context("fork")
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_child, args=(run, problem, limit, send))
        child.start()
        send.close()
        try:
            offsets = receive.recv()
        except EOFError:  # the child died (killed, or out of memory in native code)
            offsets = None
        child.join()
        if offsets is None:
            raise RuntimeError("the peer failed or ran out of memory")
        return offsets

    return go


def timed(run: Run, problem: Problem) -> tuple[int | str, float]:
    """(height, or why there is none: "invalid" packing, or the peer's "error"; seconds)."""
    start = time.perf_counter()
    try:
        offsets = run(problem)
    except RuntimeError:
        return "error", time.perf_counter() - start
    seconds = time.perf_counter() - start
    try:
        check_solution(problem, offsets)
    except AllocationError:
        return "invalid", seconds
    return height_of(problem, offsets), seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="minimalloc,held-out,hard,scale")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--scale-sizes", default="100000")
    ap.add_argument("--peers", default="default,supermalloc,telamalloc")
    ap.add_argument("--only", default="", help="instances whose name contains this")
    ap.add_argument("--peer-memory", type=float, default=8.0, help="GB each peer run may use")
    args = ap.parse_args(argv)
    try:
        runs = peers(args.peers.split(","), args.time_limit)
        limit = int(args.peer_memory * 1e9)
        runs = {name: isolated(run, limit) for name, run in runs.items()}
    except ImportError:
        print("omnimalloc is not installed: pip install -r requirements-peers.txt", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.scale_sizes.split(",") if s]
    table = Table(title=f"arenaplan vs omnimalloc 1.0.0, time limit {args.time_limit:g} s")
    for col in ("set", "instance", "buffers", "bound", "arenaplan", "s"):
        table.add_column(col, justify="left" if col in ("set", "instance") else "right")
    for name in runs:
        table.add_column(f"{name} height", justify="right")
        table.add_column(f"{name} time", justify="right")
    console = Console(width=200)
    for set_name, label, problem in problems(args.sets.split(","), sizes):
        if args.only and args.only not in label:
            continue
        if problem is None:
            continue  # a traces instance without ../shared/models
        ours, seconds = timed(lambda p: list(minimize(p, seconds=args.time_limit).offsets), problem)
        assert isinstance(ours, int)  # minimize validates its own answer
        cells = [set_name, label, f"{len(problem.buffers):,}", f"{live_bytes_bound(problem):,}",
                 f"{ours:,}", f"{seconds:.2f}"]  # fmt: skip
        for run in runs.values():
            height, theirs = timed(run, problem)
            cells += [height if isinstance(height, str) else f"{height / ours:.3f}x",
                      f"{theirs / max(seconds, 1e-3):.2f}x"]  # fmt: skip
        table.add_row(*cells)
        console.print(" | ".join(cells), style="dim")  # progress, one line an instance
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
