"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D, TFLM's reference kernels (CMSIS-NN's
AVERAGE_POOL_2D and MAX_POOL_2D: ``tflm.cmsis_nn.pooling``).

Sources: tensorflow/lite/micro/kernels/pooling.cc,
tensorflow/lite/micro/kernels/pooling_common.cc, tensorflow/lite/micro/kernels/l2_pool_2d.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParsePool).

- tail: options TfLitePoolParams; AVERAGE and MAX: Init OpDataPooling; L2: no Init
  OpData, Prepare makes the output's dims writable;
- scratch: none;
- refuses (PoolingPrepare): AVERAGE and MAX, an input other than float32, int8,
  int16;
- in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Accepts, Kernel, OpRule, types
from arenaplan.tflm.kernels.common import writable_output_dims

_POOL_TYPES = (Accepts("input 0", types("FLOAT32 INT8 INT16")),)

BUILTIN = {
    "AVERAGE_POOL_2D": Kernel(OpRule("TfLitePoolParams", "OpDataPooling"), refuses=_POOL_TYPES),
    "MAX_POOL_2D": Kernel(OpRule("TfLitePoolParams", "OpDataPooling"), refuses=_POOL_TYPES),
    "L2_POOL_2D": Kernel(OpRule("TfLitePoolParams", prepare=writable_output_dims)),
}
