"""The weights blob: each staged operator's weights laid out group by group.

A block holds one group of G output channels of one operator: each weight's
slice in input order (filter, then bias), each starting at a multiple of its
element size and of 4 (``staging.block_layout``); blocks start 16-aligned. The
filter slice of a group is

- CONV_2D ``(Cout, Kh, Kw, Cin)``, FULLY_CONNECTED ``(Cout, In)``: rows
  ``c0..c0+g``, already contiguous;
- DEPTHWISE_CONV_2D ``(1, Kh, Kw, C)``: ``[:, :, :, c0:c0+g]``, re-laid out as one
  contiguous ``(Kh, Kw, g)`` block (the group-contiguous layout
  ``(ceil(C/G), Kh, Kw, G)``, one group after another);

a bias slice is ``bias[c0:c0+g]`` (for a bias an int16x8 kernel reads as int64,
the 8-byte elements it reads). The index (``GroupBlock``) says where each block is
and what it holds. Bytes are copied from the model's buffers, those the kernel
reads (``ir.constants``: a buffer longer than its shape gives its first bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenaplan.errors import UnsupportedModelError, UsageError
from arenaplan.ir.constants import constant_bytes
from arenaplan.ir.model import Model, Tensor
from arenaplan.runtime.spec import KernelSet
from arenaplan.weights.staging import block_layout, operator_weights

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


def _array(model: Model, t: Tensor, nbytes: int) -> np.ndarray:
    """The ``nbytes`` bytes the kernel reads of constant ``t``, shaped as ``t`` with
    its last axis in bytes."""
    raw = constant_bytes(model.buffers, t, nbytes)
    if raw is None:  # the copy rules refuse a weight whose bytes are missing
        raise UnsupportedModelError(f"tensor {t.index} {t.name!r} holds fewer than {nbytes:,} B")
    return np.frombuffer(raw, dtype=np.uint8).reshape(*t.shape[:-1], -1)


def group_slice(
    model: Model, opcode: str, t: Tensor, first: int, n: int, channels: int, nbytes: int
) -> bytes:
    """The bytes of output channels ``first..first+n`` of weight ``t`` (contiguous);
    ``nbytes``: the bytes of ``t`` the kernel reads."""
    arr = _array(model, t, nbytes)  # last axis in bytes (elements x bytes read per element)
    if opcode == "DEPTHWISE_CONV_2D" and len(t.shape) == 4:
        width = arr.shape[-1] // channels  # bytes per element
        return np.ascontiguousarray(arr[0, :, :, first * width : (first + n) * width]).tobytes()
    per = arr.size // channels
    return arr.reshape(-1)[first * per : (first + n) * per].tobytes()


def weights_blob(
    model: Model, groups: Sequence[tuple[int, int]], kernels: KernelSet | None = None
) -> WeightsBlob:
    """The blob of operators ``(op, G)`` (subgraph 0), in that order, as ``kernels``
    read their weights."""
    found = {w.op: w for w in operator_weights(model, kernels=kernels)}
    sg = model.subgraphs[0]
    out = bytearray()
    blocks = []
    for op, g in groups:
        w = found.get(op)
        if w is None or not w.groupable:
            raise UsageError(f"operator {op} has no weights that split by output channel")
        if w.refused:
            raise UnsupportedModelError(f"operator {op} {w.opcode}: {w.refused}")
        for k in range(w.groups(g)):
            first = k * g
            n = min(g, w.channels - first)
            out.extend(bytes(-len(out) % BLOCK_ALIGN))
            pieces = [
                group_slice(model, w.opcode, sg.tensors[i], first, n, w.channels, p * w.channels)
                for i, p in zip(w.tensors, w.per_channel, strict=True)
            ]
            offsets, size = block_layout([len(p) for p in pieces], w.aligns)
            block = bytearray(size)
            for at, piece in zip(offsets, pieces, strict=True):
                block[at : at + len(piece)] = piece
            parts = tuple((at, len(p)) for at, p in zip(offsets, pieces, strict=True))
            blocks.append(GroupBlock(op, k, first, n, len(out), size, parts))
            out.extend(block)
    return WeightsBlob(bytes(out), tuple(blocks))
