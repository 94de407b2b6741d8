"""From a model to a validated arena plan (which tensor at which offset)."""

from arenaplan.placement.check import check_plan
from arenaplan.placement.plan import Plan, PlanOptions, ScratchPlacement, TensorPlacement
from arenaplan.placement.planner import plan_model

__all__ = ["Plan", "PlanOptions", "ScratchPlacement", "TensorPlacement", "check_plan", "plan_model"]
