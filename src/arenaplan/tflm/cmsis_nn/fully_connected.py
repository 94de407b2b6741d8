"""FULLY_CONNECTED, TFLM's CMSIS-NN kernel (the reference one:
``tflm.kernels.fully_connected``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/fully_connected.cc.

Its scratch and kernel sums concern an int8 input with int8 weights only:

- scratch (Prepare): run as a 1x1 convolution (output of more than two dims,
  accum_depth a multiple of 4), per-tensor quantisation fakes per-channel arrays in
  a scratch buffer of 2 * 4 B per output channel (the 1x1 size itself is 0 under
  GCC); else, with MVE, the kernel sums of
  ``arm_fully_connected_s8_get_buffer_size``, unless they go to the tail;
- tail: options TfLiteFullyConnectedParams; Init: its own OpData; Prepare: the
  reference per-channel arrays, then with MVE the kernel sums when the weights and
  bias are constant (``KERNELS_OPTIMIZED_FOR_SPEED``);
- refuses: per-channel weights for anything but int8 input with int8 weights;
- in place: none.
"""

from __future__ import annotations

from collections.abc import Callable

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.cmsis_nn.buffer_sizes import fully_connected_s8_buffer
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView, Unmodelled
from arenaplan.tflm.kernels import fully_connected as reference


def _per_channel(v: OpView) -> bool:
    """CalculateOpDataFullyConnected's is_per_channel: a quantised input and more
    than one filter scale."""
    f = v.input(1)
    q = f.quantization if f is not None else None
    return v.dtype(0) is not DType.FLOAT32 and q is not None and len(q.scales) > 1


def _shape(v: OpView) -> tuple[int, int, int]:
    """(output rank, accum_depth, output_depth) as the FC Prepare computes them."""
    w, y = v.input(1), v.output()
    if w is None or y is None or not w.shape or not y.shape:
        raise Unmodelled("filter or output without dims")
    return len(y.shape), w.shape[-1], y.shape[-1]


def _conv_1x1(v: OpView) -> bool:
    """An int8 FC with int8 weights runs as a 1x1 convolution when its output has
    more than two dims and accum_depth is a multiple of 4."""
    rank, accum, _ = _shape(v)
    return rank > 2 and accum % 4 == 0


def _kernel_sums(features: str, v: OpView) -> bool:
    """With KERNELS_OPTIMIZED_FOR_SPEED an int8 FC keeps its MVE kernel sums in the
    tail (not a scratch buffer) when the weights and bias are constant."""
    bias = v.input(2)
    return (
        fully_connected_s8_buffer(features, _shape(v)[2]) > 0
        and v.input(1) is not None and v.input(1).is_constant
        and (bias is None or bias.is_constant)
    )  # fmt: skip


def _scratch(features: str, v: OpView) -> list[int]:
    if v.dtype(0) is not DType.INT8 or v.dtype(1) is DType.INT4:
        return []
    _, _, depth = _shape(v)
    if _conv_1x1(v):
        return [] if _per_channel(v) else [2 * 4 * depth]  # 1x1 fast size: 0 (GCC)
    if _kernel_sums(features, v):
        return []
    size = fully_connected_s8_buffer(features, depth)
    return [size] if size > 0 else []


def _tail(features: str) -> OpRule:
    return OpRule(
        "TfLiteFullyConnectedParams",
        "cmsis_nn:fully_connected:OpData",
        prepare=_prepare(features),
    )


def _prepare(features: str) -> Callable[[OpView], list[int]]:
    """The reference per-channel arrays (CalculateOpDataFullyConnected), then with
    MVE the int8 kernel sums when they are kept (``_kernel_sums``)."""
    ref = reference.BUILTIN["FULLY_CONNECTED"].tail
    per_channel = ref.prepare if ref is not None else None

    def rule(v: OpView) -> list[int]:
        out = per_channel(v) if per_channel is not None else []
        int8 = v.dtype(0) is DType.INT8 and v.dtype(1) is not DType.INT4
        if int8 and not _conv_1x1(v) and _kernel_sums(features, v):
            out.append(fully_connected_s8_buffer(features, _shape(v)[2]))
        return out

    return rule


def _refuses(v: OpView) -> list[str]:
    int8 = v.dtype(0) is DType.INT8 and v.dtype(1) is not DType.INT4
    if _per_channel(v) and not int8:
        return ["per-channel FULLY_CONNECTED needs int8 input and int8 weights"]
    return []


KERNELS = {"FULLY_CONNECTED": CmsisKernel(scratch=_scratch, tail=_tail, refuses=_refuses)}
