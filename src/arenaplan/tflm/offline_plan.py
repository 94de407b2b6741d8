"""Write TFLM's ``OfflineMemoryAllocation`` metadata into a model, leaving the rest intact.

The metadata is a model buffer of int32 words ``[version 0, subgraph 0, n,
offset_0 .. offset_{n-1}]`` over all tensors of all subgraphs, -1 where TFLM must
plan the tensor; offsets are bytes from the start of TFLM's head.

How the file is edited. FlatBuffers references (``uoffset``) only point forward,
so we keep the original file *byte for byte* and put a new prefix before it::

    [root -> new Model][TFL3][new Model table][buffers vec][metadata vec]
    [new Buffer][new Metadata][name][offset words] | original file, unchanged ...

The new Model table copies every field of the old one, pointing into the
original bytes (now P bytes further on); its ``buffers`` and ``metadata`` vectors
list the old entries plus ours (an old ``OfflineMemoryAllocation`` entry is
dropped from the list). P is a multiple of 16, so every alignment in the
original (buffer data is aligned to at most 16) still holds.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import tflite

from arenaplan.errors import UnsupportedModelError
from arenaplan.export.tflite_writer import DATA_ALIGN  # buffer data in a .tflite
from arenaplan.reader.tflite_reader import FILE_IDENTIFIER, OFFLINE_PLAN_NAME

_MODEL_FIELDS = 8  # version, operator_codes, subgraphs, description, buffers,
# metadata_buffer, metadata, signature_defs
_F_VERSION, _F_BUFFERS, _F_METADATA = 0, 4, 6


INT32_MAX = 2**31 - 1


def offline_plan_words(offsets: Sequence[int]) -> bytes:
    """The metadata buffer: ``[0, 0, n, offsets...]`` as little-endian int32."""
    top = max(offsets, default=0)
    if top > INT32_MAX or len(offsets) > INT32_MAX:
        raise UnsupportedModelError(
            f"the plan puts a tensor at byte {top:,}: TFLM's offline plan holds 32-bit "
            f"offsets (at most {INT32_MAX:,})"
        )
    return np.array([0, 0, len(offsets), *offsets], dtype="<i4").tobytes()


class _Out:
    """A little-endian byte buffer written at absolute positions."""

    def __init__(self) -> None:
        self.data = bytearray()

    def align(self, a: int) -> int:
        self.data.extend(b"\0" * (-len(self.data) % a))
        return len(self.data)

    def put(self, fmt: str, *values: int) -> int:
        pos = len(self.data)
        self.data.extend(struct.pack("<" + fmt, *values))
        return pos

    def set_u32(self, pos: int, value: int) -> None:
        struct.pack_into("<I", self.data, pos, value)

    def set_i32(self, pos: int, value: int) -> None:
        struct.pack_into("<i", self.data, pos, value)


def _old_model_fields(data: bytes) -> tuple[int, list[int | None]]:
    """Root table position and the absolute position of each of its fields (None: absent)."""
    root = struct.unpack_from("<I", data, 0)[0]
    vtable = root - struct.unpack_from("<i", data, root)[0]
    vt_size = struct.unpack_from("<H", data, vtable)[0]
    n = (vt_size - 4) // 2
    fields: list[int | None] = []
    for i in range(n):
        off = struct.unpack_from("<H", data, vtable + 4 + 2 * i)[0]
        fields.append(root + off if off else None)
    if any(f is not None for f in fields[_MODEL_FIELDS:]):
        raise UnsupportedModelError("the model has fields newer than this schema; not editing it")
    fields += [None] * (_MODEL_FIELDS - len(fields))
    return root, fields[:_MODEL_FIELDS]


def _old_entries(data: bytes) -> tuple[list[int], list[tuple[str, int]]]:
    """Absolute positions of the old Buffer tables, and (name, position) of metadata."""
    m = tflite.Model.GetRootAsModel(data, 0)
    buffers = []
    for i in range(m.BuffersLength()):
        b = m.Buffers(i)
        if b.Offset() > 1:
            raise UnsupportedModelError(
                "the model keeps buffer data outside the flatbuffer; not supported"
            )
        buffers.append(b._tab.Pos)
    meta = [
        ((m.Metadata(i).Name() or b"").decode("utf-8", "replace"), m.Metadata(i)._tab.Pos)
        for i in range(m.MetadataLength())
    ]
    return buffers, meta


def with_offline_plan(data: bytes, offsets: Sequence[int]) -> bytes:
    """The model ``data`` with our plan as its only ``OfflineMemoryAllocation`` metadata."""
    _, fields = _old_model_fields(data)
    old_buffers, old_meta = _old_entries(data)
    kept_meta = [pos for name, pos in old_meta if name != OFFLINE_PLAN_NAME]
    words = offline_plan_words(offsets)
    refs: list[tuple[int, int, bool]] = []  # (field position, target, target is in old file)
    out = _Out()
    out.put("I", 0)
    out.data.extend(FILE_IDENTIFIER)
    # Model vtable and table
    vt = out.put("HH", 4 + 2 * _MODEL_FIELDS, 4 + 4 * _MODEL_FIELDS)
    field_slots = [out.put("H", 0) for _ in range(_MODEL_FIELDS)]
    table = out.align(4)
    out.set_u32(0, table)
    out.put("i", table - vt)
    model_field_pos: dict[int, int] = {}
    for i in range(_MODEL_FIELDS):
        pos = out.put("I", 0)
        model_field_pos[i] = pos
        struct.pack_into("<H", out.data, field_slots[i], pos - table)
    # version: a scalar copied as is (schema default 0 when absent)
    if fields[_F_VERSION] is not None:
        out.set_u32(
            model_field_pos[_F_VERSION], struct.unpack_from("<I", data, fields[_F_VERSION])[0]
        )
    for i in range(1, _MODEL_FIELDS):
        if i in (_F_BUFFERS, _F_METADATA):
            continue
        if fields[i] is None:  # absent stays absent: an offset of 0 is not a reference
            struct.pack_into("<H", out.data, field_slots[i], 0)
            continue
        old_target = fields[i] + struct.unpack_from("<I", data, fields[i])[0]
        refs.append((model_field_pos[i], old_target, True))
    # buffers vector: old buffers, then ours
    vec = out.put("I", len(old_buffers) + 1)
    refs.append((model_field_pos[_F_BUFFERS], vec, False))
    for pos in old_buffers:
        refs.append((out.put("I", 0), pos, True))
    our_buffer_slot = out.put("I", 0)
    # metadata vector: kept entries, then ours
    vec = out.put("I", len(kept_meta) + 1)
    refs.append((model_field_pos[_F_METADATA], vec, False))
    for pos in kept_meta:
        refs.append((out.put("I", 0), pos, True))
    our_meta_slot = out.put("I", 0)
    # our Buffer table: one field, data
    vt = out.put("HHH", 6, 8, 4)
    out.align(4)
    buf_table = out.put("i", 0)
    out.set_i32(buf_table, buf_table - vt)
    buf_data_field = out.put("I", 0)
    refs.append((our_buffer_slot, buf_table, False))
    # our Metadata table: name, buffer index
    vt = out.put("HHHH", 8, 12, 4, 8)
    out.align(4)
    meta_table = out.put("i", 0)
    out.set_i32(meta_table, meta_table - vt)
    name_field = out.put("I", 0)
    out.put("I", len(old_buffers))
    refs.append((our_meta_slot, meta_table, False))
    name = OFFLINE_PLAN_NAME.encode()
    name_pos = out.put("I", len(name))
    out.data.extend(name + b"\0")
    refs.append((name_field, name_pos, False))
    # the offset words, 16-aligned after their length prefix
    out.align(4)
    while (len(out.data) + 4) % DATA_ALIGN:
        out.put("I", 0)
    words_pos = out.put("I", len(words))
    out.data.extend(words)
    refs.append((buf_data_field, words_pos, False))
    prefix = out.align(DATA_ALIGN)
    for at, target, in_old in refs:
        out.set_u32(at, (prefix + target if in_old else target) - at)
    return bytes(out.data) + data
