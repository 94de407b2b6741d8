"""Split one chain of row-local operators into bands of output rows.

A chain is a run of consecutive operators [first, last] of a subgraph with one
activation input X from outside and one output Y (produced by ``last``) used
outside; every other tensor it makes is used only inside it. Band b computes Y's
rows [b*H//B, (b+1)*H//B) and, backwards through the chain, the rows of each
tensor those rows need (the halo of each window). Per band and operator:

    X or a piece --STRIDED_SLICE rows--> [PAD explicit padding] --> op (VALID) --> piece

A slice is emitted only when the piece holds more rows than the operator reads;
a PAD only where the original read its implicit padding (SAME): top rows on the
first bands, bottom rows on the last, and the columns of every band when the
original pads columns. PAD fills with the zero point (TFLM's PAD without a
constant), which is what a convolution's implicit padding contributes. The bands'
last pieces are assembled by CONCATENATION along H into Y, which keeps its index.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from arenaplan.errors import PassError
from arenaplan.ir.model import Model, Operator, Options, Subgraph, Tensor
from arenaplan.ir.row_range import RowRange
from arenaplan.passes.base import Origin
from arenaplan.passes.edit import SubgraphEdit, new_options, with_option
from arenaplan.passes.rows import CONVS, POOLS, Window, window

MAX_CONCAT_INPUTS = 10  # kMaxInputNum in TFLM's concatenation.cc


@dataclass(frozen=True, slots=True)
class Chain:
    """Operators [first, last] of subgraph ``subgraph``; ``x`` in, ``y`` out."""

    subgraph: int
    first: int
    last: int
    x: int
    y: int


def band_rows(y: Tensor, bands: int, align: int) -> list[RowRange]:
    """Y's rows of each band, as even as can be with every band starting at a multiple
    of ``align`` bytes of Y (the runtime's alignment: so that the planner can place
    it inside Y): at most ``bands``."""
    height, row = y.shape[1], _row_bytes(y)
    step = align // math.gcd(row, align)  # rows between aligned boundaries
    cuts = sorted({round(b * height / bands / step) * step for b in range(1, bands)})
    edges = [0, *(c for c in cuts if 0 < c < height), height]
    return [RowRange(a, b) for a, b in itertools.pairwise(edges)]


def _row_bytes(t: Tensor) -> int:
    return t.shape[2] * t.shape[3] * t.dtype.itemsize


def needs(model: Model, chain: Chain, rows: RowRange) -> dict[int, RowRange]:
    """Rows of every chain tensor that Y's ``rows`` need (clipped to the tensor)."""
    sg = model.subgraphs[chain.subgraph]
    need: dict[int, RowRange] = {chain.y: rows}
    for op in reversed(sg.operators[chain.first : chain.last + 1]):
        w = _window(model, sg, op)
        out = need[op.outputs[0]]
        for t in _activations(sg, op):
            r = w.input_rows(out).clip(sg.tensors[t].shape[1])
            old = need.get(t, r)
            need[t] = RowRange(min(old.first, r.first), max(old.end, r.end))
    return need


def _window(model: Model, sg: Subgraph, op: Operator) -> Window:
    w = window(sg, op, model.buffers)
    if w is None:
        raise PassError(f"operator {op.index} {op.opcode} is not row-local")
    return w


def _activations(sg: Subgraph, op: Operator) -> list[int]:
    return [i for i in op.tensor_inputs() if not sg.tensors[i].is_constant]


