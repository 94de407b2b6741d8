"""Which constants an operator reads as weights, and how they split into groups.

A weight is a constant input of an operator (data in the flatbuffer). Firmware
can read it where it lies (in place), or copy it into RAM before the operator
runs: whole, or one group of G output channels at a time. A group carries the
slices of every weight of the operator that are indexed by output channel:

- CONV_2D filter ``(Cout, Kh, Kw, Cin)`` and FULLY_CONNECTED weights ``(Cout, In)``:
  output channel outermost, so a group is one contiguous block of
  ``G * Kh * Kw * Cin`` (``G * In``) elements;
- DEPTHWISE_CONV_2D filter ``(1, Kh, Kw, C)``: channel innermost, a group is
  ``Kh * Kw`` strided pieces of G elements; in the group-contiguous layout
  ``(ceil(C / G), Kh, Kw, G)`` it is one block of ``G * Kh * Kw`` elements;
- the bias ``(Cout,)``: G elements per group.

A weight's bytes are those its kernel reads (``passes.stage.weight_copies``): an
int32 bias that an int16x8 kernel reads as int64 is 8 bytes per channel, the
bytes the kernel reads. A group's block holds each weight's slice in input order
(filter, then bias), each starting at a multiple of its element size and of 4
bytes (an int32 bias stays 4-aligned, an int64 one 8-aligned; blocks start
16-aligned): ``block_layout``. Operators whose weights cannot be copied
bit-exactly (``passes.stage.copy_refusal``: INT4 weights) carry the reason and
are read in place only.

Per-channel quantisation parameters are not weight data: TFLM keeps them in its
persistent arena (op data), so they never move. Units: bytes, elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.allocation.packing import align_up
from arenaplan.ir.model import Model
from arenaplan.passes.stage import WeightCopy, copy_refusal, weight_copies
from arenaplan.runtime.spec import KernelSet

# those whose weights split by output channel (the last dim of the output)
GROUPED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
DEFAULT_GROUP = 16  # output channels per group (Vela's weight slices are >= 16)


@dataclass(frozen=True, slots=True)
class OpWeights:
    """The weights of one operator (subgraph 0): constant input tensors and bytes.

    ``bytes``: what a copy holds (the bytes the kernel reads); ``channels``: output
    channels (0 if its weights do not split into groups); ``per_channel``: bytes per
    output channel of each weight, ``aligns``: the alignment of each weight's slice
    in a group block (bytes), both in ``tensors`` order; ``refused``: why its
    weights cannot be copied ("" if they can)."""

    op: int
    opcode: str
    tensors: tuple[int, ...]
    bytes: int
    channels: int = 0
    per_channel: tuple[int, ...] = ()
    aligns: tuple[int, ...] = ()
    refused: str = ""

    @property
    def groupable(self) -> bool:
        return self.channels > 0

    def groups(self, g: int) -> int:
        """Number of groups of ``g`` output channels (the last may be short)."""
        return -(-self.channels // g) if self.groupable else 1

    def group_bytes(self, g: int) -> int:
        """Bytes of the block of the largest group of ``g`` output channels (whole if
        ungroupable), its slices laid out by ``block_layout``."""
        if not self.groupable:
            return self.bytes
        n = min(g, self.channels)
        return block_layout([n * p for p in self.per_channel], self.aligns)[1]


def block_layout(sizes: Sequence[int], aligns: Sequence[int]) -> tuple[list[int], int]:
    """The offsets (bytes from the block's start) of slices of ``sizes`` bytes, each
    at a multiple of its ``aligns``, in order; and the block's bytes, rounded up to 4."""
    offsets, at = [], 0
    for size, align in zip(sizes, aligns, strict=True):
        at = align_up(at, align)
        offsets.append(at)
        at += size
    return offsets, align_up(at, 4)


def slice_align(copy: WeightCopy) -> int:
    """Where a weight's slice may start in a block: a multiple of its element size
    (the type the kernel reads it as) and of 4 bytes."""
    return max(4, copy.dtype.itemsize)


def operator_weights(
    model: Model, min_bytes: int = 1, kernels: KernelSet | None = None
) -> list[OpWeights]:
    """Every operator of subgraph 0 that reads at least ``min_bytes`` of weights,
    in execution order, as ``kernels`` read them."""
    sg = model.subgraphs[0]
    found = []
    for op in sg.operators:
        copies = weight_copies(model, op.index, kernels)
        total = sum(c.nbytes for c in copies)
        if not copies or total < min_bytes:
            continue
        channels, per_channel = _grouping(model, op.index, copies)
        found.append(
            OpWeights(
                op.index,
                op.opcode,
                tuple(c.tensor for c in copies),
                total,
                channels,
                per_channel,
                tuple(slice_align(c) for c in copies),
                copy_refusal(model, op.index, kernels) or "",
            )
        )
    return found


def _grouping(
    model: Model, op_index: int, copies: Sequence[WeightCopy]
) -> tuple[int, tuple[int, ...]]:
    """(output channels, weight bytes per channel) when every constant of the
    operator splits by output channel; (0, 0) otherwise."""
    sg = model.subgraphs[0]
    op = sg.operators[op_index]
    if op.opcode not in GROUPED or not op.outputs or not sg.tensors[op.outputs[0]].shape:
        return 0, ()
    channels = sg.tensors[op.outputs[0]].shape[-1]
    if channels <= 0 or any(c.nbytes % channels for c in copies):
        return 0, ()
    return channels, tuple(c.nbytes // channels for c in copies)
