"""MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_ALL, ARG_MAX, ARG_MIN and CUMSUM, TFLM's
reference kernels.

Sources: tensorflow/lite/micro/kernels/reduce.cc, tensorflow/lite/micro/kernels/reduce_common.cc,
tensorflow/lite/micro/kernels/arg_min_max.cc, tensorflow/lite/micro/kernels/cumsum.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseReducer, ParseArgMax,
ParseArgMin, ParseCumsum).

- tail: the reductions: options TfLiteReducerParams, Init OpDataReduce (InitReduce);
  ARG_MAX, ARG_MIN: their options; CUMSUM: its options, and its OpData in Prepare
  on the int8 path;
- scratch (reduce_common.cc): MEAN and SUM, for int8 and int16, 4 B per output
  element first; then every reduction 4 B per input dim and 4 B per axis entry;
- refuses (PrepareSimple, EvalMeanHelper, EvalSumHelper, EvalMinMaxHelper): MEAN,
  SUM an input other than float32, int8, int16; REDUCE_MAX, REDUCE_MIN other than
  float32, int8; an axis that is not int32; SUM, REDUCE_MAX, REDUCE_MIN an output
  of another type than the input;
- in place: none.
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.facts import OUT_LIKE_IN, Accepts, Kernel, OpRule, ScratchView, types
from arenaplan.tflm.kernels.common import if_int8

_AXIS = Accepts("input 1", types("INT32"))
_MIN_MAX = (Accepts("input 0", types("FLOAT32 INT8")), _AXIS, OUT_LIKE_IN)
_REDUCER = OpRule("TfLiteReducerParams", "OpDataReduce")


def _mean_sum(ctx: ScratchView) -> list[int]:
    x, axis = ctx.t(0), ctx.t(1)
    tail = [4 * len(x.shape), 4 * axis.elements]
    if x.dtype in (DType.INT8, DType.INT16):
        return [4 * ctx.elems(ctx.out()), *tail]
    return tail


def _other(ctx: ScratchView) -> list[int]:
    return [4 * len(ctx.t(0).shape), 4 * ctx.t(1).elements]


BUILTIN = {
    "MEAN": Kernel(
        _REDUCER,
        scratch=_mean_sum,
        refuses=(Accepts("input 0", types("FLOAT32 INT8 INT16")), _AXIS),
    ),
    "SUM": Kernel(
        _REDUCER,
        scratch=_mean_sum,
        refuses=(Accepts("input 0", types("FLOAT32 INT8 INT16")), _AXIS, OUT_LIKE_IN),
    ),
    "REDUCE_MAX": Kernel(_REDUCER, scratch=_other, refuses=_MIN_MAX),
    "REDUCE_MIN": Kernel(_REDUCER, scratch=_other, refuses=_MIN_MAX),
    "REDUCE_ALL": Kernel(_REDUCER, scratch=_other),
    "ARG_MAX": Kernel(OpRule("TfLiteArgMaxParams")),
    "ARG_MIN": Kernel(OpRule("TfLiteArgMinParams")),
    "CUMSUM": Kernel(OpRule("TfLiteCumsumParams", prepare=if_int8("cumsum:OpData"))),
}
