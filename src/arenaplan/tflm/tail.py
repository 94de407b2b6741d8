"""TFLM's tail (persistent arena), predicted from the model alone.

The tail grows down by a strict sequence of ``AllocatePersistentBuffer(size,
align)`` calls, each ``used = round_up(used + size, align)`` (the padding depends
on what came before, so sizes are simulated, not summed). The sequence and the
sizes are those of ``tflm-arena-reference.md`` part B, per build profile:

1. allocator objects;  2. model allocation: builtin-data allocator, subgraph
allocations, eval tensors and node structs per subgraph;  3. builtin options
per operator;  4. kernel Init (OpData, signal state);  5. kernel Prepare
(per-channel arrays, lookup tables, writable dims);  6. scratch handles and
variable tensors;  7. the interpreter's I/O views.
What each operator kind adds in steps 3-5 is its kernel's ``OpRule``, stated in its
family module of ``tflm.kernels`` (``BUILTIN`` and ``CUSTOM`` below gather them); the
struct sizes per profile are in ``structs``. All sizes in bytes. ``kernels``
(``tflm.kernel_sets``) names the kernels the build runs: the reference kernels
(default), or CMSIS-NN at a feature level, whose kernels' rules are in
``tflm.cmsis_nn`` (their OpData, Prepare allocations and scratch requests differ).
Operators without a rule are reported as unmodelled; a rule raises ``Unmodelled``
for a case it cannot predict. Other optimised kernels (Xtensa's, ESP-NN's) are not
modelled.

API:

- ``tail_estimate(model, profile="pypi", sizes=None, with_io=True, kernels="reference")
  -> TailEstimate``:
  ``.bytes`` (the predicted tail), ``.unmodelled`` (tuple of short notes, one per
  operator kind or model feature the rules do not cover, e.g.
  ``"operator 3 FOO"``; their allocations are left out of ``.bytes``) and
  ``.exact`` (no note: the prediction is TFLM's tail to the byte).
- ``predict_tail(...) -> int``: ``tail_estimate(...).bytes``.
- ``persistent_extents(model, profile="pypi", kernels="reference") -> dict``: the
  bytes of each block of the tail by ``cost.traffic``'s keys (op data, node,
  eval tensor, framework, scratch handles), for the cache model of
  ``cost.timing``.
- ``min_arena_estimate(model, head, n_planned, profile="pypi", kernels="reference")
  -> TailEstimate``:
  the smallest working arena (reference B6, and each operator's Prepare phase)
  with the tail's notes, plus one when a kernel's Prepare-time temporaries may
  need more than estimated (only on models with a head of a few hundred bytes;
  the note gives the upper figure); ``min_arena(...) -> int`` its bytes.

When ``exact`` is False, the bytes leave out what the notes name: an arena of
that size may be refused by TFLM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from arenaplan.ir.model import Model, Operator
from arenaplan.runtime.records import TailEstimate, TensorBytes
from arenaplan.tflm import cmsis_nn
from arenaplan.tflm import kernels as families
from arenaplan.tflm.facts import Allocations, OpRule, OpView, Unmodelled
from arenaplan.tflm.kernel_sets import REFERENCE, cmsis_features
from arenaplan.tflm.scratch import ScratchRequest, scratch_requests
from arenaplan.tflm.sizes import TFLM_ALIGNMENT, tensor_bytes
from arenaplan.tflm.structs import options_for, state_for

COMPRESSION_METADATA = "COMPRESSION_METADATA"  # metadata name of compressed models

# What each operator's reference kernel adds to the tail, by schema name (builtins) and
# custom code (the custom kernels TFLM ships), from ``tflm.kernels``.
BUILTIN: dict[str, OpRule] = {n: k.tail for n, k in families.BUILTIN.items() if k.tail is not None}
CUSTOM: dict[str, OpRule] = {n: k.tail for n, k in families.CUSTOM.items() if k.tail is not None}


def rule_for(op: Operator) -> OpRule | None:
    """The rule of ``op``'s kind, or None when TFLM's behaviour is not modelled."""
    return (CUSTOM if op.is_custom else BUILTIN).get(op.opcode)


@dataclass(frozen=True, slots=True)
class BuildProfile:
    """Struct sizes of one TFLM build, in bytes. ``options``: options struct ->
    (size, align); ``state``: kernel state struct -> size (allocated 16-aligned,
    0 = not allocated in this build). ``resource_variables``: the runtime creates
    MicroResourceVariables itself (the Python interpreter does; on an MCU the
    application does, with a count only it knows)."""

    name: str
    pointer: int
    allocator_objects: tuple[int, ...]
    builtin_data_allocator: int
    subgraph_allocations: int
    eval_tensor: int
    node_and_registration: int
    tflite_tensor: int
    affine_quantization: int
    scratch_handle: int
    options: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    state: Mapping[str, int] = field(default_factory=dict)
    resource_variables: bool = False


PROFILES = {
    # the PyPI wheel: 64-bit, compression on, recording allocators
    "pypi": BuildProfile(
        "pypi", 8, (104, 72, 272), 16, 24, 24, 64, 64, 24, 8,
        options_for("pypi"), state_for("pypi"), resource_variables=True,
    ),
    # arm-none-eabi-gcc: 32-bit, one-byte enums, plain MicroAllocator
    "arm32": BuildProfile(
        "arm32", 4, (36, 44, 36), 8, 8, 12, 32, 32, 12, 4,
        options_for("arm32"), state_for("arm32"),
    ),
    # other 32-bit targets (int-sized enums): RISC-V, Xtensa, i386
    "int32": BuildProfile(
        "int32", 4, (36, 44, 36), 8, 8, 12, 32, 40, 12, 4,
        options_for("int32"), state_for("int32"),
    ),
}  # fmt: skip

# The builds ``verify.native`` runs (scripts/build_tflm.py: TFLM from this source by
# its Makefile, no compression), which its runner sets up as the PyPI runtime is set
# up (recording allocators, resource variables). For checking predictions against
# those builds; not ``--profile`` choices.
NATIVE_PROFILES = {
    "host": BuildProfile(
        "host", 8, (104, 72, 248), 16, 16, 24, 64, 64, 24, 8,
        options_for("host"), state_for("host"), resource_variables=True,
    ),
    "arm32": replace(
        PROFILES["arm32"], allocator_objects=(52, 44, 124), resource_variables=True
    ),
    # arm-none-eabi-gcc with -fno-short-enums (arm32-int32-reference): the int32 profile
    # behind the same recording allocators (measured: enums change none of their sizes)
    "int32": replace(
        PROFILES["int32"], allocator_objects=(52, 44, 124), resource_variables=True
    ),
}  # fmt: skip


class _Tail:
    def __init__(self) -> None:
        self.used = 0

    def alloc(self, size: int, align: int) -> None:
        self.used = -(-(self.used + size) // align) * align


class _Notes:
    """Unmodelled items, deduplicated by key (operator kind or feature)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def add(self, key: str, text: str) -> None:
        self.items.setdefault(key, text)


