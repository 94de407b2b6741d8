"""DEPTHWISE_CONV_2D, TFLM's CMSIS-NN kernel (the reference one:
``tflm.kernels.depthwise_conv``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/depthwise_conv.cc.

- scratch (Prepare): int8 inputs only, the size
  ``arm_depthwise_conv_wrapper_s8_get_buffer_size`` gives (int4 filters: ``_s4``),
  when above 0;
- tail: options TfLiteDepthwiseConvParams; Init: its own OpData; Prepare: a
  per-channel multiplier and shift only for int8 and int16 inputs;
- refusals, in place: as the reference kernel (none in place).
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.cmsis_nn.buffer_sizes import (
    Dims,
    depthwise_wrapper_s4_buffer,
    depthwise_wrapper_s8_buffer,
)
from arenaplan.tflm.cmsis_nn.common import nhwc, quantized_channels, window
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView


def _scratch(features: str, v: OpView) -> list[int]:
    if v.dtype(0) is not DType.INT8:
        return []
    x, w, y = nhwc(v.input(0)), nhwc(v.input(1)), nhwc(v.output())
    f = Dims(1, w.h, w.w, y.c)
    p = window(v, x, f.h, f.w)
    if v.dtype(1) is DType.INT4:
        size = depthwise_wrapper_s4_buffer(features, p, x, f, y)
    else:
        size = depthwise_wrapper_s8_buffer(features, p, x, f, y)
    return [size] if size > 0 else []


def _tail(features: str) -> OpRule:
    return OpRule(
        "TfLiteDepthwiseConvParams",
        "cmsis_nn:depthwise_conv:OpData",
        prepare=quantized_channels(3),
    )


KERNELS = {"DEPTHWISE_CONV_2D": CmsisKernel(scratch=_scratch, tail=_tail)}
