"""The ``ARENAPLAN_CASCADE`` operator's options: the chain blob (docs/cascade.md).

Custom options are a FlexBuffers map ``{"version": 2, "chain": blob}``; the blob
is little-endian int32 words, a 4-word header then one 48-word record per stage.
Here: the word indices, the kinds, and ``encode``/``decode``. Who reads the blob
(the kernel's facts, the traffic model) decodes it here; the pass writes it here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from flatbuffers import flexbuffers

from arenaplan.errors import ModelFormatError
from arenaplan.ir.custom import custom_options
from arenaplan.ir.model import Operator
from arenaplan.ir.row_range import NO_ROWS, RowRange

OPCODE = "ARENAPLAN_CASCADE"
VERSION = 2
HEADER_WORDS = 4
RECORD_WORDS = 48
MAX_STAGES = 64  # the kernel keeps one row counter per stage on its stack
MEAN_ROWS = "MEAN_ROWS"  # an average pool over the whole input, summed row by row
KINDS = {
    "CONV_2D": 1,
    "DEPTHWISE_CONV_2D": 2,
    "AVERAGE_POOL_2D": 3,
    "MAX_POOL_2D": 4,
    "ADD": 5,
    "PAD": 6,
    MEAN_ROWS: 7,
    "RELU": 8,
    "RELU6": 9,
    "LEAKY_RELU": 10,
    "MUL": 11,
    "SUB": 12,
    "MINIMUM": 13,
    "MAXIMUM": 14,
    "MEAN": 15,  # TFLM's int8 MEAN over rows and columns (requantised), summed row by row
    "TRANSPOSE_CONV": 20,  # int16x8 only: output row y gathers the input rows that reach it
    "CONCATENATION": 21,  # of src0's channels then src1's (out_c - in_c), row y of both
    "QUANTIZE": 22,  # int8 to int8 or int16 to int16: requantised to the output's scale
}
KIND_NAMES = {code: name for name, code in KINDS.items()}
# kinds whose output row y reads row y of their sources alone (of both for two inputs)
ELEMENTWISE = (
    "ADD",
    "RELU",
    "RELU6",
    "LEAKY_RELU",
    "MUL",
    "SUB",
    "MINIMUM",
    "MAXIMUM",
    "CONCATENATION",
    "QUANTIZE",
)
# kinds of two operands: src1 names the second activation, or const_in a constant
# (CONCATENATION: never a constant)
TWO_INPUTS = ("ADD", "MUL", "SUB", "MINIMUM", "MAXIMUM", "CONCATENATION")
# kinds that read every row of their input for their one output row (int32 sums)
WHOLE_INPUT = (MEAN_ROWS, "MEAN")

# record words
KIND, SRC0, SRC1 = 0, 1, 2
IN_H, IN_W, IN_C, OUT_H, OUT_W, OUT_C = 3, 4, 5, 6, 7, 8
FILTER_H, FILTER_W, STRIDE_H, STRIDE_W, DIL_H, DIL_W = 9, 10, 11, 12, 13, 14
PAD_TOP, PAD_LEFT, DEPTH_MULT = 15, 16, 17
FILTER_IN, BIAS_IN, QUANT_IN = 18, 19, 20
IN_OFFSET, OUT_OFFSET, ACT_MIN, ACT_MAX = 21, 22, 23, 24
RING_ROWS, RING_OFFSET, ACC_OFFSET = 25, 26, 27  # ACC_OFFSET also: a constant's row
ADD_WORDS = 28  # input2_offset, left_shift, then three (multiplier, shift) pairs
IN2_OFFSET = 28  # ADD, SUB, MUL: minus src1's zero point
ALPHA_MULT, ALPHA_SHIFT = 32, 33  # LEAKY_RELU: the alpha branch's multiplier and shift
OUT_MULT, OUT_SHIFT = 34, 35  # ADD, SUB, MUL, RELU, QUANTIZE; LEAKY_RELU's identity branch
PAD_VALUE = 36
BLOCK_ROWS = 37  # rows a stage computes per step (0 or 1: one)
CONV_PATH = 38  # how a convolution's steps run (PATHS); 0 for other kinds
# 39 reserved (0)
CONST_IN = 40  # input index of a constant operand (-1: none; with one, src1 is -1)
CONST_STRIDE_H, CONST_STRIDE_W, CONST_STRIDE_C = 41, 42, 43  # its strides in elements
CONST_FIRST = 44  # 1: the constant is the operator's first input (SUB: c - x)
ELEMENT_TYPE = 45  # the stage's activations (its output's and its sources'): ELEMENT_TYPES
ACC32 = 46  # int16 CONV_2D: 1 when TFLM's reference kernel accumulates in int32, else 0
# 1 in every record of a chain along the columns of one-row tensors: the records give
# each [1, W, C] tensor as W rows of one column (the same bytes); the operator's
# inputs and output are [1, 1, W, C]
COLUMNS = 47
ELEMENT_TYPES = {"INT8": 0, "INT16": 1}
ELEMENT_BYTES = {0: 1, 1: 2}  # bytes of an element of each element type
INPUT_SRC = -1  # a source word naming the operator's input 0 (kept whole)
# word 38 (CONV_PATH): in CMSIS-NN builds, the code that runs a convolution's steps:
PATH_WRAPPER = 0  # CMSIS-NN's wrapper, as TFLM's kernel calls it (elsewhere: reference)
PATH_IM2COL = 1  # CONV_2D: CMSIS-NN's arm_convolve_s8 itself: no per-call filter sums
PATH_POINTWISE = 2  # pointwise CONV_2D, its bias folded (input offset x filter sums)
PATHS = {"wrapper": PATH_WRAPPER, "im2col": PATH_IM2COL, "pointwise": PATH_POINTWISE}


def input_source(k: int) -> int:
    """The source word of the operator's input ``k`` (an activation kept whole):
    -1 - k, so -1 is input 0; a stage is named by its index (>= 0)."""
    return -1 - k


def source_input(src: int) -> int:
    """The operator's input a negative source word names."""
    return -1 - src