def _op_name(op: Operator) -> str:
    return f"custom {op.opcode}" if op.is_custom else op.opcode


def _allocations(fn: Allocations | None, view: OpView, notes: _Notes, where: str) -> list[int]:
    if fn is None:
        return []
    try:
        return fn(view)
    except Unmodelled as exc:
        notes.add(f"{view.op.opcode}:{exc}", f"{where} ({exc})")
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        notes.add(f"{view.op.opcode}:unreadable", f"{where} (unreadable operator: {exc})")
    return []


def io_views(tail: _Tail, model: Model, p: BuildProfile) -> None:
    """Step 7: pointer arrays, then one TfLiteTensor (+ quantisation) per input/output."""
    sg = model.subgraphs[0]
    for group in (sg.inputs, sg.outputs):
        tail.alloc(p.pointer * len(group), TFLM_ALIGNMENT)
        for i in group:
            tail.alloc(p.tflite_tensor, p.pointer)
            q = sg.tensors[i].quantization
            if q is not None and q.zero_points:
                tail.alloc(p.affine_quantization, p.pointer)
                tail.alloc(4 + 4 * len(q.scales), 4)


def _resource_variables(model: Model) -> int:
    """Distinct shared names of VAR_HANDLE operators (the Python runtime's count)."""
    names = {
        str(op.options.get("shared_name", ""))
        for sg in model.subgraphs
        for op in sg.operators
        if op.opcode == "VAR_HANDLE" and not op.is_custom
    }
    return len(names)


