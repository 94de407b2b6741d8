"""The row order of a cascade, simulated: how many rows each stage's ring must hold.

The kernel (``firmware/arenaplan_cascade.cc``) computes the last stage's output row
by row and pulls each stage's rows when a consumer needs them (docs/cascade.md:
``make``, ``compute``, ``needs``). This module runs the same order on row numbers
alone and records, at every read of row r of stage s, ``next[s] - r``: the rows
produced since r, r included. A ring of that many rows never overwrites a row
before its last read. Rows are rows of the stage's output tensor.
"""

from __future__ import annotations

import sys

from arenaplan.errors import PassError
from arenaplan.ir.cascade_format import INPUT_SRC, TWO_INPUTS, WHOLE_INPUT, RowGeometry

INPUT = INPUT_SRC  # src of a stage that reads the operator's input (kept whole)
ADD = "ADD"
__all__ = ["ADD", "INPUT", "RowGeometry", "ring_rows"]


class _Simulation:
    def __init__(self, stages: list[RowGeometry]) -> None:
        self.stages = stages
        self.next = [0] * len(stages)
        self.ring = [0] * len(stages)

    def make(self, s: int, r: int) -> None:
        """Compute stage s's rows up to row r, or to its last row (out_h - 1)."""
        if s < 0:  # an operator input: whole
            return
        while self.next[s] <= r and self.next[s] < self.stages[s].out_h:
            y = self.next[s]
            self.compute(s, y)
            self.next[s] += self.stages[s].step(y)

    def read(self, s: int, r: int) -> None:
        if s < 0:
            return
        if r >= self.next[s]:  # e.g. past the source's last row: its ring is not sized
            raise PassError(
                f"cascade: row {r} of stage {s} is read before it is made "
                f"(rows 0..{self.next[s] - 1} of {self.stages[s].out_h} made)"
            )
        self.ring[s] = max(self.ring[s], self.next[s] - r)

    def compute(self, s: int, y: int) -> None:
        g = self.stages[s]
        if g.kind in WHOLE_INPUT:
            for r in range(g.in_h):
                self.make(g.src0, r)
                self.read(g.src0, r)
            return
        n = g.step(y)
        span = g.needs_step(y)  # half-open; empty: every tap in the padding
        self.make(g.src0, span.end - 1)
        if g.kind in TWO_INPUTS:
            self.make(g.src1, y + n - 1)
        for r in range(span.first, span.end):
            self.read(g.src0, r)
        if g.kind in TWO_INPUTS:
            for r in range(y, y + n):
                self.read(g.src1, r)


def ring_rows(stages: list[RowGeometry]) -> list[int]:
    """Rows each stage's ring must hold; 0 for the last stage (it writes the
    operator's output). Every stage but the last must be read by a later one. A
    stage computing several rows per step gets a multiple of them (the kernel writes
    a step's rows to consecutive slots)."""
    sim = _Simulation(stages)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(stages) + 100))
    try:
        last = len(stages) - 1
        y = 0
        while y < stages[last].out_h:
            sim.compute(last, y)
            y += stages[last].step(y)
    finally:
        sys.setrecursionlimit(limit)
    rings = [*sim.ring[:last], 0]
    for s in range(last):
        block = max(stages[s].block, 1)
        rings[s] = -(-rings[s] // block) * block
    unread = [s for s in range(last) if rings[s] == 0]
    if unread:
        raise ValueError(f"stage {unread[0]} of the cascade is never read")
    return rings