# header words
H_VERSION, H_STAGES, H_SCRATCH, H_RECORD = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class ChainBlob:
    """A decoded chain: ``scratch`` bytes and each stage's record."""

    scratch: int
    records: tuple[tuple[int, ...], ...]

    def kind(self, s: int) -> str:
        return KIND_NAMES[self.records[s][KIND]]


def element_bytes(w: Sequence[int]) -> int:
    """Bytes of an element of stage record ``w``'s activations (its rings' too)."""
    return ELEMENT_BYTES[w[ELEMENT_TYPE]]


def encode(records: Sequence[Sequence[int]], scratch: int) -> bytes:
    """The operator's custom options for ``records`` and ``scratch`` bytes."""
    words = [VERSION, len(records), scratch, RECORD_WORDS]
    for w in records:
        words.extend(w)
    blob = b"".join(int(v).to_bytes(4, "little", signed=True) for v in words)
    return bytes(flexbuffers.Dumps({"version": VERSION, "chain": blob}))


def decode(op: Operator) -> ChainBlob:
    """The chain of a cascade operator; a blob that is not one is a corrupt model."""
    blob = custom_options(op).get("chain")
    bad = f"corrupt model: operator {op.index} {OPCODE}: "
    if not isinstance(blob, (bytes, bytearray)) or len(blob) < 4 * HEADER_WORDS:
        raise ModelFormatError(bad + "no chain in its options")
    words = [
        int.from_bytes(blob[k : k + 4], "little", signed=True) for k in range(0, len(blob) - 3, 4)
    ]
    n = words[H_STAGES]
    if words[H_VERSION] != VERSION or words[H_RECORD] != RECORD_WORDS or n < 1:
        raise ModelFormatError(bad + "a chain of another format or no stage")
    if len(words) != HEADER_WORDS + n * RECORD_WORDS or words[H_SCRATCH] < 0:
        raise ModelFormatError(bad + "its chain's length does not match its stages")
    records = tuple(
        tuple(words[HEADER_WORDS + s * RECORD_WORDS : HEADER_WORDS + (s + 1) * RECORD_WORDS])
        for s in range(n)
    )
    if any(r[KIND] not in KIND_NAMES for r in records):
        raise ModelFormatError(bad + "a stage of unknown kind")
    if any(r[ELEMENT_TYPE] not in ELEMENT_BYTES for r in records):
        raise ModelFormatError(bad + "a stage of unknown element type")
    return ChainBlob(words[H_SCRATCH], records)


