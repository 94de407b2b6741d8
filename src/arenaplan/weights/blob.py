"""The weights blob: each staged operator's weights laid out group by group.

A block holds one group of G output channels of one operator: each weight's
slice in input order (filter, then bias), each starting 4-aligned; blocks start
16-aligned. The filter slice of a group is

- CONV_2D ``(Cout, Kh, Kw, Cin)``, FULLY_CONNECTED ``(Cout, In)``: rows
  ``c0..c0+g``, already contiguous;
- DEPTHWISE_CONV_2D ``(1, Kh, Kw, C)``: ``[:, :, :, c0:c0+g]``, re-laid out as one
  contiguous ``(Kh, Kw, g)`` block (the group-contiguous layout
  ``(ceil(C/G), Kh, Kw, G)``, one group after another);

a bias slice is ``bias[c0:c0+g]``. The index (``GroupBlock``) says where each
block is and what it holds. Bytes are copied from the model's buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenaplan.errors import UsageError
from arenaplan.ir.model import Model, Tensor
from arenaplan.weights.staging import block_part, operator_weights

BLOCK_ALIGN = 16  # bytes: blocks start 16-aligned in the blob


@dataclass(frozen=True, slots=True)
class GroupBlock:
    """One group of operator ``op``: output channels ``first .. first+channels``, at
    ``offset`` in the blob; ``parts``: (offset in the block, bytes) per weight."""

    op: int
    group: int
    first: int
    channels: int
    offset: int
    size: int
    parts: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class WeightsBlob:
    data: bytes
    blocks: tuple[GroupBlock, ...]

    def of(self, op: int) -> list[GroupBlock]:
        return [b for b in self.blocks if b.op == op]


def _array(model: Model, t: Tensor) -> np.ndarray:
    raw = model.buffers[t.buffer]
    return np.frombuffer(raw, dtype=np.uint8).reshape(*t.shape[:-1], -1)


def group_slice(model: Model, opcode: str, t: Tensor, first: int, n: int, channels: int) -> bytes:
    """The bytes of output channels ``first..first+n`` of weight ``t`` (contiguous)."""
    arr = _array(model, t)  # last axis in bytes (elements x element size)
    if opcode == "DEPTHWISE_CONV_2D" and len(t.shape) == 4:
        width = arr.shape[-1] // channels  # bytes per element
        return np.ascontiguousarray(arr[0, :, :, first * width : (first + n) * width]).tobytes()
    per = arr.size // channels
    return arr.reshape(-1)[first * per : (first + n) * per].tobytes()


def weights_blob(model: Model, groups: Sequence[tuple[int, int]]) -> WeightsBlob:
    """The blob of operators ``(op, G)`` (subgraph 0), in that order."""
    found = {w.op: w for w in operator_weights(model)}
    sg = model.subgraphs[0]
    out = bytearray()
    blocks = []
    for op, g in groups:
        w = found.get(op)
        if w is None or not w.groupable:
            raise UsageError(f"operator {op} has no weights that split by output channel")
        for k in range(w.groups(g)):
            first = k * g
            n = min(g, w.channels - first)
            out.extend(bytes(-len(out) % BLOCK_ALIGN))
            start, parts = len(out), []
            for i in w.tensors:
                piece = group_slice(model, w.opcode, sg.tensors[i], first, n, w.channels)
                parts.append((len(out) - start, len(piece)))
                out.extend(piece + bytes(block_part(len(piece)) - len(piece)))
            blocks.append(GroupBlock(op, k, first, n, start, len(out) - start, tuple(parts)))
    return WeightsBlob(bytes(out), tuple(blocks))
