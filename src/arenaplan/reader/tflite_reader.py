"""Read a `.tflite` flatbuffer into the IR, checking it as we go.

The ``tflite`` package's generated accessors do not bounds-check: corrupt data
shows up as ``struct.error``/``IndexError``/garbage values. We turn every such
failure into one ``ModelFormatError`` naming the problem, check every index the
IR will rely on (tensor, buffer, opcode, subgraph), and bound the number of
elements read by the file size so that a corrupt length cannot make us loop.
"""

from __future__ import annotations

import math
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import tflite

from arenaplan.errors import ModelFormatError
from arenaplan.inputs import read_input
from arenaplan.ir.constants import data_bytes
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Quantization, SignatureDef, Subgraph, Tensor
from arenaplan.ir.signatures import check_operators
from arenaplan.reader.options import read_options
from arenaplan.reader.overread import with_bytes_read
from arenaplan.reader.schema import names
from arenaplan.reader.unkept import unkept_parts

FILE_IDENTIFIER = b"TFL3"
# TFLM counts a tensor's elements and bytes in C ``int`` (BytesRequiredForTensor,
# TfLiteEvalTensorByteLength) and its planner takes sizes and offsets as ``int``
# (GreedyMemoryPlanner::AddBuffer, ListEntry::offset), 32 bits on every target: a
# tensor beyond this cannot be addressed by TFLM anywhere, so it is refused on reading.
TENSOR_LIMIT = 2**31 - 1  # elements, and bytes, of one tensor
OFFLINE_PLAN_NAME = "OfflineMemoryAllocation"
_CUSTOM_CODE = 32  # BuiltinOperator.CUSTOM
_PARSE_ERRORS = (
    struct.error,
    IndexError,
    ValueError,
    TypeError,
    OverflowError,
    UnicodeDecodeError,
    AttributeError,
    RecursionError,
    MemoryError,
)


class _Budget:
    """Counts elements read; a sound file never needs more than a few per byte."""

    def __init__(self, file_size: int) -> None:
        self.left = 4 * file_size + 4096

    def take(self, n: int, what: str) -> int:
        if n < 0 or n > self.left:
            raise ModelFormatError(
                f"corrupt model: {what} claims {n} elements, more than the file holds"
            )
        self.left -= n
        return n


def read_file(path: str | Path) -> bytes:
    """The bytes of a model file; a missing or unreadable file is a ``ModelFormatError``."""
    return read_input(path, ".tflite", ModelFormatError)


def read_model(path: str | Path) -> Model:
    """Read the model at ``path``; every failure is a one-line ``ModelFormatError``."""
    return load_model(path)[1]


def load_model(path: str | Path) -> tuple[bytes, Model]:
    """The file's bytes and its IR (exporters need the bytes to edit the model)."""
    data = read_file(path)
    try:
        return data, read_model_bytes(data)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from None


def read_model_bytes(data: bytes) -> Model:
    """Parse a TFLite flatbuffer held in memory."""
    _check_envelope(data)
    try:
        model = _read(data)
    except ModelFormatError:
        raise
    except _PARSE_ERRORS as exc:
        raise ModelFormatError(
            f"corrupt model: {type(exc).__name__} while parsing ({exc})"
        ) from None
    check_operators(model)
    return model


def _check_envelope(data: bytes) -> None:
    if len(data) == 0:
        raise ModelFormatError("empty file, not a TFLite model")
    if len(data) < 8:
        raise ModelFormatError(
            f"truncated file: {len(data)} bytes, a TFLite model needs at least 8"
        )
    ident = data[4:8]
    if ident != FILE_IDENTIFIER:
        raise ModelFormatError(
            f"not a TFLite model: file identifier is {ident!r}, expected {FILE_IDENTIFIER!r}"
        )
    root = struct.unpack_from("<I", data, 0)[0]
    if root < 8 or root + 4 > len(data):
        raise ModelFormatError(
            f"truncated or corrupt file: root table offset {root} "
            f"is outside the file ({len(data)} bytes)"
        )


