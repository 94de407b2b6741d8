"""Kernel scratch requests of TFLM's kernels (``RequestScratchBufferInArena``).

The rules of the reference kernels are those of ``tflm-arena-reference.md`` section
A2: what each kernel's Prepare asks for, in order, in bytes (unaligned; TFLM rounds
each up to 16), each stated in its family module of ``tflm.kernels``. With
``kernels`` a CMSIS-NN variant (``tflm.kernel_sets``), the operators CMSIS-NN
implements follow ``tflm.cmsis_nn`` instead. Requests are
listed in TFLM's request order: subgraphs in index order, operators in order, each
operator's requests in the order its Prepare makes them. Compressed weights
(``USE_TFLM_COMPRESSION`` builds) are not modelled.
"""

from __future__ import annotations

from arenaplan.errors import ModelFormatError
from arenaplan.ir.model import Model, Operator
from arenaplan.runtime.records import ScratchRequest, TensorBytes
from arenaplan.tflm import cmsis_nn
from arenaplan.tflm import kernels as families
from arenaplan.tflm.facts import ScratchRule, ScratchView, Unmodelled
from arenaplan.tflm.kernel_sets import REFERENCE, cmsis_features

MAX_REQUESTS_PER_OP = 12  # kMaxScratchBuffersPerOp
HOST_POINTER_SIZE = 8  # bytes; 4 on a 32-bit MCU


# The reference kernels' scratch rules, by schema name or custom code (``tflm.kernels``).
RULES: dict[str, ScratchRule] = {
    name: kernel.scratch
    for table in (families.BUILTIN, families.CUSTOM)
    for name, kernel in table.items()
    if kernel.scratch is not None
}


def _apply(rule: ScratchRule, ctx: ScratchView) -> list[int]:
    """A rule's requests; an operator the rule cannot read is a corrupt model (the
    signatures of ``ir.signatures`` rule most of these out before we get here)."""
    try:
        sizes = rule(ctx)
    except (IndexError, KeyError, TypeError, AttributeError, ValueError, Unmodelled) as exc:
        raise ModelFormatError(
            f"corrupt model: subgraph {ctx.sg.index} operator {ctx.op.index} "
            f"{ctx.op.opcode}: its tensors are not what the kernel expects ({exc})"
        ) from None
    if any(n < 0 for n in sizes):
        raise ModelFormatError(
            f"corrupt model: subgraph {ctx.sg.index} operator {ctx.op.index} "
            f"{ctx.op.opcode}: a scratch size comes out negative"
        )
    return sizes


def _rule_for(op: Operator, features: str | None) -> ScratchRule | None:
    """The rule of ``op``'s kernel: CMSIS-NN's when the build runs one for it."""
    if features is not None:
        if op.is_custom:
            cmsis = cmsis_nn.custom_scratch_rule(features, op.opcode)
        else:
            cmsis = cmsis_nn.scratch_rule(features, op.opcode)
        if cmsis is not None:
            return lambda ctx: cmsis(ctx.view())
    return RULES.get(op.opcode)


def scratch_requests(
    model: Model,
    sizes: TensorBytes,
    pointer_size: int = HOST_POINTER_SIZE,
    kernels: str = REFERENCE,
) -> tuple[ScratchRequest, ...]:
    """Every scratch request of every operator, in TFLM's request order, for a
    build running ``kernels`` (``tflm.kernel_sets.KERNELS``)."""
    features = cmsis_features(kernels)
    requests: list[ScratchRequest] = []
    for sg in model.subgraphs:
        for op in sg.operators:
            rule = _rule_for(op, features)
            if rule is None:
                continue
            ctx = ScratchView(sg, op, sizes[sg.index], pointer_size)
            for nbytes in _apply(rule, ctx)[:MAX_REQUESTS_PER_OP]:
                requests.append(ScratchRequest(sg.index, op.index, len(requests), nbytes))
    return tuple(requests)
