"""TRANSPOSE_CONV, TFLM's reference kernel (CMSIS-NN's: ``tflm.cmsis_nn.transpose_conv``).

Sources: tensorflow/lite/micro/kernels/transpose_conv.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseTransposeConv).

Its input is input 2, its filter input 1, its bias input 3.

- tail: options TfLiteTransposeConvParams; Init: its OpData; Prepare
  (TransposeConvPrepare): a per-channel multiplier and shift, 4 B per output
  channel each;
- scratch: int8, an int32 accumulator per output element; int16, an int64 one,
  then, with an int16 bias, 8 B per bias element; none for float;
- refuses (TransposeConvPrepare, TransposeConvEval): an (input, filter) type pair
  it has no case for, hybrid ones included;
- in place: none.
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.facts import Kernel, OpRule, ScratchView, weights
from arenaplan.tflm.kernels.common import per_channel


def _scratch(ctx: ScratchView) -> list[int]:
    x, bias, out = ctx.t(2), ctx.t(3), ctx.out()
    if x.dtype is DType.INT8:
        return [4 * ctx.elems(out)]
    if x.dtype is DType.INT16:
        extra = [8 * bias.elements] if bias is not None and bias.dtype is DType.INT16 else []
        return [8 * ctx.elems(out), *extra]
    return []


BUILTIN = {
    "TRANSPOSE_CONV": Kernel(
        OpRule("TfLiteTransposeConvParams", "transpose_conv:OpData", prepare=per_channel(0)),
        scratch=_scratch,
        refuses=(
            weights("input 2", "input 1", "FLOAT32/FLOAT32 INT16/INT8 INT16/INT16 INT8/INT8"),
        ),
    ),
}
