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

A copy holds every byte the kernel reads, as the type it reads them as
(``weight_copies``): an int32 bias that an int16x8 kernel reads as int64
(``reader/overread.py``, for the kernels the plan is for) is copied through a
constant INT64 view of the same buffer (its ``elements x 8`` bytes, the bytes the
original operator reads), so the operator reads an INT64 copy of those bytes. An
operator whose weights cannot be copied so is refused (``copy_refusal``): INT4
weights, which TFLM's RESHAPE copies one byte per element (``TfLiteTypeSizeOf``
of ``kTfLiteInt4`` is 1, ``memory_helpers.cc``), twice what the packed buffer
holds; a widened bias whose bytes the file does not hold in full.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import ClassVar

from arenaplan.errors import UnsupportedModelError
from arenaplan.ir.constants import constant_bytes, data_bytes
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.ir.signatures import WEIGHT_SLOTS, weight_inputs
from arenaplan.passes.base import PassResult
from arenaplan.passes.edit import SubgraphEdit, new_options
from arenaplan.reader.overread import READ_AS
from arenaplan.runtime.registry import default_kernels, or_default, runtime_of
from arenaplan.runtime.spec import KernelSet


@dataclass(frozen=True, slots=True)
class Stage:
    """``ops``: indices (subgraph 0) of the operators whose weights are staged;
    ``early``: those of them whose copies go before the operator ahead of them;
    ``kernels``: the kernels the model runs with (which read some biases wider)."""

    name: ClassVar[str] = "stage"
    summary: ClassVar[str] = "copy chosen operators' weights into the arena just before them"
    ops: tuple[int, ...] = ()
    early: tuple[int, ...] = ()
    kernels: KernelSet = field(default_factory=default_kernels)

    def run(self, model: Model) -> PassResult:
        ops = model.subgraphs[0].operators
        chosen = _chosen(model, self)
        if not chosen:
            return PassResult(model, False, "no operator staged", {"staged_operators": 0})
        for o in sorted(chosen):
            why = copy_refusal(model, o, self.kernels)
            if why is not None:
                raise UnsupportedModelError(f"operator {o} {ops[o].opcode}: {why}")
        edit = SubgraphEdit(model, 0)
        rewired: dict[int, Operator] = {}
        for o, copies in _order(len(ops), chosen, set(self.early)):
            if copies:
                rewired[o] = _staged(edit, ops[o], weight_copies(model, o, self.kernels))
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


@dataclass(frozen=True, slots=True)
class WeightCopy:
    """How one weight input of an operator is copied: constant ``tensor`` (subgraph
    0), copied as ``dtype`` (the type the kernel reads it as), ``nbytes`` bytes (those
    the kernel reads: the copy's size in the arena, unaligned)."""

    tensor: int
    dtype: DType
    nbytes: int


def weight_copies(model: Model, o: int, kernels: KernelSet | None = None) -> list[WeightCopy]:
    """The copies of the weights of operator ``o`` (subgraph 0), in input order."""
    sg = model.subgraphs[0]
    wide = set(_wide(sg, sg.operators[o], kernels))
    found = []
    for i in weight_inputs(sg.tensors, sg.operators[o]):
        t = sg.tensors[i]
        if i in wide:
            found.append(WeightCopy(i, DType.INT64, t.elements * READ_AS))
        else:
            found.append(WeightCopy(i, t.dtype, t.nbytes))
    return found


def copy_refusal(model: Model, o: int, kernels: KernelSet | None = None) -> str | None:
    """Why the weights of operator ``o`` (subgraph 0) cannot be copied bit-exactly by
    a RESHAPE, or None when they can."""
    sg = model.subgraphs[0]
    op = sg.operators[o]
    wide = set(_wide(sg, op, kernels))
    for i in weight_inputs(sg.tensors, op):
        t = sg.tensors[i]
        if t.dtype is DType.INT4:
            packed = data_bytes(t.dtype, t.elements)
            return (
                f"its INT4 weights {t.name!r} are packed two to a byte ({packed:,} B) and "
                f"TFLM's RESHAPE copies one byte per element ({t.elements:,} B, reading past "
                "their buffer)"
            )
        if i in wide and constant_bytes(model.buffers, t, t.elements * READ_AS) is None:
            held = len(model.buffers[t.buffer])
            return (
                f"the kernel reads its {t.dtype.name.lower()} bias {t.name!r} as int64 "
                f"({t.elements * READ_AS:,} B) and the file holds {held:,} B of it: "
                "a copy cannot hold what it reads"
            )
    return None


def _wide(sg: Subgraph, op: Operator, kernels: KernelSet | None) -> list[int]:
    """The bias inputs of ``op`` that ``kernels`` read as int64 although narrower."""
    return runtime_of(kernels).wide_biases(sg, op, or_default(kernels))


def _staged(edit: SubgraphEdit, op: Operator, copies: list[WeightCopy]) -> Operator:
    """Add a RESHAPE copy for each weight input of ``op``; ``op`` reading the copies.
    A copy made as another type than its constant's copies an alias of the
    constant's buffer with that type (the same bytes, read as the kernel reads them)."""
    copy_of: dict[int, int] = {}
    for c in copies:
        src = edit.tensors[c.tensor]
        source = c.tensor
        if c.dtype is not src.dtype:
            source = edit.add_view(src, f"{src.name}/as_{c.dtype.name.lower()}", c.dtype)
        like = edit.tensors[source]  # its type, shape and quantisation
        copy_of[c.tensor] = edit.add_tensor(like, f"{src.name}/staged", src.shape)
        reshape = Operator(
            0,
            "RESHAPE",
            False,
            (source,),
            (copy_of[c.tensor],),
            options=new_options("ReshapeOptions"),
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
