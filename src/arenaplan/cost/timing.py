"""Operator time on a target from the memory accesses it makes: compute + stalls.

Every figure here is an estimate: cycles from the target's compute rates and memory
latencies and bandwidths (its TOML, or ``cost.calibration``'s fit) and the access
counts of the traffic models, seconds = cycles / clock.

For one operator o, in cycles of the target clock (seconds = cycles / clock_hz):

    cycles(o) = work(o) / rate[kind(o)]                                  compute
              + sum over memories m of  stall(o, m)

    stall(o, m) = sum over tensors t of o in m, n = accesses(o, t) reaching m:
                  n * (latency(m) - latency(F))                          per access
                + bytes(n) * clock * (1 / bandwidth(m) - 1 / bandwidth(F))

``work`` is MACs for convolutions, depthwise convolutions and fully connected
operators, output elements otherwise (``cost.roofline``). A target's compute
rates are measured with everything in its fastest memory F, so they already
include F's access costs: the model charges each memory only what it costs beyond
F (nothing for F itself). ``latency`` is in cycles per access, ``bandwidth`` in
bytes per second, both per memory of the target.

Accesses: how a kernel walks its tensors (a convolution re-reads its input about
Kh*Kw/stride^2 times, its weights once per output pixel group) comes from the
traffic model of TFLM's kernels (``cost.traffic``: loads, stores and their
bytes per tensor, to TFLM's persistent data under ``PERSISTENT``, to kernel
scratch under ``SCRATCH`` and to the flatbuffer under ``MODEL``; for a kernel it
has no formula for, one pass over each tensor). A memory behind a cache
(``cache_bytes`` > 0, lines of ``line_bytes``) is reached once per line: a
block whose footprint fits the cache once per line of the footprint, a larger
one once per line of the bytes moved (each key is judged alone: interference
between keys is not modelled); a block read at random places (a lookup table)
once per line its reads are expected to touch, ``L * (1 - (1 - 1/L)^n)`` for
``n`` reads over ``L`` lines. Footprints, in bytes: a tensor's size, or the
extent the traffic model gives (a kernel that reads past the end); for kernel
scratch and persistent data, the extent of the block the kernel reads (xcore's
``nn_add_params_t``; TFLM's scratch request, and for TFLM's kernels each block
of the tail as ``tflm.tail`` sizes it: op data, node, eval tensors);
a key without one is taken as never reused (once per line of the bytes moved).
Stores count as loads do (a write-back cache fills a line for them), except
where the memory's cache is write-through (``cache_writes = "through"``): each
store then reaches the memory on its own and costs ``write_latency`` cycles
(``Memory.store_latency``) instead of ``latency``:

    stall(o, m) = reads(o, m) * (latency(m) - latency(F))
                + writes(o, m) * (store_latency(m) - latency(F)) + transfer

Placements map tensors to memories; the persistent arena's memory is given
apart; kernel scratch lives in the head, by default in the fastest memory, or
where the placement maps the key :data:`SCRATCH`.

A memory that cannot be read in place (``Memory.read == "copy"``, xcore.ai's
flash) is not read by operators: each tensor an operator reads from it is first
copied into the fastest memory (``copy_cycles``: its bytes at the memory's copy
rate plus its copy latency, once per operator, blocking), and the reads go there.

Targets whose memory traffic overlaps compute (an NPU's DMA) keep the roofline
of ``cost.roofline`` (``Target.time_model == "roofline"``).

A target that names its ``core`` (a Cortex-M running CMSIS-NN) replaces ``work /
rate`` by the core's cycles for the instructions the runtime measured each operator
to execute, by class (``Runtime.kernel_counts``, ``targets.cores``), times the
target's ``instructions_scale``; its memories then charge their whole latency, not
the part beyond the fastest's (the class costs are at zero wait states), as
``core_stalls`` says. An operator without measured counts keeps its rate.
"""

from __future__ import annotations

from collections import ChainMap, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from arenaplan.cost.roofline import (
    OpTime,
    TensorKey,
    default_memory,
    op_time,
    operator_work,
    work_cycles,
)
from arenaplan.cost.traffic import Traffic, operator_traffic
from arenaplan.cost.traffic_xcore import xcore_counts
from arenaplan.ir.model import Model
from arenaplan.runtime.records import TensorBytes
from arenaplan.runtime.registry import runtime_of
from arenaplan.runtime.spec import KernelSet
from arenaplan.targets.cores import core_named, data_accesses
from arenaplan.targets.model import Memory, Target

