"""Tensor lifetimes with TFLM's semantics (``AllocationInfoBuilder``): TFLM's scopes,
``Runtime.lifetimes`` of ``tflm.runtime``.

Time is counted in *scopes*, one global counter over all subgraphs:
scope 0 is "graph inputs", the i-th operator of subgraph 0 runs in scope i+1, and
a control-flow operator (IF, WHILE, CALL_ONCE) opens one more scope for each
subgraph it calls, whose operators take the scopes after it. Subgraphs that
subgraph 0 never calls get no lifetimes (TFLM never plans them).

Intervals are inclusive: a tensor is live over ``[first, last]``. Two buffers
conflict when their closed intervals intersect. ``-1`` means "never set", as in
TFLM (a variable tensor that is only read has ``first == -1``).
"""

from __future__ import annotations

from arenaplan.errors import UnsupportedModelError
from arenaplan.ir.model import Model, Operator
from arenaplan.runtime.records import UNSET, Lifetime, Lifetimes

# options naming the subgraphs a control-flow operator calls, in TFLM's order
_CALLED_SUBGRAPHS = {
    "IF": ("then_subgraph_index", "else_subgraph_index"),
    "WHILE": ("cond_subgraph_index", "body_subgraph_index"),
    "CALL_ONCE": ("init_subgraph_index",),
}


class _Marker:
    """Walks subgraphs in TFLM's order, updating first/last like TFLM does."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.scope = 0
        self.first = [[UNSET] * len(sg.tensors) for sg in model.subgraphs]
        self.last = [[UNSET] * len(sg.tensors) for sg in model.subgraphs]
        self.op_span = [[(UNSET, UNSET)] * len(sg.operators) for sg in model.subgraphs]
        self.depth = 0

    def created(self, s: int, t: int) -> None:
        if self.first[s][t] == UNSET:
            self.first[s][t] = self.scope

    def used(self, s: int, t: int) -> None:
        self.last[s][t] = self.scope

    def mark(self, s: int) -> None:
        self.depth += 1
        if self.depth > len(self.model.subgraphs) + 1:
            raise UnsupportedModelError(f"subgraph {s} is called recursively")
        sg = self.model.subgraphs[s]
        for t in sg.inputs:
            self.created(s, t)
            self.used(s, t)
        for i, op in enumerate(sg.operators):
            self.scope += 1
            for t in op.outputs:
                self.created(s, t)
            start = self.scope
            self.mark_called(op)
            for t in op.tensor_inputs():
                self.used(s, t)
            for t in op.outputs:
                self.used(s, t)
            self.op_span[s][i] = (start, self.scope)
        for t in sg.outputs:
            self.created(s, t)
            self.used(s, t)
        self.depth -= 1

    def mark_called(self, op: Operator) -> None:
        for key in _CALLED_SUBGRAPHS.get(op.opcode, ()):
            called = op.options.get(key)
            if isinstance(called, int) and 0 <= called < len(self.model.subgraphs):
                self.scope += 1
                self.mark(called)


def compute_lifetimes(model: Model) -> Lifetimes:
    """Lifetimes of all tensors of all subgraphs, as TFLM computes them."""
    marker = _Marker(model)
    marker.mark(0)
    tensors = tuple(
        tuple(Lifetime(f, last) for f, last in zip(firsts, lasts, strict=True))
        for firsts, lasts in zip(marker.first, marker.last, strict=True)
    )
    ops = tuple(tuple(spans) for spans in marker.op_span)
    return Lifetimes(tensors, ops, marker.scope + 1)
