"""BATCH_MATMUL, TFLM's CMSIS-NN kernel (the reference one:
``tflm.kernels.fully_connected``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/batch_matmul.cc.

- scratch (Prepare): int8 asks for ``arm_fully_connected_s8_get_buffer_size`` of its
  output's last dim, when above 0;
- tail: options TfLiteBatchMatMulParams; Init: its own OpData; Prepare: the
  reference kernel's copies, then, quantised, the quantisation data (the reference
  kernel allocates that first);
- refusals, in place: as the reference kernel (none in place).
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.cmsis_nn.buffer_sizes import fully_connected_s8_buffer
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView
from arenaplan.tflm.kernels.fully_connected import batch_matmul_copies


def _scratch(features: str, v: OpView) -> list[int]:
    y = v.output()
    if v.dtype(0) is not DType.INT8 or y is None or not y.shape:
        return []
    size = fully_connected_s8_buffer(features, y.shape[-1])
    return [size] if size > 0 else []


def _prepare(v: OpView) -> list[int]:
    out = batch_matmul_copies(v)
    lhs = v.input(0)
    if lhs is not None and lhs.dtype is not DType.FLOAT32:
        out.append(v.state["QuantizationOpDataBatchMatmul"])
    return out


def _tail(features: str) -> OpRule:
    return OpRule("TfLiteBatchMatMulParams", "cmsis_nn:batch_matmul:OpData", prepare=_prepare)


KERNELS = {"BATCH_MATMUL": CmsisKernel(scratch=_scratch, tail=_tail)}
