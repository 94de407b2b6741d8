"""``ModelBuilder``: write a one-subgraph TFLite model, deterministically.

Built on ``flatbuffers.Builder`` and the ``tflite`` package's generated builder
functions. Constant data is aligned to 16 bytes in the file; buffer 0 is the
empty buffer TFLite reserves. The same calls give byte-identical files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import flatbuffers
import numpy as np
import tflite

from arenaplan.builder.options import build_options
from arenaplan.errors import UsageError
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization

_CUSTOM = "custom:"
_DATA_ALIGN = 16  # bytes


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: DType
    buffer: int
    quantization: Quantization | None
    is_variable: bool


@dataclass
class _Op:
    code: int  # index into the operator codes
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: dict = field(default_factory=dict)
    custom_options: bytes = b""


class ModelBuilder:
    """Collects tensors and operators of subgraph 0, then writes the flatbuffer."""

    def __init__(self, description: str = "arenaplan") -> None:
        self.description = description
        self.tensors: list[_Tensor] = []
        self.ops: list[_Op] = []
        self.opcodes: list[str] = []
        self.buffers: list[bytes] = [b""]
        self.metadata: list[tuple[str, int]] = []
        self.inputs: tuple[int, ...] = ()
        self.outputs: tuple[int, ...] = ()

    def add_tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: DType,
        *,
        data: np.ndarray | bytes | None = None,
        quantization: Quantization | None = None,
        is_variable: bool = False,
    ) -> int:
        buffer = 0
        if data is not None:
            raw = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
            self.buffers.append(raw)
            buffer = len(self.buffers) - 1
        self.tensors.append(
            _Tensor(name, tuple(int(d) for d in shape), dtype, buffer, quantization, is_variable)
        )
        return len(self.tensors) - 1

    def add_operator(
        self,
        opcode: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: Mapping[str, int | float | bool | str | tuple] | None = None,
        *,
        custom_options: bytes = b"",
    ) -> int:
        if not opcode.startswith(_CUSTOM) and not hasattr(tflite.BuiltinOperator, opcode):
            raise UsageError(f"unknown builtin operator {opcode!r}")
        for t in (*inputs, *outputs):
            if not -1 <= t < len(self.tensors):
                raise UsageError(f"{opcode}: tensor {t} does not exist")
        if opcode not in self.opcodes:
            self.opcodes.append(opcode)
        self.ops.append(
            _Op(
                self.opcodes.index(opcode),
                tuple(inputs),
                tuple(outputs),
                dict(options or {}),
                custom_options,
            )
        )
        return len(self.ops) - 1

    def set_io(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)

    def add_metadata(self, name: str, data: bytes) -> None:
        self.buffers.append(bytes(data))
        self.metadata.append((name, len(self.buffers) - 1))

    def finish(self) -> bytes:
        b = flatbuffers.Builder(1024)
        buffers = [_buffer(b, raw) for raw in self.buffers]
        tensors = [_tensor(b, t) for t in self.tensors]
        ops = [_operator(b, op, self.opcodes[op.code]) for op in self.ops]
        subgraph = _subgraph(b, tensors, ops, self.inputs, self.outputs)
        codes = [_opcode(b, name) for name in self.opcodes]
        metadata = [_metadata(b, name, index) for name, index in self.metadata]
        description = b.CreateString(self.description)
        vectors = {
            k: _offsets(b, v)
            for k, v in (
                ("codes", codes),
                ("subgraphs", [subgraph]),
                ("buffers", buffers),
                ("metadata", metadata),
            )
        }
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, vectors["codes"])
        tflite.ModelAddSubgraphs(b, vectors["subgraphs"])
        tflite.ModelAddDescription(b, description)
        tflite.ModelAddBuffers(b, vectors["buffers"])
        if metadata:
            tflite.ModelAddMetadata(b, vectors["metadata"])
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _offsets(b: flatbuffers.Builder, items: Sequence[int]) -> int:
    b.StartVector(4, len(items), 4)
    for item in reversed(items):
        b.PrependUOffsetTRelative(item)
    return b.EndVector()


def _ints(b: flatbuffers.Builder, values: Sequence[int]) -> int:
    b.StartVector(4, len(values), 4)
    for v in reversed(values):
        b.PrependInt32(int(v))
    return b.EndVector()


def _buffer(b: flatbuffers.Builder, raw: bytes) -> int:
    data = None
    if raw:
        b.StartVector(1, len(raw), _DATA_ALIGN)
        b.head -= len(raw)
        b.Bytes[b.head : b.head + len(raw)] = raw
        data = b.EndVector()
    tflite.BufferStart(b)
    if data is not None:
        tflite.BufferAddData(b, data)
    return tflite.BufferEnd(b)


def _quantization(b: flatbuffers.Builder, q: Quantization) -> int:
    b.StartVector(4, len(q.scales), 4)
    for s in reversed(q.scales):
        b.PrependFloat32(float(s))
    scales = b.EndVector()
    b.StartVector(8, len(q.zero_points), 8)
    for z in reversed(q.zero_points):
        b.PrependInt64(int(z))
    zeros = b.EndVector()
    tflite.QuantizationParametersStart(b)
    tflite.QuantizationParametersAddScale(b, scales)
    tflite.QuantizationParametersAddZeroPoint(b, zeros)
    tflite.QuantizationParametersAddQuantizedDimension(b, q.axis)
    return tflite.QuantizationParametersEnd(b)


def _tensor(b: flatbuffers.Builder, t: _Tensor) -> int:
    name = b.CreateString(t.name)
    shape = _ints(b, t.shape)
    quant = _quantization(b, t.quantization) if t.quantization else None
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, t.dtype.code)
    tflite.TensorAddBuffer(b, t.buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    if t.is_variable:
        tflite.TensorAddIsVariable(b, True)
    return tflite.TensorEnd(b)


def _operator(b: flatbuffers.Builder, op: _Op, opcode: str) -> int:
    inputs, outputs = _ints(b, op.inputs), _ints(b, op.outputs)
    kind, options = (0, 0) if opcode.startswith(_CUSTOM) else build_options(b, opcode, op.options)
    custom = b.CreateByteVector(op.custom_options) if op.custom_options else None
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, op.code)
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if kind:
        tflite.OperatorAddBuiltinOptionsType(b, kind)
        tflite.OperatorAddBuiltinOptions(b, options)
    if custom is not None:
        tflite.OperatorAddCustomOptions(b, custom)
    return tflite.OperatorEnd(b)


def _subgraph(
    b: flatbuffers.Builder,
    tensors: list[int],
    ops: list[int],
    inputs: tuple[int, ...],
    outputs: tuple[int, ...],
) -> int:
    t_vec, o_vec = _offsets(b, tensors), _offsets(b, ops)
    i_vec, out_vec = _ints(b, inputs), _ints(b, outputs)
    name = b.CreateString("main")
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, t_vec)
    tflite.SubGraphAddInputs(b, i_vec)
    tflite.SubGraphAddOutputs(b, out_vec)
    tflite.SubGraphAddOperators(b, o_vec)
    tflite.SubGraphAddName(b, name)
    return tflite.SubGraphEnd(b)


def _opcode(b: flatbuffers.Builder, name: str) -> int:
    custom = b.CreateString(name[len(_CUSTOM) :]) if name.startswith(_CUSTOM) else None
    code = (
        tflite.BuiltinOperator.CUSTOM
        if custom is not None
        else getattr(tflite.BuiltinOperator, name)
    )
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddVersion(b, 1)
    if custom is not None:
        tflite.OperatorCodeAddCustomCode(b, custom)
    return tflite.OperatorCodeEnd(b)


def _metadata(b: flatbuffers.Builder, name: str, buffer: int) -> int:
    s = b.CreateString(name)
    tflite.MetadataStart(b)
    tflite.MetadataAddName(b, s)
    tflite.MetadataAddBuffer(b, buffer)
    return tflite.MetadataEnd(b)
