"""Bytes past a buffer's end that TFLM's kernels read, kept as part of the buffer.

TFLM's int16x8 DEPTHWISE_CONV_2D, TRANSPOSE_CONV and UNIDIRECTIONAL_SEQUENCE_LSTM
read their biases as int64 whatever the bias tensor's type says
(``kernels/depthwise_conv.cc``: ``GetOptionalTensorData<int64_t>(bias)``;
``kernels/transpose_conv.cc``: the same unless the bias is int16, which it widens
into a scratch buffer; ``lstm_eval.h``: ``EvalLstm<int16_t, int8_t, int16_t,
int64_t>``), and so does CMSIS-NN's int16x8 FULLY_CONNECTED
(``kernels/cmsis_nn/fully_connected.cc``, ``EvalQuantizedInt16``; the reference
kernel reads an int32 bias as int32); nothing checks the type. The converter makes
int32 biases on that path when asked to (its int32 bias option): the kernel then
reads 8 bytes per element from a buffer that holds 4, so half of what it computes
with is whatever the file holds after the buffer (padding, the next buffer's
length, another table). A file laid out anew changes those bytes, and the outputs.

So the reader keeps, for such a bias, every byte a kernel of any build reads: the buffer's
bytes in the IR run on past its end in the file, up to ``elements * 8`` bytes
(or the end of the file). The writer writes them as the buffer's data, so the
kernel reads the same bytes from a written model, and reading it back gives the
same IR. A bias stored as int64 is read whole and is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import tflite

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph


@dataclass(frozen=True, slots=True)
class WideBias:
    """The bias inputs of an operator that TFLM reads as int64 when its input
    ``data`` is int16; ``reference``: its reference kernel does (else only
    CMSIS-NN's); ``narrow``: bias types the kernel widens itself, element by element
    (read as stored)."""

    inputs: tuple[int, ...]
    reference: bool = True
    narrow: tuple[DType, ...] = ()
    data: int = 0


WIDE_BIASES: dict[str, WideBias] = {
    "DEPTHWISE_CONV_2D": WideBias((2,)),
    "TRANSPOSE_CONV": WideBias((3,), narrow=(DType.INT16,), data=2),
    "FULLY_CONNECTED": WideBias((2,), reference=False),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": WideBias((12, 13, 14, 15)),
}
READ_AS = 8  # bytes per bias element the kernels read (int64)


def bytes_read(model: Model) -> dict[int, int]:
    """Buffer index -> bytes TFLM's kernels read from it, where more than it holds."""
    need: dict[int, int] = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            for t in wide_biases(sg, op):
                tensor = sg.tensors[t]
                n = tensor.elements * READ_AS
                if tensor.is_constant and n > len(model.buffers[tensor.buffer]):
                    need[tensor.buffer] = max(need.get(tensor.buffer, 0), n)
    return need


def wide_biases(sg: Subgraph, op: Operator, cmsis_nn: bool = True) -> list[int]:
    """The bias tensors of ``op`` that TFLM reads as int64 although they are narrower.
    ``cmsis_nn``: with those only CMSIS-NN's kernels read so (the reader keeps the
    bytes of every build); False: the reference kernels'."""
    wide = WIDE_BIASES.get(op.opcode) if not op.is_custom else None
    if wide is None or not (cmsis_nn or wide.reference) or len(op.inputs) <= wide.data:
        return []
    x = op.inputs[wide.data]
    if x < 0 or sg.tensors[x].dtype is not DType.INT16:
        return []
    found = []
    for k in wide.inputs:
        t = op.inputs[k] if k < len(op.inputs) else -1
        if t < 0 or sg.tensors[t].dtype in wide.narrow:
            continue
        if sg.tensors[t].dtype.itemsize < READ_AS:
            found.append(t)
    return found


def with_bytes_read(model: Model, data: bytes, m: tflite.Model) -> Model:
    """``model`` whose buffers hold every byte TFLM's kernels read from them.

    Runs after the reader has checked every buffer index and length."""
    need = bytes_read(model)
    if not need:
        return model
    buffers, sizes = list(model.buffers), list(model.buffer_sizes)
    for b, n in need.items():
        start = _data_position(m, b)
        if start is None:  # data outside the flatbuffer: refused as unkept
            continue
        buffers[b] = data[start : start + n]
        sizes[b] = len(buffers[b])
    return replace(model, buffers=tuple(buffers), buffer_sizes=tuple(sizes))


def _data_position(m: tflite.Model, b: int) -> int | None:
    """Where buffer ``b``'s data starts in the file; None if it has none there."""
    buf = m.Buffers(b)
    field = buf._tab.Offset(4)  # Buffer.data
    if not field or not buf.DataLength():
        return None
    return buf._tab.Vector(field)
