"""Validate a plan against its model before anything is written.

Independent of the allocators: it re-derives which tensors TFLM plans and their
lifetimes from the model, then checks that every one has an offset, that offsets
are multiples of 16, that nothing TFLM must own (constants, variables) is given
one, that nothing overlaps in time and space, and that all fits in the arena.
"""

from __future__ import annotations

from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.validate import solution_problems
from arenaplan.analysis.lifetimes import compute_lifetimes
from arenaplan.analysis.sizes import tensor_bytes
from arenaplan.errors import PlanValidationError
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model
from arenaplan.placement.plan import TFLM_ALIGNMENT, Plan


def plan_problems(model: Model, plan: Plan) -> list[str]:
    """Every violation, each naming the tensor or scratch buffer and the step."""
    found: list[str] = []
    if len(plan.offline_offsets) != model.tensor_count:
        return [
            f"offline plan has {len(plan.offline_offsets)} offsets, "
            f"the model has {model.tensor_count} tensors"
        ]
    sizes = tensor_bytes(model)
    lt = compute_lifetimes(model)
    buffers: list[Buffer] = []
    offsets: list[int | None] = []
    k = 0
    for sg in model.subgraphs:
        for t in sg.tensors:
            off = plan.offline_offsets[k]
            k += 1
            label = f"tensor {t.index} {t.name!r} (subgraph {sg.index})"
            owned = t.is_constant or t.is_variable or t.dtype is DType.RESOURCE
            if owned or sizes[sg.index][t.index] == 0:
                if off != -1:
                    why = (
                        "a constant"
                        if t.is_constant
                        else "a variable"
                        if t.is_variable
                        else "a resource handle"
                        if t.dtype is DType.RESOURCE
                        else "empty"
                    )
                    found.append(f"{label} is {why} but has offset {off}; it must be -1")
                continue
            life = lt.tensors[sg.index][t.index]
            size = -(-sizes[sg.index][t.index] // TFLM_ALIGNMENT) * TFLM_ALIGNMENT
            buffers.append(Buffer(label, life.first, life.last, size, TFLM_ALIGNMENT))
            offsets.append(None if off < 0 else off)
    for sc in plan.scratch:
        span = lt.operators[sc.subgraph][sc.op]
        buffers.append(
            Buffer(
                f"scratch {sc.order} of operator {sc.op} (subgraph {sc.subgraph})",
                span[0],
                span[1],
                sc.size,
                TFLM_ALIGNMENT,
            )
        )
        offsets.append(sc.offset)
    found.extend(solution_problems(Problem(tuple(buffers), plan.arena), offsets))
    return found


def check_plan(model: Model, plan: Plan) -> None:
    found = plan_problems(model, plan)
    if found:
        raise PlanValidationError(found)
