"""The order of a method's instructions: what any new order must keep, and a new
order written into the program.

What must keep its order (``order_facts``), per storage root (a tensor, its views
lying in its bytes: ``storage``): every write after the reads and the write before
it, every read after the write before it (a kernel call writes its outs and the
inputs the reader says it writes too, ``written_inputs``). State needs nothing more:
its reads before the instruction that writes it read the previous call's bytes and
stay before it. An instruction that is not a kernel call (a move, a free, a
delegate call, a kind arenaplan does not know) stays where it is: whatever ran
before it still does, whatever ran after still does. A method of more than one
chain is not written in a new order (the IR does not say where a chain ends).

Writing (``with_order``): only the order of each chain's instructions changes. The
chain's ``instructions`` vector holds one uoffset per instruction, each relative to
its own position; the entries are rewritten to point at the same Instruction tables
in the new order, every other byte is kept.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

from flatbuffers.table import Table

from arenaplan.errors import ModelFormatError
from arenaplan.executorch.storage import storage_of
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.reader.pte_reader import WRITTEN_INPUTS
from arenaplan.runtime.records import OrderFacts

PROGRAM_PLANS, PLAN_CHAINS, CHAIN_INSTRUCTIONS = 1, 5, 2  # fields of program.fbs tables


def chain_order(sg: Subgraph) -> tuple[int, ...]:
    """The program's instructions in the order of ``sg``'s operators."""
    return tuple(op.in_file for op in sg.operators)


def writes(op: Operator) -> tuple[int, ...]:
    """The tensors ``op`` writes: its outputs and the inputs it writes too (every
    input of a delegate call: what it does to them is not known)."""
    again = op.options.get(WRITTEN_INPUTS, ())
    if op.opcode.startswith("delegate:"):
        again = tuple(op.tensor_inputs())
    return tuple(dict.fromkeys((*op.outputs, *again)))  # type: ignore[misc]


def is_kernel_call(op: Operator) -> bool:
    """A kernel call names its operator ``namespace::name``; the rest (move, free,
    delegate:<id>) do not."""
    return "::" in op.opcode and not op.opcode.startswith("delegate:")


def order_facts(model: Model, s: int) -> OrderFacts:
    """What any order of method ``s`` must keep."""
    sg = model.subgraphs[s]
    storage = storage_of(model)
    bases = {t: b[1] for (m, t), (b, _) in storage.views.items() if m == s}
    before: set[tuple[int, int]] = set()
    last_write: dict[int, int] = {}  # root -> the operator that wrote it last
    reads: dict[int, list[int]] = {}  # root -> operators that read it since
    for op in sg.operators:
        written = {bases.get(t, t) for t in writes(op)}
        for t in op.tensor_inputs():
            root = bases.get(t, t)
            if root in last_write:
                before.add((last_write[root], op.index))
            reads.setdefault(root, []).append(op.index)
        for root in written:
            before.update((r, op.index) for r in reads.pop(root, ()))
            if root in last_write:
                before.add((last_write[root], op.index))
            last_write[root] = op.index
    n = len(sg.operators)
    for op in sg.operators:
        if not is_kernel_call(op):
            before.update((k, op.index) for k in range(op.index))
            before.update((op.index, k) for k in range(op.index + 1, n))
    before = {(a, b) for a, b in before if a != b}
    return OrderFacts(tuple(sorted(before)), tuple(sorted(bases.items())))


def with_order(data: bytes, orders: Mapping[int, Sequence[int]]) -> bytes:
    """``data`` with the instructions of plan ``s``'s one chain in ``orders[s]``
    (the old indices, in their new order); plans not in ``orders`` as they were."""
    out = bytearray(data)
    plans = _plans(data)
    for s, order in sorted(orders.items()):
        vectors = _instruction_vectors(plans[s])
        if len(vectors) != 1:
            raise ModelFormatError(f"plan {s}: a new order for a method of {len(vectors)} chains")
        start, n = vectors[0]
        if sorted(order) != list(range(n)):
            raise ModelFormatError(f"plan {s}: {list(order)} is no order of {n} instructions")
        # each entry: a uoffset from its own position to an Instruction table
        targets = [
            start + 4 * i + struct.unpack_from("<I", data, start + 4 * i)[0] for i in range(n)
        ]
        for i, old in enumerate(order):
            slot = start + 4 * i
            struct.pack_into("<I", out, slot, targets[old] - slot)
    return bytes(out)


def _plans(data: bytes) -> list[Table]:
    root = Table(data, struct.unpack_from("<I", data, 0)[0])
    return _vector_tables(root, PROGRAM_PLANS)


def _instruction_vectors(plan: Table) -> list[tuple[int, int]]:
    """(position of the first entry, entries) of each chain's instructions vector."""
    out = []
    for chain in _vector_tables(plan, PLAN_CHAINS):
        o = chain.Offset(4 + 2 * CHAIN_INSTRUCTIONS)
        out.append((chain.Vector(o), chain.VectorLen(o)) if o else (0, 0))
    return out


def _vector_tables(t: Table, k: int) -> list[Table]:
    o = t.Offset(4 + 2 * k)
    if not o:
        return []
    start = t.Vector(o)
    return [Table(t.Bytes, t.Indirect(start + 4 * i)) for i in range(t.VectorLen(o))]
