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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from arenaplan.allocation.packing import align_up
from arenaplan.analysis.buffers import StagingRequest, arena_items, staging_buffers
from arenaplan.cost.timing import time_model_label
from arenaplan.errors import AllocationError, PlanValidationError
from arenaplan.ir.model import Model
from arenaplan.passes.base import Origin, identity
from arenaplan.passes.pipeline import run_passes
from arenaplan.passes.stage import Stage, staged_index
from arenaplan.placement.check import check_plan
from arenaplan.placement.plan import Plan, PlanOptions
from arenaplan.placement.planner import layout_plan, plan_model
from arenaplan.placement.tiers import TierPlacement, laid_out_offsets, place_tiers
from arenaplan.runtime.registry import runtime_of
from arenaplan.runtime.spec import KernelSet
from arenaplan.targets.model import Target
from arenaplan.weights.policies import IN_PLACE, WHOLE, OpChoice, Policy, WeightCosts


@dataclass(frozen=True, slots=True)
class WeightsPlan:
    """The chosen policies, the model as it runs (with its copies), its plan, and
    the estimated seconds of the whole model (all operators, fetches included).
    ``tiers``: the activations' placement over several memories when they had to
    spread (the weight buffers stay in the fastest), else None. ``origin``: for each
    operator of ``model``, the operator of the model planned that it is (None: a
    RESHAPE copy); ``choices`` number operators as the model planned, ``plan`` (its
    staging buffers) and the fetch schedule as ``model``."""

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
    baseline_seconds: tuple[float, ...]  # per operator, the activations in the fastest
    # the baseline policy planned at the same capacities, as ``--weights BASELINE``
    # alone plans it (None: it does not fit them)
    baseline_total: float | None
    tiers: TierPlacement | None = None
    time_model: str = ""  # the time model that made the seconds (cost.timing's label)
    origin: Origin = ()
    baseline_plan: WeightsPlan | None = None  # the baseline's (None: this, or no fit)

    def planned_op(self, op: int) -> int:
        """The index in ``model`` of operator ``op`` (subgraph 0) of the model planned."""
        return self.origin.index(op)


Score = Callable[[WeightsPlan], float]  # seconds a weights plan is compared by


def staged_requests(
    model: Model, choices: Sequence[OpChoice], kernels: KernelSet | None = None
) -> tuple[Model, tuple[StagingRequest, ...], Origin]:
    """The model with its whole-operator copies (as ``kernels`` read the weights),
    the group buffers it needs (operator indices of that model), and its origin
    from ``model``."""
    whole = [c for c in choices if c.policy.kind == "whole"]
    early = tuple(c.op for c in whole if c.first < c.op)
    stage = Stage(tuple(c.op for c in whole), early, kernels)
    staged, origin = model, identity(model)
    if whole:
        staged, records = run_passes(model, [stage])
        origin = records[0].origin
    at = staged_index(model, stage)
    requests = tuple(
        StagingRequest(at[c.op], at[c.first], c.ram, c.policy.label)
        for c in choices
        if c.policy.kind == "groups"
    )
    return staged, requests, origin


def plan_weights(
    model: Model,
    target: Target,
    request: Policy | None,
    capacities: Mapping[str, int] | None,
    options: PlanOptions,
    score: Score | None = None,
) -> WeightsPlan:
    """Policies for every operator reading weights (``request`` forced, or chosen
    by time when None), realised and planned within the target's memories
    (``capacities`` by name, the target's own for the others; None: no limit).
    Weight buffers go to the fastest memory; when the activations and the buffers
    of the policies that need the least RAM do not fit it, the activations spread
    over the next memories (``placement.tiers``, the buffers pinned in the fastest).
    ``score``: the seconds ``auto`` compares plans by (default their own estimate;
    the pipeline gives the latency of the whole plan as it will run, TFLM's
    persistent data where it goes): with it, ``auto`` is always compared with every
    fixed policy. The baseline policy is planned at the same capacities too."""
    fixed = _Fixed(model, target, capacities, options)
    found = fixed(request) if request is not None else _auto(fixed, score)
    baseline = IN_PLACE if found.baseline == IN_PLACE.kind else WHOLE
    if request == baseline:
        return found
    try:
        same = fixed(baseline)  # planned once: auto may have planned it already
    except AllocationError:
        return replace(found, baseline_total=None)
    return replace(found, baseline_total=same.seconds, baseline_plan=same)


