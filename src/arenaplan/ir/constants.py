"""The one way to read a constant's data: the bytes its shape says, as TFLM reads them.

TFLM points a constant tensor at its buffer's data and reads only what the tensor's
shape and type say (``micro_allocator.cc``: ``data.data`` is the buffer's start;
kernels index it by the dims): ``elements x element size`` bytes, INT4 two elements
to a byte. A buffer holding more bytes than that plans and runs as if it held just
those; the rest is never read (a bias that a kernel reads wider, ``reader/overread.py``,
asks for its own count). A buffer holding fewer is refused when the model is read
(``reader.tflite_reader``), so every constant of an IR has at least its bytes.

Every part of arenaplan that reads a constant's values or bytes (the verifier, the
validator, the in-place rules, the traffic counts, the passes, the weights blob and
copies) goes through here; a model written back keeps each buffer whole, as the
file had it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Tensor

# numpy's little-endian type of each element type whose values arenaplan reads
_NUMPY = {
    DType.FLOAT32: "<f4",
    DType.FLOAT16: "<f2",
    DType.INT32: "<i4",
    DType.UINT8: "u1",
    DType.INT64: "<i8",
    DType.BOOL: "u1",
    DType.INT16: "<i2",
    DType.INT8: "i1",
    DType.FLOAT64: "<f8",
    DType.UINT64: "<u8",
    DType.UINT32: "<u4",
    DType.UINT16: "<u2",
}


def data_bytes(dtype: DType, elements: int) -> int:
    """Bytes of data a constant of ``elements`` elements of ``dtype`` has (INT4: two
    per byte, the last byte half used when odd)."""
    return (elements + 1) // 2 if dtype is DType.INT4 else elements * dtype.itemsize


def constant_bytes(buffers: Sequence[bytes], t: Tensor, nbytes: int | None = None) -> bytes | None:
    """The first ``nbytes`` bytes of constant ``t``'s buffer (``buffers``: the model's;
    default: the bytes its shape says, ``data_bytes``); None if ``t`` is not a
    constant or its buffer holds fewer (a buffer index past ``buffers`` included)."""
    if not t.is_constant or not 0 <= t.buffer < len(buffers):
        return None
    n = data_bytes(t.dtype, t.elements) if nbytes is None else nbytes
    raw = buffers[t.buffer]
    return raw[:n] if len(raw) >= n else None


def constant_values(buffers: Sequence[bytes], t: Tensor) -> np.ndarray | None:
    """The values of constant ``t`` as a flat array of its own type (``elements``
    long); None if it is not a constant, its bytes are missing, or its type is not
    one read by value (INT4, strings, resources)."""
    kind = _NUMPY.get(t.dtype)
    raw = constant_bytes(buffers, t) if kind is not None else None
    if raw is None:
        return None
    return np.frombuffer(raw, dtype=kind, count=t.elements)


def constant_ints(buffers: Sequence[bytes], t: Tensor | None) -> list[int] | None:
    """The values of an integer constant ``t`` (INT32 or INT64) as Python ints; None
    if ``t`` is absent, not such a constant, or its bytes are missing."""
    if t is None or t.dtype not in (DType.INT32, DType.INT64):
        return None
    values = constant_values(buffers, t)
    return None if values is None else [int(v) for v in values]
