"""SVDF, TFLM's reference kernel (CMSIS-NN's: ``tflm.cmsis_nn.svdf``).

Sources: tensorflow/lite/micro/kernels/svdf.cc, tensorflow/lite/micro/kernels/svdf_common.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseSvdf).

- tail: options TfLiteSVDFParams; Init: OpDataSvdf; Prepare: nothing (its state
  is a variable tensor);
- scratch (PrepareSvdf): int8, two int32 buffers, batch * filters and
  batch * filters / rank; float, one of batch * filters; none otherwise;
- refuses (PrepareSvdf, EvalSvdf): input type other than float32 or int8; the
  (input, weights_feature), (input, weights_time), (input, bias), (input,
  activation state) and (input, output) pairs it has no case for; an activation
  state that is not a variable tensor;
- in place: none.
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Operator, Tensor
from arenaplan.tflm.facts import (
    Accepts,
    Kernel,
    OpRule,
    Pairs,
    ScratchView,
    Variable,
    in_out,
    pairs,
    types,
    weights,
)


def svdf_scratch(x: Tensor, wf: Tensor, op: Operator) -> list[int]:
    """SVDF's scratch requests (bytes), the reference kernel's and CMSIS-NN's alike
    (cmsis_nn/svdf.cc asks for the reference buffers): two int32 buffers for int8,
    one for float."""
    batch, filters = x.shape[0], wf.shape[0]
    if x.dtype is DType.INT8:
        rank = int(op.options.get("rank", 1) or 1)
        return [4 * batch * filters, 4 * batch * (filters // rank)]
    if x.dtype is DType.FLOAT32:
        return [4 * batch * filters]
    return []


def _scratch(ctx: ScratchView) -> list[int]:
    return svdf_scratch(ctx.t(0), ctx.t(1), ctx.op)


BUILTIN = {
    "SVDF": Kernel(
        OpRule("TfLiteSVDFParams", "OpDataSvdf"),
        scratch=_scratch,
        refuses=(
            Accepts("input 0", types("FLOAT32 INT8")),
            weights("input 0", "input 1", "FLOAT32/FLOAT32 INT8/INT8", "weights_feature"),
            weights("input 0", "input 2", "FLOAT32/FLOAT32 INT8/INT16 INT8/INT8", "weights_time"),
            Pairs("input 0", "input 3", ("input", "bias"), pairs("FLOAT32/FLOAT32 INT8/INT32")),
            Pairs(
                "input 0",
                "input 4",
                ("input", "activation state"),
                pairs("FLOAT32/FLOAT32 INT8/INT16 INT8/INT8"),
            ),
            in_out("FLOAT32/FLOAT32 INT8/INT8"),
            Variable("input 4", "activation state"),
        ),
    ),
}