@dataclass(frozen=True, slots=True)
class RowGeometry:
    """How a stage's output rows read its sources' rows (heights in rows). Row ranges
    are half-open ``RowRange``s; the kernel's ``NeededRows`` (docs/cascade.md's
    ``needs``) gives the same rows inclusive: its [lo, hi] is [first, end - 1]."""

    kind: str  # a builtin name or MEAN_ROWS
    src0: int  # an operator input (< 0: input_source) or an earlier stage
    src1: int  # the second source of TWO_INPUTS kinds (same coding), else INPUT_SRC
    in_h: int
    out_h: int
    filter_h: int = 1
    stride_h: int = 1
    dilation_h: int = 1
    pad_top: int = 0
    block: int = 1  # rows computed per step (block_rows; the last step may have fewer)

    def step(self, y: int) -> int:
        """Rows of the step that starts at row y."""
        return min(max(self.block, 1), self.out_h - y)

    def steps(self) -> Iterator[tuple[int, int, RowRange]]:
        """Each step: its first row, its rows, and the rows of src0 it reads (half-open;
        ``NO_ROWS``: none, every tap in the padding)."""
        y = 0
        while y < self.out_h:
            n = self.step(y)
            yield y, n, self.needs_step(y)
            y += n

    def needs_step(self, y: int) -> RowRange:
        """Rows of src0 the step at row y reads together (half-open; ``NO_ROWS``: none):
        the least first row of its rows' needs to the greatest last one (with a
        dilation a later row's first may come before an earlier row's)."""
        span = NO_ROWS
        for k in range(y, y + self.step(y)):
            span = span.hull(self.needs(k))
        return span

    def needs(self, y: int) -> RowRange:
        """Rows of src0 that output row y reads, within [0, in_h) (half-open; ``NO_ROWS``:
        none). A row between the first and the last may be skipped (a dilation)."""
        if self.kind in ELEMENTWISE:
            return RowRange(y, y + 1)
        if self.kind == "PAD":
            r = y - self.pad_top
            return RowRange(r, r + 1) if 0 <= r < self.in_h else NO_ROWS
        if self.kind == "TRANSPOSE_CONV":  # input rows r with 0 <= y + pad - r*stride < filter
            lo = max(-(-(y + self.pad_top - self.filter_h + 1) // self.stride_h), 0)
            hi = min((y + self.pad_top) // self.stride_h, self.in_h - 1)
            return RowRange(lo, hi + 1) if lo <= hi else NO_ROWS
        first = y * self.stride_h - self.pad_top
        rows = [first + k * self.dilation_h for k in range(self.filter_h)]
        inside = [r for r in rows if 0 <= r < self.in_h]
        return RowRange(inside[0], inside[-1] + 1) if inside else NO_ROWS


def const_row_in_place(w: Sequence[int]) -> bool:
    """A constant operand's row is read in place: its elements of an output row lie
    as the row's (channel stride 1, column stride out_c, where those dimensions are
    above 1); otherwise the kernel spreads it into a row of the scratch (acc_offset)."""
    return (w[OUT_C] == 1 or w[CONST_STRIDE_C] == 1) and (
        w[OUT_W] == 1 or w[CONST_STRIDE_W] == w[OUT_C]
    )


def is_pointwise(w: Sequence[int]) -> bool:
    """A CONV_2D whose output pixel reads its input pixel alone (1x1 filter, strides
    and dilations 1, no padding): what conv_path 2 runs."""
    return (
        w[KIND] == KINDS["CONV_2D"]
        and (w[FILTER_H], w[FILTER_W], w[STRIDE_H], w[STRIDE_W], w[DIL_H], w[DIL_W]) == (1,) * 6
        and w[PAD_TOP] == 0
        and w[PAD_LEFT] == 0
        and (w[OUT_H], w[OUT_W]) == (w[IN_H], w[IN_W])
    )


def row_geometry(w: Sequence[int]) -> RowGeometry:
    """The row geometry of stage record ``w`` (docs/cascade.md's ``needs``)."""
    return RowGeometry(
        KIND_NAMES[w[KIND]],
        w[SRC0],
        w[SRC1],
        w[IN_H],
        w[OUT_H],
        w[FILTER_H],
        w[STRIDE_H],
        w[DIL_H],
        w[PAD_TOP],
        max(w[BLOCK_ROWS], 1),
    )
