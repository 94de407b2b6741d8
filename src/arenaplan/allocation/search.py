"""A bounded depth-first search for a packing at a fixed capacity.

Buffers are taken by start step (larger first on ties). Each is tried at its
"corner" offsets: the lowest fit, the highest fit under the capacity, then the
other positions touching a neighbour or the floor or ceiling. The search stops at
the first complete packing, or when its node or time budget runs out (then it
proves nothing). It is a quick rescue for the greedy orders, not an exact solver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from arenaplan.allocation.packing import Skyline, align_down, align_up
from arenaplan.allocation.problem import Problem


@dataclass(frozen=True, slots=True)
class SearchBudget:
    nodes: int = 100_000
    seconds: float = 1.0


def _candidates(lo: np.ndarray, hi: np.ndarray, size: int, align: int, cap: int) -> list[int]:
    top = align_down(cap - size, align)
    if top < 0:
        return []
    spots = {0, top}
    spots.update(align_up(int(h), align) for h in hi)
    spots.update(align_down(int(x) - size, align) for x in lo)
    fits = sorted(p for p in spots if 0 <= p <= top and not np.any((lo < p + size) & (hi > p)))
    if len(fits) > 2:
        fits = [fits[0], fits[-1], *fits[1:-1]]
    return fits


def search_at_capacity(
    problem: Problem, capacity: int, budget: SearchBudget = SearchBudget()
) -> list[int] | None:
    """Offsets of a packing within ``capacity``, or None if none was found in budget."""
    bufs = problem.buffers
    sky = Skyline(len(bufs))
    offsets = [0] * len(bufs)
    for i, b in enumerate(bufs):
        if b.offset is not None:
            offsets[i] = b.offset
            sky.add(b.first, b.last, b.offset, b.size)
    order = sorted(
        (i for i, b in enumerate(bufs) if b.offset is None),
        key=lambda i: (bufs[i].first, -bufs[i].size, i),
    )
    deadline = time.monotonic() + budget.seconds
    stack: list[list[int]] = []  # per depth: remaining candidate offsets
    nodes = 0
    depth = 0
    while depth < len(order):
        if len(stack) == depth:
            b = bufs[order[depth]]
            lo, hi = sky.busy(b.first, b.last)
            stack.append(_candidates(lo, hi, b.size, b.alignment, capacity)[::-1])
        choices = stack[depth]
        if not choices:
            stack.pop()
            depth -= 1
            if depth < 0:
                return None
            sky.pop()
            continue
        nodes += 1
        if nodes > budget.nodes or (nodes % 256 == 0 and time.monotonic() > deadline):
            return None
        i = order[depth]
        offsets[i] = choices.pop()
        sky.add(bufs[i].first, bufs[i].last, offsets[i], bufs[i].size)
        depth += 1
    return offsets
