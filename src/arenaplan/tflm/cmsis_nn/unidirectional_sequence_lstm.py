"""UNIDIRECTIONAL_SEQUENCE_LSTM, TFLM's CMSIS-NN kernel (the reference one:
``tflm.kernels.lstm``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/unidirectional_sequence_lstm.cc.

The CMSIS-NN path: int8 or int16 activations with an int16 cell state; off it,
the kernel asks for what the reference kernel asks for.

- scratch: three buffers on the CMSIS-NN path, four (as the reference) otherwise,
  each batch * state * the cell state's element size;
- tail: options TfLiteUnidirectionalSequenceLSTMParams; Init: its own OpData;
  Prepare (CMSIS_NN_PortOpData), on the CMSIS-NN path: eight kernel sums of
  ``state`` entries, int32 for int8 activations, int64 for int16;
- refusals, in place: as the reference kernel (none in place).
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView, Unmodelled


def _quantized(v: OpView) -> bool:
    """The CMSIS-NN LSTM path: int8 or int16 activations with an int16 cell state."""
    cell = v.input(19)
    return (
        v.dtype(0) in (DType.INT8, DType.INT16) and cell is not None and cell.dtype is DType.INT16
    )


def _scratch(features: str, v: OpView) -> list[int]:
    x, state, cell = v.input(0), v.input(18), v.input(19)
    if x is None or state is None or cell is None:
        raise Unmodelled("missing operand")
    batch = x.shape[1] if v.op.options.get("time_major") else x.shape[0]
    size = batch * state.shape[1] * cell.dtype.itemsize
    return [size] * (3 if _quantized(v) else 4)


def _kernel_sums(v: OpView) -> list[int]:
    if not _quantized(v):
        return []
    state = v.input(18)
    if state is None or len(state.shape) < 2:
        raise Unmodelled("output state without 2 dims")
    width = 4 if v.dtype(0) is DType.INT8 else 8
    return [width * state.shape[1]] * 8


def _tail(features: str) -> OpRule:
    return OpRule(
        "TfLiteUnidirectionalSequenceLSTMParams", "cmsis_nn:lstm:OpData", prepare=_kernel_sums
    )


KERNELS = {"UNIDIRECTIONAL_SEQUENCE_LSTM": CmsisKernel(scratch=_scratch, tail=_tail)}
