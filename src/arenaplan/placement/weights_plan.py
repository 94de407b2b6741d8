"""One plan for weights and activations: policies chosen under the RAM capacity.

``plan_weights`` starts every operator at its fastest policy (or the forced one)
and realises the choice: whole-operator copies become RESHAPE copies in the
model (``passes.stage``, proven in TFLM like any plan), group buffers become
staging requests placed in the same head (``PlanOptions.staging``); the planner
packs and the validator checks all of it. While the head is over the capacity
of the fastest memory, one operator whose buffer is live where the live bytes
are highest moves to a policy taking less RAM, the one costing the fewest
seconds per byte freed; with nothing left to give up, a one-line error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from arenaplan.errors import AllocationError
from arenaplan.ir.model import Model
from arenaplan.passes.pipeline import run_passes
from arenaplan.passes.stage import Stage, staged_index
from arenaplan.placement.buffers import arena_items
from arenaplan.placement.plan import Plan, PlanOptions, StagingRequest
from arenaplan.placement.planner import plan_model
from arenaplan.placement.weights import IN_PLACE, WHOLE, OpChoice, Policy, WeightCosts
from arenaplan.targets.model import Target


@dataclass(frozen=True, slots=True)
class WeightsPlan:
    """The chosen policies, the model as it runs (with its copies), its plan, and
    the estimated seconds of the whole model (all operators, fetches included)."""

    choices: tuple[OpChoice, ...]
    model: Model
    plan: Plan
    seconds: float
    source: str  # memory the weights come from
    dest: str  # memory they are staged into
    # what the choice is compared with: every operator "in-place" where the
    # weights memory is mapped, else "whole" (each operator's weights copied
    # before it, blocking); its seconds per operator, and for the whole model
    baseline: str
    baseline_seconds: tuple[float, ...]
    baseline_total: float


def realise(model: Model, choices: Sequence[OpChoice], options: PlanOptions) -> tuple[Model, Plan]:
    """The model with its whole-operator copies, and its plan with the group buffers."""
    whole = [c for c in choices if c.policy.kind == "whole"]
    stage = Stage(tuple(c.op for c in whole), tuple(c.op for c in whole if c.first < c.op))
    staged = run_passes(model, [stage])[0] if whole else model
    at = staged_index(model, stage)
    requests = tuple(
        StagingRequest(at[c.op], at[c.first], c.ram, c.policy.label)
        for c in choices
        if c.policy.kind == "groups"
    )
    return staged, plan_model(staged, replace(options, staging=requests))


def plan_weights(
    model: Model,
    target: Target,
    request: Policy | None,
    capacity: int | None,
    options: PlanOptions,
) -> WeightsPlan:
    """Policies for every operator reading weights (``request`` forced, or chosen
    by time when None), realised and planned within ``capacity`` bytes of the
    target's fastest memory (None: no limit)."""
    costs = WeightCosts(model, target)
    choices = costs.forced(request) if request else costs.fastest()
    live = _activation_live(model, options)
    while True:
        staged, plan = realise(model, choices, options)
        if request is not None or capacity is None or plan.arena <= capacity:
            break
        choices = _give_up_ram(costs, choices, live, capacity, plan.arena)
    rest = sum(costs.base) - sum(c.in_place_seconds for c in choices)
    policy = IN_PLACE if costs.source.read == "in-place" else WHOLE
    baseline = tuple(costs.choice(c.weights, policy).seconds for c in choices)
    return WeightsPlan(
        tuple(choices),
        staged,
        plan,
        rest + sum(c.seconds for c in choices),
        costs.source.name,
        costs.dest.name,
        policy.kind,
        baseline,
        rest + sum(baseline),
    )


def _activation_live(model: Model, options: PlanOptions) -> np.ndarray:
    """Live bytes of the head's tensors and scratch at each operator of subgraph 0."""
    items = arena_items(model, options.pointer_size, options.kernels)
    ops = items.lifetimes.operators[0]
    live = np.zeros(len(ops), dtype=np.int64)
    for k, (first, last) in enumerate(ops):
        live[k] = sum(b.size for b in items.buffers if b.first <= last and b.last >= first)
    return live


def _give_up_ram(
    costs: WeightCosts, choices: list[OpChoice], live: np.ndarray, capacity: int, arena: int
) -> list[OpChoice]:
    """``choices`` with one operator moved to a policy taking less RAM, among those
    whose buffers are live where the estimated live bytes peak."""
    total = live.copy()
    for c in choices:
        total[c.first : c.op + 1] += c.ram
    hot = np.flatnonzero(total > capacity)
    if not hot.size:
        hot = np.flatnonzero(total == total.max())
    live_there = [k for k, c in enumerate(choices) if any(c.first <= h <= c.op for h in hot)]
    best: tuple[float, int, OpChoice] | None = None
    # those live where the bytes peak first; any other when the packing, not the
    # live bytes, sets the height
    for k in live_there + [k for k in range(len(choices)) if k not in live_there]:
        c = choices[k]
        if best is not None and k not in live_there:
            break
        for alt in costs.cheaper(c):
            score = (alt.seconds - c.seconds) / (c.ram - alt.ram)
            if best is None or score < best[0]:
                best = (score, k, alt)
    if best is None:
        raise AllocationError(
            f"the plan needs {arena:,} B of {costs.dest.name}, more than its {capacity:,} B, "
            "even with every operator's weights read in place or copied in the smallest groups"
        )
    out = list(choices)
    out[best[1]] = best[2]
    return out
