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
(``analysis.staging.WEIGHT_SLOTS``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from arenaplan.analysis.staging import WEIGHT_SLOTS
from arenaplan.ir.model import Model, Operator
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
        chosen = {o for o in self.ops if o < len(ops) and WEIGHT_SLOTS.get(ops[o].opcode)}
        if not chosen:
            return PassResult(model, False, "no operator staged", {"staged_operators": 0})
        edit = SubgraphEdit(model, 0)
        rewired: dict[int, Operator] = {}
        for op in ops:
            nxt = op.index + 1
            if nxt in chosen and nxt in self.early:
                rewired[nxt] = _staged(edit, ops[nxt])
            if op.index in chosen and op.index not in rewired:
                rewired[op.index] = _staged(edit, op)
            edit.add_op(rewired.get(op.index, op))
        n = len(chosen)
        note = f"{n} operator{'s' if n != 1 else ''} read weights copied into the arena"
        return PassResult(edit.finish(), True, note, {"staged_operators": n})


def _staged(edit: SubgraphEdit, op: Operator) -> Operator:
    """Add a RESHAPE copy for each weight input of ``op``; ``op`` reading the copies."""
    inputs = list(op.inputs)
    done: dict[int, int] = {}
    slots = WEIGHT_SLOTS.get(op.opcode, ())
    for k, i in enumerate(op.inputs):
        if k not in slots or i < 0 or not edit.tensors[i].is_constant:
            continue
        if i not in done:
            src = edit.tensors[i]
            copy = edit.add_tensor(src, f"{src.name}/staged", src.shape)
            edit.tensors[copy] = replace(edit.tensors[copy], quantization=src.quantization)
            edit.add_op(
                Operator(
                    0,
                    "RESHAPE",
                    False,
                    (i,),
                    (copy,),
                    options=new_options("ReshapeOptions"),
                )
            )
            done[i] = copy
        inputs[k] = done[i]
    return replace(op, inputs=tuple(inputs))


def staged_index(model: Model, stage: Stage) -> list[int]:
    """Where each operator of ``model`` (subgraph 0) lands after ``stage``: the
    copies inserted ahead of it shift it by one per distinct weight tensor."""
    ops = model.subgraphs[0].operators
    chosen = {o for o in stage.ops if o < len(ops) and WEIGHT_SLOTS.get(ops[o].opcode)}

    def copies(o: int) -> int:
        slots = WEIGHT_SLOTS.get(ops[o].opcode, ())
        sg = model.subgraphs[0]
        return len(
            {
                i
                for k, i in enumerate(ops[o].inputs)
                if k in slots and i >= 0 and sg.tensors[i].is_constant
            }
        )

    where, at, done = [], 0, set()
    for op in ops:
        nxt = op.index + 1
        if nxt in chosen and nxt in stage.early:
            at += copies(nxt)
            done.add(nxt)
        if op.index in chosen and op.index not in done:
            at += copies(op.index)
        where.append(at)
        at += 1
    return where
