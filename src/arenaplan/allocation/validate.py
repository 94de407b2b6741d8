"""The validator: checks a solution against its problem, independently of any allocator.

It shares no code with the allocators: it re-derives every constraint from the
buffers alone and names each violation (which buffers, which step, which bytes).
A native pass (``_check.c``, O(n log n), a million buffers in about a second)
answers first; only a solution it does not find surely valid is judged in Python.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence

import numpy as np

from arenaplan.allocation import _check
from arenaplan.allocation.problem import Problem
from arenaplan.errors import PlanValidationError

MAX_REPORTED = 20
INT64_MAX = (1 << 63) - 1


def solution_problems(
    problem: Problem,
    offsets: Sequence[int | None],
    shared: Collection[frozenset[int]] = frozenset(),
) -> list[str]:
    """Every violated constraint, as readable sentences; empty when valid.

    ``shared``: pairs of buffer indices the caller has shown may share bytes (each
    pair by a rule of its own); every other overlap is a violation."""
    bufs = problem.buffers
    if len(offsets) != len(bufs):
        return [f"{len(offsets)} offsets for {len(bufs)} buffers"]
    if not shared and _surely_valid(problem, offsets):
        return []
    found: list[str] = []
    for b, off in zip(bufs, offsets, strict=True):
        found.extend(_buffer_problems(b, off, problem.capacity))
    placed = [i for i, off in enumerate(offsets) if off is not None]
    found.extend(_overlaps(problem, offsets, placed, shared))
    return found


def _surely_valid(problem: Problem, offsets: Sequence[int | None]) -> bool:
    """The native check (``_check.c``, O(n log n)): True when nothing is wrong;
    False sends the solution to the sentences below, which name every violation."""
    cap = problem.capacity
    if cap is not None and cap < 0:
        return False
    limit = -1 if cap is None or cap >= INT64_MAX else cap
    return _check.surely_valid(problem.buffers, offsets, limit)


def check_solution(problem: Problem, offsets: Sequence[int | None]) -> None:
    """Raise ``PlanValidationError`` listing every violation, if any."""
    found = solution_problems(problem, offsets)
    if found:
        raise PlanValidationError(found)


def _buffer_problems(b, off: int | None, capacity: int | None) -> list[str]:
    if off is None:
        return [f"buffer {b.id} is missing (no offset)"]
    out = []
    if off < 0:
        out.append(f"buffer {b.id} has a negative offset {off}")
    if b.alignment > 1 and off % b.alignment:
        out.append(f"buffer {b.id} is misaligned: offset {off} is not a multiple of {b.alignment}")
    if b.offset is not None and off != b.offset:
        out.append(f"buffer {b.id} was fixed at offset {b.offset} but placed at {off}")
    if capacity is not None and off + b.size > capacity:
        out.append(f"buffer {b.id} ends at byte {off + b.size}, over the capacity of {capacity}")
    return out


def _overlaps(
    problem: Problem,
    offsets: Sequence[int | None],
    placed: list[int],
    shared: Collection[frozenset[int]],
) -> list[str]:
    """Pairs overlapping in both time (inclusive steps) and space (half-open bytes),
    but for the ``shared`` pairs."""
    if len(placed) < 2:
        return []
    if not shared and _disjoint(problem, offsets, placed):
        return []
    return _all_overlaps(problem, offsets, placed, shared)


def _disjoint(problem: Problem, offsets: Sequence[int | None], placed: list[int]) -> bool:
    """True when no two placed buffers overlap, by a sweep over steps in O(n log n).

    The buffers live at the current step are kept as their first bytes, sorted
    (distinct while they are disjoint; a ``SortedList``: O(log n) inserts and
    removals with hundreds of thousands live), with their ends beside; a newcomer
    can only meet its two neighbours there.
    """
    from sortedcontainers import SortedList

    bufs = problem.buffers
    rects = sorted(
        (bufs[i].first, offsets[i], offsets[i] + bufs[i].size, bufs[i].last)
        for i in placed
        if bufs[i].size > 0
    )
    starts = SortedList()  # first bytes of the live buffers
    end_of: dict[int, int] = {}  # first byte -> end (half-open) of a live buffer
    leaving: list[tuple[int, int]] = []  # heap of (last step, first byte)
    for first, lo, hi, last in rects:
        while leaving and leaving[0][0] < first:
            gone = heapq.heappop(leaving)[1]
            starts.remove(gone)
            del end_of[gone]
        k = starts.bisect_left(lo)
        if k < len(starts) and starts[k] < hi:  # the next one starts inside (or at lo)
            return False
        if k > 0 and end_of[starts[k - 1]] > lo:  # the previous one ends above lo
            return False
        starts.add(lo)
        end_of[lo] = hi
        heapq.heappush(leaving, (last, lo))
    return True


def _all_overlaps(
    problem: Problem,
    offsets: Sequence[int | None],
    placed: list[int],
    shared: Collection[frozenset[int]],
) -> list[str]:
    """Every overlapping pair (up to ``MAX_REPORTED``), by comparing each buffer
    with all others: O(n^2), run only when something is wrong or shared."""
    bufs = problem.buffers
    first = np.array([bufs[i].first for i in placed], dtype=np.int64)
    last = np.array([bufs[i].last for i in placed], dtype=np.int64)
    lo = np.array([offsets[i] for i in placed], dtype=np.int64)
    hi = lo + np.array([bufs[i].size for i in placed], dtype=np.int64)
    nonempty = hi > lo
    out = []
    for a in range(len(placed)):
        clash = (
            (first[a] <= last)
            & (first <= last[a])
            & (lo[a] < hi)
            & (lo < hi[a])
            & nonempty
            & nonempty[a]
        )
        clash[: a + 1] = False
        for b in np.flatnonzero(clash):
            ia, ib = placed[a], placed[int(b)]
            if shared and frozenset((ia, ib)) in shared:
                continue
            step = max(bufs[ia].first, bufs[ib].first)
            start, end = max(lo[a], lo[b]), min(hi[a], hi[b])
            out.append(
                f"buffers {bufs[ia].id} and {bufs[ib].id} overlap at step {step} "
                f"(bytes {start}..{end - 1})"
            )
            if len(out) >= MAX_REPORTED:
                return out
    return out