PERSISTENT = "persistent"  # TFLM's persistent data (op data, nodes, eval tensors)
SCRATCH = "scratch"  # kernel scratch buffers (in the head's fastest memory)
MODEL = "model"  # flatbuffer bytes other than tensor data (where the weights are)

AccessKey = TensorKey | str  # a tensor, or PERSISTENT, SCRATCH, MODEL


@dataclass(frozen=True, slots=True)
class Access:
    """Loads and stores of one operator to one tensor or block (counts and bytes);
    ``footprint``: the bytes a cache must hold to reuse it (0: unknown);
    ``scattered``: loads fall at random places of the footprint (a lookup table)."""

    loads: int
    stores: int
    load_bytes: int
    store_bytes: int
    footprint: int = 0
    scattered: bool = False

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
    parts: tuple[tuple[str, str, int], ...] = ()  # roofline.OpWork.parts


def operator_accesses(
    model: Model, traffic_of: str = "tflm", kernels: KernelSet | None = None
) -> list[OpAccesses]:
    """Every operator's accesses from the traffic model of TFLM's kernels
    (``cost.traffic``: every load and store per tensor and persistent block,
    checked against the real kernels under valgrind; for a kernel it has no formula
    for, each input read once and each output written once), or with
    ``traffic_of="xcore"`` of xcore.ai's lib_nn kernels (``cost.traffic_xcore``)."""
    runtime = runtime_of(kernels)
    sizes = runtime.tensor_bytes(model)
    # the blocks of the build the traffic tables were measured on (default kernels)
    blocks = runtime.persistent_extents(model, None, runtime.default_kernels())
    extents = scratch_extents(model, sizes, kernels) | blocks
    if traffic_of == "xcore":  # lib_nn's blocks first; TFLM's for the operators it leaves
        found = {
            k: _from_traffic(v.traffic, sizes, ChainMap(v.extents, extents), v.scattered)
            for k, v in xcore_counts(model).items()
        }
    else:
        found = {k: _from_traffic(t, sizes, extents) for k, t in operator_traffic(model).items()}
    return [
        OpAccesses(w.subgraph, w.op, w.opcode, w.kind, w.macs, found[(w.subgraph, w.op)], w.parts)
        for w in operator_work(model, kernels)
    ]


def scratch_extents(
    model: Model, sizes: TensorBytes, kernels: KernelSet | None = None
) -> dict[tuple, int]:
    """Bytes of each kernel scratch buffer of the runtime's default kernels (those the
    traffic tables were measured on, on a 64-bit host), by traffic key
    (``("scratch", subgraph, op, k)``: the op's k-th request)."""
    extents: dict[tuple, int] = {}
    counts: dict[tuple[int, int], int] = defaultdict(int)
    runtime = runtime_of(kernels)
    for r in runtime.scratch_requests(model, sizes, 8, runtime.default_kernels()):
        k = counts[(r.subgraph, r.op)]
        counts[(r.subgraph, r.op)] += 1
        extents[("scratch", r.subgraph, r.op, k)] = r.bytes
    return extents


def _from_traffic(
    found: Mapping[tuple, Traffic],
    sizes,
    extents: Mapping[tuple, int],
    scattered: frozenset = frozenset(),
) -> dict[AccessKey, Access]:
    """Accesses per timing key. Several traffic keys may share a timing key (all of
    an op's persistent blocks are ``PERSISTENT``): their footprints add up, and the
    whole is scattered only if every part is."""
    acc: dict[AccessKey, Access] = {}
    for key, t in found.items():
        k, footprint = _access_key(key, sizes, extents)
        a = acc.get(k)
        if a is None:
            acc[k] = Access(
                t.loads, t.stores, t.load_bytes, t.store_bytes, footprint, key in scattered
            )
            continue
        known = a.footprint and footprint  # an unknown part leaves the whole unknown
        acc[k] = Access(
            a.loads + t.loads,
            a.stores + t.stores,
            a.load_bytes + t.load_bytes,
            a.store_bytes + t.store_bytes,
            a.footprint + footprint if known else 0,
            a.scattered and key in scattered,
        )
    return acc


