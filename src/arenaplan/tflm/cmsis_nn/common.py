"""What TFLM's CMSIS-NN kernels compute alike before they ask CMSIS-NN for a size:
the input's dims, the padding, the per-channel arrays of their Prepare.

Sources: tensorflow/lite/kernels/padding.h (ComputePaddingHeightWidth),
tensorflow/lite/micro/kernels/cmsis_nn/conv.cc,
tensorflow/lite/micro/kernels/cmsis_nn/depthwise_conv.cc.
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Tensor
from arenaplan.tflm.cmsis_nn.buffer_sizes import Dims, Window
from arenaplan.tflm.facts import Allocations, OpView, Unmodelled


def padding(size: int, filt: int, stride: int, dilation: int, padding: str) -> int:
    """TFLM's ComputePaddingHeightWidth: the padding before, from the output size
    it computes itself (SAME or VALID)."""
    effective = (filt - 1) * dilation + 1
    if padding == "SAME":
        out = (size + stride - 1) // stride
    elif padding == "VALID":
        out = int((size + stride - effective) / stride)  # C++ truncation
    else:
        raise Unmodelled(f"padding {padding!r}")
    return max((out - 1) * stride + effective - size, 0) // 2


def nhwc(t: Tensor | None) -> Dims:
    """A 4-d tensor's dims."""
    if t is None or len(t.shape) != 4:
        raise Unmodelled("not a 4-d tensor")
    return Dims(*t.shape)


def window(v: OpView, x: Dims, fh: int, fw: int, dilated: bool = True) -> Window:
    """The strides, padding and dilations of a convolution's options."""
    o = v.op.options
    sh, sw = int(o.get("stride_h", 1) or 1), int(o.get("stride_w", 1) or 1)
    dh = int(o.get("dilation_h_factor", 1) or 1) if dilated else 1
    dw = int(o.get("dilation_w_factor", 1) or 1) if dilated else 1
    pad = str(o.get("padding", "SAME"))
    return Window(sh, sw, padding(x.h, fh, sh, dh, pad), padding(x.w, fw, sw, dw, pad), dh, dw)


def quantized_channels(axis: int) -> Allocations:
    """cmsis_nn/conv.cc, depthwise_conv.cc Prepare: per-channel multiplier and shift,
    ``4 * filter.dims[axis]`` each, for int8 and int16 inputs only."""

    def rule(v: OpView) -> list[int]:
        if v.dtype(0) not in (DType.INT8, DType.INT16):
            return []
        f = v.input(1)
        if f is None or len(f.shape) <= axis:
            raise Unmodelled("no 4-d filter")
        return [4 * f.shape[axis]] * 2

    return rule