class _Band:
    """Emits the operators of one band into ``edit``."""

    def __init__(self, edit: SubgraphEdit, sg: Subgraph, chain: Chain, b: int, rows: RowRange):
        self.edit, self.sg, self.chain, self.b = edit, sg, chain, b
        self.need = needs(edit.model, chain, rows)
        x = sg.tensors[chain.x]
        # tensor -> (index of the piece holding its rows, the first of those rows)
        self.piece: dict[int, tuple[int, int]] = {chain.x: (chain.x, 0)}
        self.have: dict[int, RowRange] = {chain.x: RowRange(0, x.shape[1])}

    def emit(self, op: Operator) -> int:
        w = _window(self.edit.model, self.sg, op)
        out = op.outputs[0]
        rows = self.need[out]
        if op.opcode == "PAD":  # the band's own padding is the band of the PAD
            like = self.sg.tensors[out]  # TFLM pads with the output's zero point
            piece = self._input(op.inputs[0], w, rows, like, op.index)
            self.piece[out], self.have[out] = (piece, rows.first), rows
            return piece
        inputs = list(op.inputs)
        for k, t in enumerate(op.inputs):
            if t >= 0 and not self.sg.tensors[t].is_constant:
                inputs[k] = self._input(t, w, rows)
        like = self.sg.tensors[out]
        shape = (1, rows.end - rows.first, *like.shape[2:])
        piece = self.edit.add_tensor(like, f"{like.name}/band{self.b}", shape)
        options = op.options
        if op.opcode in CONVS or op.opcode in POOLS:
            options = with_option(options, "padding", "VALID")
        self.edit.add_op(
            replace(op, inputs=tuple(inputs), outputs=(piece,), options=options), op.index
        )
        self.piece[out] = (piece, rows.first)
        self.have[out] = rows
        return piece

    def _input(
        self,
        t: int,
        w: Window,
        out: RowRange,
        pad_like: Tensor | None = None,
        pad_of: int | None = None,
    ) -> int:
        """The piece of ``t`` that output rows ``out`` read, sliced and padded;
        ``pad_like``: the tensor whose quantisation a PAD takes (a PAD is emitted,
        even with no padding, when it differs from ``t``'s); ``pad_of``: the chain's
        PAD operator that PAD is a band of (None: a PAD of the band's own)."""
        reads = w.input_rows(out)  # may reach into the implicit padding
        rows = reads.clip(self.sg.tensors[t].shape[1])
        index, first = self.piece[t]
        if rows != self.have[t]:
            index = self._slice(index, rows.first - first, rows.end - first)
        top, bottom = rows.first - reads.first, reads.end - rows.end
        requantised = (
            pad_like is not None and pad_like.quantization != self.sg.tensors[t].quantization
        )
        if top or bottom or w.pads_columns or requantised:
            index = self._pad(index, top, bottom, w.left, w.right, pad_like, pad_of)
        return index

    def _slice(self, src: int, r0: int, r1: int) -> int:
        t = self.edit.tensors[src]
        n, _, width, depth = t.shape
        name = f"{t.name}/rows{r0}-{r1}"
        begin = self.edit.add_int32(f"{name}/begin", [0, r0, 0, 0])
        end = self.edit.add_int32(f"{name}/end", [n, r1, width, depth])
        strides = self.edit.add_int32(f"{name}/strides", [1, 1, 1, 1])
        out = self.edit.add_tensor(t, name, (n, r1 - r0, width, depth))
        options = new_options(
            "StridedSliceOptions",
            begin_mask=0,
            end_mask=0,
            ellipsis_mask=0,
            new_axis_mask=0,
            shrink_axis_mask=0,
            offset=False,
        )
        self.edit.add_op(_op("STRIDED_SLICE", (src, begin, end, strides), out, options), None)
        return out

    def _pad(
        self,
        src: int,
        top: int,
        bottom: int,
        left: int,
        right: int,
        like: Tensor | None,
        source: int | None,
    ) -> int:
        t = self.edit.tensors[src]
        n, h, width, depth = t.shape
        name = f"{t.name}/pad"
        paddings = self.edit.add_int32(
            f"{name}/paddings", [[0, 0], [top, bottom], [left, right], [0, 0]]
        )
        shape = (n, h + top + bottom, width + left + right, depth)
        out = self.edit.add_tensor(like or t, name, shape)
        self.edit.add_op(_op("PAD", (src, paddings), out, new_options("PadOptions")), source)
        return out


def _op(opcode: str, inputs: tuple[int, ...], out: int, options: Options) -> Operator:
    return Operator(0, opcode, False, inputs, (out,), options=options)


def _assemble(edit: SubgraphEdit, pieces: list[int], y: int) -> None:
    """CONCATENATION of the pieces along H into ``y``; a tree of them when there are
    more pieces than one CONCATENATION takes."""
    concat = new_options("ConcatenationOptions", axis=1, fused_activation_function="NONE")
    while len(pieces) > MAX_CONCAT_INPUTS:
        groups = [
            pieces[i : i + MAX_CONCAT_INPUTS] for i in range(0, len(pieces), MAX_CONCAT_INPUTS)
        ]
        pieces = []
        for group in groups:
            like = edit.tensors[group[0]]
            rows = sum(edit.tensors[g].shape[1] for g in group)
            name = f"{edit.tensors[y].name}/part{len(pieces)}"
            out = edit.add_tensor(like, name, (1, rows, *like.shape[2:]))
            edit.add_op(_op("CONCATENATION", tuple(group), out, concat), None)
            pieces.append(out)
    edit.add_op(_op("CONCATENATION", tuple(pieces), y, concat), None)


def split_chain(model: Model, chain: Chain, bands: int, align: int) -> tuple[Model, Origin]:
    """``model`` with ``chain`` computed in ``bands`` bands of Y's rows, and its origin:
    each band's copy of a chain operator comes from that operator; the slices, the
    band's own padding and the CONCATENATIONs are new."""
    sg = model.subgraphs[chain.subgraph]
    edit = SubgraphEdit(model, chain.subgraph)
    for op in sg.operators[: chain.first]:
        edit.add_op(op, op.index)
    pieces = []
    for b, rows in enumerate(band_rows(sg.tensors[chain.y], bands, align)):
        band = _Band(edit, sg, chain, b, rows)
        for op in sg.operators[chain.first : chain.last + 1]:
            piece = band.emit(op)
        pieces.append(piece)
    _assemble(edit, pieces, chain.y)
    for op in sg.operators[chain.last + 1 :]:
        edit.add_op(op, op.index)
    return edit.finish(), edit.origin()