def _read(data: bytes) -> Model:
    budget = _Budget(len(data))
    m = tflite.Model.GetRootAsModel(data, 0)
    _check_pos(m, len(data), "model table")
    buffer_sizes = _read_buffer_sizes(m, budget, len(data))
    buffers = _read_buffers(m, buffer_sizes)
    opcodes = _read_opcodes(m, budget)
    n_sub = budget.take(m.SubgraphsLength(), "subgraph list")
    if n_sub == 0:
        raise ModelFormatError("model has no subgraphs")
    subgraphs = tuple(
        _read_subgraph(m.Subgraphs(s), s, opcodes, buffer_sizes, budget, len(data), n_sub)
        for s in range(n_sub)
    )
    metadata = _read_metadata(m, budget, len(buffer_sizes))
    model = Model(
        subgraphs=subgraphs,
        version=m.Version(),
        description=_string(m.Description()),
        metadata=metadata,
        buffer_sizes=buffer_sizes,
        buffers=buffers,
        signature_defs=_read_signature_defs(m, subgraphs, budget, len(data)),
        unkept=unkept_parts(m, buffer_sizes, buffers),
    )
    return _with_offline_plan(with_bytes_read(model, data, m), data, m)


def _check_pos(obj: object, size: int, what: str) -> None:
    if obj is None:
        raise ModelFormatError(f"corrupt model: {what} is missing")
    pos = obj._tab.Pos  # type: ignore[attr-defined]
    if not 0 <= pos < size:
        raise ModelFormatError(f"corrupt model: {what} points outside the file (byte {pos})")


def _string(raw: bytes | None) -> str:
    return raw.decode("utf-8", errors="replace") if raw else ""


def _read_buffer_sizes(m: tflite.Model, budget: _Budget, size: int) -> tuple[int, ...]:
    sizes = []
    for b in range(budget.take(m.BuffersLength(), "buffer list")):
        buf = m.Buffers(b)
        _check_pos(buf, size, f"buffer {b}")
        n = buf.DataLength()
        if n > size:
            raise ModelFormatError(
                f"corrupt model: buffer {b} claims {n} bytes, the file has {size}"
            )
        if n == 0 and buf.Offset() > 1:
            n = buf.Size()  # data stored outside the flatbuffer (large models)
        sizes.append(n)
    return tuple(sizes)


def _read_buffers(m: tflite.Model, sizes: tuple[int, ...]) -> tuple[bytes, ...]:
    """The bytes of every buffer held in the flatbuffer (lengths already checked)."""
    out = []
    for b, n in enumerate(sizes):
        raw = m.Buffers(b).DataAsNumpy() if n else None
        out.append(raw.tobytes() if isinstance(raw, np.ndarray) else b"")
    return tuple(out)


_Opcode = tuple[str, bool, int]  # (name or custom code, is custom, version)


def _read_opcodes(m: tflite.Model, budget: _Budget) -> tuple[_Opcode, ...]:
    builtins = names(tflite.BuiltinOperator)
    codes = []
    for i in range(budget.take(m.OperatorCodesLength(), "operator code list")):
        oc = m.OperatorCodes(i)
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        version = oc.Version()
        if code == _CUSTOM_CODE:
            codes.append((_string(oc.CustomCode()) or "CUSTOM", True, version))
        else:
            codes.append((builtins.get(code, f"BUILTIN_{code}"), False, version))
    return tuple(codes)


