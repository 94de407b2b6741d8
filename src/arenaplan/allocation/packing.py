"""First-fit packing of buffers in a given order: the building block of the heuristics.

Each buffer, in turn, takes the lowest aligned offset where it overlaps no
placed buffer that is live at the same time. Fixed-offset buffers are placed
before all others.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arenaplan.allocation.problem import Problem


def align_up(x: int, a: int) -> int:
    return -(-x // a) * a


class Skyline:
    """Placed buffers as parallel arrays: steps ``[first, last]``, bytes ``[lo, hi)``."""

    def __init__(self, n: int) -> None:
        self.first = np.empty(n, dtype=np.int64)
        self.last = np.empty(n, dtype=np.int64)
        self.lo = np.empty(n, dtype=np.int64)
        self.hi = np.empty(n, dtype=np.int64)
        self.count = 0

    def add(self, first: int, last: int, lo: int, size: int) -> None:
        k = self.count
        self.first[k], self.last[k], self.lo[k], self.hi[k] = first, last, lo, lo + size
        self.count = k + 1

    def busy(self, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
        """Byte ranges ``[lo, hi)`` of placed buffers live during ``[first, last]``."""
        k = self.count
        mask = (self.first[:k] <= last) & (self.last[:k] >= first) & (self.hi[:k] > self.lo[:k])
        return self.lo[:k][mask], self.hi[:k][mask]


def lowest_fit(lo: np.ndarray, hi: np.ndarray, size: int, align: int) -> int:
    """Lowest aligned offset whose ``[off, off + size)`` avoids every ``[lo, hi)``."""
    cand = 0
    for k in np.argsort(lo, kind="stable"):
        if lo[k] - cand >= size:
            break
        cand = max(cand, align_up(int(hi[k]), align))
    return cand


def pack(problem: Problem, order: Sequence[int], capacity: int | None = None) -> list[int] | None:
    """Place buffers in ``order`` (fixed ones first); None if ``capacity`` is exceeded."""
    bufs = problem.buffers
    sky = Skyline(len(bufs))
    offsets: list[int] = [0] * len(bufs)
    fixed = [i for i, b in enumerate(bufs) if b.offset is not None]
    free = [i for i in order if bufs[i].offset is None]
    for i in fixed:
        b = bufs[i]
        offsets[i] = b.offset  # type: ignore[assignment]
        sky.add(b.first, b.last, offsets[i], b.size)
    for i in free:
        b = bufs[i]
        lo, hi = sky.busy(b.first, b.last)
        off = lowest_fit(lo, hi, b.size, b.alignment)
        if capacity is not None and off + b.size > capacity:
            return None
        offsets[i] = off
        sky.add(b.first, b.last, off, b.size)
    return offsets
