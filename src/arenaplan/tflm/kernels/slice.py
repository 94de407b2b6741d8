"""STRIDED_SLICE, SLICE, DYNAMIC_UPDATE_SLICE, REVERSE_V2, TRANSPOSE, GATHER,
GATHER_ND and EMBEDDING_LOOKUP, TFLM's reference kernels: parts of a tensor picked
by index (CMSIS-NN's TRANSPOSE: ``tflm.cmsis_nn.transpose``).

Sources: tensorflow/lite/micro/kernels/strided_slice.cc,
tensorflow/lite/micro/kernels/strided_slice_common.cc,
tensorflow/lite/kernels/internal/strided_slice_logic.h,
tensorflow/lite/micro/kernels/slice.cc, tensorflow/lite/micro/kernels/dynamic_update_slice.cc,
tensorflow/lite/micro/kernels/reverse.cc, tensorflow/lite/micro/kernels/transpose.cc,
tensorflow/lite/micro/kernels/transpose_common.cc, tensorflow/lite/micro/kernels/gather.cc,
tensorflow/lite/micro/kernels/gather_nd.cc, tensorflow/lite/micro/kernels/embedding_lookup.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseStridedSlice, ParseGather).

- tail: STRIDED_SLICE options TfLiteStridedSliceParams and Init StridedSliceParams;
  GATHER options TfLiteGatherParams; GATHER and GATHER_ND make the output's dims
  writable in Prepare; EMBEDDING_LOOKUP (EmbeddingLookUpPrepare) the output's dims,
  then its OpData; the others nothing;
- scratch: none;
- refuses: STRIDED_SLICE (StridedSlicePrepare, StridedSliceEval) begin, end or
  strides not constant, an output other than float32, int8, int16, int32, bool;
  TRANSPOSE (TransposePrepare, TransposeEval) a perm not constant, an input other
  than float32, int8, int16;
- in place: STRIDED_SLICE allows the slice view: an output that is one contiguous
  byte range of its input may lie on that range (the kernel copies each byte onto
  itself); ``slice_ranges`` is how it walks the input.
"""

from __future__ import annotations

import math

from arenaplan.ir.model import Operator
from arenaplan.runtime.records import SLICE_VIEW
from arenaplan.tflm.facts import (
    Accepts,
    Constant,
    Kernel,
    OpRule,
    OpView,
    types,
)
from arenaplan.tflm.kernels.common import dims_bytes, writable_output_dims


def _embedding_lookup(v: OpView) -> list[int]:
    """EmbeddingLookUpPrepare: writable output dims, then its OpData."""
    return [dims_bytes(v.output()), v.state["embedding_lookup:OpData"]]


def slice_ranges(
    shape: tuple[int, ...], begin: list[int], end: list[int], strides: list[int], op: Operator
) -> list[tuple[int, int, int]]:
    """(start, count, stride) per dim, as TFLM's reference StridedSlice walks it
    (``strided_slice_logic.h`` StridedSliceStartForAxis / EndForAxis; TFLM passes
    begin, end and shrink masks and ignores the others)."""
    begin_mask = int(op.options.get("begin_mask", 0) or 0)
    end_mask = int(op.options.get("end_mask", 0) or 0)
    shrink = int(op.options.get("shrink_axis_mask", 0) or 0)
    out = []
    for axis, size in enumerate(shape):
        stride = strides[axis]
        start = begin[axis] + (size if begin[axis] < 0 else 0)
        start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
        if begin_mask & (1 << axis):
            start = 0 if stride > 0 else size - 1
        if shrink & (1 << axis):
            stop = start if start >= size else start + 1
        else:
            stop = end[axis] + (size if end[axis] < 0 else 0)
            stop = _clamp(stop, 0, size) if stride > 0 else _clamp(stop, -1, size - 1)
            if end_mask & (1 << axis):
                stop = size if stride > 0 else -1
        count = max(0, math.ceil((stop - start) / stride))
        out.append((start, count, stride))
    return out


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


BUILTIN = {
    "STRIDED_SLICE": Kernel(
        OpRule("TfLiteStridedSliceParams", "StridedSliceParams"),
        refuses=(
            Constant("input 1", "begin"),
            Constant("input 2", "end"),
            Constant("input 3", "strides"),
            Accepts("output 0", types("FLOAT32 INT8 INT16 INT32 BOOL")),
        ),
        view=SLICE_VIEW,
    ),
    "SLICE": Kernel(OpRule()),
    "DYNAMIC_UPDATE_SLICE": Kernel(OpRule()),
    "REVERSE_V2": Kernel(OpRule()),
    "TRANSPOSE": Kernel(
        OpRule(),
        refuses=(Constant("input 1", "perm"), Accepts("input 0", types("FLOAT32 INT8 INT16"))),
    ),
    "GATHER": Kernel(OpRule("TfLiteGatherParams", prepare=writable_output_dims)),
    "GATHER_ND": Kernel(OpRule(prepare=writable_output_dims)),
    "EMBEDDING_LOOKUP": Kernel(OpRule(prepare=_embedding_lookup)),
}
