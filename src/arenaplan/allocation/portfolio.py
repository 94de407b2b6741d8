"""The default allocator: greedy orders first, the exact solver when they stop short.

1. Lower bound LB = max(peak live bytes, top of any fixed buffer); two fixed
   buffers that overlap are refused at once.
2. The first packing (the sweep by first step, O(n log n)), whatever the time
   limit, then first-fit under every order of ``heuristics.ORDERS``; keep the
   lowest.
3. If that is above LB, run the exact solver (``minimize``) on what is left of
   the time: it returns a packing no higher, and the best proven bound.
All phases share one deadline, ``seconds`` after ``solve`` starts; the
solution's ``stopped`` names the phase it cut short. No answer is worse than
the first packing, which is always made. A solution whose height equals its
proven bound is optimal.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenaplan.allocation.bounds import check_fixed, lower_bound
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.heuristics import best_greedy
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.packing import Columns
from arenaplan.allocation.problem import Problem, Solution, height_of
from arenaplan.errors import AllocationError


@dataclass(frozen=True, slots=True)
class Portfolio:
    """Greedy portfolio, then the exact solver, all within ``seconds`` (None: no limit)."""

    name: str = "portfolio"
    use_exact: bool = True
    seconds: float | None = 2.0

    def solve(self, problem: Problem) -> Solution:
        deadline = Deadline.after(self.seconds)
        check_fixed(problem)
        cols = Columns.of(problem)
        lb = lower_bound(problem)
        deadline.expired("preparation")  # recorded if so; the first packing comes anyway
        greedy = best_greedy(problem, problem.capacity, deadline, cols)
        if greedy is None:
            raise self._none_fits(problem.capacity, lb, deadline)
        how, offsets = greedy
        height = height_of(problem, offsets)
        if height <= lb or not self.use_exact or problem.capacity is not None:
            return Solution(tuple(offsets), height, lb, f"{self.name}:{how}", deadline.ended_by)
        exact = minimize(problem, deadline=deadline, greedy=greedy)
        if exact.height < height:
            return Solution(
                exact.offsets, exact.height, exact.lower_bound, f"{self.name}:exact", exact.stopped
            )
        return Solution(
            tuple(offsets), height, exact.lower_bound, f"{self.name}:{how}", exact.stopped
        )

    def _none_fits(self, cap: int | None, lb: int, deadline: Deadline) -> AllocationError:
        """No packing fits the capacity: none of the orders tried, or the time ran
        out before the other orders were tried (the first packing is always made)."""
        if not deadline.ended_by:
            return AllocationError(
                f"no packing found within the capacity of {cap} bytes (lower bound {lb} bytes)"
            )
        return AllocationError(
            f"the time limit passed ({deadline.ended_by}) before any packing within "
            f"the capacity of {cap} bytes was found (lower bound {lb} bytes)"
        )
