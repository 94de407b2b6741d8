"""``stage``: copy an operator's weights into the arena just before it runs.

For each chosen operator every constant input is replaced by a new arena tensor
of the same type, shape and quantisation, written by a RESHAPE of the constant
inserted just before the operator. TFLM's RESHAPE copies its input to its output
when they are not the same buffer (``kernels/reshape.cc``: ``memcpy`` when
``input->data.raw != output->data.raw``), so the firmware runs a plain copy from
flash into the arena, and the planner sees the copy as a tensor alive from the
RESHAPE to its operator: packed with the activations, checked by the validator,
proven in TFLM like any other plan. The model's outputs do not change (the
operator reads the same bytes). An operator in ``early`` gets its copies before
the operator ahead of it (a prefetch that a DMA would overlap with that
operator): the copy is then alive over both. Only weight inputs are staged
(``ir.signatures.WEIGHT_SLOTS``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import ClassVar

from arenaplan.ir.model import Model, Operator
from arenaplan.ir.signatures import WEIGHT_SLOTS, weight_inputs
from arenaplan.passes.base import PassResult
from arenaplan.passes.edit import SubgraphEdit, new_options


@dataclass(frozen=True, slots=True)
class Stage:
    """``ops``: indices (subgraph 0) of the operators whose weights are staged;
    ``early``: those of them whose copies go before the operator ahead of them."""

    name: ClassVar[str] = "stage"
    summary: ClassVar[str] = "copy chosen operators' weights into the arena just before them"
    ops: tuple[int, ...] = ()
    early: tuple[int, ...] = ()

    def run(self, model: Model) -> PassResult:
        ops = model.subgraphs[0].operators
        chosen = _chosen(model, self)
        if not chosen:
            return PassResult(model, False, "no operator staged", {"staged_operators": 0})
        edit = SubgraphEdit(model, 0)
        rewired: dict[int, Operator] = {}
        for o, copies in _order(len(ops), chosen, set(self.early)):
            if copies:
                rewired[o] = _staged(edit, ops[o])
            else:
                edit.add_op(rewired.get(o, ops[o]), o)
        n = len(chosen)
        note = f"{n} operator{'s' if n != 1 else ''} read weights copied into the arena"
        return PassResult(edit.finish(), True, note, {"staged_operators": n}, edit.origin())


def _chosen(model: Model, stage: Stage) -> set[int]:
    ops = model.subgraphs[0].operators
    return {o for o in stage.ops if o < len(ops) and WEIGHT_SLOTS.get(ops[o].opcode)}


def _order(n_ops: int, chosen: set[int], early: set[int]) -> Iterator[tuple[int, bool]]:
    """The rewritten order: (o, True) where operator o's copies go, (o, False) where
    o itself goes. Copies go just before their operator, or before the operator
    ahead of it when ``early``."""
    done: set[int] = set()
    for o in range(n_ops):
        if o + 1 in chosen and o + 1 in early:
            done.add(o + 1)
            yield o + 1, True
        if o in chosen and o not in done:
            yield o, True
        yield o, False


def _staged(edit: SubgraphEdit, op: Operator) -> Operator:
    """Add a RESHAPE copy for each weight input of ``op``; ``op`` reading the copies."""
    copy_of: dict[int, int] = {}
    for i in weight_inputs(edit.tensors, op):
        src = edit.tensors[i]
        copy_of[i] = edit.add_tensor(src, f"{src.name}/staged", src.shape)  # same quantisation
        reshape = Operator(
            0, "RESHAPE", False, (i,), (copy_of[i],), options=new_options("ReshapeOptions")
        )
        edit.add_op(reshape, None)
    slots = WEIGHT_SLOTS.get(op.opcode, ())
    inputs = tuple(copy_of.get(i, i) if k in slots else i for k, i in enumerate(op.inputs))
    return replace(op, inputs=inputs)


def staged_index(model: Model, stage: Stage) -> list[int]:
    """Where each operator of ``model`` (subgraph 0) lands after ``stage``: the
    copies inserted ahead of it shift it by one per distinct weight tensor."""
    sg = model.subgraphs[0]
    where, at = [], 0
    for o, copies in _order(len(sg.operators), _chosen(model, stage), set(stage.early)):
        if copies:
            at += len(weight_inputs(sg.tensors, sg.operators[o]))
        else:
            where.append(at)
            at += 1
    return where
