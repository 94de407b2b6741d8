"""SOFTMAX, LOG_SOFTMAX and L2_NORMALIZATION, TFLM's reference kernels (CMSIS-NN's
SOFTMAX: ``tflm.cmsis_nn.softmax``).

Sources: tensorflow/lite/micro/kernels/softmax.cc,
tensorflow/lite/micro/kernels/softmax_common.cc,
tensorflow/lite/micro/kernels/log_softmax.cc, tensorflow/lite/micro/kernels/l2norm.cc,
tensorflow/lite/kernels/internal/reference/softmax.h,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseSoftmax, ParseL2Normalization).

SOFTMAX
- tail: options TfLiteSoftmaxParams; Init: SoftmaxParams; Prepare
  (InitializeLutForInt16): two 513-entry int16 tables for an int16 input;
- scratch: none;
- refuses (CalculateSoftmaxParams): an (input, output) type pair it has no case for;
- in place: output over input 0 of its shape (docs/inplace.md says which loops
  were read).

LOG_SOFTMAX
- tail: no options, no Init; Prepare: its OpData on the int8 path only;
- scratch, refusals, in place: none.

L2_NORMALIZATION
- tail: options TfLiteL2NormParams; Init: L2NormalizationParams;
- scratch: none;
- refuses (L2NormPrepare): an output other than float32 or int8, or of another
  type than the input;
- in place: none.
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.facts import (
    OUT_LIKE_IN,
    Accepts,
    InPlaceRule,
    Kernel,
    OpRule,
    OpView,
    in_out,
    types,
)
from arenaplan.tflm.kernels.common import if_int8


def _softmax(v: OpView) -> list[int]:
    """InitializeLutForInt16: two 513-entry int16 tables for an int16 input."""
    return [2 * 513] * 2 if v.dtype(0) is DType.INT16 else []


BUILTIN = {
    "SOFTMAX": Kernel(
        OpRule("TfLiteSoftmaxParams", "SoftmaxParams", prepare=_softmax),
        refuses=(in_out("FLOAT32/FLOAT32 INT8/INT8 INT8/INT16 INT16/INT16"),),
        inplace=InPlaceRule((0,), True, "softmax.cc; reference/softmax.h Softmax, SoftmaxInt16"),
    ),
    "LOG_SOFTMAX": Kernel(OpRule(prepare=if_int8("LogSoftmaxOpData"))),
    "L2_NORMALIZATION": Kernel(
        OpRule("TfLiteL2NormParams", "L2NormalizationParams"),
        refuses=(Accepts("output 0", types("FLOAT32 INT8")), OUT_LIKE_IN),
    ),
}