@dataclass(frozen=True, slots=True)
class _PrepareMark:
    """Tail bytes around one operator's Prepare, for the smallest-arena estimate."""

    view: OpView
    where: str
    before: int  # tail bytes when its Prepare starts
    after: int  # tail bytes when it ends


@dataclass(frozen=True, slots=True)
class _Simulation:
    before_io: int  # tail bytes after step 6
    total: int  # after step 7
    notes: tuple[str, ...]
    prepares: tuple[_PrepareMark, ...]
    op_data: dict[tuple[int, int], int]  # (subgraph, op) -> bytes of its Init and Prepare


def _rule_for(op: Operator, features: str | None) -> OpRule | None:
    """The tail rule of ``op``'s kernel: CMSIS-NN's when the build runs one for it."""
    if features is not None and not op.is_custom:
        cmsis = cmsis_nn.tail_rule(features, op.opcode)
        if cmsis is not None:
            return cmsis
    return rule_for(op)


def _simulate(model: Model, p: BuildProfile, sizes: TensorBytes, kernels: str) -> _Simulation:
    """Steps 1-7 of the module docstring, in TFLM's order."""
    features = cmsis_features(kernels)
    notes = _Notes()
    if any(name == COMPRESSION_METADATA for name, _ in model.metadata):
        notes.add("compression", "compressed tensors (COMPRESSION_METADATA)")
    tail = _Tail()
    for size in p.allocator_objects:
        tail.alloc(size, p.pointer)
    n_vars = _resource_variables(model)
    if n_vars and p.resource_variables:  # MicroResourceVariables::Create
        tail.alloc(p.state["MicroResourceVariables"], TFLM_ALIGNMENT)
        tail.alloc(p.state["MicroResourceVariable"] * n_vars, TFLM_ALIGNMENT)
    elif n_vars:
        notes.add("resources", "VAR_HANDLE: resource variables are created by the application")
    tail.alloc(p.builtin_data_allocator, p.pointer)
    tail.alloc(p.subgraph_allocations * len(model.subgraphs), p.pointer)
    for sg in model.subgraphs:
        tail.alloc(p.eval_tensor * len(sg.tensors), p.pointer)
    for sg in model.subgraphs:
        tail.alloc(p.node_and_registration * len(sg.operators), p.pointer)
    variables: set[str] = set()
    ops = []
    for sg in model.subgraphs:
        for op in sg.operators:
            rule = _rule_for(op, features)
            where = f"operator {op.index} {_op_name(op)}"
            if len(model.subgraphs) > 1:
                where = f"subgraph {sg.index} {where}"
            if rule is None:
                notes.add(_op_name(op), where)
                continue
            view = OpView(sg, op, sizes[sg.index], p.state, p.pointer, variables)
            ops.append((rule, view, where))
    for rule, _, _ in ops:  # step 3: builtin options
        if rule.options is not None:
            tail.alloc(*p.options[rule.options])
    op_data: dict[tuple[int, int], int] = {}
    for rule, view, where in ops:  # step 4: kernel Init
        before = tail.used
        if rule.init is not None and p.state[rule.init]:
            tail.alloc(p.state[rule.init], TFLM_ALIGNMENT)
        for extra in _allocations(rule.init_extra, view, notes, where):
            tail.alloc(extra, TFLM_ALIGNMENT)
        op_data[(view.sg.index, view.op.index)] = tail.used - before
    prepares = []
    for rule, view, where in ops:  # step 5: kernel Prepare
        before = tail.used
        for extra in _allocations(rule.prepare, view, notes, where):
            tail.alloc(extra, TFLM_ALIGNMENT)
        prepares.append(_PrepareMark(view, where, before, tail.used))
        op_data[(view.sg.index, view.op.index)] += tail.used - before
    n_scratch = len(scratch_requests(model, sizes, p.pointer, kernels))
    if n_scratch:  # step 6
        tail.alloc(p.scratch_handle * n_scratch, p.pointer)
    for sg in model.subgraphs:
        for t in sg.tensors:
            if t.is_variable:
                tail.alloc(sizes[sg.index][t.index], TFLM_ALIGNMENT)
    before_io = tail.used
    io_views(tail, model, p)  # step 7
    notes_found = tuple(notes.items.values())
    return _Simulation(before_io, tail.used, notes_found, tuple(prepares), op_data)


