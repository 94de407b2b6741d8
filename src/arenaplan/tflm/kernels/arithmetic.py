"""ADD, SUB, MUL, DIV, ADD_N, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, FLOOR_DIV and
FLOOR_MOD, TFLM's reference kernels (CMSIS-NN's ADD, MUL, MAXIMUM, MINIMUM:
``tflm.cmsis_nn.add``, ``.mul``, ``.maximum_minimum``).

Sources: tensorflow/lite/micro/kernels/add.cc, tensorflow/lite/micro/kernels/add_common.cc,
tensorflow/lite/micro/kernels/sub.cc, tensorflow/lite/micro/kernels/sub_common.cc,
tensorflow/lite/micro/kernels/mul.cc, tensorflow/lite/micro/kernels/mul_common.cc,
tensorflow/lite/micro/kernels/div.cc, tensorflow/lite/micro/kernels/add_n.cc,
tensorflow/lite/micro/kernels/squared_difference.cc,
tensorflow/lite/micro/kernels/maximum_minimum.cc,
tensorflow/lite/micro/kernels/floor_div.cc, tensorflow/lite/micro/kernels/floor_mod.cc,
tensorflow/lite/kernels/internal/reference/add.h,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseAdd, ParseSub, ParseMul, ParseDiv).

- tail: ADD, SUB, MUL, DIV their options and Init OpData; SQUARED_DIFFERENCE its
  Init OpData; ADD_N its OpData in Prepare, int8 only; the others nothing;
- scratch: ADD_N, float32 and int8, one pointer per input;
- refuses: ADD, SUB (AddEval, SubEval) an output other than float32, int32, int8,
  int16; MUL (MulPrepare, MulEval) input 1 of another type than input 0, or input 0
  of another type than those; MAXIMUM, MINIMUM (maximum_minimum.cc Eval) an output
  other than float32, int8, int16, int32, int64;
- in place: ADD, SUB, MUL write their output over input 0 or 1 when that input has
  the output's shape (element i read before it is written, broadcast_loop.h).
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.facts import (
    Accepts,
    InPlaceRule,
    Kernel,
    OpRule,
    Same,
    ScratchView,
    types,
)
from arenaplan.tflm.kernels.common import if_int8

_ARITH = types("FLOAT32 INT32 INT8 INT16")
_MAXIMUM = (Accepts("output 0", types("FLOAT32 INT8 INT16 INT32 INT64")),)


def _add_n(ctx: ScratchView) -> list[int]:
    if ctx.t(0).dtype in (DType.FLOAT32, DType.INT8):
        return [ctx.pointer_size * len(ctx.op.inputs)]
    return []


BUILTIN = {
    "ADD": Kernel(
        OpRule("TfLiteAddParams", "OpDataAdd"),
        refuses=(Accepts("output 0", _ARITH),),
        inplace=InPlaceRule(
            (0, 1), True, "add.cc; reference/add.h, integer_ops/add.h, broadcast_loop.h"
        ),
    ),
    "SUB": Kernel(
        OpRule("TfLiteSubParams", "OpDataSub"),
        refuses=(Accepts("output 0", _ARITH),),
        inplace=InPlaceRule((0, 1), True, "sub.cc; reference/sub.h, broadcast_loop.h"),
    ),
    "MUL": Kernel(
        OpRule("TfLiteMulParams", "OpDataMul"),
        refuses=(Same(("input 1",), "input 0"), Accepts("input 0", _ARITH)),
        inplace=InPlaceRule((0, 1), True, "mul_common.cc; reference/mul.h, integer_ops/mul.h"),
    ),
    "DIV": Kernel(OpRule("TfLiteDivParams", "OpDataDiv")),
    "ADD_N": Kernel(OpRule(prepare=if_int8("add_n:OpData")), scratch=_add_n),
    "SQUARED_DIFFERENCE": Kernel(OpRule(None, "squared_difference:OpData")),
    "MAXIMUM": Kernel(OpRule(), refuses=_MAXIMUM),
    "MINIMUM": Kernel(OpRule(), refuses=_MAXIMUM),
    "FLOOR_DIV": Kernel(OpRule()),
    "FLOOR_MOD": Kernel(OpRule()),
}
