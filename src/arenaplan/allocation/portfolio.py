"""The default allocator: greedy orders first, a bounded search when they stop short.

1. Lower bound LB = max(peak live bytes, top of any fixed buffer).
2. First-fit under every order of ``heuristics.ORDERS``; keep the lowest.
3. If that is above LB, search for a packing at LB (bounded), then keep the lower.
A solution whose height equals LB is proven optimal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arenaplan.allocation.bounds import lower_bound
from arenaplan.allocation.heuristics import best_greedy
from arenaplan.allocation.packing import align_up
from arenaplan.allocation.problem import Problem, Solution, height_of
from arenaplan.allocation.search import SearchBudget, search_at_capacity
from arenaplan.errors import AllocationError


@dataclass(frozen=True, slots=True)
class Portfolio:
    """Greedy portfolio plus a bounded search at the lower bound."""

    name: str = "portfolio"
    budget: SearchBudget = field(default_factory=SearchBudget)
    use_search: bool = True

    def solve(self, problem: Problem) -> Solution:
        lb = lower_bound(problem)
        greedy = best_greedy(problem, problem.capacity)
        if greedy is None:
            raise AllocationError(
                f"no packing found within the capacity of {problem.capacity} bytes "
                f"(lower bound {lb} bytes)"
            )
        how, offsets = greedy
        height = height_of(problem, offsets)
        if height > lb and self.use_search:
            target = align_up(lb, max((b.alignment for b in problem.buffers), default=1))
            found = search_at_capacity(problem, target, self.budget)
            if found is not None and height_of(problem, found) < height:
                how, offsets, height = "search", found, height_of(problem, found)
        return Solution(tuple(offsets), height, lb, f"{self.name}:{how}")