def persistent_extents(
    model: Model, profile: str | BuildProfile = "pypi", kernels: str = REFERENCE
) -> dict[tuple, int]:
    """Bytes of each block of the tail a kernel reads, by the traffic keys of
    ``cost.traffic`` (what a cache must hold to reuse it): an operator's op data
    (its Init and Prepare allocations), its node (node, registration and builtin
    options), each eval tensor, the framework's objects and the scratch handles.
    Blocks the rules do not model (no bytes) are left out."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    sizes = tensor_bytes(model)
    sim = _simulate(model, p, sizes, kernels)
    out: dict[tuple, int] = {}
    for (sg, op), nbytes in sim.op_data.items():
        if nbytes:
            out[("persistent", "op_data", sg, op)] = nbytes
    for sg in model.subgraphs:
        for op in sg.operators:
            rule = _rule_for(op, cmsis_features(kernels))
            options = p.options[rule.options][0] if rule and rule.options is not None else 0
            out[("persistent", "node", sg.index, op.index)] = p.node_and_registration + options
        for t in sg.tensors:
            out[("persistent", "eval_tensor", sg.index, t.index)] = p.eval_tensor
    framework = sum(p.allocator_objects) + p.builtin_data_allocator
    out[("persistent", "framework")] = framework + p.subgraph_allocations * len(model.subgraphs)
    n_scratch = len(scratch_requests(model, sizes, p.pointer, kernels))
    if n_scratch:
        out[("persistent", "scratch_handles")] = p.scratch_handle * n_scratch
    return out


def tail_estimate(
    model: Model,
    profile: str | BuildProfile = "pypi",
    sizes: TensorBytes | None = None,
    with_io: bool = True,
    kernels: str = REFERENCE,
) -> TailEstimate:
    """TFLM's tail for ``model`` under ``profile`` running ``kernels`` (variables
    not offline), and the operators whose allocations are not modelled."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    sim = _simulate(model, p, sizes or tensor_bytes(model), kernels)
    return TailEstimate(sim.total if with_io else sim.before_io, sim.notes)


def predict_tail(
    model: Model,
    profile: str | BuildProfile = "pypi",
    sizes: TensorBytes | None = None,
    with_io: bool = True,
    kernels: str = REFERENCE,
) -> int:
    """Bytes of TFLM's tail for ``model`` under ``profile`` running ``kernels``
    (variables not offline); a lower bound when ``tail_estimate`` says it is not
    exact."""
    return tail_estimate(model, profile, sizes, with_io, kernels).bytes


# ---- the smallest working arena (reference B6) --------------------------------------

SCRATCH_REQUEST = {8: 16, 4: 12}  # sizeof(ScratchBufferRequest), by pointer size
ALLOCATION_INFO = {8: 32, 4: 24}  # sizeof(AllocationInfo)
PLANNER_BYTES_PER_BUFFER = 40  # GreedyMemoryPlanner working arrays per planned buffer
MAX_SCRATCH_PER_OP = 12


