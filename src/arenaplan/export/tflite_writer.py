"""``write_model``: any IR model back to a ``.tflite`` flatbuffer, deterministically.

What the reader reads, this writes, so that ``read_model_bytes(write_model(m)) ==
m`` for every model ``m`` the reader returns: every subgraph, tensor, operator and
buffer, quantisation, builtin options (any table of either options union, written
field by field through the generated ``<Table>Add<Field>`` functions), custom
options, operator codes with their versions, metadata, signature defs, the
description and the schema version.

Layout: buffer data (and custom options) are aligned to 16 bytes in the file;
the operator codes are one per (operator, version) in order of first use. Only
what TFLM does not read differs from a converter's file: quantisation min/max,
unused or duplicated operator codes, the place of each object. Bytes TFLM reads
past a buffer's end (an int32 bias on an int16x8 path, ``reader/overread.py``)
are part of that buffer in the IR, and written as its data.
A model the IR cannot hold in full (``Model.unkept``), or whose IR contradicts
itself (a constant tensor without bytes, an offline plan that is not the one in
its metadata), is refused with one ``UnsupportedModelError`` line.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import flatbuffers
import numpy as np
import tflite
from flatbuffers import number_types

from arenaplan.errors import UnsupportedModelError
from arenaplan.ir.model import (
    Model,
    Operator,
    Options,
    OptionValue,
    SignatureDef,
    Subgraph,
    Tensor,
)
from arenaplan.reader.schema import (
    ENUM_FIELDS,
    OPTION_TABLES,
    codes,
    option_fields,
    option_union,
)
from arenaplan.reader.tflite_reader import FILE_IDENTIFIER, OFFLINE_PLAN_NAME

DATA_ALIGN = 16  # bytes: alignment of buffer data and custom options in the file
_CUSTOM = tflite.BuiltinOperator.CUSTOM
_GREATER_CODES = 127  # deprecated_builtin_code of every operator numbered 127 or more
_OpcodeKey = tuple[str, bool, int]  # (opcode, is custom, version)


def write_model(model: Model) -> bytes:
    """The ``.tflite`` bytes of ``model``; the same model gives the same bytes."""
    buffers = model.buffers or (b"",)
    _check(model, buffers)
    index: dict[_OpcodeKey, int] = {}  # operator code -> its position, in order of first use
    for sg in model.subgraphs:
        for op in sg.operators:
            index.setdefault(_key(op), len(index))
    size = sum(len(raw) + DATA_ALIGN for raw in buffers) + 65536  # bytes: a first guess
    try:
        b = flatbuffers.Builder(min(size, flatbuffers.Builder.MAX_BUFFER_SIZE))
        return _write(b, model, buffers, index)
    except flatbuffers.builder.BuilderSizeError:
        raise UnsupportedModelError(
            "cannot write the model: it does not fit a flatbuffer (2 GiB)"
        ) from None
    except (struct.error, OverflowError, TypeError) as exc:  # a shape, index or code
        raise UnsupportedModelError(
            f"cannot write the model: a value does not fit its schema field ({exc})"
        ) from None


def _write(
    b: flatbuffers.Builder, model: Model, buffers: Sequence[bytes], index: dict[_OpcodeKey, int]
) -> bytes:
    buffer_tables = [_buffer(b, raw) for raw in buffers]
    subgraphs = [_subgraph(b, sg, index) for sg in model.subgraphs]
    opcodes = [_opcode(b, key) for key in index]
    metadata = [_metadata(b, name, buffer) for name, buffer in model.metadata]
    signatures = [_signature_def(b, sd) for sd in model.signature_defs]
    description = b.CreateString(model.description) if model.description else None
    fields = [
        (tflite.ModelAddOperatorCodes, _offsets(b, opcodes)),
        (tflite.ModelAddSubgraphs, _offsets(b, subgraphs)),
        (tflite.ModelAddDescription, description),
        (tflite.ModelAddBuffers, _offsets(b, buffer_tables)),
        (tflite.ModelAddMetadata, _offsets(b, metadata) if metadata else None),
        (tflite.ModelAddSignatureDefs, _offsets(b, signatures) if signatures else None),
    ]
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, model.version)
    for add, value in fields:
        if value is not None:
            add(b, value)
    b.Finish(tflite.ModelEnd(b), file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())


def _check(model: Model, buffers: Sequence[bytes]) -> None:
    """Refuse what could not be read back as this very IR, with the first reason."""
    if model.unkept:
        more = f" (and {len(model.unkept) - 1} more)" if len(model.unkept) > 1 else ""
        raise UnsupportedModelError(
            f"cannot write the model: the IR does not keep all of it: {model.unkept[0]}{more}"
        )
    if buffers[0]:
        raise UnsupportedModelError(
            f"cannot write the model: buffer 0 holds {len(buffers[0]):,} bytes, "
            "but TFLite reserves it as the empty buffer"
        )
    for name, buffer in model.metadata:
        if not 0 <= buffer < len(buffers):
            raise UnsupportedModelError(
                f"cannot write the model: metadata {name!r} uses buffer {buffer}, "
                f"but there are {len(buffers)} buffers"
            )
    for sg in model.subgraphs:
        for t in sg.tensors:
            where = f"subgraph {sg.index} tensor {t.index} ({t.name!r})"
            if not 0 <= t.buffer < len(buffers):
                raise UnsupportedModelError(
                    f"cannot write the model: {where} uses buffer {t.buffer}, "
                    f"but there are {len(buffers)} buffers"
                )
            if t.is_constant != (t.buffer > 0 and len(buffers[t.buffer]) > 0):
                state = "constant" if t.is_constant else "not constant"
                raise UnsupportedModelError(
                    f"cannot write the model: {where} is {state}, but its buffer "
                    f"{t.buffer} holds {len(buffers[t.buffer]):,} bytes"
                )
    _check_offline_plan(model, buffers)


def _check_offline_plan(model: Model, buffers: Sequence[bytes]) -> None:
    if model.stored_plan is None:
        return
    buffer = dict(model.metadata).get(OFFLINE_PLAN_NAME)
    words = np.frombuffer(buffers[buffer], dtype="<i4") if buffer is not None else None
    if words is None or tuple(int(w) for w in words[3:]) != model.stored_plan:
        raise UnsupportedModelError(
            "cannot write the model: its stored_plan is not the one in its "
            f"{OFFLINE_PLAN_NAME} metadata buffer (write the plan into the buffer)"
        )


def _offsets(b: flatbuffers.Builder, items: Sequence[int]) -> int:
    b.StartVector(4, len(items), 4)
    for item in reversed(items):
        b.PrependUOffsetTRelative(item)
    return b.EndVector()


def _numbers(b: flatbuffers.Builder, values: Sequence[OptionValue], element: str) -> int:
    """A vector of numbers of flatbuffers type ``element`` (``Int32``, ``Float32``)."""
    flags = getattr(number_types, f"{element}Flags")
    b.StartVector(flags.bytewidth, len(values), flags.bytewidth)
    for v in reversed(values):
        b.Prepend(flags, flags.py_type(v))
    return b.EndVector()


def _aligned_bytes(b: flatbuffers.Builder, raw: bytes) -> int:
    """A byte vector whose data starts on a DATA_ALIGN boundary of the file."""
    b.StartVector(1, len(raw), DATA_ALIGN)
    b.head -= len(raw)
    b.Bytes[b.head : b.head + len(raw)] = raw
    return b.EndVector()


def _buffer(b: flatbuffers.Builder, raw: bytes) -> int:
    data = _aligned_bytes(b, raw) if raw else None
    tflite.BufferStart(b)
    if data is not None:
        tflite.BufferAddData(b, data)
    return tflite.BufferEnd(b)


def _subgraph(b: flatbuffers.Builder, sg: Subgraph, index: dict[_OpcodeKey, int]) -> int:
    tensors = _offsets(b, [_tensor(b, t) for t in sg.tensors])
    where = f"subgraph {sg.index} operator"
    operators = _offsets(b, [_operator(b, op, index, f"{where} {op.index}") for op in sg.operators])
    inputs, outputs = _numbers(b, sg.inputs, "Int32"), _numbers(b, sg.outputs, "Int32")
    name = b.CreateString(sg.name)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors)
    tflite.SubGraphAddInputs(b, inputs)
    tflite.SubGraphAddOutputs(b, outputs)
    tflite.SubGraphAddOperators(b, operators)
    tflite.SubGraphAddName(b, name)
    return tflite.SubGraphEnd(b)


def _tensor(b: flatbuffers.Builder, t: Tensor) -> int:
    name = b.CreateString(t.name)
    shape = _numbers(b, t.shape, "Int32")
    signature = _numbers(b, t.shape_signature, "Int32") if t.shape_signature is not None else None
    quant = None
    if t.quantization is not None:
        q = t.quantization
        scales = _numbers(b, q.scales, "Float32")
        zeros = _numbers(b, q.zero_points, "Int64") if q.zero_points else None
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scales)
        if zeros is not None:
            tflite.QuantizationParametersAddZeroPoint(b, zeros)
        tflite.QuantizationParametersAddQuantizedDimension(b, q.axis)
        quant = tflite.QuantizationParametersEnd(b)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, t.dtype.code)
    tflite.TensorAddBuffer(b, t.buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    tflite.TensorAddIsVariable(b, t.is_variable)
    if signature is not None:
        tflite.TensorAddShapeSignature(b, signature)
    tflite.TensorAddHasRank(b, t.has_rank)
    return tflite.TensorEnd(b)


def _key(op: Operator) -> _OpcodeKey:
    return op.opcode, op.is_custom, op.version


def _builtin_code(opcode: str) -> int:
    code = codes(tflite.BuiltinOperator).get(opcode)
    if code is None and opcode.startswith("BUILTIN_") and opcode[8:].isdigit():
        code = int(opcode[8:])  # a code the schema bindings do not name (reader's spelling)
    if code is None or code == _CUSTOM:
        raise UnsupportedModelError(f"cannot write the model: unknown builtin operator {opcode!r}")
    return code


def _opcode(b: flatbuffers.Builder, key: _OpcodeKey) -> int:
    opcode, is_custom, version = key
    code = _CUSTOM if is_custom else _builtin_code(opcode)
    custom = b.CreateString(opcode) if is_custom else None
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, _GREATER_CODES))
    if custom is not None:
        tflite.OperatorCodeAddCustomCode(b, custom)
    tflite.OperatorCodeAddVersion(b, version)
    tflite.OperatorCodeAddBuiltinCode(b, code)
    return tflite.OperatorCodeEnd(b)


def _operator(
    b: flatbuffers.Builder, op: Operator, index: dict[_OpcodeKey, int], where: str
) -> int:
    inputs, outputs = _numbers(b, op.inputs, "Int32"), _numbers(b, op.outputs, "Int32")
    intermediates = _numbers(b, op.intermediates, "Int32") if op.intermediates else None
    custom = _aligned_bytes(b, op.custom_options) if op.custom_options else None
    options = _options(b, op.options, op.opcode, f"{where} ({op.opcode})")
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, index[_key(op)])
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if options is not None:
        union, code, table = options
        if union == 0:
            tflite.OperatorAddBuiltinOptionsType(b, code)
            tflite.OperatorAddBuiltinOptions(b, table)
        else:
            tflite.OperatorAddBuiltinOptions2Type(b, code)
            tflite.OperatorAddBuiltinOptions2(b, table)
    if custom is not None:
        tflite.OperatorAddCustomOptions(b, custom)
    if intermediates is not None:
        tflite.OperatorAddIntermediates(b, intermediates)
    return tflite.OperatorEnd(b)


def _options(
    b: flatbuffers.Builder, options: Options, opcode: str, where: str
) -> tuple[int, int, int] | None:
    """(union position, union type code, table offset), None for no options.

    Strings and vectors are written before the table, then every field with its
    generated ``<Table>Add<Field>``; enum names go back to their codes."""
    table = options.table or (OPTION_TABLES.get(opcode, "") if options.items else "")
    if not table:
        if options.items:
            raise UnsupportedModelError(
                f"cannot write {where}: its options do not name their table (Options.table)"
            )
        return None
    union = option_union(table)
    if union is None or not hasattr(tflite, table):
        raise UnsupportedModelError(f"cannot write {where}: unknown options table {table!r}")
    fields = {f.name: f for f in option_fields(table)}
    made: dict[str, int] = {}
    for name, value in options.items:
        field = fields.get(name)
        if field is None or field.kind == "other":
            raise UnsupportedModelError(f"cannot write {where}: {table} has no option {name!r}")
        if field.kind == "string":
            made[name] = b.CreateString(str(value))
        elif field.kind == "vector":
            if not isinstance(value, tuple | list):
                raise UnsupportedModelError(f"cannot write {where}: option {name!r} is a vector")
            with _fits(where, table, name, value):
                made[name] = _numbers(b, value, field.element)
    getattr(tflite, f"{table}Start")(b)
    for name, value in options.items:
        add = getattr(tflite, f"{table}Add{fields[name].method}")
        with _fits(where, table, name, value):
            add(b, made[name] if name in made else _scalar(name, value))
    return union[0], union[1], getattr(tflite, f"{table}End")(b)


@contextmanager
def _fits(where: str, table: str, name: str, value: object) -> Iterator[None]:
    """Turn a value the schema field cannot hold into one UnsupportedModelError line."""
    try:
        yield
    except (struct.error, TypeError, ValueError, KeyError, OverflowError):
        raise UnsupportedModelError(
            f"cannot write {where}: option {name}={value!r} does not fit {table}"
        ) from None


def _scalar(name: str, value: OptionValue) -> int | float | bool:
    """An option's value as the schema stores it: enum names back to their codes."""
    if isinstance(value, str) and name in ENUM_FIELDS:
        # the reader spells a code its bindings do not name as the number
        return int(value) if value.lstrip("-").isdigit() else codes(ENUM_FIELDS[name])[value]
    if not isinstance(value, bool | int | float):
        raise TypeError(value)
    return value


