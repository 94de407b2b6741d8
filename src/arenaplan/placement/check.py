"""Check a plan before anything uses it: by the validator of the runtime it is for.

Each runtime checks its plans with code of its own that shares none with the planner
(``Runtime.plan_problems``: TFLM's is ``tflm.validate``); a plan with a problem is
arenaplan's bug (exit 70) and is never written.
"""

from __future__ import annotations

from arenaplan.errors import PlanValidationError
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.runtime.registry import runtime_of


def check_plan(model: Model, plan: Plan) -> None:
    """PlanValidationError listing every problem the runtime's validator finds."""
    found = runtime_of(plan.kernels).plan_problems(model, plan)
    if found:
        raise PlanValidationError(found)
