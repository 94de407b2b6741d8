"""Buffers assigned to banks of fixed capacity, at the least cost.

A bank is a region of ``capacity`` bytes; ``cost(i, k)`` is what buffer ``i`` costs in
bank ``k`` (any unit: the caller's seconds). Banks are given fastest first. Two rules
make starts, each buffer going to the first bank (in order) that still packs it
(live bytes within the capacity, then a first-fit packing by size):

- by size, largest first (ExecuTorch's ``BankedGreedy``: a buffer takes the fastest
  bank that fits it);
- by what the first bank saves per byte against the last, most first.

The start of least total cost is kept (ties: the first). ``first_fit_banks`` is the
rule itself, for any test of fit (tier placement packs scratch beside the fastest
memory's tensors). Knows nothing of models.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.heuristics import ORDERS
from arenaplan.allocation.packing import pack
from arenaplan.allocation.problem import Problem
from arenaplan.errors import AllocationError

Cost = Callable[[int, int], float]  # (buffer, bank) -> cost


Fits = Callable[[int, list[int]], bool]  # (bank, the buffers in it) -> they fit there


class NoBank(AllocationError):
    """Buffer ``index`` fits in no bank."""

    def __init__(self, index: int) -> None:
        super().__init__(f"buffer {index} fits no bank")
        self.index = index


def first_fit_banks(count: int, banks: int, order: Sequence[int], fits: Fits) -> tuple[int, ...]:
    """The bank of each of ``count`` buffers, taken in ``order``, each to the first
    bank (fastest) where ``fits`` says the bank's buffers with it still fit;
    ``NoBank`` when none does."""
    members: list[list[int]] = [[] for _ in range(banks)]
    where = [-1] * count
    for i in order:
        for k in range(banks):
            members[k].append(i)
            if fits(k, members[k]):
                where[i] = k
                break
            members[k].pop()
        else:
            raise NoBank(i)
    return tuple(where)


def assign_banks(problem: Problem, capacities: Sequence[int], cost: Cost) -> tuple[int, ...]:
    """The bank of every buffer of ``problem``: each bank's buffers pack within its
    capacity (by first fit; the caller solves each bank's packing)."""
    n, last = len(problem.buffers), len(capacities) - 1
    sizes = [b.size for b in problem.buffers]
    by_size = sorted(range(n), key=lambda i: (-sizes[i], i))
    by_saving = sorted(
        range(n), key=lambda i: (-(cost(i, last) - cost(i, 0)) / max(sizes[i], 1), i)
    )

    def fits(k: int, members: list[int]) -> bool:
        return _packs(problem, members, capacities[k])

    try:
        starts = [
            first_fit_banks(n, len(capacities), order, fits) for order in (by_size, by_saving)
        ]
    except NoBank as exc:
        b = problem.buffers[exc.index]
        raise AllocationError(
            f"buffer {b.id} ({b.size:,} B) fits no bank: "
            f"capacities {', '.join(f'{c:,}' for c in capacities)} B"
        ) from None
    return min(starts, key=lambda banks: sum(cost(i, k) for i, k in enumerate(banks)))


def _packs(problem: Problem, members: list[int], capacity: int) -> bool:
    """Do buffers ``members`` of ``problem`` pack within ``capacity`` bytes?"""
    sub = Problem(tuple(problem.buffers[i] for i in members))
    if live_bytes_bound(sub) > capacity:
        return False
    return pack(sub, ORDERS["size"](sub), capacity) is not None
