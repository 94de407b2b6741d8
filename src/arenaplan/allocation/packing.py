"""First-fit packing of buffers in a given order: the building block of the heuristics.

Each buffer, in turn, takes the lowest aligned offset where it overlaps no
placed buffer that is live at the same time. Fixed-offset buffers are placed
before all others. The placed buffers are kept in a segment tree over time
sections whose nodes hold sorted byte ranges (``first_fit`` in ``_search.c``):
a buffer costs O(log^2 sections) plus the gaps skipped below its offset, not a
scan of everything placed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenaplan.allocation import _search, _sweep
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.problem import Problem
from arenaplan.errors import PlanValidationError

DONE, OVER_CAPACITY, DEADLINE = 0, 2, 3
# Steps up through too-small gaps allowed per buffer before it goes on top of
# the ranges live with it. Each step passes a distinct placed buffer, so with
# at most PROBES buffers this is exact first-fit; beyond, it bounds the cost on
# problems with thousands of live buffers and gaps (dense, log-uniform sizes).
PROBES = 4096


def align_up(x: int, a: int) -> int:
    return -(-x // a) * a


@dataclass(frozen=True, slots=True)
class Columns:
    """A problem as arrays, built once and shared by every order.

    Steps are compressed to *sections* (runs of steps where no buffer starts or
    ends); buffer i is live over sections ``[sec_lo[i], sec_hi[i])``. Sizes,
    alignments and fixed offsets (-1: free) are bytes.
    """

    first: np.ndarray  # int64, inclusive first step
    last: np.ndarray  # int64, inclusive last step
    size: np.ndarray  # int64 bytes
    align: np.ndarray  # int64 bytes
    fixed: np.ndarray  # int64 bytes, -1 when free
    sec_lo: np.ndarray  # int32
    sec_hi: np.ndarray  # int32, exclusive
    n_sections: int

    @classmethod
    def of(cls, problem: Problem) -> Columns:
        """The columns of ``problem``: those the reader gave or built last time
        for the same buffers (the same tuple), else built from the buffers."""
        for bufs, known in _KNOWN:
            if bufs is problem.buffers:
                if isinstance(known, Columns):
                    return known
                made = cls.from_arrays(*known)
                _remember(problem, made)
                return made
        bufs = problem.buffers
        n = len(bufs)
        made = cls.from_arrays(
            np.fromiter((b.first for b in bufs), np.int64, n),
            np.fromiter((b.last for b in bufs), np.int64, n),
            np.fromiter((b.size for b in bufs), np.int64, n),
            np.fromiter((b.alignment for b in bufs), np.int64, n),
            np.fromiter((-1 if b.offset is None else b.offset for b in bufs), np.int64, n),
        )
        if n >= CACHED_FROM:
            _remember(problem, made)
        return made

    def height(self, offsets: Sequence[int] | np.ndarray) -> int:
        """max(offset + size) in bytes over the buffers (0 without any); every
        offset and size is below 2**62, so the sums fit int64."""
        tops = np.asarray(offsets, dtype=np.int64) + self.size
        return int(tops.max()) if len(tops) else 0

    @classmethod
    def from_arrays(
        cls,
        first: np.ndarray,
        last: np.ndarray,
        size: np.ndarray,
        align: np.ndarray,
        fixed: np.ndarray,
    ) -> Columns:
        """Columns from int64 arrays (as the fields above), sections computed."""
        sec_lo, sec_hi, n_sections = _sections(first, last)
        return cls(first, last, size, align, fixed, sec_lo, sec_hi, n_sections)


def _sections(first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Each buffer's first section and the one after its last (int32), and how
    many sections: the steps where a buffer starts or ends after one, numbered.
    Steps spanning at most SPAN_TABLE x the buffers are numbered by a table
    over them (a pass each way); wider ones by sorting them."""
    if not len(first):
        return first.astype(np.int32), last.astype(np.int32), 0
    lo = int(first.min())
    span = int(last.max()) + 2 - lo  # steps lo .. max(last) + 1
    if span <= SPAN_TABLE * len(first):
        bound = np.zeros(span, dtype=bool)
        bound[first - lo] = bound[last + 1 - lo] = True
        rank = np.cumsum(bound, dtype=np.int32) - 1  # at a bound step: its number
        return rank[first - lo], rank[last + 1 - lo], int(rank[-1])
    ends = np.sort(np.concatenate((first, last + 1)))  # np.unique hashes: 7x slower at 1M
    bounds = ends[np.concatenate(([True], ends[1:] != ends[:-1]))]
    sec_lo = np.searchsorted(bounds, first).astype(np.int32)
    sec_hi = np.searchsorted(bounds, last + 1).astype(np.int32)
    return sec_lo, sec_hi, len(bounds) - 1


# The columns of the last problems seen, by their buffers tuple (compared by
# identity, and kept alive here so that no other tuple takes its id): building
# them from a million Buffer objects costs a second, and every phase wants them.
_KNOWN: list[tuple[tuple, Columns | tuple[np.ndarray, ...]]] = []
KEPT = 2  # problems remembered
CACHED_FROM = 10_000  # buffers from which built columns are remembered
SPAN_TABLE = 8  # steps per buffer up to which sections are numbered by a table


def _remember(problem: Problem, known: Columns | tuple[np.ndarray, ...]) -> None:
    _KNOWN[:] = [(b, k) for b, k in _KNOWN if b is not problem.buffers][-(KEPT - 1) :]
    _KNOWN.append((problem.buffers, known))


