"""Graph rewrites within the pipeline: run the passes asked for, and check ``fit``.

``passes`` run in order; ``fit`` alone runs cascade (where TFLM built from source can
prove it), reorder, inplace and bands, the cascades only when the model does not fit
as it is, the bands at the least extra MACs that reach the size. Proving a rewrite in TFLM is the
pipeline's next step (``pipeline.run``).

The best plan wins: a list with cascade is compared with the same list without
bands and without cascade (``candidates``), each planned, and the smallest figure
``fit`` bounds (``fit_figure``: the whole arena, or the head) is kept; on a tie the
list with fewer custom operators and passes. Cascades stop where their stages do;
bands may reach further on the model without them, and the other way round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from arenaplan.errors import ArenaplanError
from arenaplan.ir.model import Model
from arenaplan.passes import make_pass, run_passes
from arenaplan.passes.base import compose, identity
from arenaplan.passes.inplace import alias_options
from arenaplan.placement.plan import Plan
from arenaplan.runtime.registry import runtime_of
from arenaplan.runtime.spec import Profile

if TYPE_CHECKING:
    from arenaplan.passes import PassRecord
    from arenaplan.passes.base import Origin

FIT_PASSES = ("reorder", "inplace", "bands")
FIT_CASCADE = ("cascade", *FIT_PASSES)  # where a cascade can be proven


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The model after the passes (the model as given, the same object, when no
    pass changed it), what each did, and the aliasing to plan with.
    ``origin``: for each operator of ``model`` (model order), the operator of the
    model as given that it came from (None: a pass inserted it)."""

    model: Model
    records: tuple[PassRecord, ...]
    alias_kinds: frozenset[str]
    clobber_inputs: bool
    origin: Origin

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.records)


def run_rewrite(model: Model, names: tuple[str, ...], options: dict[str, object]) -> Rewrite:
    """Run the passes ``names`` with ``options`` (each pass takes those that are its
    fields: max_extra_macs, fit, clobber_inputs, profile, objective, kernels)."""
    return run_rewrites(model, [names], options)[0]


def run_rewrites(
    model: Model, lists: Sequence[tuple[str, ...]], options: dict[str, object]
) -> list[Rewrite]:
    """``run_rewrite`` of each list, each pass run once for the lists that begin
    with the same passes (a pass is a pure function of its input and options)."""

    done: dict[tuple[str, ...], tuple[Model, tuple[PassRecord, ...]]] = {(): (model, ())}
    out = []
    for names in lists:
        k = max(i for i in range(len(names) + 1) if names[:i] in done)
        current, records = done[names[:k]]
        for i in range(k, len(names)):
            current, (record,) = run_passes(current, [make_pass(names[i], options)])
            before = records[-1].origin if records else identity(model)
            records = (*records, dataclasses.replace(record, origin=compose(before, record.origin)))
            done[names[: i + 1]] = (current, records)
        kinds, clobber = alias_options(names, bool(options.get("clobber_inputs", False)))
        origin = records[-1].origin if records else identity(current)
        if not any(r.changed for r in records):  # the model as given, itself
            current = model
        out.append(Rewrite(current, records, kinds, clobber, origin))
    return out


def candidates(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The pass lists to compare for ``names``, in the order ties are broken (the
    first wins): without cascade (stock kernels only), then without bands, then
    ``names`` itself. A list without cascade is ``[names]``."""
    if "cascade" not in names:
        return [names]
    plain = tuple(n for n in names if n != "cascade")
    no_bands = tuple(n for n in names if n != "bands")
    out: list[tuple[str, ...]] = []
    for c in (plain, no_bands, names):
        if c not in out:
            out.append(c)
    return out


def fit_figure(model: Model, plan: Plan, profile: Profile, head_only: bool) -> int:
    """What ``fit`` bounds and the chooser compares: the head alone, or the smallest
    arena TFLM needs for it (head + tail, and TFLM's planning room)."""
    if head_only:
        return plan.arena
    n_planned = len(plan.tensors) + len(plan.scratch)
    runtime = runtime_of(plan.kernels)
    return runtime.min_arena(model, plan.arena, n_planned, profile, plan.kernels).bytes


def check_fit(
    fit: int,
    model: Model,
    plan: Plan,
    profile: Profile,
    head_only: bool,
    records: Sequence[PassRecord] = (),
) -> None:
    """``--fit``: the planned arena (head + tail for ``profile``, or the head alone when
    the persistent part lives elsewhere) must be at most ``fit`` bytes. Else the
    error gives the figure in parts (head, its kernel scratch, tail) and the limit the
    bands pass met (``records``: the passes that ran)."""
    scratch = _scratch_peak(plan)
    head = f"head {plan.arena:,} B (kernel scratch {scratch:,} B of it)"
    figure = fit_figure(model, plan, profile, head_only)
    if head_only:
        what = head
    else:
        tail = runtime_of(plan.kernels).tail(model, profile, plan.kernels).bytes

        what = f"{head} + tail {tail:,} B"
        if figure > plan.arena + tail:
            what += f" + {figure - plan.arena - tail:,} B TFLM needs while it plans"
        what = f"arena, {what}, profile {profile}"
    if figure <= fit:
        return
    raise ArenaplanError(
        f"--fit {fit:,} B: the smallest {what}, is {figure:,} B; {_limit(records)}; "
        "fit a larger size"
    )


def _scratch_peak(plan: Plan) -> int:
    """The most kernel scratch bytes live in one scope of ``plan``."""
    scopes = {s.first for s in plan.scratch}
    return max(
        (sum(s.size for s in plan.scratch if s.first <= k <= s.last) for k in scopes), default=0
    )


def _limit(records: Sequence[PassRecord]) -> str:
    """What stopped the bands pass short of the size, in words."""
    if not records:
        return "the plan is of the model as given (no pass ran, or TFLM did not prove one)"
    cascade = next((r for r in records if r.name == "cascade"), None)
    if cascade is not None and cascade.stats.get("stopped") == "tail":
        return f"the cascades leave TFLM's persistent tail alone at {cascade.stats['tail']:,} B"
    if cascade is not None and cascade.stats.get("stopped") == "operator":
        return f"the cascades stop at {cascade.stats['blocker']}"
    bands = next((r for r in records if r.name == "bands"), None)
    if bands is None:
        return "the bands pass did not run (it is the pass that lowers the peak)"
    stats = bands.stats
    cap = f"{stats.get('budget_percent', 0):g}% of the model's MACs"
    used = f"+{stats.get('extra_macs_percent', 0):g}% MACs used"
    cap_words = f"{stats.get('budget_percent', 0):g}%"
    stopped = stats.get("stopped")
    if stopped == "tail":
        return (
            f"more bands lower the head, but the tail grows by more (every band adds "
            f"operators and tensors to TFLM's persistent data); {used} of the {cap_words} allowed"
        )
    if stopped == "fit":
        return (
            f"the bands' estimate reached {stats.get('score_after', 0):,} B, the plan did "
            "not (its head or TFLM's planning room is above the estimate)"
        )
    if stopped == "macs":
        return f"the bands that could lower it further cost more extra MACs than the {cap} allowed"
    return (
        "no band of a chain through the peak lowers the head further (the bands pass "
        f"stopped there, {used} of the {cap_words} allowed)"
    )