def _read_subgraph(
    sg: tflite.SubGraph,
    s: int,
    opcodes: tuple[_Opcode, ...],
    buffer_sizes: tuple[int, ...],
    budget: _Budget,
    size: int,
    n_sub: int,
) -> Subgraph:
    _check_pos(sg, size, f"subgraph {s}")
    n_tensors = budget.take(sg.TensorsLength(), f"subgraph {s} tensor list")
    tensors = tuple(
        _read_tensor(sg.Tensors(t), s, t, buffer_sizes, budget, size) for t in range(n_tensors)
    )
    where = f"subgraph {s}"
    inputs = _indices(sg.InputsAsNumpy(), n_tensors, f"{where} inputs", budget)
    outputs = _indices(sg.OutputsAsNumpy(), n_tensors, f"{where} outputs", budget)
    ops = tuple(
        _read_operator(sg.Operators(i), s, i, opcodes, n_tensors, budget, size, n_sub)
        for i in range(budget.take(sg.OperatorsLength(), f"{where} operator list"))
    )
    subgraph = Subgraph(s, _string(sg.Name()), tensors, ops, inputs, outputs)
    _check_operator_outputs(subgraph)
    return subgraph


def _indices(
    arr: object, n_tensors: int, what: str, budget: _Budget, optional: bool = False
) -> tuple[int, ...]:
    """A vector of tensor indices, each checked; -1 allowed where ``optional``."""
    if not isinstance(arr, np.ndarray):  # generated code returns 0 for an absent vector
        return ()
    budget.take(len(arr), what)
    values = tuple(int(v) for v in arr)
    low = -1 if optional else 0
    for v in values:
        if not low <= v < n_tensors:
            raise ModelFormatError(
                f"corrupt model: {what} refer to tensor {v}, but there are {n_tensors} tensors"
            )
    return values


def _read_tensor(
    t: tflite.Tensor, s: int, i: int, buffer_sizes: tuple[int, ...], budget: _Budget, size: int
) -> Tensor:
    where = f"subgraph {s} tensor {i}"
    _check_pos(t, size, where)
    shape = tuple(int(t.Shape(j)) for j in range(budget.take(t.ShapeLength(), f"{where} shape")))
    if any(d < -1 for d in shape):
        raise ModelFormatError(f"corrupt model: {where} has a negative dimension in shape {shape}")
    dtype = DType.from_code(t.Type())
    if dtype is None:
        raise ModelFormatError(f"corrupt model: {where} has unknown element type {t.Type()}")
    _check_tensor_size(f"{where} ({_string(t.Name())!r})", shape, dtype)
    buffer = t.Buffer()
    if buffer >= max(len(buffer_sizes), 1):
        raise ModelFormatError(
            f"corrupt model: {where} uses buffer {buffer}, "
            f"but there are {len(buffer_sizes)} buffers"
        )
    is_constant = buffer > 0 and buffer_sizes[buffer] > 0
    if is_constant and t.Sparsity() is None:
        _check_constant_size(where, shape, dtype, buffer_sizes[buffer])
    signature = None
    if not t.ShapeSignatureIsNone():
        n = budget.take(t.ShapeSignatureLength(), f"{where} shape signature")
        signature = tuple(int(t.ShapeSignature(j)) for j in range(n))
        if any(d < -1 for d in signature):
            raise ModelFormatError(
                f"corrupt model: {where} has a negative dimension other than -1 "
                f"in shape signature {signature}"
            )
    return Tensor(
        index=i,
        name=_string(t.Name()),
        shape=shape,
        dtype=dtype,
        buffer=buffer,
        is_constant=is_constant,
        is_variable=bool(t.IsVariable()),
        quantization=_read_quantization(t.Quantization(), budget, where),
        shape_signature=signature,
        has_rank=bool(t.HasRank()),
    )


def _check_tensor_size(where: str, shape: tuple[int, ...], dtype: DType) -> None:
    """Refuse a tensor TFLM cannot address: more than ``TENSOR_LIMIT`` elements or
    bytes (its -1 dims, unknown until the model runs, left out of the count)."""
    elements = math.prod(d for d in shape if d >= 0)
    nbytes = elements * dtype.itemsize
    if max(elements, nbytes) > TENSOR_LIMIT:
        raise ModelFormatError(
            f"{where} of shape {list(shape)} {dtype.name.lower()} holds {elements:,} elements "
            f"({nbytes:,} bytes); TFLM counts both in 32-bit ints, at most {TENSOR_LIMIT:,}"
        )


