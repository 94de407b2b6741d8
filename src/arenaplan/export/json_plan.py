"""The plan as JSON: stable keys, sorted order, byte-identical for the same input."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from arenaplan import __version__
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.runtime.registry import runtime_of

FORMAT_VERSION = 1


def plan_to_dict(
    model: Model,
    plan: Plan,
    source: str,
    memory_of: Mapping[tuple[int, int], str] | None = None,
    refusals: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything a tool needs to reproduce or inspect the plan. Units: bytes, scopes.

    ``memory_of``: for a plan spread over several memories, each tensor's memory
    ((subgraph, index) -> name); each tensor then records it as ``memory``.
    ``refusals``: why TFLM's reference kernels will refuse the model (predicted),
    recorded as ``tflm_refuses`` (empty: no known reason).
    """
    return {
        "format": "arenaplan-plan",
        "format_version": FORMAT_VERSION,
        "arenaplan_version": __version__,
        "model": source,
        "kernels": str(plan.kernels),
        "arena": {
            "size": plan.arena,
            "lower_bound": plan.lower_bound,
            "tensor_lower_bound": plan.tensor_lower_bound,
            "alignment": plan.alignment,
            "optimal": plan.optimal,
            "tflm_greedy": plan.tflm_greedy,
            "allocator": plan.allocator,
            "strategy": plan.strategy,
        },
        "tensors": [
            {
                "subgraph": t.subgraph,
                "index": t.index,
                "name": t.name,
                "bytes": t.bytes,
                "size": t.size,
                "offset": t.offset,
                "first": t.first,
                "last": t.last,
                **({"memory": memory_of[(t.subgraph, t.index)]} if memory_of else {}),
            }
            for t in plan.tensors
        ],
        "scratch": [
            {
                "subgraph": s.subgraph,
                "operator": s.op,
                "request": s.order,
                "bytes": s.bytes,
                "size": s.size,
                "offset": s.offset,
                "first": s.first,
                "last": s.last,
            }
            for s in plan.scratch
        ],
        "aliases": [
            {
                "kind": a.kind,
                "subgraph": a.subgraph,
                "operator": a.op,
                "tensor": a.tensor,
                "base": a.base,
                "delta": a.delta,
            }
            for a in plan.aliases
        ],
        "clobber_inputs": plan.clobber_inputs,
        "persistent": persistent_figures(model, plan),
        "tflm_refuses": list(refusals),
        "offline_offsets": list(plan.tensor_offsets),
        "operators": model.operator_count,
        "tensor_count": model.tensor_count,
    }


def persistent_figures(model: Model, plan: Plan) -> dict[str, dict[str, Any]]:
    """Per build profile of the plan's runtime, running the kernels the plan was made
    for: the predicted tail and the smallest working arena, and whether both are exact
    (``not_modelled`` lists what they leave out if not)."""
    n_planned = len(plan.tensors) + len(plan.scratch)
    runtime = runtime_of(plan.kernels)
    figures = {}
    for profile in runtime.profiles():
        tail = runtime.tail(model, profile, plan.kernels)
        arena = runtime.min_arena(model, plan.arena, n_planned, profile, plan.kernels)
        figures[profile.name] = {
            "tail": tail.bytes,
            "min_arena": arena.bytes,
            "exact": arena.exact,
            "not_modelled": list(arena.unmodelled),
        }
    return figures


def plan_to_json(
    model: Model,
    plan: Plan,
    source: str,
    memory_of: Mapping[tuple[int, int], str] | None = None,
    refusals: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> str:
    """The JSON text; ``extra``: more top-level keys (``passes``, ``proof``)."""
    data = plan_to_dict(model, plan, source, memory_of, refusals) | dict(extra or {})
    return json.dumps(data, indent=2) + "\n"
