"""Work per operator, and its time on a target for a given placement (a roofline).

Work: MACs for conv (OH*OW*Cout*KH*KW*Cin), depthwise (OH*OW*Cout*KH*KW) and fully
connected (batch*in*out), output elements for everything else; bytes read per
input tensor and written per output tensor, each counted once per operator.

Time of one operator, as Vela estimates it: the larger of the compute time
(work / (rate of its kind x clock)) and, for each memory, the time to move the
bytes it reads and writes there (bytes / bandwidth + latency cycles / clock per
tensor). Units: seconds, bytes, cycles. Every time is an estimate from the
target's compute rates, bandwidths and latencies.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from arenaplan.ir import cascade_format as f
from arenaplan.ir.cascade_format import OPCODE as CASCADE
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.runtime.registry import or_default, runtime_of
from arenaplan.runtime.spec import KernelSet
from arenaplan.targets.model import Target

_KINDS = {
    "CONV_2D": "conv",
    "TRANSPOSE_CONV": "conv",
    "DEPTHWISE_CONV_2D": "depthwise",
    "FULLY_CONNECTED": "fully_connected",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "fully_connected",
    "SVDF": "fully_connected",
}

TensorKey = tuple[int, int]  # (subgraph, tensor index)


@dataclass(frozen=True, slots=True)
class OpWork:
    """One operator's work: ``macs`` (or output elements), bytes per tensor touched."""

    subgraph: int
    op: int
    opcode: str
    kind: str
    macs: int
    reads: tuple[tuple[TensorKey, int], ...]
    writes: tuple[tuple[TensorKey, int], ...]
    # (kind, opcode, work) of each stage of an operator that runs several (a cascade)
    parts: tuple[tuple[str, str, int], ...] = ()


def work_cycles(target: Target, kind: str, opcode: str, work: int, parts=()) -> float:
    """Compute cycles of ``work`` at the rate of its kind; of each part at its own."""
    if parts:
        return sum(w / target.rate(k, o) for k, o, w in parts)
    return work / target.rate(kind, opcode)


def cascade_parts(
    op: Operator, kernels: KernelSet | None = None
) -> tuple[tuple[str, str, int], ...]:
    """(kind, opcode, work) of each stage of an ``ARENAPLAN_CASCADE``: the work of
    the stock operator it stands for (each element is computed once); with optimised
    ``kernels``, one more part: what its steps cost beyond the operators it replaced
    (``CascadeKernel.extra_work``, MACs of a convolution; below 0: less)."""
    parts = []
    for w in f.decode(op).records:
        name = f.KIND_NAMES[w[f.KIND]]
        outputs = w[f.OUT_H] * w[f.OUT_W] * w[f.OUT_C]
        taps = w[f.FILTER_H] * w[f.FILTER_W]
        inputs = w[f.IN_H] * w[f.IN_W] * w[f.IN_C]
        work = {
            "CONV_2D": outputs * taps * w[f.IN_C],
            "DEPTHWISE_CONV_2D": outputs * taps,
            "TRANSPOSE_CONV": inputs * taps * w[f.OUT_C],
        }
        opcode = "AVERAGE_POOL_2D" if name == f.MEAN_ROWS else name
        parts.append((_KINDS.get(opcode, "elementwise"), opcode, work.get(name, outputs)))
    cascade = runtime_of(kernels).cascade(or_default(kernels))
    extra = cascade.extra_work(f.decode(op).records) if cascade is not None else 0
    if extra:
        parts.append(("conv", "CONV_2D", extra))
    return tuple(parts)


@dataclass(frozen=True, slots=True)
class OpTime:
    """Estimated seconds of one operator and what bounds it ("compute" or a memory)."""

    work: OpWork
    seconds: float
    bound: str


def _macs(sg: Subgraph, op: Operator) -> int:
    t = sg.tensors
    out = t[op.outputs[0]] if op.outputs else None
    if op.opcode == "CONV_2D" and out is not None:
        cout, kh, kw, cin = t[op.inputs[1]].shape
        return out.elements * kh * kw * cin
    if op.opcode == "DEPTHWISE_CONV_2D" and out is not None:
        _, kh, kw, _ = t[op.inputs[1]].shape
        return out.elements * kh * kw
    if op.opcode == "FULLY_CONNECTED" and out is not None:
        return out.elements * t[op.inputs[1]].shape[-1]
    if op.opcode == "TRANSPOSE_CONV" and out is not None:
        cout, kh, kw, cin = t[op.inputs[1]].shape
        return t[op.inputs[2]].elements * kh * kw * cout
    return sum(t[o].elements for o in op.outputs)


def operator_work(model: Model, kernels: KernelSet | None = None) -> list[OpWork]:
    """The work of every operator of every subgraph, in execution order per subgraph
    (a cascade's steps cost work of their own with CMSIS-NN ``kernels``)."""
    sizes = runtime_of(kernels).tensor_bytes(model)

    work = []
    for sg in model.subgraphs:
        for op in sg.operators:
            reads = tuple(((sg.index, i), sizes[sg.index][i]) for i in op.tensor_inputs())
            writes = tuple(((sg.index, o), sizes[sg.index][o]) for o in op.outputs)
            parts = cascade_parts(op, kernels) if op.is_custom and op.opcode == CASCADE else ()
            macs = sum(p[2] for p in parts) if parts else _macs(sg, op)
            kind = _KINDS.get(op.opcode, "elementwise")
            work.append(OpWork(sg.index, op.index, op.opcode, kind, macs, reads, writes, parts))
    return work


def default_memory(
    model: Model, target: Target, activations: str | None = None
) -> dict[TensorKey, str]:
    """Everything in the fastest memory that may hold it: constants in the first memory
    holding weights that is listed last (flash), the rest in ``activations`` (default:
    the first for activations)."""
    weights = target.weights_memory().name
    acts = activations or target.fastest().name
    return {
        (sg.index, t.index): weights if t.is_constant else acts
        for sg in model.subgraphs
        for t in sg.tensors
    }


def op_time(work: OpWork, where: Mapping[TensorKey, str], target: Target) -> OpTime:
    cycles = work_cycles(target, work.kind, work.opcode, work.macs, work.parts)
    compute = cycles / target.clock_hz
    per_memory: dict[str, float] = defaultdict(float)
    for key, nbytes in work.reads:
        m = target.memory(where[key])
        per_memory[m.name] += nbytes / m.read_bandwidth + m.latency / target.clock_hz
    for key, nbytes in work.writes:
        m = target.memory(where[key])
        per_memory[m.name] += nbytes / m.write_bandwidth + m.latency / target.clock_hz
    bound, seconds = "compute", compute
    for name, t in sorted(per_memory.items()):
        if t > seconds:
            bound, seconds = name, t
    return OpTime(work, seconds, bound)


def estimate(
    model: Model, target: Target, where: Mapping[TensorKey, str] | None = None
) -> list[OpTime]:
    """Estimated time of every operator for a placement (default: all in fast memory)."""
    where = where if where is not None else default_memory(model, target)
    return [op_time(w, where, target) for w in operator_work(model, target.kernels)]
