"""CONV_2D, TFLM's CMSIS-NN kernel (the reference one: ``tflm.kernels.conv``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/conv.cc.

- scratch (Prepare): int8 inputs (int8 or int4 filters) the size
  ``arm_convolve_wrapper_s8_get_buffer_size`` gives, int16 inputs
  ``arm_convolve_wrapper_s16_get_buffer_size``'s, when above 0. The kernel means to
  skip int16 with an int32 bias, but it reads the bias with
  ``AllocateTempOutputTensor`` (an output index the node does not have), gets none
  and so always asks (measured: an int32 bias gets the buffer too);
- tail: options TfLiteConvParams; Init: its own OpData; Prepare: a per-channel
  multiplier and shift only for int8 and int16 inputs (the reference kernel's for
  float too);
- refusals, in place: as the reference kernel (none in place).
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.cmsis_nn.buffer_sizes import (
    Dims,
    convolve_wrapper_s8_buffer,
    convolve_wrapper_s16_buffer,
)
from arenaplan.tflm.cmsis_nn.common import nhwc, quantized_channels, window
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView


def _scratch(features: str, v: OpView) -> list[int]:
    x, w, y = nhwc(v.input(0)), nhwc(v.input(1)), nhwc(v.output())
    dtype = v.dtype(0)
    f = Dims(1, w.h, w.w, w.c)
    if dtype is DType.INT8:
        size = convolve_wrapper_s8_buffer(features, window(v, x, f.h, f.w), x, f, y)
    elif dtype is DType.INT16:
        size = convolve_wrapper_s16_buffer(features, x, f)
    else:
        size = 0
    return [size] if size > 0 else []


def _tail(features: str) -> OpRule:
    return OpRule("TfLiteConvParams", "cmsis_nn:conv:OpData", prepare=quantized_channels(0))


KERNELS = {"CONV_2D": CmsisKernel(scratch=_scratch, tail=_tail)}
