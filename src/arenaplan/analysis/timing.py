"""Operator time on a target from the memory accesses it makes: compute + accesses.

For one operator o, in cycles of the target clock:

    cycles(o) = work(o) * cycles_per_work[kind(o)]                        compute
              + sum over memories m of
                  accesses(o, m) * latency(m)                             per access
                + bytes(o, m) * clock / bandwidth(m)                      transfer

``work`` is MACs for convolutions, depthwise convolutions and fully connected
operators, output elements otherwise (``analysis.cost``); ``cycles_per_work`` is
1 / the target's ``[compute]`` rate of that kind. ``accesses(o, m)`` and ``bytes(o,
m)`` sum the loads and stores (count, bytes) the operator makes to every tensor and
persistent block that lives in memory m: how a kernel really walks its tensors
(a convolution re-reads its input about Kh*Kw/stride^2 times) comes from the
traffic counts given (``Access``), by default one pass over each tensor in words
of ``WORD`` bytes. ``latency`` is in cycles per access and ``bandwidth`` in bytes
per second, both from the target's memory. Seconds = cycles / clock_hz.

Unlike the roofline (``analysis.cost``), memory time adds to compute: a
microcontroller's core stalls on its loads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from arenaplan.analysis.cost import TensorKey, operator_work
from arenaplan.ir.model import Model
from arenaplan.targets.model import Target

WORD = 4  # bytes per access in the default traffic (32-bit loads and stores)
PERSISTENT = "persistent"  # key of an operator's persistent data (op data, eval tensors)

AccessKey = TensorKey | str  # a tensor, or PERSISTENT


@dataclass(frozen=True, slots=True)
class Access:
    """Loads and stores of one operator to one tensor (counts and bytes)."""

    loads: int
    stores: int
    load_bytes: int
    store_bytes: int

    @property
    def count(self) -> int:
        return self.loads + self.stores

    @property
    def bytes(self) -> int:
        return self.load_bytes + self.store_bytes


@dataclass(frozen=True, slots=True)
class OpAccesses:
    """What one operator does: its kind and work, and its accesses per tensor."""

    subgraph: int
    op: int
    opcode: str
    kind: str
    work: int
    accesses: dict[AccessKey, Access] = field(default_factory=dict)


def one_pass_accesses(model: Model) -> list[OpAccesses]:
    """Each tensor read (inputs) or written (outputs) once, in words: the counts the
    roofline assumes, for when no traffic model covers the operator."""
    ops = []
    for w in operator_work(model):
        acc: dict[AccessKey, Access] = {}
        for key, n in w.reads:
            a = acc.get(key, Access(0, 0, 0, 0))
            acc[key] = Access(a.loads + -(-n // WORD), a.stores, a.load_bytes + n, a.store_bytes)
        for key, n in w.writes:
            a = acc.get(key, Access(0, 0, 0, 0))
            acc[key] = Access(a.loads, a.stores + -(-n // WORD), a.load_bytes, a.store_bytes + n)
        ops.append(OpAccesses(w.subgraph, w.op, w.opcode, w.kind, w.macs, acc))
    return ops


def operator_accesses(model: Model) -> list[OpAccesses]:
    """Every operator's accesses, from the best traffic counts available."""
    return one_pass_accesses(model)


@dataclass(frozen=True, slots=True)
class OpCycles:
    """Cycles of one operator: compute, and per memory (accesses and transfer)."""

    op: OpAccesses
    compute: float
    memory: dict[str, float]

    @property
    def total(self) -> float:
        return self.compute + sum(self.memory.values())


def per_memory(
    op: OpAccesses, where: Mapping[TensorKey, str], persistent: str
) -> dict[str, tuple[int, int]]:
    """(accesses, bytes) the operator makes to each memory."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key, a in op.accesses.items():
        memory = persistent if key == PERSISTENT else where[key]
        out[memory][0] += a.count
        out[memory][1] += a.bytes
    return {m: (n, b) for m, (n, b) in out.items()}


def op_cycles(
    op: OpAccesses, where: Mapping[TensorKey, str], persistent: str, target: Target
) -> OpCycles:
    compute = op.work / target.rate(op.kind)
    memory = {}
    for name, (count, nbytes) in sorted(per_memory(op, where, persistent).items()):
        m = target.memory(name)
        bandwidth = m.read_bandwidth or m.write_bandwidth
        transfer = nbytes * target.clock_hz / bandwidth if bandwidth else 0.0
        memory[name] = count * m.latency + transfer
    return OpCycles(op, compute, memory)


def model_cycles(
    ops: list[OpAccesses], where: Mapping[TensorKey, str], persistent: str, target: Target
) -> list[OpCycles]:
    """Cycles of every operator for a placement (``where``: tensor -> memory;
    ``persistent``: the memory of TFLM's persistent arena)."""
    return [op_cycles(op, where, persistent, target) for op in ops]
