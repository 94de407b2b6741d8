"""Which CMSIS-NN code path an operator runs, and the sizes its instruction count
follows (``tflm.kernel_counts`` fits each path's counts on them).

A path is the kernel function TFLM's CMSIS-NN wrapper calls for the operator
(``arm_convolve_wrapper_s8``'s 1x1 branch, at stride 1 and strided, and the rest,
1xN counted with im2col; the depthwise wrapper's 3x3, optimised and generic ones;
the fully connected, pooling, element-wise and softmax kernels); operators CMSIS-NN
leaves to TFLM's reference kernels share one path per opcode family. Sources: the
kernels tensorflow/lite/micro/kernels/cmsis_nn/conv.cc and
tensorflow/lite/micro/kernels/cmsis_nn/depthwise_conv.cc choose between.

Features of an operator, all counts of elements (int8: bytes):

- ``macs``: multiply-accumulates (a pool: window reads);
- ``outputs``: output elements;
- ``patch``: the elements its im2col or per-output reads gather (output pixels x
  window x input channels; a fully connected layer's input length per batch row);
- ``inputs``: input elements (the first input);
- ``pixels``: output pixels (a convolution's, a pool's), else 0;
- ``calls``: 1 (the per-call overhead: TFLM's dispatch and the kernel's set-up).
"""

from __future__ import annotations

from dataclasses import dataclass

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Operator, Subgraph
from arenaplan.tflm.cmsis_nn.buffer_sizes import Dims, Window, is_1x1
from arenaplan.tflm.cmsis_nn.common import padding

FEATURES = ("calls", "macs", "outputs", "patch", "inputs", "pixels")
# elements a kernel's inner loop takes at once (its reduction depth is padded to it)
LANES = {"mve": 16, "dsp": 4, "": 1}
DEPTHWISE_LANES = 4  # channels the depthwise kernels take at once (DSP and MVE)

# opcodes that move or convert data element by element, with no table of their own
_MOVES = {
    "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CONCATENATION", "PAD", "PADV2",
    "STRIDED_SLICE", "SLICE", "TRANSPOSE", "GATHER", "SPLIT",
}  # fmt: skip
_REQUANTIZE = {"QUANTIZE", "DEQUANTIZE"}
_POOLS = {"AVERAGE_POOL_2D": "avg_pool", "MAX_POOL_2D": "max_pool"}
_BINARY = {"ADD": "add", "MUL": "mul", "SUB": "add"}
_ACTIVATIONS = {"RELU", "RELU6", "LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU"}


@dataclass(frozen=True, slots=True)
class KernelCall:
    """One operator as its kernel sees it: its path and features (``FEATURES``)."""

    path: str
    calls: int
    macs: int
    outputs: int
    patch: int
    inputs: int
    pixels: int = 0

    def vector(self) -> tuple[int, ...]:
        return (self.calls, self.macs, self.outputs, self.patch, self.inputs, self.pixels)


def _dims(sg: Subgraph, i: int) -> Dims:
    shape = tuple(sg.tensors[i].shape)
    return Dims(*((1,) * (4 - len(shape)) + shape)) if len(shape) <= 4 else Dims(1, 1, 1, 1)


def _window(op: Operator, x: Dims, fh: int, fw: int) -> Window:
    o = op.options
    sh, sw = int(o.get("stride_h", 1) or 1), int(o.get("stride_w", 1) or 1)
    dh, dw = int(o.get("dilation_h_factor", 1) or 1), int(o.get("dilation_w_factor", 1) or 1)
    pad = str(o.get("padding", "SAME"))
    return Window(sh, sw, padding(x.h, fh, sh, dh, pad), padding(x.w, fw, sw, dw, pad), dh, dw)


def _int8(sg: Subgraph, op: Operator) -> bool:
    return bool(op.inputs) and op.inputs[0] >= 0 and sg.tensors[op.inputs[0]].dtype is DType.INT8


def kernel_call(sg: Subgraph, op: Operator, features: str) -> KernelCall:
    """The path and features of ``op`` with CMSIS-NN built for ``features``
    ("dsp", "mve" or "" for plain C)."""
    t = sg.tensors
    outs = sum(t[o].elements for o in op.outputs if o >= 0)
    first = t[op.inputs[0]].elements if op.inputs and op.inputs[0] >= 0 else 0
    if op.is_custom:
        return KernelCall("custom", 1, 0, outs, 0, first)
    kind = "" if _int8(sg, op) else "_other"
    if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(op.inputs) > 1:
        x, f, y = _dims(sg, op.inputs[0]), _dims(sg, op.inputs[1]), _dims(sg, op.outputs[0])
        p = _window(op, x, f.h, f.w)
        pixels = y.n * y.h * y.w
        if op.opcode == "CONV_2D":
            depth = f.h * f.w * f.c
            padded = -(-depth // LANES[features]) * LANES[features]
            if not is_1x1(p, x, f):
                path = "conv"
            else:
                path = "conv_1x1" if p.stride_h == p.stride_w == 1 else "conv_1x1_strided"
            macs = pixels * padded * y.c
            return KernelCall(path + kind, 1, macs, outs, pixels * depth, first, pixels)
        taps = f.h * f.w
        if x.c != y.c:
            path = "dw_generic"
        elif features != "mve" and taps == 9 and p.pad_h <= 1 and p.pad_w <= 1:
            path = "dw_3x3"
        else:
            path = "dw_opt"
        lanes = -(-y.c // DEPTHWISE_LANES) * DEPTHWISE_LANES
        macs = pixels * lanes * taps
        return KernelCall(path + kind, 1, macs, outs, pixels * taps * x.c, first, pixels)
    if op.opcode == "FULLY_CONNECTED" and len(op.inputs) > 1:
        depth = t[op.inputs[1]].shape[-1]
        rows = max(outs // max(t[op.inputs[1]].shape[0], 1), 1)
        return KernelCall("fc" + kind, 1, outs * depth, outs, rows * depth, first)
    if op.opcode in _POOLS:
        o = op.options
        taps = int(o.get("filter_height", 1) or 1) * int(o.get("filter_width", 1) or 1)
        pixels = outs // max(t[op.outputs[0]].shape[-1], 1)
        path = _POOLS[op.opcode] + kind
        return KernelCall(path, 1, outs * taps, outs, outs * taps, first, pixels)
    if op.opcode in _BINARY:
        return KernelCall(_BINARY[op.opcode] + kind, 1, 0, outs, 0, first)
    if op.opcode == "SOFTMAX":
        return KernelCall("softmax" + kind, 1, 0, outs, 0, first)
    if op.opcode in _ACTIVATIONS:
        return KernelCall("activation", 1, 0, outs, 0, first)
    if op.opcode in _REQUANTIZE:
        return KernelCall("quantize", 1, 0, outs, 0, first)
    if op.opcode in _MOVES:
        return KernelCall("move", 1, 0, outs, 0, first)
    return KernelCall("other", 1, 0, outs, 0, first)
