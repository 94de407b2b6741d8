"""Allocations several reference kernels make alike.

Sources: tensorflow/lite/micro/kernels/kernel_util.cc (CreateWritableTensorDimsWithCopy),
tensorflow/lite/micro/kernels/conv_common.cc,
tensorflow/lite/micro/kernels/depthwise_conv_common.cc,
tensorflow/lite/micro/kernels/fully_connected.cc (the int4 filter's scratch request).
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Tensor
from arenaplan.tflm.facts import Allocations, OpView, ScratchView, Unmodelled


def dims_bytes(t: Tensor | None) -> int:
    """Bytes of a TfLiteIntArray holding ``t``'s dims: 4 + 4 per dim."""
    return 4 + 4 * (len(t.shape) if t is not None else 0)


def per_channel(axis: int) -> Allocations:
    """ConvPrepare / DepthwiseConvPrepare / TransposeConvPrepare: per-channel output
    multiplier and shift, ``4 * filter.dims[axis]`` each, for every dtype."""

    def rule(v: OpView) -> list[int]:
        f = v.input(1)
        if f is None or len(f.shape) <= axis:
            raise Unmodelled("no 4-d filter")
        return [4 * f.shape[axis]] * 2

    return rule


def writable_output_dims(v: OpView) -> list[int]:
    """CreateWritableTensorDimsWithCopy on the output (GATHER, GATHER_ND,
    SPACE_TO_DEPTH, DEPTH_TO_SPACE, L2_POOL_2D)."""
    return [dims_bytes(v.output())]


def if_int8(state: str) -> Allocations:
    """An OpData that Prepare allocates only on the int8 path (ADD_N, CUMSUM,
    LOG_SOFTMAX)."""

    def rule(v: OpView) -> list[int]:
        out = v.output()
        return [v.state[state]] if out is not None and out.dtype is DType.INT8 else []

    return rule


def int4_filter(ctx: ScratchView) -> list[int]:
    """An int4 filter is unpacked into a scratch buffer of one byte per element."""
    f = ctx.t(1)
    return [f.elements] if f is not None and f.dtype is DType.INT4 else []
