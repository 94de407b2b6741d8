"""Find the chains worth banding, count their extra MACs, estimate the peak after.

The estimates (``view_peak``, and ``head_peak`` with kernel scratch) are for
ranking candidates only: live activation bytes per scope (sizes rounded to 16;
``head_peak`` adds each operator's scratch requests in its scopes) with the views
the planner may use for bands (``tflm.alias_rules``: a STRIDED_SLICE of whole rows inside its input,
the inputs of a CONCATENATION along H inside its output). The planner's own figure,
checked by the validator and proven in TFLM, is what the command reports.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from arenaplan.allocation.packing import align_up
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.passes.band_split import Chain, band_rows, needs
from arenaplan.passes.rows import window
from arenaplan.runtime.records import CONCAT_VIEW, SLICE_VIEW, Alias, Lifetimes
from arenaplan.runtime.registry import or_default, runtime_of
from arenaplan.runtime.spec import KernelSet

MAC_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV")


def op_macs(sg: Subgraph, op: Operator) -> int:
    """Multiply-accumulates of one operator (0 for operators that do none)."""
    if op.opcode not in MAC_OPS or not op.outputs:
        return 0
    t = sg.tensors
    out, filt = t[op.outputs[0]], sg.operand(op, 1)
    if filt is None:
        return 0
    if op.opcode == "CONV_2D":
        return out.elements * filt.shape[1] * filt.shape[2] * filt.shape[3]
    if op.opcode == "DEPTHWISE_CONV_2D":
        return out.elements * filt.shape[1] * filt.shape[2]
    if op.opcode == "FULLY_CONNECTED":
        return out.elements * filt.shape[-1]
    x = sg.operand(op, 2)
    return (x.elements if x else 0) * filt.shape[0] * filt.shape[1] * filt.shape[2]


def model_macs(model: Model) -> int:
    return sum(op_macs(sg, op) for sg in model.subgraphs for op in sg.operators)


def extra_macs(model: Model, chain: Chain, bands: int, align: int) -> int:
    """MACs the bands compute beyond the unsplit chain (the halos computed twice);
    ``align``: the runtime's alignment (bytes), where a band may start."""
    sg = model.subgraphs[chain.subgraph]
    ops = sg.operators[chain.first : chain.last + 1]
    rows_done: dict[int, int] = defaultdict(int)
    for rows in band_rows(sg.tensors[chain.y], bands, align):
        for t, need in needs(model, chain, rows).items():
            rows_done[t] += need.end - need.first
    extra = 0
    for op in ops:
        out = sg.tensors[op.outputs[0]]
        per_row = op_macs(sg, op) // out.shape[1]
        extra += (rows_done[out.index] - out.shape[1]) * per_row
    return extra


def chains(model: Model, sg: Subgraph, fresh: set[int]) -> list[Chain]:
    """Every run of row-local operators (only those in ``fresh``, by index) with one
    activation input from outside and one output used outside, of 2+ rows, that
    does not end in a PAD (the bands' last pieces must be computed)."""
    consumers = _consumers(sg)
    found = []
    for i in range(len(sg.operators)):
        for j in range(i, len(sg.operators)):
            op = sg.operators[j]
            if j not in fresh or window(sg, op, model.buffers) is None:
                break
            chain = _as_chain(sg, i, j, consumers)
            if chain is not None and op.opcode != "PAD":
                found.append(chain)
    return found


def _consumers(sg: Subgraph) -> dict[int, list[int]]:
    users: dict[int, list[int]] = defaultdict(list)
    for op in sg.operators:
        for t in op.tensor_inputs():
            users[t].append(op.index)
    return users


def _as_chain(sg: Subgraph, i: int, j: int, consumers: dict[int, list[int]]) -> Chain | None:
    ops = sg.operators[i : j + 1]
    made = {o for op in ops for o in op.outputs}
    outside = set()
    for op in ops:
        outside.update(t for t in op.tensor_inputs() if t not in made)
    xs = [t for t in outside if not sg.tensors[t].is_constant]
    y = ops[-1].outputs[0]
    if len(xs) != 1 or sg.tensors[y].shape[1] < 2:
        return None
    for t in made - {y}:
        users = consumers.get(t, [])
        if t in sg.outputs or not users or any(u > j for u in users):
            return None
    if y in sg.inputs:
        return None
    return Chain(sg.index, i, j, xs[0], y)


