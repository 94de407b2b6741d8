"""SVDF, TFLM's CMSIS-NN kernel (the reference one: ``tflm.kernels.svdf``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/svdf.cc.

- scratch: the reference kernel's two (int8) or one (float) buffers;
- tail: options TfLiteSVDFParams; Init: CmsisNnOpDataSvdf; Prepare: with MVE, an
  int8 SVDF keeps its kernel sums (``arm_svdf_s8_get_buffer_size``, 4 B per filter)
  here (``KERNELS_OPTIMIZED_FOR_SPEED``);
- refusals, in place: as the reference kernel (none in place).
"""

from __future__ import annotations

from collections.abc import Callable

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.cmsis_nn.buffer_sizes import svdf_s8_buffer
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView, Unmodelled
from arenaplan.tflm.kernels.svdf import svdf_scratch


def _scratch(features: str, v: OpView) -> list[int]:
    x, wf = v.input(0), v.input(1)
    if x is None or wf is None:
        raise Unmodelled("missing operand")
    return svdf_scratch(x, wf, v.op)


def _prepare(features: str) -> Callable[[OpView], list[int]]:
    def rule(v: OpView) -> list[int]:
        wf = v.input(1)
        if v.dtype(0) is not DType.INT8 or wf is None:
            return []
        size = svdf_s8_buffer(features, wf.shape[0])
        return [size] if size > 0 else []

    return rule


def _tail(features: str) -> OpRule:
    return OpRule("TfLiteSVDFParams", "CmsisNnOpDataSvdf", prepare=_prepare(features))


KERNELS = {"SVDF": CmsisKernel(scratch=_scratch, tail=_tail)}
