"""DEPTHWISE_CONV_2D, TFLM's reference kernel (CMSIS-NN's: ``tflm.cmsis_nn.depthwise_conv``).

Sources: tensorflow/lite/micro/kernels/depthwise_conv.cc,
tensorflow/lite/micro/kernels/depthwise_conv_common.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseDepthwiseConv2D).

- tail: options TfLiteDepthwiseConvParams; Init: OpDataConv; Prepare
  (DepthwiseConvPrepare): a per-channel multiplier and shift, 4 B per output
  channel (filter dim 3) each, for every dtype;
- scratch: an int4 filter unpacked, one byte per element;
- refuses (DepthwiseConvPrepare, DepthwiseConvEval): an (input, filter) type pair
  it has no case for, hybrid ones included;
- in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Kernel, OpRule, weights
from arenaplan.tflm.kernels.common import int4_filter, per_channel

BUILTIN = {
    "DEPTHWISE_CONV_2D": Kernel(
        OpRule("TfLiteDepthwiseConvParams", "OpDataConv", prepare=per_channel(3)),
        scratch=int4_filter,
        refuses=(weights("input 0", "input 1", "FLOAT32/FLOAT32 INT16/INT8 INT8/INT4 INT8/INT8"),),
    ),
}
