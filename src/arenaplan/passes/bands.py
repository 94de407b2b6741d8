"""The ``bands`` pass: compute chains of row-local operators in bands of rows.

Greedy: while the score goes down (the estimated head: live activations and kernel
scratch at the peak; for the "arena" objective plus TFLM's persistent tail, which
grows with every operator and tensor a band adds), band the chain (and number of
bands) that lowers it most within what is left of the extra-MAC budget, ties to
fewer extra MACs. Only chains that contain the operator at the peak can lower it,
and only operators the pass has not made are banded again. With ``fit``, budgets
grow (1%, 2%, 5%, ... of the model's MACs, up to 400%) until the estimate reaches
``fit`` bytes: the cheapest found, not proven the cheapest.

Why the search stopped is in the stats (``stopped``): "fit" (reached), "tail" (a
band in budget lowers the head, but the tail it adds outweighs that), "macs" (no
band in budget lowers the score and some were not tried for their cost), "chains"
(no band of a chain through the peak lowers it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from arenaplan.errors import UsageError
from arenaplan.ir.model import Model
from arenaplan.passes.band_search import (
    chains,
    extra_macs,
    head_peak,
    model_macs,
    scope_bytes,
    view_peak,
)
from arenaplan.passes.band_split import Chain, split_chain
from arenaplan.passes.base import Origin, PassResult, compose, identity
from arenaplan.runtime.registry import default_kernels, default_profile, runtime_of
from arenaplan.runtime.spec import KernelSet, Profile

BAND_COUNTS = (2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24, 32)
FIT_BUDGETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0)  # fractions of the MACs
OBJECTIVES = ("arena", "head")
MAX_CHAIN = 16  # operators; longer chains rarely pay for their halos


@dataclass(frozen=True, slots=True)
class _Step:
    chain: Chain
    bands: int
    extra: int
    head: int  # estimated head: live activations and kernel scratch, views shared
    score: int  # what the search minimises: the head, plus the tail for "arena"
    model: Model
    origin: Origin  # of ``model`` from the model before this step


@dataclass(frozen=True, slots=True)
class _Score:
    """``arena``: head (activations + kernel scratch of ``kernels``) + TFLM's
    persistent tail under ``profile`` (every new operator and tensor costs tail
    bytes); ``head``: the head alone (when the persistent part lives elsewhere)."""

    objective: str
    profile: Profile
    kernels: KernelSet

    @property
    def align(self) -> int:
        return runtime_of(self.kernels).alignment  # bytes

    def head(self, model: Model) -> int:
        return head_peak(model, self.kernels, self.profile.pointer_bytes)

    def tail(self, model: Model) -> int:
        if self.objective == "head":
            return 0
        return runtime_of(self.kernels).tail(model, self.profile, self.kernels).bytes

    def __call__(self, model: Model, head: int) -> int:
        return head + self.tail(model)

    @property
    def words(self) -> str:
        return "activations + kernel scratch" + (" + tail" if self.objective == "arena" else "")


@dataclass(frozen=True, slots=True)
class _Search:
    """The steps taken and why the search stopped (module docstring: ``stopped``)."""

    steps: list[_Step]
    stopped: str
    budget: float  # extra MACs allowed, a fraction of the model's


@dataclass(frozen=True, slots=True)
class Bands:
    """``max_extra_macs``: budget as a fraction of the model's MACs (0.1 = 10%);
    ``fit``: bytes to reach at the least budget (overrides it); ``objective``:
    "arena" (head + persistent tail, for ``profile``) or "head"; ``kernels``: the
    TFLM kernels whose scratch and tail count."""

    name: ClassVar[str] = "bands"
    summary: ClassVar[str] = (
        "compute chains of convolutions, pools and element-wise operators in bands of "
        "output rows (STRIDED_SLICE, PAD, CONCATENATION: stock TFLM kernels), within "
        "--max-extra-macs, or the least that reaches --fit"
    )
    max_extra_macs: float = 0.10
    fit: int | None = None
    objective: str = "arena"
    profile: Profile = field(default_factory=default_profile)
    kernels: KernelSet = field(default_factory=default_kernels)

    def run(self, model: Model) -> PassResult:
        if self.objective not in OBJECTIVES:
            raise UsageError(f"bands: objective must be one of {', '.join(OBJECTIVES)}")
        score = _Score(self.objective, self.profile, self.kernels)
        total = model_macs(model)
        first = score(model, score.head(model))
        if self.fit is None:
            search = _greedy(model, self.max_extra_macs * total, score)
            search = _Search(search.steps, search.stopped, self.max_extra_macs)
        else:
            search = _cheapest_fit(model, total, self.fit, score)
        why = {"stopped": search.stopped, "budget_percent": round(100 * search.budget, 2)}
        steps = search.steps
        if not steps:
            note = f"no chain to band lowers {score.words} ({first:,} B)"
            if search.stopped == "tail":
                note += ": the bands that lower the head add more tail than they save"
            elif search.stopped == "macs":
                note += f" within {100 * search.budget:g}% extra MACs"
            return PassResult(model, False, note, {"score_before": first, **why})
        before, after = view_peak(model, score.kernels), view_peak(steps[-1].model, score.kernels)
        extra = sum(s.extra for s in steps)
        added = steps[-1].model.operator_count - model.operator_count
        pct = 100 * extra / total if total else 0.0
        note = (
            f"{len(steps)} chain(s) in bands: activations {before:,} -> {after:,} B "
            f"({score.words} {first:,} -> {steps[-1].score:,} B), "
            f"+{extra:,} MACs ({pct:.1f}%), +{added} operators"
        )
        stats = {
            "objective": self.objective,
            "score_before": first,
            "score_after": steps[-1].score,
            "peak_before": before,
            "peak_after": after,
            "head_after": steps[-1].head,
            "tail_after": score.tail(steps[-1].model),
            "extra_macs": extra,
            "extra_macs_percent": round(pct, 2),
            "operators_added": added,
            "chains": "; ".join(_describe(s) for s in steps),
            **why,
        }
        origin = identity(model)
        for step in steps:
            origin = compose(origin, step.origin)
        return PassResult(steps[-1].model, True, note, stats, origin)


def _describe(s: _Step) -> str:
    return f"ops {s.chain.first}-{s.chain.last} in {s.bands} bands"


def _cheapest_fit(model: Model, total: int, fit: int, score: _Score) -> _Search:
    """The steps of the least budget that reaches ``fit``; else the lowest score
    found, and why the search stopped at the largest budget."""
    best: list[_Step] = []
    stopped = "chains"
    for fraction in FIT_BUDGETS:
        found = _greedy(model, fraction * total, score, stop_at=fit)
        if found.stopped == "fit":
            return _Search(found.steps, "fit", fraction)
        if found.steps and (not best or found.steps[-1].score < best[-1].score):
            best = found.steps
        stopped = found.stopped
    return _Search(best, stopped, FIT_BUDGETS[-1])


def _greedy(model: Model, budget: float, score: _Score, stop_at: int | None = None) -> _Search:
    steps: list[_Step] = []
    fresh = set(range(len(model.subgraphs[0].operators)))
    spent, current = 0, model
    now = score(model, score.head(model))
    stopped = "fit"
    while stop_at is None or now > stop_at:
        step, stopped = _best_step(current, fresh, budget - spent, now, score)
        if step is None:
            break
        old_ops = len(current.subgraphs[0].operators)
        shift = len(step.model.subgraphs[0].operators) - old_ops
        c = step.chain
        fresh = {i for i in fresh if i < c.first} | {i + shift for i in fresh if i > c.last}
        steps.append(step)
        spent, current, now = spent + step.extra, step.model, step.score
    return _Search(steps, stopped, budget)


def _best_step(
    model: Model, fresh: set[int], budget: float, now: int, score: _Score
) -> tuple[_Step | None, str]:
    """The band that lowers the score most, and (when there is none) why: "tail",
    "macs" or "chains" as in the module docstring."""
    sg = model.subgraphs[0]
    at = _peak_operator(model, score.kernels)
    head_now = now - score.tail(model)
    best: _Step | None = None
    over_budget = lower_head = False
    for chain in chains(model, sg, fresh):
        if not chain.first <= at <= chain.last or chain.last - chain.first >= MAX_CHAIN:
            continue
        for bands in BAND_COUNTS:
            if bands > sg.tensors[chain.y].shape[1]:
                break
            extra = extra_macs(model, chain, bands, score.align)
            if extra > budget:
                over_budget = True
                continue
            new, origin = split_chain(model, chain, bands, score.align)
            head = score.head(new)
            s = score(new, head)
            lower_head = lower_head or head < head_now
            if s < now and (best is None or (s, extra) < (best.score, best.extra)):
                best = _Step(chain, bands, extra, head, s, new, origin)
    if best is not None:
        return best, "fit"
    return None, "tail" if lower_head else "macs" if over_budget else "chains"


def _peak_operator(model: Model, kernels: KernelSet) -> int:
    """Index in subgraph 0 of the first operator whose scope has the peak (-1: inputs)."""
    lt = runtime_of(kernels).lifetimes(model)
    live = scope_bytes(model, kernels=kernels)

    scope = int(np.argmax(live))
    for i, (first, last) in enumerate(lt.operators[0]):
        if first <= scope <= last:
            return i
    return -1
