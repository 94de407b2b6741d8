"""TRANSPOSE_CONV, TFLM's CMSIS-NN kernel (the reference one:
``tflm.kernels.transpose_conv``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/transpose_conv.cc.

- scratch (Prepare): int8 asks for ``arm_transpose_conv_s8_get_buffer_size`` and
  the reversed filter's ``..._get_reverse_conv_buffer_size`` (both, even when 0);
  int16 as the reference kernel;
- tail: the reference kernel's, with its own OpData;
- refuses: int16 without a bias. Prepare (``CalculateOpData``) reads the bias's
  type without checking it is there: on a host or under qemu-arm the null read
  crashes the process; on a Cortex-M, where address 0 is memory, it reads on, GCC
  having dropped the later ``bias != nullptr`` check, and
  ``DeallocateTempTfLiteTensor(nullptr)`` halts TFLM (TFLITE_DCHECK);
- in place: none.
"""

from __future__ import annotations

from dataclasses import replace

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.cmsis_nn.buffer_sizes import (
    Dims,
    transpose_conv_reverse_buffer,
    transpose_conv_s8_buffer,
)
from arenaplan.tflm.cmsis_nn.common import nhwc
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView, Unmodelled
from arenaplan.tflm.kernels import transpose_conv as reference


def _scratch(features: str, v: OpView) -> list[int]:
    x, bias, y = v.input(2), v.input(3), v.output()
    if x is None or y is None:
        raise Unmodelled("missing operand")
    if x.dtype is DType.INT16:
        extra = [8 * bias.elements] if bias is not None and bias.dtype is DType.INT16 else []
        return [8 * v.sizes[y.index] // y.dtype.itemsize, *extra]
    if x.dtype is not DType.INT8:
        return []
    xi, w, yo = nhwc(x), nhwc(v.input(1)), nhwc(y)
    o = v.op.options
    sh, sw = int(o.get("stride_h", 1) or 1), int(o.get("stride_w", 1) or 1)
    f = Dims(yo.c, w.h, w.w, xi.c)
    return [
        transpose_conv_s8_buffer(features, sh, sw, xi, f, yo),
        transpose_conv_reverse_buffer(sh, sw, xi, f),
    ]


def _tail(features: str) -> OpRule:
    ref = reference.BUILTIN["TRANSPOSE_CONV"].tail
    return replace(ref, init="cmsis_nn:transpose_conv:OpData")


def _refuses(v: OpView) -> list[str]:
    if v.dtype(2) is DType.INT16 and v.input(3) is None:
        return ["int16 TRANSPOSE_CONV without a bias: CMSIS-NN's Prepare reads a null tensor"]
    return []


KERNELS = {"TRANSPOSE_CONV": CmsisKernel(scratch=_scratch, tail=_tail, refuses=_refuses)}