def _access_key(key: tuple, sizes, extents: Mapping[tuple, int]) -> tuple[AccessKey, int]:
    """The timing key of a traffic key, and the bytes a cache must hold to reuse it:
    a tensor's size (or the extent the traffic model gives, when a kernel reads past
    its end), the traffic model's extent of a scratch or persistent block; for a
    block of unknown extent, the bytes it moves (never reused)."""
    if len(key) == 2 and all(isinstance(k, int) for k in key):
        return (key[0], key[1]), max(sizes[key[0]][key[1]], extents.get(key, 0))
    if key and key[0] in ("persistent", "scratch"):
        return (PERSISTENT if key[0] == "persistent" else SCRATCH), extents.get(key, 0)
    return MODEL, 0


class Reach(NamedTuple):
    """What an operator's accesses cost in one memory, after its cache: ``reads``
    (accesses at the memory's latency: line fills behind a cache), ``writes``
    (stores that pass a write-through cache, at its store latency), ``bytes``
    moved to or from the memory."""

    reads: float
    writes: float
    bytes: float

    def __add__(self, other: tuple) -> Reach:  # type: ignore[override]
        return Reach(*(a + b for a, b in zip(self, other, strict=True)))


def reaching(a: Access, m: Memory) -> Reach:
    """What ``a`` costs in memory ``m`` (see :class:`Reach`): every access without a
    cache; behind one, lines of the footprint when it fits the cache (0: unknown,
    never reused), else lines of the bytes moved; lines expected to be touched for
    scattered reads. Stores pass a write-through cache one by one."""
    if m.cache_bytes <= 0:
        through = m.cache_writes == "through"
        return Reach(a.loads + (0 if through else a.stores), a.stores if through else 0, a.bytes)
    if m.cache_writes == "through":
        loads = Access(a.loads, 0, a.load_bytes, 0, a.footprint, a.scattered)
        lines = _lines(loads, m) if a.loads else 0
        return Reach(lines, a.stores, lines * m.line_bytes + a.store_bytes)
    lines = _lines(a, m)
    return Reach(lines, 0, lines * m.line_bytes)


