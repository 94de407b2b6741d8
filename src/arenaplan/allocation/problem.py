"""The offset-assignment problem and its solution, kept apart.

Picture (time runs right, addresses up); each buffer is a rectangle
``[first, last] x [offset, offset + size)`` and no two rectangles may overlap::

    addr ^
         |      +-----+
         | +----| b2  |
         | | b1 +-----+---+
         | +--------| b3  |
         +------------------> time (steps, inclusive intervals)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Buffer:
    """A block of ``size`` bytes live over the inclusive steps ``[first, last]``.

    ``alignment`` (bytes) constrains the offset; ``offset``, when set, fixes it.
    """

    id: str
    first: int
    last: int
    size: int
    alignment: int = 1
    offset: int | None = None

    def overlaps_in_time(self, other: Buffer) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True, slots=True)
class Problem:
    """Buffers to place; ``capacity`` (bytes) is an upper limit on the height, if any."""

    buffers: tuple[Buffer, ...]
    capacity: int | None = None

    @classmethod
    def of(cls, buffers: Sequence[Buffer], capacity: int | None = None) -> Problem:
        return cls(tuple(buffers), capacity)


@dataclass(frozen=True, slots=True)
class Solution:
    """One offset (bytes) per buffer, in problem order; ``height`` = max(offset + size).

    ``lower_bound`` is the best proven bound on the height known to the allocator;
    ``optimal`` means height == a proven bound. ``stopped`` names the phase the
    time limit cut short ("reading", "preparation", "greedy:<order>", "search"),
    "" when the allocator finished its work.
    """

    offsets: tuple[int, ...]
    height: int
    lower_bound: int
    allocator: str
    stopped: str = ""

    @property
    def optimal(self) -> bool:
        return self.height <= self.lower_bound


class Allocator(Protocol):
    """Anything that places buffers: ``solve`` returns a solution for every buffer."""

    name: str

    def solve(self, problem: Problem) -> Solution: ...


def height_of(problem: Problem, offsets: Sequence[int]) -> int:
    return max((o + b.size for o, b in zip(offsets, problem.buffers, strict=True)), default=0)
