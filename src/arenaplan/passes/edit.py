"""Build a new subgraph from an old one: append tensors, constants and operators.

Passes describe their rewrite with ``SubgraphEdit`` and ``finish`` returns a new
``Model`` (the input is never touched): operators in the order they were added,
tensors no operator, subgraph boundary or signature def refers to any more dropped,
the rest renumbered (the subgraph's inputs and outputs and every signature def of
the subgraph with them), new constant data appended as new buffers. A rewritten model has new
tensors, so an offline plan it carried no longer applies and is dropped. Each
operator added names the operator of the old subgraph it stands for, or None for
a new one; ``origin`` gives them as the pass's origin (``passes.base``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import (
    Model,
    Operator,
    Options,
    OptionValue,
    SignatureDef,
    Subgraph,
    Tensor,
)
from arenaplan.passes.base import Origin, origin_of_subgraphs

OFFLINE_PLAN = "OfflineMemoryAllocation"


def new_options(table: str, **items: OptionValue) -> Options:
    """Builtin options of a new operator (``table``: the schema's options table)."""
    fields = {f.name for f in dataclasses.fields(Options)}
    extra = {"table": table} if "table" in fields else {}
    return Options(items=tuple(sorted(items.items())), **extra)


def with_option(options: Options, name: str, value: OptionValue) -> Options:
    """``options`` with one field set (the table kept)."""
    items = dict(options.items)
    items[name] = value
    return replace(options, items=tuple(sorted(items.items())))


class SubgraphEdit:
    """A subgraph under construction; ``tensors`` starts as the old table."""

    def __init__(self, model: Model, subgraph: int) -> None:
        self.model = model
        self.sg: Subgraph = model.subgraphs[subgraph]
        self.tensors: list[Tensor] = list(self.sg.tensors)
        self.ops: list[Operator] = []
        self.sources: list[int | None] = []  # per op: the old operator it stands for
        self.buffers: list[bytes] = []  # new buffers, numbered after the model's
        self._constants: dict[tuple[tuple[int, ...], bytes], int] = {}

    def add_tensor(self, like: Tensor, name: str, shape: Sequence[int]) -> int:
        """A new activation with ``like``'s type and quantisation."""
        t = replace(
            like,
            index=len(self.tensors),
            name=name,
            shape=tuple(int(d) for d in shape),
            buffer=0,
            is_constant=False,
            is_variable=False,
            shape_signature=None,  # ``like``'s would describe another shape
        )
        self.tensors.append(t)
        return t.index

    def add_view(self, constant: Tensor, name: str, dtype: DType) -> int:
        """A new constant tensor over ``constant``'s buffer, of its shape and
        quantisation, read as ``dtype`` (the buffer must hold its bytes)."""
        t = replace(constant, index=len(self.tensors), name=name, dtype=dtype)
        self.tensors.append(t)
        return t.index

    def add_int32(self, name: str, values: Sequence[int] | np.ndarray) -> int:
        """A constant INT32 tensor holding ``values`` (its shape is kept); one tensor
        serves every operator asking for the same values (each costs TFLM a few
        bytes of its persistent arena)."""
        data = np.asarray(values, dtype="<i4")
        key = (data.shape, data.tobytes())
        if key in self._constants:
            return self._constants[key]
        self.buffers.append(data.tobytes())
        t = Tensor(
            index=len(self.tensors),
            name=name,
            shape=tuple(int(d) for d in data.shape),
            dtype=DType.INT32,
            buffer=len(self.model.buffers) + len(self.buffers) - 1,
            is_constant=data.size > 0,
            is_variable=False,
        )
        self.tensors.append(t)
        self._constants[key] = t.index
        return t.index

    def add_op(self, op: Operator, source: int | None) -> None:
        """Append ``op``; ``source``: the index of the old subgraph's operator it
        stands for (its copy, or one band of it), None for a new operator."""
        self.ops.append(replace(op, index=len(self.ops)))
        self.sources.append(source)

    def origin(self) -> Origin:
        """For each operator of ``finish()``'s model, the operator of the model being
        edited that it came from (model order; None: new)."""
        return origin_of_subgraphs(self.model, {self.sg.index: self.sources})

    def finish(self) -> Model:
        """The model with this subgraph replaced; unused tensors dropped."""
        keep = self._used()
        new_index = {old: new for new, old in enumerate(keep)}
        tensors = tuple(replace(self.tensors[old], index=new) for new, old in enumerate(keep))

        def remap(indices: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(new_index[i] if i >= 0 else -1 for i in indices)

        ops = tuple(
            replace(
                op,
                inputs=remap(op.inputs),
                outputs=remap(op.outputs),
                intermediates=remap(op.intermediates),
            )
            for op in self.ops
        )
        sg = replace(
            self.sg,
            tensors=tensors,
            operators=ops,
            inputs=remap(self.sg.inputs),
            outputs=remap(self.sg.outputs),
        )
        subgraphs = tuple(sg if s.index == sg.index else s for s in self.model.subgraphs)
        return replace(
            self.model,
            subgraphs=subgraphs,
            signature_defs=tuple(
                self._signature(sd, new_index) for sd in self.model.signature_defs
            ),
            buffers=self.model.buffers + tuple(self.buffers),
            buffer_sizes=self.model.buffer_sizes + tuple(len(b) for b in self.buffers),
            metadata=tuple((n, b) for n, b in self.model.metadata if n != OFFLINE_PLAN),
            stored_plan=None,
        )

    def _signature(self, sd: SignatureDef, new_index: dict[int, int]) -> SignatureDef:
        """``sd`` with this subgraph's tensor indices renumbered (others untouched)."""
        if sd.subgraph != self.sg.index:
            return sd
        return replace(
            sd,
            inputs=tuple((name, new_index[t]) for name, t in sd.inputs),
            outputs=tuple((name, new_index[t]) for name, t in sd.outputs),
        )

    def _used(self) -> list[int]:
        used = set(self.sg.inputs) | set(self.sg.outputs)
        for sd in self.model.signature_defs:
            if sd.subgraph == self.sg.index:
                used.update(t for _, t in (*sd.inputs, *sd.outputs))
        for op in self.ops:
            used.update(i for i in (*op.inputs, *op.outputs, *op.intermediates) if i >= 0)
        return sorted(used)
