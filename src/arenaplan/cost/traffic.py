"""Memory traffic per operator and per tensor, estimated: a model of TFLM's kernels.

For every operator of a model, the loads and stores its kernel's Eval makes to every
tensor and persistent block it touches, from the operator's shapes and options alone
(:func:`traffic_details`, :func:`operator_traffic`): the data terms of the kernel's
formula (``cost.traffic_tflm``) plus the fixed per-invoke terms of its kernel path,
measured on one build (``cost.traffic_fixed``, the package's
``data/traffic_fixed.json``, written by ``python scripts/gen_traffic_fixed.py``).
Every figure is an estimate: exact for the build the terms were measured on where
:attr:`OpTraffic.exact` holds, a lower bound (each input read once, each output
written once, ``exact=False``) for a kernel not modelled or shapes its formula does
not cover. :func:`fixed_terms` gives what a measurement says the fixed table should
hold; :func:`compare` (``cost.traffic_compare``) sets predictions against
measurements (``arenaplan.tflm.verify.traffic_measure``, ``benchmarks/traffic.py``).

Units: ``loads``/``stores`` are memory accesses (one instruction's access to one
address), ``load_bytes``/``store_bytes`` bytes, and ``load_widths``/``store_widths``
give the accesses by width in bytes (1, 2, 4, 8, 16, 32; 0 for any other width).
Counts are for one invoke of the model (``cost.traffic_counts``).

Keys (:data:`Key`):

- ``(subgraph, tensor)``: the tensor's data (activations in the arena, constants in
  the flatbuffer, variable tensors in the persistent tail);
- ``("scratch", subgraph, op, k)``: the operator's k-th kernel scratch buffer (head);
- ``("persistent", "op_data", subgraph, op)``: what the kernel allocated in Init and
  Prepare (its OpData, per-channel multipliers and shifts, tables);
- ``("persistent", "node", subgraph, op)``: its ``TfLiteNode`` and builtin options;
- ``("persistent", "eval_tensor", subgraph, tensor)``: the tensor's
  ``TfLiteEvalTensor`` (data pointer, dims pointer, type);
- ``("persistent", "scratch_handles")``, ``("persistent", "framework")`` (the arena
  allocator, the memory planner, the subgraph allocations array);
- ``("model",)``: flatbuffer bytes other than tensor data (dims, operator inputs).

Stack and other process memory (``("other",)`` in a measurement) is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arenaplan.cost import traffic_cascade, traffic_tflm
from arenaplan.cost.traffic_compare import FIGURES, Difference, compare, difference
from arenaplan.cost.traffic_counts import (
    HOST_REFERENCE,
    Build,
    Item,
    Key,
    OperatorCounts,
    Traffic,
    Widths,
    memcpy_traffic,
    role_items,
    role_text,
    total,
)
from arenaplan.cost.traffic_fixed import ROLE_KEYS, add_fixed, fixed_table, residual, variables
from arenaplan.cost.traffic_kernel import Kernel, KernelCounts
from arenaplan.errors import ArenaplanError
from arenaplan.ir.model import Model
from arenaplan.runtime.registry import runtime_of

__all__ = [
    "FIGURES",
    "HOST_REFERENCE",
    "Build",
    "Difference",
    "Item",
    "Key",
    "OpTraffic",
    "OperatorCounts",
    "Traffic",
    "Widths",
    "compare",
    "difference",
    "fixed_table",
    "fixed_terms",
    "memcpy_traffic",
    "operator_traffic",
    "role_items",
    "role_text",
    "total",
    "traffic_details",
]


@dataclass(frozen=True, slots=True)
class OpTraffic:
    """One operator's predicted traffic. ``kernel`` names the modelled kernel path;
    ``exact`` is False where the kernel is not modelled (a lower bound); ``variables``
    are the values its fixed terms' counts may use (rK, qK, n, the kernel's own)."""

    subgraph: int
    op: int
    opcode: str
    kernel: str
    exact: bool
    traffic: dict[Key, Traffic] = field(default_factory=dict)
    variables: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> Traffic:
        return total(self.traffic.values())


# opcode -> its kernel model: TFLM's reference kernels and the ARENAPLAN_CASCADE
# operator's, the one table every prediction looks a kernel up in
KERNELS: dict[str, Kernel] = {**traffic_tflm.KERNELS, **traffic_cascade.KERNELS}


def _fallback(c: KernelCounts) -> None:
    for i in c.op.tensor_inputs():
        t = c.sg.tensors[i]
        c.load(t, c.elements(t))
    for i in c.op.outputs:
        t = c.sg.tensors[i]
        c.store(t, c.elements(t))


def traffic_details(
    model: Model, build: Build = HOST_REFERENCE, fixed: bool = True
) -> list[OpTraffic]:
    """Every operator's predicted traffic, with its kernel path and exactness.
    ``fixed=False`` leaves the fixed per-invoke terms out (the data terms alone)."""
    sizes = runtime_of(None).tensor_bytes(model)  # the tables are the default runtime's
    out = []

    for sg in model.subgraphs:
        for op in sg.operators:
            c = KernelCounts(model, sg, op, build, sizes)
            kernel = KERNELS.get(op.opcode)
            exact = kernel is not None
            try:
                if kernel is not None:
                    kernel(c)
            except (
                ArenaplanError,
                AttributeError,
                IndexError,
                KeyError,
                TypeError,
                ValueError,
                ZeroDivisionError,
            ):  # shapes or options the formula does not cover: the lower bound instead
                exact, c.acc, c.kernel = False, {}, op.opcode
            names = variables(c)
            if not exact:
                _fallback(c)
            elif fixed:
                exact = add_fixed(c, names)
            out.append(
                OpTraffic(sg.index, op.index, op.opcode, c.kernel, exact, dict(c.acc), names)
            )
    return out


def operator_traffic(
    model: Model, build: Build = HOST_REFERENCE
) -> dict[tuple[int, int], dict[Key, Traffic]]:
    """Per (subgraph, operator): per key (see the module doc) -> :class:`Traffic`."""
    return {(d.subgraph, d.op): d.traffic for d in traffic_details(model, build)}


def fixed_terms(
    model: Model, measured: dict[tuple[int, int], dict[Key, Traffic]]
) -> list[tuple[str, dict[str, str], dict[str, int]]]:
    """Per modelled operator, (kernel path, role -> the measured fixed term, the
    variables of its counts): what a measurement says :func:`fixed_table` should hold
    (the measured traffic of each role less the data terms), which
    ``scripts/gen_traffic_fixed.py`` fits the table to."""
    out = []
    for d in traffic_details(model, fixed=False):
        if not d.exact:  # not modelled, or shapes its formula does not cover
            continue
        m = measured.get((d.subgraph, d.op), {})
        op = model.subgraphs[d.subgraph].operators[d.op]
        roles: dict[str, str] = {}
        for prefix, indices in (("in", op.inputs), ("out", op.outputs)):
            for k, i in enumerate(indices):
                if i < 0 or indices[:k].count(i) or (prefix == "out" and i in op.inputs):
                    continue
                t = m.get(("persistent", "eval_tensor", d.subgraph, i))
                if t is not None:
                    roles[f"{prefix}{k}"] = residual(t, Traffic())
        for role, make in ROLE_KEYS.items():
            key = make(d.subgraph, d.op)
            text = residual(m.get(key, Traffic()), d.traffic.get(key, Traffic()))
            if text:
                roles[role] = text
        out.append((d.kernel, roles, d.variables))
    return out