def _metadata(b: flatbuffers.Builder, name: str, buffer: int) -> int:
    s = b.CreateString(name)
    tflite.MetadataStart(b)
    tflite.MetadataAddName(b, s)
    tflite.MetadataAddBuffer(b, buffer)
    return tflite.MetadataEnd(b)


def _tensor_maps(b: flatbuffers.Builder, pairs: Sequence[tuple[str, int]]) -> int:
    maps = []
    for name, tensor in pairs:
        s = b.CreateString(name)
        tflite.TensorMapStart(b)
        tflite.TensorMapAddName(b, s)
        tflite.TensorMapAddTensorIndex(b, tensor)
        maps.append(tflite.TensorMapEnd(b))
    return _offsets(b, maps)


def _signature_def(b: flatbuffers.Builder, sd: SignatureDef) -> int:
    inputs, outputs = _tensor_maps(b, sd.inputs), _tensor_maps(b, sd.outputs)
    key = b.CreateString(sd.key)
    tflite.SignatureDefStart(b)
    tflite.SignatureDefAddInputs(b, inputs)
    tflite.SignatureDefAddOutputs(b, outputs)
    tflite.SignatureDefAddSignatureKey(b, key)
    tflite.SignatureDefAddSubgraphIndex(b, sd.subgraph)
    return tflite.SignatureDefEnd(b)