class _Fixed:
    """Each fixed policy forced on every operator of one model, planned at most once
    for these capacities (a policy that does not fit raises its ``AllocationError``
    again)."""

    def __init__(
        self,
        model: Model,
        target: Target,
        capacities: Mapping[str, int] | None,
        options: PlanOptions,
    ) -> None:
        self.model, self.target, self.capacities, self.options = model, target, capacities, options
        self.costs = WeightCosts(model, target, options.kernels)  # as the plan reads them
        self.done: dict[Policy, WeightsPlan | AllocationError] = {}

    def __call__(self, policy: Policy) -> WeightsPlan:
        if policy not in self.done:
            try:
                self.done[policy] = self.plan(policy)
            except AllocationError as exc:
                self.done[policy] = exc
        got = self.done[policy]
        if isinstance(got, AllocationError):
            raise got
        return got

    def plan(self, policy: Policy | None) -> WeightsPlan:
        """``policy`` forced, or None: ``auto``'s own greedy choice (not kept)."""
        return _plan_policies(
            self.model, self.target, policy, self.capacities, self.options, self.costs
        )


def _auto(fixed: _Fixed, score: Score | None) -> WeightsPlan:
    """``auto``: its greedy choice, and, when that had to give up time or ``score``
    is given, the fastest of it and every fixed policy that fits."""
    try:
        found = fixed.plan(None)
    except AllocationError:  # the greedy choice found no fit: a fixed policy may
        best = _best_of(None, fixed, score)
        if best is None:
            raise
        return best
    if score is None and not _under_pressure(found, fixed.costs):
        return found
    return _best_of(found, fixed, score) or found


# the policies ``auto`` is never slower than: each forced on every operator (with the
# activations spread when they must), as ``--weights POLICY`` plans them
FIXED = (IN_PLACE, WHOLE, Policy("groups"), Policy("groups", double=True))


def fixed_policies(target: Target) -> tuple[Policy, ...]:
    """The fixed policies open to ``target``: in place only where its weights memory is
    mapped (read in place)."""
    mapped = target.weights_memory().read == "in-place"
    return tuple(p for p in FIXED if mapped or p.kind != "in-place")


def _under_pressure(found: WeightsPlan, costs: WeightCosts) -> bool:
    """Did ``auto`` give up time to fit: a policy other than each operator's fastest,
    or activations spread over slower memories?"""
    fastest = [c.policy for c in costs.fastest()]
    return found.tiers is not None or [c.policy for c in found.choices] != fastest


def _best_of(found: WeightsPlan | None, fixed: _Fixed, score: Score | None) -> WeightsPlan | None:
    """The fastest (by ``score``, else estimated seconds) of ``auto``'s own plan
    (None: it found no fit) and every fixed policy that fits the same capacities;
    ``auto``'s on a tie; None when nothing fits. Weights and memories are thus
    decided together: giving up weight buffers first and spreading the activations
    only then is one candidate, spreading them with the buffers kept is another."""
    seconds = score or _own_seconds
    best, fastest = found, seconds(found) if found is not None else None
    for policy in fixed_policies(fixed.target):
        try:
            other = fixed(policy)
        except AllocationError:
            continue  # does not fit: not a candidate
        mine = seconds(other)
        if best is None or fastest is None or mine < fastest:
            best, fastest = other, mine
    return best


def _own_seconds(wp: WeightsPlan) -> float:
    return wp.seconds