def forget_columns() -> None:
    """Drop the remembered columns (and the buffers they keep alive). At a
    million buffers, freeing them here takes 0.2 s; left to the interpreter's
    exit, 0.8 s."""
    _KNOWN.clear()


def remember_columns(problem: Problem, *arrays: np.ndarray) -> None:
    """Give ``Columns.of`` the int64 arrays (first, last, size, align, fixed) of
    ``problem`` a reader already has."""
    _remember(problem, tuple(arrays))


def seconds_left(deadline: Deadline | None) -> float:
    """The time left for the C code, which reads <= 0 as "no deadline"."""
    if deadline is None or deadline.at is None:
        return 0.0
    return max(deadline.left() or 0.0, 1e-6)


def first_fit(
    cols: Columns,
    order: Sequence[int] | np.ndarray,
    capacity: int | None = None,
    deadline: Deadline | None = None,
    probes: int = PROBES,
) -> tuple[int, list[int] | None]:
    """(status, offsets): ``DONE`` with the offsets of every buffer (those not in
    ``order`` and not fixed stay at 0), ``OVER_CAPACITY`` or ``DEADLINE`` with None.

    ``probes``: gaps tried per buffer before it goes on top (< 0: no limit)."""
    order = np.ascontiguousarray(order, dtype=np.int32)
    code, raw, _ = _search.first_fit(
        cols.sec_lo,
        cols.sec_hi,
        cols.size,
        cols.align,
        cols.fixed,
        order,
        cols.n_sections,
        -1 if capacity is None else capacity,
        seconds_left(deadline),
        probes,
    )
    if code != DONE:
        return code, None
    return DONE, np.frombuffer(raw, dtype=np.int64).tolist()


def sweep_fit(
    cols: Columns,
    order: Sequence[int] | np.ndarray,
    capacity: int | None = None,
    deadline: Deadline | None = None,
) -> tuple[int, list[int] | None] | None:
    """First-fit in ``order`` sorted by first step, as a sweep over time (``_sweep.c``:
    free gaps in chunks by offset, O(n log n), no probe cap): the offsets ``first_fit`` gives
    with no probe cap. None when it does not apply (fixed buffers, or ``order`` not
    by first step or not every buffer); else as ``first_fit``."""
    order = np.ascontiguousarray(order, dtype=np.int32)
    if (cols.fixed >= 0).any() or len(order) != len(cols.size):
        return None
    if len(order) and (np.diff(cols.first[order]) < 0).any():
        return None
    code, raw = _sweep.sweep_fit(
        cols.first, cols.last, cols.size, cols.align, order,
        -1 if capacity is None else capacity, seconds_left(deadline),
    )  # fmt: skip
    if code != DONE:
        return code, None
    return DONE, np.frombuffer(raw, dtype=np.int64).tolist()


def start_order(first: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Indices by first step, larger sizes first among equals, then by index: the
    order of ``np.lexsort((-size, first))``, by a radix sort in C."""
    raw = _sweep.start_order(np.ascontiguousarray(first), np.ascontiguousarray(size))
    return np.frombuffer(raw, dtype=np.int32)


def first_packing(cols: Columns, capacity: int | None = None) -> tuple[int, list[int] | None]:
    """The packing every solve has before any other phase, whatever its time
    limit: first-fit by first step (ties: larger first) as a sweep (``_sweep.c``,
    O(n log n), no deadline). Fixed buffers keep their offsets and the free
    ones are swept above the highest of them (rounded up to the largest
    alignment, a power of two, so every free offset stays aligned): valid, tight
    when nothing is fixed. (status, offsets) as ``first_fit``: ``DONE`` or
    ``OVER_CAPACITY``."""
    is_fixed = cols.fixed >= 0
    free = np.flatnonzero(~is_fixed)
    base = 0
    if is_fixed.any():
        top = int((cols.fixed + cols.size)[is_fixed].max())
        base = align_up(top, int(cols.align.max()))
    if capacity is not None and capacity < base:
        return OVER_CAPACITY, None
    room = -1 if capacity is None else capacity - base  # < 0: no limit
    order = free[start_order(cols.first[free], cols.size[free])]
    code, raw = _sweep.sweep_fit(
        cols.first[order], cols.last[order], cols.size[order], cols.align[order],
        np.arange(len(order), dtype=np.int32), room, 0.0,
    )  # fmt: skip
    if code != DONE:
        return code, None
    offsets = np.where(is_fixed, cols.fixed, 0)
    offsets[order] = np.frombuffer(raw, dtype=np.int64) + base
    return DONE, offsets.tolist()


def pack(problem: Problem, order: Sequence[int], capacity: int | None = None) -> list[int] | None:
    """Place buffers in ``order`` (fixed ones first); None if ``capacity`` is exceeded."""
    _, offsets = first_fit(Columns.of(problem), order, capacity)
    return offsets


def skyline(cols: Columns) -> list[int]:
    """The fallback packing: by first step, each buffer right above the ones live
    with it (no gap search), O(log^2 sections) a buffer; valid, rarely tight."""
    order = np.lexsort((-cols.size, cols.first))
    code, offsets = first_fit(cols, order, probes=0)
    if offsets is None:  # no capacity, no deadline: first-fit always completes
        raise PlanValidationError([f"skyline: first-fit with no capacity stopped ({code})"])
    return offsets
