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

A group's block holds each weight's slice in input order (filter, then bias),
each starting at a multiple of 4 bytes (an int32 bias stays aligned): for G
channels, ``sum over weights of align4(G * bytes per channel)``.

Per-channel quantisation parameters are not weight data: TFLM keeps them in its
persistent arena (op data), so they never move. Units: bytes, elements.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenaplan.ir.model import Model
from arenaplan.ir.signatures import weight_inputs
from arenaplan.tflm.sizes import tensor_bytes

# those whose weights split by output channel (the last dim of the output)
GROUPED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
DEFAULT_GROUP = 16  # output channels per group (Vela's weight slices are >= 16)


@dataclass(frozen=True, slots=True)
class OpWeights:
    """The weights of one operator (subgraph 0): constant input tensors and bytes.

    ``channels``: output channels (0 if its weights do not split into groups);
    ``per_channel``: bytes per output channel of each weight, in ``tensors`` order."""

    op: int
    opcode: str
    tensors: tuple[int, ...]
    bytes: int
    channels: int = 0
    per_channel: tuple[int, ...] = ()

    @property
    def groupable(self) -> bool:
        return self.channels > 0

    def groups(self, g: int) -> int:
        """Number of groups of ``g`` output channels (the last may be short)."""
        return -(-self.channels // g) if self.groupable else 1

    def group_bytes(self, g: int) -> int:
        """Bytes of the block of the largest group of ``g`` output channels (whole if
        ungroupable): each weight's slice rounded up to 4 bytes."""
        if not self.groupable:
            return self.bytes
        return sum(block_part(min(g, self.channels) * p) for p in self.per_channel)


def block_part(nbytes: int) -> int:
    """Bytes one weight's slice takes in a group block (the next starts 4-aligned)."""
    return -(-nbytes // 4) * 4


def operator_weights(model: Model, min_bytes: int = 1) -> list[OpWeights]:
    """Every operator of subgraph 0 that reads at least ``min_bytes`` of weights,
    in execution order."""
    sg = model.subgraphs[0]
    sizes = tensor_bytes(model)[0]
    found = []
    for op in sg.operators:
        consts = weight_inputs(sg.tensors, op)
        total = sum(sizes[i] for i in consts)
        if not consts or total < min_bytes:
            continue
        channels, per_channel = _grouping(model, op.index, consts, sizes)
        found.append(OpWeights(op.index, op.opcode, consts, total, channels, per_channel))
    return found


def _grouping(model: Model, op_index: int, consts, sizes) -> tuple[int, tuple[int, ...]]:
    """(output channels, weight bytes per channel) when every constant of the
    operator splits by output channel; (0, 0) otherwise."""
    sg = model.subgraphs[0]
    op = sg.operators[op_index]
    if op.opcode not in GROUPED or not op.outputs or not sg.tensors[op.outputs[0]].shape:
        return 0, ()
    channels = sg.tensors[op.outputs[0]].shape[-1]
    if channels <= 0 or any(sizes[i] % channels for i in consts):
        return 0, ()
    return channels, tuple(sizes[i] // channels for i in consts)