def view_peak(model: Model, kernels: KernelSet | None = None) -> int:
    """Peak of live activation bytes over scopes, row slices inside their input, and
    the pieces of a concatenation inside its output or not, whichever is lower (the
    planner tries both: holding the whole output from the first piece on can cost
    more than a copy at the end)."""
    facts = _Facts.of(model, kernels)
    return min(_peak(_scope_bytes(model, facts, concat)) for concat in (True, False))


def head_peak(model: Model, kernels: KernelSet | None = None, pointer_size: int = 4) -> int:
    """``view_peak`` with the kernel scratch ``kernels`` request (each request rounded
    to the runtime's alignment, live in its operator's scopes): the estimated head."""
    return _peak(head_live(model, kernels, pointer_size)[0])


def head_live(
    model: Model, kernels: KernelSet | None = None, pointer_size: int = 4
) -> tuple[np.ndarray, Lifetimes]:
    """Live bytes of the estimated head in each scope (``head_peak``'s sweep whose peak
    is lower), and the model's lifetimes (an operator's scopes)."""
    facts = _Facts.of(model, kernels)
    scratch = np.zeros(facts.lifetimes.scopes, dtype=np.int64)
    runtime = runtime_of(kernels)
    for r in runtime.scratch_requests(model, facts.sizes, pointer_size, or_default(kernels)):
        first, last = facts.lifetimes.operators[r.subgraph][r.op]
        if first >= 0:
            scratch[first : last + 1] += align_up(r.bytes, facts.align)
    sweeps = [_scope_bytes(model, facts, concat) + scratch for concat in (True, False)]
    return min(sweeps, key=_peak), facts.lifetimes


def _peak(live: np.ndarray) -> int:
    return int(live.max()) if len(live) else 0


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the live-bytes sweeps of one model share: sizes, lifetimes, its views and
    the runtime's alignment (bytes)."""

    sizes: tuple[tuple[int, ...], ...]
    lifetimes: Lifetimes
    views: tuple[Alias, ...]
    align: int

    @staticmethod
    def of(model: Model, kernels: KernelSet | None) -> _Facts:
        runtime = runtime_of(kernels)
        views = runtime.alias_candidates(model, ("views",), False, or_default(kernels))
        sizes = runtime.tensor_bytes(model)
        return _Facts(sizes, runtime.lifetimes(model), views.aliases, runtime.alignment)


def scope_bytes(
    model: Model, concat_views: bool = True, kernels: KernelSet | None = None
) -> np.ndarray:
    """Live activation bytes in each scope, band views sharing their base."""
    return _scope_bytes(model, _Facts.of(model, kernels), concat_views)


def _scope_bytes(model: Model, facts: _Facts, concat_views: bool) -> np.ndarray:
    sizes, lt = facts.sizes, facts.lifetimes
    delta = np.zeros(lt.scopes + 1, dtype=np.int64)
    for sg in model.subgraphs:
        base = _view_bases(facts.views, concat_views) if sg.index == 0 else {}
        span: dict[int, list[int]] = {}
        for t in sg.tensors:
            life = lt.tensors[sg.index][t.index]
            if t.is_constant or t.is_variable or life.first < 0 or not sizes[sg.index][t.index]:
                continue
            root = _root(base, t.index)
            lo, hi = span.get(root, [life.first, life.last])
            span[root] = [min(lo, life.first), max(hi, life.last)]
        for root, (lo, hi) in span.items():
            size = align_up(sizes[sg.index][root], facts.align)

            delta[lo] += size
            delta[hi + 1] -= size
    return np.cumsum(delta)[:-1]


def _root(base: dict[int, int], t: int) -> int:
    while t in base:
        t = base[t]
    return t


def _view_bases(views: tuple[Alias, ...], concat_views: bool) -> dict[int, int]:
    """view tensor -> the tensor whose bytes it shares, by the planner's own view rules
    (``tflm.alias_rules``: slices of whole rows inside their input, concatenation
    inputs inside the output, each starting at a multiple of 16 bytes)."""
    rules = (SLICE_VIEW, CONCAT_VIEW) if concat_views else (SLICE_VIEW,)
    return {a.tensor: a.base for a in views if a.kind in rules}