def _check_constant_size(where: str, shape: tuple[int, ...], dtype: DType, held: int) -> None:
    """A (dense) constant's data is its buffer: refuse a shape that claims more elements
    than the buffer's ``held`` bytes hold (INT4 packs two per byte), so that nothing
    sized by a constant's shape goes beyond the bytes the file really has."""
    needed = data_bytes(dtype, math.prod(max(d, 0) for d in shape))
    if needed > held:
        raise ModelFormatError(
            f"corrupt model: {where} of shape {list(shape)} {dtype.name.lower()} needs "
            f"{needed:,} bytes of data, its buffer holds {held:,}"
        )


def _check_operator_outputs(sg: Subgraph) -> None:
    """An operator's non-constant outputs are written at once, so they live together in
    the arena and never share bytes: their total must fit TFLM's 32-bit offsets."""
    for op in sg.operators:
        outs = {i: sg.tensors[i] for i in op.outputs}
        total = sum(t.nbytes for t in outs.values() if not t.is_constant)
        if total > TENSOR_LIMIT:
            raise ModelFormatError(
                f"subgraph {sg.index} operator {op.index} {op.opcode} writes {len(outs)} "
                f"tensors of {total:,} bytes in all; TFLM places them in one arena with "
                f"32-bit offsets, at most {TENSOR_LIMIT:,} bytes"
            )


INT32 = range(-(2**31), 2**31)


def _check_quantization(scales: np.ndarray, zero_points: tuple[int, ...], where: str) -> None:
    """Scales finite and not negative, zero points 32-bit (TFLM keeps them as float and
    int32; a NaN or an infinite scale makes every multiplier derived from it nonsense)."""
    bad = next((float(x) for x in scales if not math.isfinite(x) or x < 0), None)
    if bad is not None:
        raise ModelFormatError(f"{where}: quantization scale {bad} (finite, 0 or more)")
    wide = next((z for z in zero_points if z not in INT32), None)
    if wide is not None:
        raise ModelFormatError(f"{where}: quantization zero point {wide:,} (TFLM's are int32)")


def _read_quantization(
    q: tflite.QuantizationParameters | None, budget: _Budget, where: str
) -> Quantization | None:
    if q is None:
        return None
    scales = q.ScaleAsNumpy()
    zeros = q.ZeroPointAsNumpy()
    if not isinstance(scales, np.ndarray) or len(scales) == 0:
        return None
    budget.take(len(scales), f"{where} scales")
    zero_points = tuple(int(z) for z in zeros) if isinstance(zeros, np.ndarray) else ()
    budget.take(len(zero_points), f"{where} zero points")
    _check_quantization(scales, zero_points, where)
    return Quantization(tuple(float(x) for x in scales), zero_points, int(q.QuantizedDimension()))


def _read_operator(
    op: tflite.Operator,
    s: int,
    i: int,
    opcodes: tuple[_Opcode, ...],
    n_tensors: int,
    budget: _Budget,
    size: int,
    n_sub: int,
) -> Operator:
    where = f"subgraph {s} operator {i}"
    _check_pos(op, size, where)
    code_index = op.OpcodeIndex()
    if code_index >= len(opcodes):
        raise ModelFormatError(
            f"corrupt model: {where} uses operator code {code_index}, but there are {len(opcodes)}"
        )
    opcode, is_custom, version = opcodes[code_index]
    if op.BuiltinOptionsType():
        options = read_options(tflite.BuiltinOptions, op.BuiltinOptionsType(), op.BuiltinOptions())
    else:
        options = read_options(
            tflite.BuiltinOptions2, op.BuiltinOptions2Type(), op.BuiltinOptions2()
        )
    custom = op.CustomOptionsAsNumpy()
    custom_options = bytes(custom) if isinstance(custom, np.ndarray) else b""
    budget.take(len(custom_options), f"{where} custom options")
    _check_subgraph_refs(options.as_dict(), n_sub, where)
    return Operator(
        index=i,
        opcode=opcode,
        is_custom=is_custom,
        inputs=_indices(op.InputsAsNumpy(), n_tensors, f"{where} inputs", budget, optional=True),
        outputs=_indices(op.OutputsAsNumpy(), n_tensors, f"{where} outputs", budget),
        intermediates=_indices(
            op.IntermediatesAsNumpy(), n_tensors, f"{where} intermediates", budget
        ),
        options=options,
        custom_options=custom_options,
        version=version,
    )


