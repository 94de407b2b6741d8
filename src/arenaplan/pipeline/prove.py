"""Proving a planned model in its runtime before anything is written.

``with_proof`` writes the plan into the model's bytes (read back and compared) and,
when the model or its aliasing differs from the model as given, runs the runtime's
proof. ``passed_over`` says what a proof that does not stand means: the next try
(a rewrite, or copies nothing here can run), or an error (copies that fail, or a
model the runtime refuses).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from arenaplan.errors import ModelFormatError, PlanValidationError, TflmRefusesError, UsageError
from arenaplan.export.tflite_writer import write_model
from arenaplan.placement.tiers import region_bases
from arenaplan.reader import read_model_bytes
from arenaplan.runtime.registry import runtime_of
from arenaplan.weights.outputs import tflm_head

if TYPE_CHECKING:
    from arenaplan.ir.model import Model
    from arenaplan.pipeline.request import Planned, PlanRequest
    from arenaplan.placement.plan import Plan
    from arenaplan.runtime.proof import Proof


def planned_model_bytes(
    data: bytes, model: Model, plan: Plan, regions: Sequence[int] = (), rewritten: bool = False
) -> bytes:
    """The model with the plan written in as its runtime takes it (TFLM: the offline
    plan metadata; ``regions``: where each memory's region starts in a plan spread
    over memories, for a runtime with a pool per memory), checked by reading it back
    (a model arenaplan wrote that does not read back is arenaplan's bug, exit 70).
    ``rewritten``: ``model`` is a pass's rewrite of the model ``data`` holds (a
    ``.tflite`` is written anew by arenaplan's writer; another format by its runtime)."""
    runtime = runtime_of(plan.kernels)
    regions = tuple(regions) if len(regions) > 1 and runtime.pools_per_memory else ()
    pools = max(len(regions), 1)
    if not rewritten:
        out = runtime.write_plan(data, plan.tensor_offsets, regions)
    elif model.file_format == "tflite":
        out = runtime.write_plan(write_model(model), plan.tensor_offsets, regions)
    else:
        out = runtime.write_rewrite(data, model, plan.tensor_offsets, regions)
    try:
        again = read_model_bytes(out)
    except ModelFormatError as exc:
        raise PlanValidationError([f"the written model does not read back: {exc}"]) from None
    stored = runtime.read_plan(again, pools)
    if again.subgraphs != model.subgraphs or stored != plan.tensor_offsets:
        raise PlanValidationError(
            ["the written model does not read back as the input plus the plan"]
        )
    return out


def with_proof(request: PlanRequest, done: Planned) -> Planned:
    """``done`` with its bytes (the input's own when the model is the model as given)
    and, when the model or its aliasing differs from the model as given, the proof of
    its runtime (None: nothing to prove)."""
    data = request.source.data
    changed = done.model is not request.source.model
    plan = done.plan
    planned = planned_model_bytes(data, done.model, plan, _regions(request, done), changed)
    if not changed and not plan.aliases:
        return replace(done, planned=planned)
    runtime = runtime_of(plan.kernels)
    own = runtime.uses_own_kernels(done.model)
    # the head the runtime reaches: a weights plan's staging buffers are not its own
    head = tflm_head(plan) if done.weights is not None else plan.arena
    proof = runtime.prove(data, planned, head, plan.kernels, own)
    return replace(done, planned=planned, proof=proof)


def _regions(request: PlanRequest, done: Planned) -> tuple[int, ...]:
    """Where each memory holding activations starts in the head of a plan spread
    over memories (bytes, fastest first; empty when not spread)."""
    tiers, target = done.tiers, request.target
    if tiers is None or target is None:
        return ()
    names = [m.name for m in target.memories if m.name in tiers.heights]
    bases = region_bases(tiers, names)
    return tuple(bases[n] for n in names if tiers.heights[n] > 0)


def passed_over(done: Planned, proof: Proof, next_weights: bool, next_rewrite: bool) -> str:
    """The line that says why the try ``done`` (whose ``proof`` does not stand) gives
    way to the next (with weights, ``next_weights``; a rewrite, ``next_rewrite``).
    Weight copies on the model as given give way only when nothing here can run
    their proof: copies that fail it are an error, and so is a model the runtime
    refuses (exit 3, with the reason the proof gives)."""
    title = runtime_of(done.plan.kernels).title
    rw = done.rewrite
    if rw is not None and (rw.changed or done.plan.aliases):
        names = ",".join(r.name for r in rw.records)
        if next_rewrite:
            then = "the next best rewrite"
        else:
            then = "the weights of the model as it is" if next_weights else "the model as it is"
        why = f"is not proven in {title} ({proof.reason})"
        return f"arenaplan: the rewrite ({names}) {why}; planned {then}"
    if proof.refused:
        raise TflmRefusesError(f"the weight copies cannot be proven: {proof.reason}")
    if not proof.unavailable:
        raise UsageError(
            f"the model with its weight copies is not proven in {title}: {proof.reason}"
        )
    return (
        f"arenaplan: the weight copies cannot be proven here ({proof.reason}); planned the "
        "model as given, without --weights (--write-unproven writes them unproven)"
    )
