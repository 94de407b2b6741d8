"""Buffers assigned to banks of fixed capacity, at the least cost.

A bank is a region of ``capacity`` bytes; ``cost(i, k)`` is what buffer ``i`` costs in
bank ``k`` (any unit: the caller's seconds). Banks are given fastest first. Two rules
make starts, each buffer going to the first bank (in order) that still packs it
(live bytes within the capacity, then a first-fit packing by size):

- by size, largest first (ExecuTorch's ``BankedGreedy``: a buffer takes the fastest
  bank that fits it);
- by what the first bank saves per byte against the last, most first.

The start of least total cost is kept (ties: the first). Knows nothing of models.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.heuristics import ORDERS
from arenaplan.allocation.packing import pack
from arenaplan.allocation.problem import Problem
from arenaplan.errors import AllocationError

Cost = Callable[[int, int], float]  # (buffer, bank) -> cost


def assign_banks(problem: Problem, capacities: Sequence[int], cost: Cost) -> tuple[int, ...]:
    """The bank of every buffer of ``problem``: each bank's buffers pack within its
    capacity (by first fit; the caller solves each bank's packing)."""
    n, last = len(problem.buffers), len(capacities) - 1
    sizes = [b.size for b in problem.buffers]
    by_size = sorted(range(n), key=lambda i: (-sizes[i], i))
    by_saving = sorted(
        range(n), key=lambda i: (-(cost(i, last) - cost(i, 0)) / max(sizes[i], 1), i)
    )
    starts = [_first_fit_banks(problem, capacities, order) for order in (by_size, by_saving)]
    return min(starts, key=lambda banks: sum(cost(i, k) for i, k in enumerate(banks)))


def _first_fit_banks(
    problem: Problem, capacities: Sequence[int], order: list[int]
) -> tuple[int, ...]:
    banks: list[list[int]] = [[] for _ in capacities]
    where = [-1] * len(problem.buffers)
    for i in order:
        for k, capacity in enumerate(capacities):
            banks[k].append(i)
            if _packs(problem, banks[k], capacity):
                where[i] = k
                break
            banks[k].pop()
        else:
            raise AllocationError(
                f"buffer {problem.buffers[i].id} ({problem.buffers[i].size:,} B) fits no bank: "
                f"capacities {', '.join(f'{c:,}' for c in capacities)} B"
            )
    return tuple(where)


def _packs(problem: Problem, members: list[int], capacity: int) -> bool:
    """Do buffers ``members`` of ``problem`` pack within ``capacity`` bytes?"""
    sub = Problem(tuple(problem.buffers[i] for i in members))
    if live_bytes_bound(sub) > capacity:
        return False
    return pack(sub, ORDERS["size"](sub), capacity) is not None
