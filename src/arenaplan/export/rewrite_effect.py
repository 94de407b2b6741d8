"""What a proven rewrite changed against the model as given: head, tail, whole arena
and, on a target, the estimated time (the summary's and the JSON's one record).

Both sides are figured alike: the head as planned, TFLM's tail predicted for the
profile, the smallest single arena (head, tail and TFLM's planning room), and the
time model's estimate of one inference with every activation and kernel scratch in
the target's fastest memory (so that only the rewrite differs). Bytes, seconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from arenaplan.cost.timing import time_model_label
from arenaplan.export.figures import placed_seconds
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.runtime.registry import runtime_of
from arenaplan.runtime.spec import Profile
from arenaplan.targets.model import Target


@dataclass(frozen=True, slots=True)
class Side:
    head: int
    tail: int
    whole: int
    latency_seconds: float | None  # estimate; None without a target


@dataclass(frozen=True, slots=True)
class RewriteEffect:
    profile: Profile
    before: Side
    after: Side
    latency_model: str | None  # the time model's label; None without a target

    def as_dict(self) -> dict[str, object]:
        return asdict(self) | {"profile": str(self.profile)}


def _side(model: Model, plan: Plan, profile: Profile, target: Target | None) -> Side:
    n_planned = len(plan.tensors) + len(plan.scratch)
    runtime = runtime_of(plan.kernels)
    whole = runtime.min_arena(model, plan.arena, n_planned, profile, plan.kernels).bytes
    seconds = None
    if target is not None:
        seconds = placed_seconds(model, target, target.fastest().name, None)
    tail = runtime.tail(model, profile, plan.kernels).bytes
    return Side(plan.arena, tail, whole, seconds)


def rewrite_effect(
    before: tuple[Model, Plan], after: tuple[Model, Plan], profile: Profile, target: Target | None
) -> RewriteEffect:
    """The effect of the rewrite from ``before`` to ``after`` (model and plan each)."""
    label = None
    if target is not None:
        label = time_model_label(target)
    return RewriteEffect(
        profile, _side(*before, profile, target), _side(*after, profile, target), label
    )
