"""When each tensor of a ``.pte`` program is live, one step per instruction.

The methods of a program are planned together, each in steps of its own (method k's
steps follow method k-1's), so no two methods' tensors meet; each method's pool is
then the bytes its own tensors reach. Within a method: a tensor is live from its
first use to its last; the inputs from the first step, the outputs to the last;
state over the whole method; a view's uses keep its base live (the view itself is
not planned: it lies in its base's bytes).
"""

from __future__ import annotations

from arenaplan.executorch.storage import Storage
from arenaplan.ir.model import Model, Subgraph
from arenaplan.runtime.records import Lifetime, Lifetimes


def program_lifetimes(model: Model, storage: Storage) -> Lifetimes:
    tensors, operators, start = [], [], 0
    for sg in model.subgraphs:
        steps = max(len(sg.operators), 1)
        tensors.append(_method(sg, storage, start, start + steps - 1))
        operators.append(tuple((start + i, start + i) for i in range(len(sg.operators))))
        start += steps
    return Lifetimes(tuple(tensors), tuple(operators), start)


def _method(sg: Subgraph, storage: Storage, first: int, last: int) -> tuple[Lifetime, ...]:
    s = sg.index
    span: dict[int, tuple[int, int]] = {}

    def use(t: int, step: int) -> None:
        base = storage.views.get((s, t), ((s, t), 0))[0][1]
        lo, hi = span.get(base, (step, step))
        span[base] = (min(lo, step), max(hi, step))

    for t in sg.inputs:
        use(t, first)
    for op in sg.operators:
        for t in (*op.inputs, *op.outputs):
            use(t, first + op.index)
    for t in sg.outputs:
        use(t, last)
    for key in storage.state:
        if key[0] == s:
            use(key[1], first)
            use(key[1], last)
    out = []
    for t in range(len(sg.tensors)):
        base = storage.views.get((s, t), ((s, t), 0))[0][1]
        lo, hi = span.get(base, (first, first))  # never used: one step
        out.append(Lifetime(lo, hi))
    return tuple(out)
