"""AVERAGE_POOL_2D and MAX_POOL_2D, TFLM's CMSIS-NN kernels (the reference ones:
``tflm.kernels.pooling``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/pooling.cc.

- scratch: AVERAGE_POOL_2D (AveragePrepare), int8 and int16, the size
  ``arm_avgpool_s8/s16_get_buffer_size`` gives, when above 0; MAX_POOL_2D none;
- tail: the reference kernels', with their own OpData;
- refusals, in place: as the reference kernels (none in place).
"""

from __future__ import annotations

from dataclasses import replace

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.cmsis_nn.buffer_sizes import avgpool_buffer
from arenaplan.tflm.cmsis_nn.common import nhwc
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView
from arenaplan.tflm.kernels import pooling as reference


def _average_pool(features: str, v: OpView) -> list[int]:
    if v.dtype(0) not in (DType.INT8, DType.INT16):
        return []
    size = avgpool_buffer(features, nhwc(v.output()).c)
    return [size] if size > 0 else []


def _tail(opcode: str):
    def tail(features: str) -> OpRule:
        return replace(reference.BUILTIN[opcode].tail, init="cmsis_nn:pooling:OpData")

    return tail


KERNELS = {
    "AVERAGE_POOL_2D": CmsisKernel(scratch=_average_pool, tail=_tail("AVERAGE_POOL_2D")),
    "MAX_POOL_2D": CmsisKernel(tail=_tail("MAX_POOL_2D")),
}
