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
    where it is reached ((0, 0) without buffers). The steps between consecutive
    interval ends (``Columns``' sections) each have one set of live buffers: the
    load of a section is the sum of the sizes starting at or before it less those
    ended before it (O(n), no sort beyond the sections')."""
    if not problem.buffers:
        return 0, 0
    cols = Columns.of(problem)  # built once per problem, shared with the packers
    change = np.zeros(cols.n_sections + 1, dtype=np.int64)  # bytes, < 2**62 in all
    np.add.at(change, cols.sec_lo, cols.size)
    np.add.at(change, cols.sec_hi, -cols.size)
    live = np.cumsum(change[:-1])
    if not len(live) or live.max() <= 0:
        return 0, 0
    worst = int(np.argmax(live))
    start = np.empty(cols.n_sections + 1, dtype=np.int64)  # each section's first step
    start[cols.sec_lo] = cols.first
    start[cols.sec_hi] = cols.last + 1
    return int(live[worst]), int(start[worst])


def fixed_bound(problem: Problem) -> int:
    """No solution is lower than the top of a fixed-offset buffer."""
    cols = Columns.of(problem)
    fixed = cols.fixed >= 0
    return int((cols.fixed + cols.size)[fixed].max()) if fixed.any() else 0


def lower_bound(problem: Problem) -> int:
    return max(live_bytes_bound(problem), fixed_bound(problem))


def fixed_overlap(problem: Problem) -> str | None:
    """The first two fixed buffers found overlapping in time and bytes, as a
    sentence ("fixed buffers a and b overlap at step 3 (bytes 16..31)"), or None.

    A sweep over first steps keeps the fixed buffers live at the current step in
    a list sorted by offset. They are disjoint (else the sweep would have
    stopped), so a newcomer can only overlap its two neighbours in that list."""
    cols = Columns.of(problem)
    bufs = problem.buffers
    fixed = [bufs[k] for k in np.flatnonzero((cols.fixed >= 0) & (cols.size > 0)).tolist()]
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
