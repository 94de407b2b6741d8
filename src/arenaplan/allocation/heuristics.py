"""Greedy heuristics: first-fit packing under several buffer orders, best kept."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from arenaplan.allocation.packing import pack
from arenaplan.allocation.problem import Problem

Order = Callable[[Problem], list[int]]


def _by(key: Callable[[int, Problem], tuple]) -> Order:
    return lambda p: sorted(range(len(p.buffers)), key=lambda i: key(i, p))


def _conflict_weight(p: Problem) -> list[int]:
    """Sum of sizes of the buffers each buffer overlaps in time."""
    first = np.array([b.first for b in p.buffers])
    last = np.array([b.last for b in p.buffers])
    size = np.array([b.size for b in p.buffers])
    return [int(size[(first <= b.last) & (last >= b.first)].sum()) for b in p.buffers]


def _by_conflicts(p: Problem) -> list[int]:
    w = _conflict_weight(p)
    return sorted(range(len(p.buffers)), key=lambda i: (-w[i], -p.buffers[i].size, i))


ORDERS: dict[str, Order] = {
    "size": _by(lambda i, p: (-p.buffers[i].size, p.buffers[i].first, i)),
    "start": _by(lambda i, p: (p.buffers[i].first, -p.buffers[i].size, i)),
    "length": _by(lambda i, p: (p.buffers[i].first - p.buffers[i].last, -p.buffers[i].size, i)),
    "area": _by(
        lambda i, p: (-p.buffers[i].size * (p.buffers[i].last - p.buffers[i].first + 1), i)
    ),
    "conflicts": _by_conflicts,
}


def best_greedy(problem: Problem, capacity: int | None = None) -> tuple[str, list[int]] | None:
    """The lowest packing over all orders, bottom-up; ties go to the earlier order."""
    best: tuple[int, str, list[int]] | None = None
    for name, order in ORDERS.items():
        offsets = pack(problem, order(problem), capacity)
        if offsets is None:
            continue
        height = max((o + b.size for o, b in zip(offsets, problem.buffers, strict=True)), default=0)
        if best is None or height < best[0]:
            best = (height, name, offsets)
    return None if best is None else (best[1], best[2])
