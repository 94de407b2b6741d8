"""Render the outputs a request asks for, in memory: the planned model, the JSON plan,
the picture, the C/C++ header, the planner C++, the weights blob and fetch schedule,
the HTML report. Each is bytes in ``PlanResult.files`` under its ``Wanted`` field
name, in the order they are written; nothing touches the file system here."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from arenaplan.errors import PlanValidationError, UsageError
from arenaplan.export.figures import (
    POOLS,
    SPLIT,
    TWO,
    Figures,
    figures_json,
    persistent_of,
    placed_in,
)
from arenaplan.export.json_plan import plan_to_json
from arenaplan.export.picture import render as render_picture
from arenaplan.export.picture import render_memories
from arenaplan.export.report import html_report
from arenaplan.passes.base import by_operator
from arenaplan.pipeline.request import PlanRequest, PlanResult, Wanted
from arenaplan.placement.memories import memory_regions
from arenaplan.placement.tiers import place_tiers
from arenaplan.runtime.registry import runtime_of
from arenaplan.weights.outputs import fetch_schedule, staged_blob, weights_json

if TYPE_CHECKING:
    from arenaplan.weights.blob import WeightsBlob
    from arenaplan.weights.plan import WeightsPlan

# Each renderer is imported where its output is asked for: a plan with -o alone
# imports none of them.


def render(request: PlanRequest, done: PlanResult) -> PlanResult:
    """``done`` with the files of ``request.outputs`` (and the weights blob they use)."""
    wanted = request.outputs or Wanted()
    model, plan, tiers, target = done.model, done.plan, done.tiers, request.target
    where = tiers.memory_of if tiers else None  # each tensor's memory, when spread
    regions = memory_regions(target, request.caps, plan, tiers) if tiers and target else None
    persistent = _persistent(done.figures)
    files: dict[str, bytes] = {}
    if wanted.model:
        files["model"] = done.planned
    needs_blob = wanted.json or wanted.weights_blob or wanted.schedule
    blob = _blob(done.weights) if done.weights is not None and needs_blob else None

    name = done.source.name
    if wanted.json:
        extra = _extra_json(done, blob) | {"firmware": figures_json(done.figures)}
        text = plan_to_json(model, plan, name, where, done.refusals, extra)
        files["json"] = text.encode()
    if wanted.picture is not None:
        files["picture"] = _picture(done, wanted.picture, regions, persistent, request)
    if wanted.header:
        files["header"] = _header(request, done, done.figures).encode()
    if wanted.planner_cpp and target is not None:
        placement = tiers or place_tiers(model, target, request.caps, kernels=plan.kernels)
        home = persistent_of(done.figures.arrays)  # where the figures put TFLM's tail
        runtime = runtime_of(plan.kernels)
        source = runtime.planner_source(model, placement, target, name, done.profile, home)
        files["planner_cpp"] = source.encode()
    if done.weights is not None and blob is not None:
        if wanted.weights_blob:
            files["weights_blob"] = blob.data
        if wanted.schedule:
            files["schedule"] = fetch_schedule(done.weights, blob, name).encode()
    if wanted.report:
        refusal = "; ".join(done.refusals) or None
        origin, rewritten = _origin(done)
        report = html_report(
            model,
            plan,
            name,
            target,
            where,
            regions,
            refusal=refusal,
            persistent=persistent,
            weights=done.weights,
            figures=done.figures,
            origin=origin,
            rewritten=rewritten,
            effect=done.effect,
        )
        files["report"] = report.encode()
    return replace(done, blob=blob, files=files)


def _persistent(figures: Figures) -> tuple[str | None, int]:
    """Where the pictures draw TFLM's tail: (memory, or None for beside the head; bytes)."""
    last = figures.arrays[-1]
    memory = last.memory if figures.layout in (TWO, SPLIT, POOLS) else None
    return memory, figures.tail


def _picture(
    done: PlanResult,
    fmt: str,
    regions: list | None,
    persistent: tuple[str | None, int],
    request: PlanRequest,
) -> bytes:

    title = f"arena plan: {done.source.name}"
    if regions:
        return render_memories(done.plan, regions, title, fmt, persistent=persistent)
    target = request.target
    memory = target.fastest().name if target else None
    tflm_planner = not done.refusals
    return render_picture(
        done.plan, title, fmt, persistent=persistent, memory=memory, tflm_planner=tflm_planner
    )