def _up(x: int, a: int) -> int:
    return -(-x // a) * a


def planning_bytes(
    n_scratch: int, n_tensors: int, n_planned: int, n_subgraphs: int, pointer: int
) -> int:
    """X: what the head holds at once while TFLM commits its memory plan.

    The scratch requests (room for 12 more), the subgraph offsets, one
    AllocationInfo per tensor and request, then 40 B per planned buffer.
    """
    x = (n_scratch + MAX_SCRATCH_PER_OP) * SCRATCH_REQUEST[pointer]
    x = _up(x, pointer) + pointer * n_subgraphs
    x = _up(x, pointer) + ALLOCATION_INFO[pointer] * (n_tensors + n_scratch)
    return _up(x, TFLM_ALIGNMENT) + PLANNER_BYTES_PER_BUFFER * n_planned


def planning_room(
    model: Model, n_scratch: int, n_planned: int, profile: str | BuildProfile = "pypi"
) -> int:
    """X for ``model``, rounded up to 16: the least a separate non-persistent arena
    can be, since TFLM commits its plan there (``n_scratch`` requests, ``n_planned``
    buffers in the planner)."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    x = planning_bytes(n_scratch, model.tensor_count, n_planned, len(model.subgraphs), p.pointer)
    return _up(x, TFLM_ALIGNMENT)


def _temporaries(view: OpView, p: BuildProfile, passes: int) -> int:
    """Head bytes of the temporary TfLiteTensors a kernel's Prepare makes of its
    inputs and outputs (``AllocateTempTfLiteTensor``: the tensor, and for a
    quantised one its TfLiteAffineQuantization and zero-point array), each
    tensor ``passes`` times (some kernels, e.g. CONV_2D, make them twice)."""
    used = 0
    one = _one_temporary(view.op)
    for idx in [*view.op.inputs, *view.op.outputs] * passes:
        if not 0 <= idx < len(view.sg.tensors):
            continue
        start = 0 if one else used
        end = _up(start, p.pointer) + p.tflite_tensor
        q = view.sg.tensors[idx].quantization
        if q is not None and q.zero_points:
            end = _up(end, p.pointer) + p.affine_quantization
            end = _up(end, 4) + 4 + 4 * len(q.scales)
        used = max(used, end) if one else end
    return used


def _one_temporary(op: Operator) -> bool:
    """The kernel's Prepare frees each temporary before it makes the next."""
    kernel = (families.CUSTOM if op.is_custom else families.BUILTIN).get(op.opcode)
    return kernel is not None and kernel.one_temporary


def _prepare_peak(
    sim: _Simulation, requests: tuple[ScratchRequest, ...], p: BuildProfile, passes: int
) -> tuple[int, str]:
    """(bytes, where): the most an operator's Prepare holds at once, tail plus head:
    the scratch-request area (its requests so far + 12), then its temporaries.
    ``passes`` 1 takes the tail before its own Prepare allocations, 2 after them."""
    best, where = 0, ""
    for mark in sim.prepares:
        key = (mark.view.sg.index, mark.view.op.index)
        n_before = sum(1 for r in requests if (r.subgraph, r.op) < key)
        head = _up((n_before + MAX_SCRATCH_PER_OP) * SCRATCH_REQUEST[p.pointer], p.pointer)
        tail = mark.before if passes == 1 else mark.after
        need = _up(tail + head + _temporaries(mark.view, p, passes), TFLM_ALIGNMENT)
        if need > best:
            best, where = need, mark.where
    return best, where


def min_arena_estimate(
    model: Model,
    head: int,
    n_planned: int,
    profile: str | BuildProfile = "pypi",
    kernels: str = REFERENCE,
) -> TailEstimate:
    """Smallest arena (bytes) TFLM works in, with what is not modelled exactly.

    The largest of: head + tail; the tail before the I/O views + X (reference B6,
    TFLM committing its plan); and each operator's Prepare (tail so far, scratch
    request area and the kernel's temporary tensors). The Prepare term counts
    each input and output once as a temporary; when counting them twice (on top
    of the kernel's own Prepare allocations) could exceed the result, the kernel's
    exact sequence of temporaries decides and the estimate says so.
    ``head``: the non-persistent bytes (our plan's arena); ``n_planned``: tensors
    plus scratch requests TFLM's planner holds; ``kernels`` the build's kernels.
    """
    p = PROFILES[profile] if isinstance(profile, str) else profile
    sizes = tensor_bytes(model)
    requests = scratch_requests(model, sizes, p.pointer, kernels)
    sim = _simulate(model, p, sizes, kernels)
    x = planning_bytes(
        len(requests), model.tensor_count, n_planned, len(model.subgraphs), p.pointer
    )
    prepare, _ = _prepare_peak(sim, requests, p, passes=1)
    arena = max(head + sim.total, _up(sim.before_io + x, TFLM_ALIGNMENT), prepare)
    notes = list(sim.notes)
    worst, where = _prepare_peak(sim, requests, p, passes=2)
    if worst > arena:
        notes.append(f"smallest arena: the Prepare of {where} may need up to {worst} B")
    return TailEstimate(arena, tuple(notes))


def min_arena(
    model: Model,
    head: int,
    n_planned: int,
    profile: str | BuildProfile = "pypi",
    kernels: str = REFERENCE,
) -> int:
    """``min_arena_estimate(...).bytes``."""
    return min_arena_estimate(model, head, n_planned, profile, kernels).bytes
