"""A faithful re-implementation of TFLM's ``GreedyMemoryPlanner``.

Reproduces ``greedy_memory_planner.cc`` decision for decision:
1. buffers with a fixed (offline) offset are placed first, in order of addition,
   at that offset, with no overlap check;
2. the others are sorted by size, largest first, with a stable bubble sort over
   a list filled in *reverse* order of addition, so ties go to the buffer added
   later;
3. each takes the lowest offset where it fits: walk the placed buffers that
   overlap it in time, in offset order (ties: earlier placed first), and stop at
   the first gap large enough; otherwise go above the highest of them.
Alignment is not applied here: TFLM rounds sizes up to 16 before planning.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from arenaplan.allocation.bounds import lower_bound
from arenaplan.allocation.problem import Problem, Solution, height_of


def tflm_order(problem: Problem) -> list[int]:
    """TFLM's placement order: fixed buffers by index, then the rest by size, ties late-first."""
    fixed = [i for i, b in enumerate(problem.buffers) if b.offset is not None]
    online = [i for i, b in enumerate(problem.buffers) if b.offset is None]
    online.reverse()
    online.sort(key=lambda i: -problem.buffers[i].size)  # stable, like the bubble sort
    return fixed + online


@dataclass(frozen=True, slots=True)
class TflmGreedy:
    """TFLM's online planner: same offsets, same height as the C++ one."""

    name: str = "tflm-greedy"

    def solve(self, problem: Problem) -> Solution:
        bufs = problem.buffers
        offsets = [0] * len(bufs)
        by_offset: list[tuple[int, int]] = []  # (offset, buffer index), kept sorted by offset
        for i in tflm_order(problem):
            b = bufs[i]
            offsets[i] = (
                b.offset if b.offset is not None else self._first_fit(i, by_offset, problem)
            )
            # insert after every entry with an equal offset, as the C++ list does
            pos = bisect.bisect_right(by_offset, offsets[i], key=lambda e: e[0])
            by_offset.insert(pos, (offsets[i], i))
        return Solution(
            tuple(offsets), height_of(problem, offsets), lower_bound(problem), self.name
        )

    @staticmethod
    def _first_fit(i: int, by_offset: list[tuple[int, int]], problem: Problem) -> int:
        bufs = problem.buffers
        want = bufs[i]
        candidate = 0
        for offset, j in by_offset:
            other = bufs[j]
            if other.first > want.last or want.first > other.last:
                continue
            if offset - candidate >= want.size:
                break
            candidate = max(candidate, offset + other.size)
        return candidate
