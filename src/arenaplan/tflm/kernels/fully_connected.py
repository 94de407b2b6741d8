"""FULLY_CONNECTED and BATCH_MATMUL, TFLM's reference kernels (CMSIS-NN's:
``tflm.cmsis_nn.fully_connected``, ``tflm.cmsis_nn.batch_matmul``).

Sources: tensorflow/lite/micro/kernels/fully_connected.cc,
tensorflow/lite/micro/kernels/fully_connected_common.cc,
tensorflow/lite/micro/kernels/batch_matmul.cc,
tensorflow/lite/micro/kernels/batch_matmul_common.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseFullyConnected, ParseBatchMatMul).

FULLY_CONNECTED
- tail: options TfLiteFullyConnectedParams; Init: OpDataFullyConnected; Prepare
  (CalculateOpDataFullyConnected): a per-channel multiplier and shift, 4 B per
  filter scale each, when the input is not float and the filter has more than one
  scale;
- scratch: an int4 filter unpacked, one byte per element;
- refuses (FullyConnectedPrepare, FullyConnectedEval): an output of another type
  than the input; an (input, weights) pair it has no case for, hybrid included;
- in place: none.

BATCH_MATMUL
- tail: options TfLiteBatchMatMulParams; Init: OpDataBatchMatmul; Prepare
  (BatchMatMulPrepare): int8/int16, its quantisation data; then a transposed copy
  of the LHS when adj_x and of the RHS unless adj_y (eval tensor, dims, data); then
  writable output dims;
- scratch: none;
- refuses (BatchMatMulPrepare): an input type other than float32, int8, int16; an
  (LHS, RHS) pair it has no case for; an output of another type than the input;
- in place: none.
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.facts import (
    OUT_LIKE_IN,
    Accepts,
    Kernel,
    OpRule,
    OpView,
    Unmodelled,
    types,
    weights,
)
from arenaplan.tflm.kernels.common import dims_bytes, int4_filter


def _fully_connected(v: OpView) -> list[int]:
    """CalculateOpDataFullyConnected: per-channel arrays when the input is not float
    and the filter has more than one scale."""
    f = v.input(1)
    q = f.quantization if f is not None else None
    if v.dtype(0) is DType.FLOAT32 or q is None or len(q.scales) <= 1:
        return []
    return [4 * len(q.scales)] * 2


def _batch_matmul(v: OpView) -> list[int]:
    """BatchMatMulPrepare: quantization data (int8/int16), then its copies."""
    lhs = v.input(0)
    quantized = lhs is not None and lhs.dtype in (DType.INT8, DType.INT16)
    quant = [v.state["QuantizationOpDataBatchMatmul"]] if quantized else []
    return quant + batch_matmul_copies(v)


def batch_matmul_copies(v: OpView) -> list[int]:
    """What a BATCH_MATMUL Prepare allocates besides quantization data (the reference
    and the CMSIS-NN kernels alike): a transposed copy of the LHS when adj_x and of
    the RHS unless adj_y (eval tensor, dims, data), then writable output dims."""
    lhs, rhs = v.input(0), v.input(1)
    if lhs is None or rhs is None:
        raise Unmodelled("missing operand")
    out: list[int] = []
    for t, copied in (
        (lhs, v.op.options.get("adj_x", False)),
        (rhs, not v.op.options.get("adj_y", False)),
    ):
        if copied:
            out += [v.state["TfLiteEvalTensor"], dims_bytes(t), v.sizes[t.index]]
    return [*out, dims_bytes(v.output())]


BUILTIN = {
    "FULLY_CONNECTED": Kernel(
        OpRule("TfLiteFullyConnectedParams", "OpDataFullyConnected", prepare=_fully_connected),
        scratch=int4_filter,
        refuses=(
            OUT_LIKE_IN,
            weights("input 0", "input 1", "FLOAT32/FLOAT32 INT16/INT8 INT8/INT4 INT8/INT8"),
        ),
    ),
    "BATCH_MATMUL": Kernel(
        OpRule("TfLiteBatchMatMulParams", "OpDataBatchMatmul", prepare=_batch_matmul),
        refuses=(
            Accepts("input 0", types("FLOAT32 INT8 INT16")),
            weights("input 0", "input 1", "FLOAT32/FLOAT32 INT8/INT8 INT16/INT16", "RHS"),
            OUT_LIKE_IN,
        ),
    ),
}
