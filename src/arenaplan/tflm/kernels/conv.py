"""CONV_2D, TFLM's reference kernel (CMSIS-NN's: ``tflm.cmsis_nn.conv``).

Sources: tensorflow/lite/micro/kernels/conv.cc, tensorflow/lite/micro/kernels/conv_common.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseConv2D).

- tail: options TfLiteConvParams; Init: OpDataConv; Prepare (ConvPrepare): a
  per-channel multiplier and shift, 4 B per output channel each, for every dtype;
- scratch: an int4 filter unpacked, one byte per element;
- refuses (ConvPrepare, ConvEval): an output of another type than the input; an
  (input, filter) type pair ConvEval has no case for, hybrid ones included;
- in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import OUT_LIKE_IN, Kernel, OpRule, weights
from arenaplan.tflm.kernels.common import int4_filter, per_channel

BUILTIN = {
    "CONV_2D": Kernel(
        OpRule("TfLiteConvParams", "OpDataConv", prepare=per_channel(0)),
        scratch=int4_filter,
        refuses=(
            OUT_LIKE_IN,
            weights("input 0", "input 1", "FLOAT32/FLOAT32 INT16/INT8 INT8/INT4 INT8/INT8"),
        ),
    ),
}