def _lines(a: Access, m: Memory) -> float:
    """Lines of ``m``'s cache that ``a`` fills (see :func:`reaching`)."""
    fits = 0 < a.footprint <= m.cache_bytes
    if a.scattered and fits:
        span = -(-a.footprint // m.line_bytes)  # lines the block covers
        return span * (1 - (1 - 1 / span) ** a.count)
    reused = a.footprint if fits else a.bytes
    return -(-min(reused, a.bytes) // m.line_bytes)


def per_memory(
    op: OpAccesses, where: Mapping[AccessKey, str], persistent: str, target: Target
) -> dict[str, Reach]:
    """What the operator's accesses cost in each memory, after its cache."""
    out: dict[str, Reach] = defaultdict(lambda: Reach(0, 0, 0))
    for name, a, _ in _by_memory_keys(op, where, persistent, target):
        out[name] += reaching(a, target.memory(name))
    return dict(out)


def _by_memory_keys(
    op: OpAccesses, where: Mapping[AccessKey, str], persistent: str, target: Target
) -> Iterable[tuple[str, Access, AccessKey]]:
    """Each access of the operator with the memory it reaches and its key. Kernel
    scratch lives where ``where[SCRATCH]`` says (default: the fastest memory),
    flatbuffer bytes with the weights; a tensor in a memory that is not
    memory-mapped is read from its copy in the fastest (``copy_cycles``)."""
    fast = target.fastest().name
    scratch = where.get(SCRATCH, fast)
    others = {PERSISTENT: persistent, SCRATCH: scratch, MODEL: target.weights_memory().name}
    for key, a in op.accesses.items():
        name = others[key] if isinstance(key, str) else where[key]
        yield (fast if target.memory(name).read == "copy" else name), a, key


def core_stalls(
    op: OpAccesses,
    counts: Mapping[str, float],
    where: Mapping[AccessKey, str],
    persistent: str,
    target: Target,
    constants: frozenset = frozenset(),
) -> dict[str, float]:
    """Cycles the operator waits on each memory when its compute is a core's count
    of instructions at zero wait states (``targets.cores``): every memory charges its
    whole latency, per access without a cache, per line fill behind one.

    Weights (``constants``): the loads the kernel makes of them
    (``counts["weight_accesses"]``, ``counts["weight_bytes"]``), shared between
    the memories holding them by size; behind a cache, a line per line of the
    weights when they fit it, else per line read. Everything else: the kernel's
    other data accesses (``cores.data_accesses``), shared by the bytes the traffic
    model moves in each memory; behind a cache, the traffic model's line fills."""
    weights: dict[str, float] = defaultdict(float)
    moved: dict[str, float] = defaultdict(float)
    reach: dict[str, Reach] = defaultdict(lambda: Reach(0, 0, 0))
    for name, a, key in _by_memory_keys(op, where, persistent, target):
        if key in constants:
            weights[name] += a.footprint or a.load_bytes
        else:
            moved[name] += a.bytes
            reach[name] += reaching(a, target.memory(name))
    size = sum(weights.values()) or 1.0
    other = max(data_accesses(counts) - counts.get("weight_accesses", 0.0), 0.0)
    total = sum(moved.values()) or 1.0
    out: dict[str, float] = defaultdict(float)
    for name, held in weights.items():
        m, share = target.memory(name), held / size
        if m.cache_bytes <= 0:
            out[name] += counts.get("weight_accesses", 0.0) * share * m.latency
            continue
        read = held if held <= m.cache_bytes else counts.get("weight_bytes", 0.0) * share
        out[name] += -(-read // m.line_bytes) * m.latency
    for name, nbytes in moved.items():
        m = target.memory(name)
        if m.cache_bytes > 0:
            out[name] += reach[name].reads * m.latency + reach[name].writes * m.store_latency
        else:
            out[name] += other * nbytes / total * m.latency
    return dict(sorted(out.items()))


def copy_cycles(op: OpAccesses, where: Mapping[AccessKey, str], target: Target) -> dict[str, float]:
    """Cycles, per memory that cannot be read in place (``Memory.read == "copy"``),
    to copy each tensor the operator reads from it into RAM first: once per
    operator, blocking (a weights policy that stages them says otherwise:
    ``weights.policies``)."""
    out: dict[str, float] = defaultdict(float)
    for key, a in op.accesses.items():
        if isinstance(key, str):
            continue
        m = target.memory(where[key])
        if m.read == "copy":
            out[m.name] += (
                m.copy_seconds(a.footprint or a.bytes, 1, target.clock_hz) * target.clock_hz
            )
    return dict(out)


def stall_cycles(target: Target, name: str, reach: Reach) -> float:
    """Cycles that ``reach`` costs in memory ``name`` beyond the same in the fastest
    memory (never negative)."""
    m, fast = target.memory(name), target.fastest()
    extra = reach.reads * (m.latency - fast.latency)
    extra += reach.writes * (m.store_latency - fast.latency)
    return max(extra + transfer_cycles(target, name, reach.bytes), 0.0)


def transfer_cycles(target: Target, name: str, nbytes: int) -> float:
    """Cycles that moving ``nbytes`` costs in memory ``name`` beyond the fastest."""
    if not nbytes:
        return 0.0
    m, fast = target.memory(name), target.fastest()
    return nbytes * target.clock_hz * (1 / _bandwidth(m) - 1 / _bandwidth(fast))


def _bandwidth(m: Memory) -> float:
    return m.read_bandwidth or m.write_bandwidth or float("inf")


@dataclass(frozen=True, slots=True)
class OpCycles:
    """Cycles of one operator: compute, and the stalls per memory."""

    op: OpAccesses
    compute: float
    memory: dict[str, float]

    @property
    def total(self) -> float:
        return self.compute + sum(self.memory.values())

    @property
    def bound(self) -> str:
        """What costs the most: "compute" or a memory's name."""
        worst = max(self.memory.items(), key=lambda kv: kv[1], default=("compute", 0.0))
        return worst[0] if worst[1] > self.compute else "compute"


def op_cycles(
    op: OpAccesses,
    where: Mapping[TensorKey, str],
    persistent: str,
    target: Target,
    counts: Mapping[str, float] | None = None,
    constants: frozenset = frozenset(),
) -> OpCycles:
    """Cycles of one operator: compute from the target's rates, or with ``counts``
    (its instructions by class) from the target's core; stalls per memory
    (``constants``: the model's constant tensors, with ``counts``)."""
    if counts is not None:
        compute = core_named(target.core).cycles(dict(counts)) * target.instructions_scale
        memory = core_stalls(op, counts, where, persistent, target, constants)
    else:
        compute = work_cycles(target, op.kind, op.opcode, op.work, op.parts)
        memory = {
            name: stall_cycles(target, name, reach)
            for name, reach in sorted(per_memory(op, where, persistent, target).items())
        }
    for name, cycles in copy_cycles(op, where, target).items():
        memory[name] = memory.get(name, 0.0) + cycles
    return OpCycles(op, compute, dict(sorted(memory.items())))


def model_cycles(
    ops: Iterable[OpAccesses], where: Mapping[TensorKey, str], persistent: str, target: Target
) -> list[OpCycles]:
    """Cycles of every operator for a placement (``where``: tensor -> memory;
    ``persistent``: the memory of TFLM's persistent arena)."""
    return [op_cycles(op, where, persistent, target) for op in ops]


# Whose memory accesses the stall model counts, by ``Target.traffic``.
TRAFFIC_WORDS = {
    "tflm": "TFLM's reference kernels",
    "xcore": "xcore.ai's lib_nn kernels",
}


def time_model_label(target: Target) -> str:
    """The time model that makes ``target``'s estimates, in a few words for a label:
    the roofline, the core's model (whose instructions, which core, measured or
    assumed timings) or the stall model and whose memory accesses it counts."""
    if target.time_model == "roofline":
        return "roofline estimate: compute or transfer, the larger"
    if target.core:
        core = core_named(target.core)
        timings = "assumed" if core.assumed else "documented"
        scale = target.instructions_scale
        scale = f", x{scale:g} for the build" if scale != 1 else ""
        if target.compiled_for != "speed":
            scale = f", compiled for {target.compiled_for}{scale}"
        return (
            f"estimate: CMSIS-NN ({core.level}) instructions measured under QEMU, "
            f"{core.name} cycles per class ({timings}){scale}, memory wait states"
        )
    accesses = TRAFFIC_WORDS.get(target.traffic, target.traffic)
    if target.traffic == "tflm" and target.kernels.library != "reference":
        return (
            f"stall-model estimate: compute rates per operator kind (estimated) for "
            f"{target.kernels.name}, memory accesses of {accesses}"
        )
    return f"stall-model estimate of {accesses}"


class Timer:
    """Seconds of a model's operators under placements, for one target: the stall
    model, or the roofline of ``cost.roofline`` for a target whose memory traffic
    overlaps compute. ``persistent``: the memory of TFLM's persistent arena
    (default: the fastest that may hold it)."""

    def __init__(self, model: Model, target: Target, persistent: str | None = None) -> None:
        self.target = target
        self.work = operator_work(model, target.kernels)
        self.accesses = operator_accesses(model, target.traffic, target.kernels)
        self.persistent = persistent or target.fastest("persistent").name
        # each operator's instructions by class, when the target names its core
        runtime = runtime_of(target.kernels)
        self.counts = (
            runtime.kernel_counts(model, target.kernels, target.compiled_for)
            if target.core
            else None
        )
        self.constants = frozenset(
            (sg.index, t.index) for sg in model.subgraphs for t in sg.tensors if t.is_constant
        )

    def op_time(self, i: int, where: Mapping[TensorKey, str]) -> OpTime:
        """Seconds of operator ``i`` (in ``operator_work`` order) and what bounds it."""
        w = self.work[i]
        if self.target.time_model == "roofline":
            return op_time(w, where, self.target)
        counts = self.counts[i] if self.counts is not None else None
        c = op_cycles(self.accesses[i], where, self.persistent, self.target, counts, self.constants)
        return OpTime(w, c.total / self.target.clock_hz, c.bound)

    def times(self, where: Mapping[TensorKey, str]) -> list[OpTime]:
        return [self.op_time(i, where) for i in range(len(self.work))]


def estimate(
    model: Model,
    target: Target,
    where: Mapping[TensorKey, str] | None = None,
    persistent: str | None = None,
) -> list[OpTime]:
    """Estimated time of every operator for a placement (default: all in the fastest
    memory), by the target's time model."""
    where = where if where is not None else default_memory(model, target)
    return Timer(model, target, persistent).times(where)