def _header(request: PlanRequest, done: PlanResult, figures: Figures) -> str:
    """The arena header: one arena, or two when TFLM's tail goes to another memory;
    a split arena is ``--planner-cpp``'s to write."""
    target, tiers = request.target, done.tiers
    arena_section, persistent_section, head = "", None, None
    runtime = runtime_of(done.plan.kernels)
    if figures.layout == POOLS:  # each pool's section, then the persistent part's
        sections = tuple(
            target.memory(placed_in(a)).section if target else "" for a in figures.arrays
        )
        return runtime.header(
            done.model, done.plan, done.source.name, done.profile, sections, None, done.planned
        )
    if target is not None:
        if figures.layout == SPLIT:
            home = figures.arrays[-1].memory
            raise UsageError(
                f"--header: the plan runs from the split arena (TFLM's persistent data and "
                f"temporaries in {home}, apart from the activations): an arena header cannot "
                "hold that; "
                "write --planner-cpp planner.h and define ARENAPLAN_SPLIT_ARENA (its arrays "
                "and arenaplan::CreateAllocator() run it on stock TFLM), or give the fastest "
                "memory room for the persistent arena (--memory)"
            )
        arena_section = target.memory(placed_in(figures.arrays[0])).section
        if figures.layout == TWO:
            persistent_section = target.memory(placed_in(figures.arrays[-1])).section
        if tiers is not None:
            head = tiers.heights[target.fastest().name]
    return runtime_of(done.plan.kernels).header(
        done.model,
        done.plan,
        done.source.name,
        done.profile,
        (arena_section, persistent_section),
        head,
        done.planned,
    )


def _blob(wp: WeightsPlan) -> WeightsBlob:
    return staged_blob(wp)


def _origin(done: PlanResult) -> tuple[dict[tuple[int, int], int | None] | None, str]:
    """For the report: where each operator of the model planned came from in the model
    as given, by (subgraph, operator), or None when they are its own; and what changed
    them, in words."""
    if done.origin is None:
        return None, ""

    records = done.rewrite.records if done.rewrite else ()
    names = [r.name for r in records if r.changed]
    what = [f"pass{'es' if len(names) > 1 else ''} {', '.join(names)}"] if names else []
    if done.weights is not None and None in done.weights.origin:
        what.append("weight copies")
    origin = by_operator(done.model, done.source.model, done.origin)
    return origin, " and ".join(what) or "a rewrite"


def _extra_json(done: PlanResult, blob: WeightsBlob | None) -> dict[str, object]:
    """The JSON's ``passes``, ``proof`` and, with weights, ``weights`` (whose own
    ``proof`` is that of the model with its copies); ``operator_origin`` when a
    rewrite or weight copies changed the operators (``PlanResult.origin``)."""
    records = done.rewrite.records if done.rewrite else ()
    passes = [
        {"name": r.name, "options": r.options, "changed": r.changed, "note": r.note}
        | {"stats": r.stats}
        for r in records
    ]
    proof = done.proof.as_dict() if done.proof else None
    moved = {} if done.origin is None else {"operator_origin": list(done.origin)}
    if done.compared:  # the pass lists planned beside the one kept (best first)
        kept = [r.name for r in records]
        moved["pass_lists"] = [
            {"passes": list(names), "estimate": figure, "kept": list(names) == kept}
            for names, figure in done.compared
        ]
    if done.weights is not None and blob is not None:
        figures = done.figures
        if figures.latency is None:  # a weights plan is for a target, which times it
            raise PlanValidationError(["a weights plan without an estimated latency"])
        baseline = figures.baseline[1] if figures.baseline else None
        weights = weights_json(done.weights, proof, blob, (figures.latency, baseline))
        return {"passes": passes, "proof": None, "weights": weights} | moved
    effect = {"rewrite_effect": done.effect.as_dict()} if done.effect is not None else {}
    return {"passes": passes, "proof": proof} | effect | moved
