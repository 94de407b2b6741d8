"""The default allocator: greedy orders first, the exact solver when they stop short.

1. Lower bound LB = max(peak live bytes, top of any fixed buffer).
2. First-fit under every order of ``heuristics.ORDERS``; keep the lowest.
3. If that is above LB, run the exact solver (``minimize``) for at most
   ``seconds``: it returns a packing no higher, and the best proven bound.
A solution whose height equals its proven bound is optimal.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenaplan.allocation.bounds import lower_bound
from arenaplan.allocation.heuristics import best_greedy
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.problem import Problem, Solution, height_of
from arenaplan.errors import AllocationError


@dataclass(frozen=True, slots=True)
class Portfolio:
    """Greedy portfolio, then the exact solver within ``seconds`` if above the bound."""

    name: str = "portfolio"
    use_exact: bool = True
    seconds: float = 2.0

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
        if height <= lb or not self.use_exact or problem.capacity is not None:
            return Solution(tuple(offsets), height, lb, f"{self.name}:{how}")
        exact = minimize(problem, seconds=self.seconds)
        if exact.height < height:
            return Solution(exact.offsets, exact.height, exact.lower_bound, f"{self.name}:exact")
        return Solution(tuple(offsets), height, exact.lower_bound, f"{self.name}:{how}")