def _plan_policies(
    model: Model,
    target: Target,
    request: Policy | None,
    capacities: Mapping[str, int] | None,
    options: PlanOptions,
    costs: WeightCosts,
) -> WeightsPlan:
    """``request`` forced, or chosen greedily by time: start at each operator's
    fastest policy and give up RAM where it costs the least time; spread the
    activations when nothing is left to give up."""
    choices = costs.forced(request) if request else costs.fastest()
    live = _activation_live(model, options)
    fast = target.fastest()
    capacity = None if capacities is None else capacities.get(fast.name, fast.capacity)
    spreads = len([m for m in target.memories if "activations" in m.holds]) > 1
    tiers = None
    while True:
        staged, requests, origin = staged_requests(model, choices, options.kernels)
        plan = plan_model(staged, replace(options, staging=requests))
        if capacity is None or plan.arena <= capacity:
            break
        if request is None:  # auto: give up RAM where it costs the least time
            try:
                choices = _give_up_ram(costs, choices, live, capacity, plan.arena)
                continue
            except AllocationError:
                if not spreads:
                    raise
        elif not spreads:
            raise AllocationError(f"--weights {request.label} does not fit {fast.name}")
        plan, tiers = _spread(staged, requests, target, capacities or {}, options)
        break
    rest = sum(costs.base) - sum(c.in_place_seconds for c in choices)
    policy = IN_PLACE if costs.source.read == "in-place" else WHOLE
    baseline = tuple(costs.choice(c.weights, policy).seconds for c in choices)
    seconds = rest + sum(c.seconds for c in choices)
    if tiers is not None:  # the activations' memories changed the operators' times
        seconds = tiers.seconds + sum(c.fetch for c in choices)

    return WeightsPlan(
        tuple(choices),
        staged,
        plan,
        seconds,
        costs.source.name,
        costs.dest.name,
        policy.kind,
        baseline,
        seconds if request == policy else None,  # planned by ``plan_weights``
        tiers,
        time_model_label(target),
        origin,
    )


def _spread(
    staged: Model,
    requests: tuple[StagingRequest, ...],
    target: Target,
    capacities: Mapping[str, int],
    options: PlanOptions,
) -> tuple[Plan, TierPlacement]:
    """Activations of ``staged`` over the target's memories, the weight buffers
    pinned in the fastest; the plan laid out in one head (the fastest memory's
    region first)."""
    align = runtime_of(options.kernels).alignment  # bytes
    lifetimes = runtime_of(options.kernels).lifetimes(staged)
    pinned = staging_buffers(lifetimes, requests, align)

    sg = staged.subgraphs[0]
    fast = target.fastest().name
    where = {
        (0, i): fast
        for r in requests
        for i in sg.operators[r.op].inputs
        if i >= 0 and sg.tensors[i].is_constant
    }
    tiers = place_tiers(
        staged, target, capacities, "arenaplan", pinned, where,
        options.kernels, options.pointer_size,
    )  # fmt: skip
    offsets = laid_out_offsets(tiers, target)
    room = align_up(tiers.heights[fast], runtime_of(options.kernels).alignment)  # bytes

    within = replace(options, staging=requests, staging_ceiling=room)
    plan = layout_plan(staged, offsets, "tiers", within)
    if any(s.offset + s.size > room for s in plan.staging):  # first-fit went past it
        moved = tuple(
            replace(s, offset=o) for s, o in zip(plan.staging, tiers.pinned_offsets, strict=True)
        )
        plan = replace(plan, staging=moved, arena=max(plan.arena, room))
        try:
            check_plan(staged, plan)
        except PlanValidationError:  # the placement over memories does not see where
            # TFLM puts the kernel scratch at run time: its pinned offsets met it
            raise AllocationError(
                f"the weight buffers do not fit in {fast} beside the kernel scratch TFLM "
                "places there when the activations spread over the memories"
            ) from None
    return plan, tiers


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
