"""The ``bands`` pass: compute chains of row-local operators in bands of rows.

Greedy: while the peak of live activation bytes goes down, band the chain (and
number of bands) that lowers it most within what is left of the extra-MAC budget,
ties to fewer extra MACs. Only chains that contain the operator at the peak can
lower it, and only operators the pass has not made are banded again. With
``fit``, budgets grow (1%, 2%, 5%, ... of the model's MACs) until the estimate
reaches ``fit`` bytes: the cheapest found, not proven the cheapest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from arenaplan.analysis.lifetimes import compute_lifetimes
from arenaplan.errors import UsageError
from arenaplan.ir.model import Model
from arenaplan.passes.band_search import (
    chains,
    extra_macs,
    model_macs,
    scope_bytes,
    view_peak,
)
from arenaplan.passes.band_split import Chain, split_chain
from arenaplan.passes.base import PassResult
from arenaplan.tflm.tail import tail_estimate

BAND_COUNTS = (2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24, 32)
FIT_BUDGETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0)  # fractions of the MACs
OBJECTIVES = ("arena", "head")
MAX_CHAIN = 16  # operators; longer chains rarely pay for their halos


@dataclass(frozen=True, slots=True)
class _Step:
    chain: Chain
    bands: int
    extra: int
    peak: int  # live activation bytes, views shared (the head before scratch)
    score: int  # what the search minimises: peak, plus the tail for "arena"
    model: Model


@dataclass(frozen=True, slots=True)
class _Score:
    """``arena``: activations + TFLM's persistent tail under ``profile`` (every new
    operator and tensor costs tail bytes); ``head``: activations alone (when the
    persistent part lives in another memory)."""

    objective: str
    profile: str

    def __call__(self, model: Model, peak: int) -> int:
        if self.objective == "head":
            return peak
        return peak + tail_estimate(model, self.profile).bytes


@dataclass(frozen=True, slots=True)
class Bands:
    """``max_extra_macs``: budget as a fraction of the model's MACs (0.1 = 10%);
    ``fit``: bytes to reach at the least budget (overrides it); ``objective``:
    "arena" (activations + persistent tail, for ``profile``) or "head"."""

    name: ClassVar[str] = "bands"
    summary: ClassVar[str] = (
        "compute chains of convolutions, pools and element-wise operators in bands of "
        "output rows (STRIDED_SLICE, PAD, CONCATENATION: stock TFLM kernels), within "
        "--max-extra-macs, or the least that reaches --fit"
    )
    max_extra_macs: float = 0.10
    fit: int | None = None
    objective: str = "arena"
    profile: str = "arm32"

    def run(self, model: Model) -> PassResult:
        if self.objective not in OBJECTIVES:
            raise UsageError(f"bands: objective must be one of {', '.join(OBJECTIVES)}")
        score = _Score(self.objective, self.profile)
        total = model_macs(model)
        before = view_peak(model)
        if self.fit is None:
            steps = _greedy(model, self.max_extra_macs * total, score)
        else:
            steps = _cheapest_fit(model, total, self.fit, score)
        if not steps:
            what = "activations + tail" if self.objective == "arena" else "activations"
            note = f"no chain to band lowers {what} ({score(model, before):,} B)"
            return PassResult(model, False, note)
        after, extra = steps[-1].peak, sum(s.extra for s in steps)
        added = steps[-1].model.operator_count - model.operator_count
        pct = 100 * extra / total if total else 0.0
        note = (
            f"{len(steps)} chain(s) in bands: activations {before:,} -> {after:,} B, "
            f"+{extra:,} MACs ({pct:.1f}%), +{added} operators"
        )
        stats = {
            "objective": self.objective,
            "score_before": score(model, before),
            "score_after": steps[-1].score,
            "peak_before": before,
            "peak_after": after,
            "extra_macs": extra,
            "extra_macs_percent": round(pct, 2),
            "operators_added": added,
            "chains": "; ".join(_describe(s) for s in steps),
        }
        return PassResult(steps[-1].model, True, note, stats)


def _describe(s: _Step) -> str:
    return f"ops {s.chain.first}-{s.chain.last} in {s.bands} bands"


def _cheapest_fit(model: Model, total: int, fit: int, score: _Score) -> list[_Step]:
    best: list[_Step] = []
    for fraction in FIT_BUDGETS:
        steps = _greedy(model, fraction * total, score, stop_at=fit)
        if steps and (not best or steps[-1].score < best[-1].score):
            best = steps
        if best and best[-1].score <= fit:
            break
    return best


def _greedy(model: Model, budget: float, score: _Score, stop_at: int | None = None) -> list[_Step]:
    steps: list[_Step] = []
    fresh = set(range(len(model.subgraphs[0].operators)))
    spent, current = 0, model
    now = score(model, view_peak(model))
    while stop_at is None or now > stop_at:
        step = _best_step(current, fresh, budget - spent, now, score)
        if step is None:
            break
        old_ops = len(current.subgraphs[0].operators)
        shift = len(step.model.subgraphs[0].operators) - old_ops
        c = step.chain
        fresh = {i for i in fresh if i < c.first} | {i + shift for i in fresh if i > c.last}
        steps.append(step)
        spent, current, now = spent + step.extra, step.model, step.score
    return steps


def _best_step(
    model: Model, fresh: set[int], budget: float, now: int, score: _Score
) -> _Step | None:
    sg = model.subgraphs[0]
    at = _peak_operator(model)
    best: _Step | None = None
    for chain in chains(model, sg, fresh):
        if not chain.first <= at <= chain.last or chain.last - chain.first >= MAX_CHAIN:
            continue
        for bands in BAND_COUNTS:
            if bands > sg.tensors[chain.y].shape[1]:
                break
            extra = extra_macs(model, chain, bands)
            if extra > budget:
                continue
            new = split_chain(model, chain, bands)
            peak = view_peak(new)
            s = score(new, peak)
            if s < now and (best is None or (s, extra) < (best.score, best.extra)):
                best = _Step(chain, bands, extra, peak, s, new)
    return best


def _peak_operator(model: Model) -> int:
    """Index in subgraph 0 of the first operator whose scope has the peak (-1: inputs)."""
    lt = compute_lifetimes(model)
    live = scope_bytes(model)
    scope = int(np.argmax(live))
    for i, (first, last) in enumerate(lt.operators[0]):
        if first <= scope <= last:
            return i
    return -1
