"""Lower bounds on the height of any solution, and the fixed buffers' own conflicts."""

from __future__ import annotations

import bisect
import heapq

import numpy as np

from arenaplan.allocation.packing import Columns
from arenaplan.allocation.problem import Problem
from arenaplan.errors import AllocationError


def live_bytes_bound(problem: Problem) -> int:
    """The peak over steps of the sum of sizes of buffers live at that step.

    Sizes are taken as given (callers pass sizes already rounded to their
    alignment where that matters)."""
    return peak_load(problem)[0]


def peak_load(problem: Problem) -> tuple[int, int]:
    """(bytes, step): the largest sum of sizes live at one step, and the first step
    where it is reached ((0, 0) without buffers). A sweep over interval ends: at
    one step, frees (of buffers whose last step was the one before) come before
    allocations."""
    bufs = problem.buffers
    n = len(bufs)
    if n == 0:
        return 0, 0
    cols = Columns.of(problem)  # built once per problem, shared with the packers
    first, last, size = cols.first, cols.last, cols.size
    steps = np.concatenate((first, last + 1))
    delta = np.concatenate((size, -size))
    order = np.lexsort((delta, steps))
    live = np.cumsum(delta[order])
    worst = int(np.argmax(live))
    if live[worst] <= 0:
        return 0, 0
    return int(live[worst]), int(steps[order][worst])


def fixed_bound(problem: Problem) -> int:
    """No solution is lower than the top of a fixed-offset buffer."""
    return max((b.offset + b.size for b in problem.buffers if b.offset is not None), default=0)


def lower_bound(problem: Problem) -> int:
    return max(live_bytes_bound(problem), fixed_bound(problem))


def fixed_overlap(problem: Problem) -> str | None:
    """The first two fixed buffers found overlapping in time and bytes, as a
    sentence ("fixed buffers a and b overlap at step 3 (bytes 16..31)"), or None.

    A sweep over first steps keeps the fixed buffers live at the current step in
    a list sorted by offset. They are disjoint (else the sweep would have
    stopped), so a newcomer can only overlap its two neighbours in that list."""
    fixed = [b for b in problem.buffers if b.offset is not None and b.size > 0]
    fixed.sort(key=lambda b: (b.first, b.offset))
    live: list[tuple[int, int, int]] = []  # (offset, end, index in fixed), by offset
    ending: list[tuple[int, int]] = []  # heap of (last step, index in fixed)
    for k, b in enumerate(fixed):
        while ending and ending[0][0] < b.first:
            _, gone = heapq.heappop(ending)
            g = fixed[gone]
            del live[bisect.bisect_left(live, (g.offset, g.offset + g.size, gone))]
        pos = bisect.bisect_left(live, (b.offset, -1, -1))
        for _, _, other in live[max(pos - 1, 0) : pos + 1]:
            a = fixed[other]
            if a.offset < b.offset + b.size and b.offset < a.offset + a.size:
                start, end = max(a.offset, b.offset), min(a.offset + a.size, b.offset + b.size)
                return (
                    f"fixed buffers {a.id} and {b.id} overlap at step {b.first} "
                    f"(bytes {start}..{end - 1})"
                )
        live.insert(pos, (b.offset, b.offset + b.size, k))
        heapq.heappush(ending, (b.last, k))
    return None


def check_fixed(problem: Problem) -> None:
    """Raise at once if two fixed buffers overlap: no capacity can hold them."""
    why = fixed_overlap(problem)
    if why:
        raise AllocationError(f"{why}: no packing exists")