def _check_subgraph_refs(options: dict, n_sub: int, where: str) -> None:
    """Control-flow options (IF, WHILE, CALL_ONCE, CALL) name subgraphs by index."""
    for key, value in options.items():
        if key.endswith("subgraph_index") and isinstance(value, int) and not 0 <= value < n_sub:
            raise ModelFormatError(
                f"corrupt model: {where} calls subgraph {value}, but there are {n_sub}"
            )


def _read_metadata(m: tflite.Model, budget: _Budget, n_buffers: int) -> tuple[tuple[str, int], ...]:
    entries = []
    for i in range(budget.take(m.MetadataLength(), "metadata list")):
        md = m.Metadata(i)
        name, buffer = _string(md.Name()), md.Buffer()
        if buffer >= n_buffers:
            raise ModelFormatError(
                f"corrupt model: metadata {name!r} uses buffer {buffer}, "
                f"but there are {n_buffers} buffers"
            )
        entries.append((name, buffer))
    return tuple(entries)


def _read_signature_defs(
    m: tflite.Model, subgraphs: tuple[Subgraph, ...], budget: _Budget, size: int
) -> tuple[SignatureDef, ...]:
    defs = []
    for i in range(budget.take(m.SignatureDefsLength(), "signature def list")):
        sd = m.SignatureDefs(i)
        where = f"signature def {i}"
        _check_pos(sd, size, where)
        s = sd.SubgraphIndex()
        if s >= len(subgraphs):
            raise ModelFormatError(
                f"corrupt model: {where} names subgraph {s}, but there are {len(subgraphs)}"
            )
        n_tensors = len(subgraphs[s].tensors)
        maps = []
        for kind, get, count in (
            ("inputs", sd.Inputs, sd.InputsLength()),
            ("outputs", sd.Outputs, sd.OutputsLength()),
        ):
            entries = [get(j) for j in range(budget.take(count, f"{where} {kind}"))]
            pairs = tuple((_string(e.Name()), e.TensorIndex()) for e in entries)
            if any(t >= n_tensors for _, t in pairs):
                raise ModelFormatError(
                    f"corrupt model: {where} {kind} refer to a tensor beyond the "
                    f"{n_tensors} of subgraph {s}"
                )
            maps.append(pairs)
        defs.append(SignatureDef(_string(sd.SignatureKey()), s, maps[0], maps[1]))
    return tuple(defs)


def _with_offline_plan(model: Model, data: bytes, m: tflite.Model) -> Model:
    """Attach an existing ``OfflineMemoryAllocation`` plan (the offsets only)."""
    buffer = dict(model.metadata).get(OFFLINE_PLAN_NAME)
    if buffer is None:
        return model
    raw = m.Buffers(buffer).DataAsNumpy()
    if not isinstance(raw, np.ndarray) or len(raw) < 12 or len(raw) % 4:
        raise ModelFormatError("corrupt model: the OfflineMemoryAllocation buffer is malformed")
    words = np.frombuffer(raw.tobytes(), dtype="<i4")
    count = int(words[2])
    if count != len(words) - 3 or count != model.tensor_count:
        raise ModelFormatError(
            f"corrupt model: the OfflineMemoryAllocation plan has {len(words) - 3} offsets "
            f"(header says {count}), the model has {model.tensor_count} tensors"
        )
    return replace(model, stored_plan=tuple(int(w) for w in words[3:]))
