"""Kernel scratch requests of TFLM's kernels (``RequestScratchBufferInArena``).

The rules of the reference kernels are those of ``tflm-arena-reference.md`` section
A2: what each kernel's Prepare asks for, in order, in bytes (unaligned; TFLM rounds
each up to 16). With ``kernels`` a CMSIS-NN variant (``tflm.kernel_sets``), the
operators CMSIS-NN implements follow ``tflm.cmsis_nn`` instead. Requests are
listed in TFLM's request order: subgraphs in index order, operators in order, each
operator's requests in the order its Prepare makes them. Compressed weights
(``USE_TFLM_COMPRESSION`` builds) are not modelled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from arenaplan.errors import ModelFormatError
from arenaplan.ir.custom import int_option
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.tflm import cmsis_nn
from arenaplan.tflm.kernel_sets import REFERENCE, cmsis_features
from arenaplan.tflm.sizes import TensorBytes
from arenaplan.tflm.tail_rules import OpView, Unmodelled

MAX_REQUESTS_PER_OP = 12  # kMaxScratchBuffersPerOp
HOST_POINTER_SIZE = 8  # bytes; 4 on a 32-bit MCU


@dataclass(frozen=True, slots=True)
class ScratchRequest:
    """One scratch request: ``bytes`` unaligned, made by operator ``op`` of ``subgraph``."""

    subgraph: int
    op: int
    order: int  # position among all requests (TFLM's request order)
    bytes: int


@dataclass(frozen=True, slots=True)
class _Ctx:
    sg: Subgraph
    op: Operator
    sizes: tuple[int, ...]
    pointer_size: int

    def t(self, k: int):  # the k-th input tensor (None if omitted)
        return self.sg.operand(self.op, k)

    def out(self, k: int = 0):
        return self.sg.tensors[self.op.outputs[k]]

    def elems(self, tensor) -> int:
        return self.sizes[tensor.index] // tensor.dtype.itemsize if tensor else 0

    def custom(self, key: str) -> int:
        return int_option(self.op, key)

    def view(self) -> OpView:
        """The operator as the CMSIS-NN rules read it."""
        return OpView(self.sg, self.op, self.sizes, {}, self.pointer_size)


def _int4_filter(ctx: _Ctx) -> list[int]:
    f = ctx.t(1)
    return [f.elements] if f is not None and f.dtype is DType.INT4 else []


def _svdf(ctx: _Ctx) -> list[int]:
    return cmsis_nn.svdf_scratch(ctx.t(0), ctx.t(1), ctx.op)


def _lstm(ctx: _Ctx) -> list[int]:
    x, out_state, cell = ctx.t(0), ctx.t(18), ctx.t(19)
    batch = x.shape[1] if ctx.op.options.get("time_major") else x.shape[0]
    size = batch * out_state.shape[1] * cell.dtype.itemsize
    return [size] * 4


def _transpose_conv(ctx: _Ctx) -> list[int]:
    x, bias, out = ctx.t(2), ctx.t(3), ctx.out()
    if x.dtype is DType.INT8:
        return [4 * ctx.elems(out)]
    if x.dtype is DType.INT16:
        extra = [8 * bias.elements] if bias is not None and bias.dtype is DType.INT16 else []
        return [8 * ctx.elems(out), *extra]
    return []


def _mean_sum(ctx: _Ctx) -> list[int]:
    x, axis = ctx.t(0), ctx.t(1)
    tail = [4 * len(x.shape), 4 * axis.elements]
    if x.dtype in (DType.INT8, DType.INT16):
        return [4 * ctx.elems(ctx.out()), *tail]
    return tail


def _reduce_other(ctx: _Ctx) -> list[int]:
    return [4 * len(ctx.t(0).shape), 4 * ctx.t(1).elements]


def _add_n(ctx: _Ctx) -> list[int]:
    if ctx.t(0).dtype in (DType.FLOAT32, DType.INT8):
        return [ctx.pointer_size * len(ctx.op.inputs)]
    return []


def _mirror_pad(ctx: _Ctx) -> list[int]:
    return [4 * len(ctx.t(0).shape)] * 2


def _detection_postprocess(ctx: _Ctx) -> list[int]:
    boxes, scores = ctx.t(0), ctx.t(1)
    n, d = boxes.shape[1], ctx.custom("max_detections")
    c = ctx.custom("num_classes")
    return [
        n,
        16 * n,
        4 * scores.shape[1] * scores.shape[2],
        4 * n,
        4 * n,
        4 * d * n,
        4 * d * n,
        4 * n,
        4 * d * n,
        4 * max(c, d) * n,
        4 * min(n, d) * n,
    ]


def _rfft(ctx: _Ctx) -> list[int]:
    width = 2 if ctx.t(0).dtype is DType.INT16 else 4
    return [ctx.custom("fft_length") * width]


_RULES: dict[str, Callable[[_Ctx], list[int]]] = {
    "CONV_2D": _int4_filter,
    "DEPTHWISE_CONV_2D": _int4_filter,
    "FULLY_CONNECTED": _int4_filter,
    "SVDF": _svdf,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _lstm,
    "TRANSPOSE_CONV": _transpose_conv,
    "MEAN": _mean_sum,
    "SUM": _mean_sum,
    "REDUCE_MAX": _reduce_other,
    "REDUCE_MIN": _reduce_other,
    "REDUCE_ALL": _reduce_other,
    "ADD_N": _add_n,
    "MIRROR_PAD": _mirror_pad,
    "TFLite_Detection_PostProcess": _detection_postprocess,
    "SignalRfft": _rfft,
}


def _apply(rule: Callable[[_Ctx], list[int]], ctx: _Ctx) -> list[int]:
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


def _rule_for(op: Operator, features: str | None) -> Callable[[_Ctx], list[int]] | None:
    """The rule of ``op``'s kernel: CMSIS-NN's when the build runs one for it."""
    if features is not None and not op.is_custom:
        cmsis = cmsis_nn.scratch_rule(features, op.opcode)
        if cmsis is not None:
            return lambda ctx: cmsis(ctx.view())
    return _RULES.get(op.opcode)


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
            ctx = _Ctx(sg, op, sizes[sg.index], pointer_size)
            for nbytes in _apply(rule, ctx)[:MAX_REQUESTS_PER_OP]:
                requests.append(ScratchRequest(sg.index, op.index, len(requests), nbytes))
    return tuple(requests)
