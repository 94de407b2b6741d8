"""UNIDIRECTIONAL_SEQUENCE_LSTM, TFLM's reference kernel (CMSIS-NN's:
``tflm.cmsis_nn.unidirectional_sequence_lstm``).

Sources: tensorflow/lite/micro/kernels/unidirectional_sequence_lstm.cc,
tensorflow/lite/micro/kernels/lstm_eval.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseUnidirectionalSequenceLSTM).

- tail: options TfLiteUnidirectionalSequenceLSTMParams; Init: OpDataLSTM; Prepare:
  nothing (its states are variable tensors);
- scratch (UnidirectionalSequenceLstmPrepare): four buffers of batch * state *
  the cell state's element size;
- refuses (LstmTensors::ValidateTensorStatus, ...Prepare, ...Eval): the plain LSTM
  only (no peephole, projection or layer norm), states as variables, an int16 or
  float cell state; a float LSTM runs whatever its weights' type, an integer one
  needs int8 weights;
- in place: none.
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.facts import (
    Accepts,
    Kernel,
    OpRule,
    Pairs,
    Present,
    Same,
    ScratchView,
    Variable,
    inputs,
    pairs,
    types,
)

_VARIANTS = "has no peephole, projection or layer-norm path"


def _scratch(ctx: ScratchView) -> list[int]:
    x, out_state, cell = ctx.t(0), ctx.t(18), ctx.t(19)
    batch = x.shape[1] if ctx.op.options.get("time_major") else x.shape[0]
    size = batch * out_state.shape[1] * cell.dtype.itemsize
    return [size] * 4


BUILTIN = {
    "UNIDIRECTIONAL_SEQUENCE_LSTM": Kernel(
        OpRule("TfLiteUnidirectionalSequenceLSTMParams", "OpDataLSTM"),
        scratch=_scratch,
        refuses=(
            Present(inputs(0, *range(1, 9), *range(12, 16), 18, 19), True, "needs it"),
            Present(inputs(9, 10, 11, 16, 17, 20, 21, 22, 23), False, _VARIANTS),
            Variable("input 18", "output state"),
            Variable("input 19", "cell state"),
            Same(("output 0", "input 18"), "input 0"),
            Same(inputs(*range(1, 9)), "input 2"),
            Same(inputs(12, 14, 15), "input 13"),
            Accepts("input 19", types("FLOAT32 INT16")),
            Accepts("input 0", types("FLOAT32 INT8 INT16")),
            Pairs(
                "input 0",
                "input 1",
                ("input", "weights"),
                pairs("INT8/INT8 INT16/INT8") | {(DType.FLOAT32, t) for t in DType},
            ),
        ),
    ),
}
