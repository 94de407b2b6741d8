"""Validate a plan against its model before anything is written.

Independent of the allocators: it re-derives which tensors TFLM plans and their
lifetimes from the model, then checks that every one has an offset, that offsets
are multiples of 16, that nothing TFLM must own (constants, variables) is given
one, that nothing overlaps in time and space, and that all fits in the arena.

One exception to "nothing overlaps", exact and named: a pair of tensors the
plan records as an alias (``Plan.aliases``) may share bytes if the rule it
names holds, re-derived here from the model with no code of the planner's:
  inplace      the operator is on the list of kernels safe in place
               (``INPLACE_KERNELS``, docs/inplace.md), the input is one it may
               write over, dies at that operator, is no graph output, is a graph
               input only if the plan may clobber inputs; the output element is
               no wider, the counts are equal (and the shapes, but for reshapes);
               both at the same offset;
  slice-view   the slice, applied to the input's element indices with numpy,
               selects one contiguous run; the offsets differ by its bytes;
  concat-view  the output's element indices, split along the axis, give this
               input one contiguous run; the offsets differ by its bytes.
Any other overlap, or a pair whose rule fails, is an error with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.validate import solution_problems
from arenaplan.analysis.aliases import CONCAT_VIEW, INPLACE, INPLACE_KERNELS, SLICE_VIEW, Alias
from arenaplan.analysis.lifetimes import Lifetimes, compute_lifetimes
from arenaplan.analysis.sizes import tensor_bytes
from arenaplan.errors import PlanValidationError
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.placement.plan import TFLM_ALIGNMENT, Plan, StagingPlacement

TensorKey = tuple[int, int]  # (subgraph, tensor index)


def plan_problems(model: Model, plan: Plan) -> list[str]:
    """Every violation, each naming the tensor or scratch buffer and the step."""
    found: list[str] = []
    if len(plan.offline_offsets) != model.tensor_count:
        return [
            f"offline plan has {len(plan.offline_offsets)} offsets, "
            f"the model has {model.tensor_count} tensors"
        ]
    sizes = tensor_bytes(model)
    lt = compute_lifetimes(model)
    buffers: list[Buffer] = []
    offsets: list[int | None] = []
    index_of: dict[TensorKey, int] = {}  # planned tensor -> its buffer
    k = 0
    for sg in model.subgraphs:
        for t in sg.tensors:
            off = plan.offline_offsets[k]
            k += 1
            label = f"tensor {t.index} {t.name!r} (subgraph {sg.index})"
            owned = t.is_constant or t.is_variable or t.dtype is DType.RESOURCE
            if owned or sizes[sg.index][t.index] == 0:
                if off != -1:
                    why = (
                        "a constant"
                        if t.is_constant
                        else "a variable"
                        if t.is_variable
                        else "a resource handle"
                        if t.dtype is DType.RESOURCE
                        else "empty"
                    )
                    found.append(f"{label} is {why} but has offset {off}; it must be -1")
                continue
            life = lt.tensors[sg.index][t.index]
            size = -(-sizes[sg.index][t.index] // TFLM_ALIGNMENT) * TFLM_ALIGNMENT
            index_of[(sg.index, t.index)] = len(buffers)
            buffers.append(Buffer(label, life.first, life.last, size, TFLM_ALIGNMENT))
            offsets.append(None if off < 0 else off)
    for sc in plan.scratch:
        span = lt.operators[sc.subgraph][sc.op]
        buffers.append(
            Buffer(
                f"scratch {sc.order} of operator {sc.op} (subgraph {sc.subgraph})",
                span[0],
                span[1],
                sc.size,
                TFLM_ALIGNMENT,
            )
        )
        offsets.append(sc.offset)
    for st in plan.staging:
        found.extend(_staging_problems(model, st))
        span = (lt.operators[0][st.first][0], lt.operators[0][st.op][1])
        label = f"weight staging buffer of operator {st.op}"
        buffers.append(Buffer(label, span[0], span[1], st.size, TFLM_ALIGNMENT))
        offsets.append(st.offset)
    shared: set[frozenset[int]] = set()
    for alias in plan.aliases:
        why = _alias_problem(model, plan.clobber_inputs, lt, alias, index_of, offsets)
        if why:
            found.append(f"alias {alias.kind} at operator {alias.op}: {why}")
        else:
            a, b = index_of[(alias.subgraph, alias.tensor)], index_of[(alias.subgraph, alias.base)]
            shared.add(frozenset((a, b)))
    found.extend(solution_problems(Problem(tuple(buffers), plan.arena), offsets, shared))
    return found


def _staging_problems(model: Model, st: StagingPlacement) -> list[str]:
    """A staging buffer must hold what its policy copies: ``groups:G`` one group of
    G output channels of every weight of the operator, ``,double`` two such; the
    bytes of a channel re-derived here from the weight shapes and element sizes."""
    where = f"weight staging buffer of operator {st.op}"
    ops = model.subgraphs[0].operators
    if not 0 <= st.first <= st.op < len(ops):
        return [f"{where}: operators {st.first}..{st.op} are not in the model"]
    head, _, rest = st.policy.partition(",")
    kind, _, g = head.partition(":")
    if kind != "groups" or not g.isdigit() or rest not in ("", "double"):
        return [f"{where}: unknown policy {st.policy!r}"]
    sg = model.subgraphs[0]
    op = ops[st.op]
    out = sg.tensors[op.outputs[0]].shape[-1]
    block = 0  # one group: each weight's slice, the next starting 4-aligned
    for i in dict.fromkeys(op.inputs[1:]):
        t = sg.tensors[i] if i >= 0 else None
        if t is not None and t.is_constant:
            block += -(-min(int(g), out) * int(np.prod(t.shape)) * t.dtype.itemsize // out // 4) * 4
    need = -(-block // TFLM_ALIGNMENT) * TFLM_ALIGNMENT * (2 if rest else 1)
    if st.size < need:
        return [f"{where}: {st.size} B cannot hold {st.policy} ({need} B)"]
    return []


def offline_plan_problems(
    model: Model, offsets: Sequence[int], clobber_inputs: bool = True
) -> list[str]:
    """What is wrong with an offline plan read back from a model file, where no alias
    is recorded: only the tensors it places (offset >= 0) are checked, TFLM plans
    the rest. Two of them may share bytes only if a rule justifies the pair at the
    offsets given: for each operator, the pairs a rule could concern are tried
    (output over an input at the same offset, a slice in its input, an input in
    its concatenation) and judged exactly as ``plan_problems`` judges a recorded
    alias. ``clobber_inputs``: whether writing over a graph input is accepted."""
    if len(offsets) != model.tensor_count:
        return [
            f"offline plan has {len(offsets)} offsets, the model has {model.tensor_count} tensors"
        ]
    sizes = tensor_bytes(model)
    lt = compute_lifetimes(model)
    given = dict(zip(model.tensor_keys(), offsets, strict=True))
    buffers: list[Buffer] = []
    placed: list[int | None] = []
    index_of: dict[TensorKey, int] = {}
    for sg in model.subgraphs:
        for t in sg.tensors:
            key = (sg.index, t.index)
            life = lt.tensors[sg.index][t.index]
            if given[key] < 0 or t.is_constant or t.is_variable or not sizes[sg.index][t.index]:
                continue
            size = -(-sizes[sg.index][t.index] // TFLM_ALIGNMENT) * TFLM_ALIGNMENT
            index_of[key] = len(buffers)
            label = f"tensor {t.index} {t.name!r} (subgraph {sg.index})"
            buffers.append(Buffer(label, life.first, life.last, size, TFLM_ALIGNMENT))
            placed.append(given[key])
    shared = set()
    for alias in _possible_aliases(model, given):
        if not _alias_problem(model, clobber_inputs, lt, alias, index_of, placed):
            a, b = index_of[(alias.subgraph, alias.tensor)], index_of[(alias.subgraph, alias.base)]
            shared.add(frozenset((a, b)))
    return solution_problems(Problem(tuple(buffers)), placed, shared)


def _possible_aliases(model: Model, given: dict[TensorKey, int]) -> list[Alias]:
    """Every alias a rule could make in subgraph 0, with the delta the offsets give."""
    if not model.subgraphs:
        return []
    sg = model.subgraphs[0]
    found = []

    def add(kind: str, op: Operator, tensor: int, base: int) -> None:
        if tensor >= 0 and base >= 0 and given[(0, tensor)] >= 0 and given[(0, base)] >= 0:
            delta = given[(0, tensor)] - given[(0, base)]
            found.append(Alias(kind, 0, op.index, tensor, base, delta))

    for op in sg.operators:
        if len(op.outputs) != 1:
            continue
        y = op.outputs[0]
        if op.opcode in INPLACE_KERNELS:
            for x in set(op.inputs):
                add(INPLACE, op, y, x)
        if op.opcode == "STRIDED_SLICE" and op.inputs:
            add(SLICE_VIEW, op, y, op.inputs[0])
        if op.opcode == "CONCATENATION":
            for x in set(op.inputs):
                add(CONCAT_VIEW, op, x, y)
    return found


def _alias_problem(
    model: Model,
    clobber_inputs: bool,
    lt: Lifetimes,
    alias: Alias,
    index_of: dict[TensorKey, int],
    offsets: list[int | None],
) -> str | None:
    """Why ``alias`` does not justify its pair sharing bytes, or None if it does."""
    if alias.subgraph != 0 or not model.subgraphs:
        return f"aliases are only made in subgraph 0, not {alias.subgraph}"
    sg = model.subgraphs[0]
    if not 0 <= alias.op < len(sg.operators):
        return f"there is no operator {alias.op}"
    op = sg.operators[alias.op]
    first, last = lt.operators[0][op.index]
    if first != last:
        return f"{op.opcode} spans scopes {first}..{last} (control flow)"
    for t in (alias.tensor, alias.base):
        if (0, t) not in index_of:
            return f"tensor {t} is not a tensor TFLM plans in the arena"
    at, ab = offsets[index_of[(0, alias.tensor)]], offsets[index_of[(0, alias.base)]]
    if at is None or ab is None:
        return "one of its tensors has no offset"
    if alias.kind == INPLACE:
        why, delta = _inplace_problem(sg, op, clobber_inputs, lt, alias, first), 0
    elif alias.kind == SLICE_VIEW:
        why, delta = _slice_delta(model, sg, op, alias)
    elif alias.kind == CONCAT_VIEW:
        why, delta = _concat_delta(sg, op, alias)
    else:
        return f"{alias.kind!r} is no rule (known: {INPLACE}, {SLICE_VIEW}, {CONCAT_VIEW})"
    if why:
        return f"{op.opcode}: {why}"
    if alias.delta != delta:
        return f"it records a delta of {alias.delta} bytes, the rule gives {delta}"
    if at - ab != delta:
        return (
            f"tensor {alias.tensor} is at {at} and tensor {alias.base} at {ab}: "
            f"{at - ab} bytes apart, the rule gives {delta}"
        )
    return None


def _inplace_problem(
    sg: Subgraph, op: Operator, clobber_inputs: bool, lt: Lifetimes, alias: Alias, scope: int
) -> str | None:
    rule = INPLACE_KERNELS.get(op.opcode)
    if rule is None:
        return "not on the list of kernels safe with output memory == input memory"
    if op.outputs != (alias.tensor,):
        return f"tensor {alias.tensor} is not its only output"
    at = [k for k, i in enumerate(op.inputs) if i == alias.base]
    if not at:
        return f"tensor {alias.base} is not one of its inputs"
    if not any(k in rule.inputs for k in at):
        return f"its input {at[0]} may not be written over (only inputs {rule.inputs})"
    x, y = sg.tensors[alias.base], sg.tensors[alias.tensor]
    if lt.tensors[0][x.index].last != scope:
        last = lt.tensors[0][x.index].last
        return f"input tensor {x.index} does not die there (read until scope {last}, not {scope})"
    if x.index in sg.outputs:
        return f"input tensor {x.index} is a graph output"
    if x.index in sg.inputs and not clobber_inputs:
        return f"input tensor {x.index} is a graph input and the plan may not clobber inputs"
    if DType.INT4 in (x.dtype, y.dtype):
        return "INT4 is packed: elements are not bytes"
    if y.dtype.itemsize > x.dtype.itemsize:
        return f"its output elements ({y.dtype.name}) are wider than its input's ({x.dtype.name})"
    if int(np.prod(x.shape)) != int(np.prod(y.shape)):
        return f"input shape {x.shape} and output shape {y.shape} differ in elements"
    if rule.same_shape:
        try:
            broadcast = np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            broadcast = None
        if broadcast != tuple(y.shape):
            return f"input shape {x.shape} is not the output shape {y.shape}"
    return None


def _int32s(model: Model, sg: Subgraph, i: int) -> np.ndarray | None:
    t = sg.tensors[i] if 0 <= i < len(sg.tensors) else None
    if t is None or not t.is_constant or t.dtype is not DType.INT32:
        return None
    if t.buffer >= len(model.buffers):
        return None
    data = np.frombuffer(model.buffers[t.buffer], dtype="<i4")
    return data if data.size == int(np.prod(t.shape)) else None


def _contiguous(picked: np.ndarray) -> bool:
    return picked.size > 0 and bool(np.all(np.diff(picked) == 1))


def _slice_delta(model: Model, sg: Subgraph, op: Operator, alias: Alias) -> tuple[str | None, int]:
    if op.opcode != "STRIDED_SLICE" or len(op.inputs) != 4:
        return "not a STRIDED_SLICE with 4 inputs", 0
    if op.outputs != (alias.tensor,) or op.inputs[0] != alias.base:
        return f"tensor {alias.tensor} is not the slice of tensor {alias.base}", 0
    x, y = sg.tensors[alias.base], sg.tensors[alias.tensor]
    if x.dtype is not y.dtype or DType.INT4 in (x.dtype, y.dtype):
        return f"input {x.dtype.name}, output {y.dtype.name}", 0
    opts = op.options
    if opts.get("ellipsis_mask", 0) or opts.get("new_axis_mask", 0) or opts.get("offset", False):
        return "ellipsis, new-axis masks and offset are not judged", 0
    begin, end, strides = (_int32s(model, sg, i) for i in op.inputs[1:])
    if begin is None or end is None or strides is None:
        return "begin, end and strides are not int32 constants", 0
    rank = len(x.shape)
    if not len(begin) == len(end) == len(strides) == rank or np.any(strides == 0):
        return "begin, end and strides do not match the input's rank", 0
    begin_mask = int(opts.get("begin_mask", 0) or 0)
    end_mask = int(opts.get("end_mask", 0) or 0)
    shrink = int(opts.get("shrink_axis_mask", 0) or 0)
    index: list[slice | int] = []
    for d in range(rank):
        if shrink >> d & 1:
            index.append(int(begin[d]))
        else:
            lo = None if begin_mask >> d & 1 else int(begin[d])
            hi = None if end_mask >> d & 1 else int(end[d])
            index.append(slice(lo, hi, int(strides[d])))
    try:
        picked = np.arange(int(np.prod(x.shape))).reshape(x.shape)[tuple(index)].ravel()
    except IndexError as exc:
        return f"the slice is out of range ({exc})", 0
    if picked.size != int(np.prod(y.shape)):
        return f"the slice picks {picked.size} elements, the output has {int(np.prod(y.shape))}", 0
    if not _contiguous(picked):
        return "the slice is not one contiguous run of the input", 0
    return None, int(picked[0]) * x.dtype.itemsize


def _concat_delta(sg: Subgraph, op: Operator, alias: Alias) -> tuple[str | None, int]:
    if op.opcode != "CONCATENATION":
        return "not a CONCATENATION", 0
    if op.outputs != (alias.base,):
        return f"tensor {alias.base} is not its output", 0
    at = [k for k, i in enumerate(op.inputs) if i == alias.tensor]
    if len(at) != 1:
        return f"tensor {alias.tensor} is {len(at)} of its inputs, not one", 0
    if any(i < 0 for i in op.inputs):
        return "an input is omitted", 0
    y = sg.tensors[alias.base]
    parts = [sg.tensors[i] for i in op.inputs]
    if any(t.dtype is not y.dtype for t in parts) or y.dtype is DType.INT4:
        return "its inputs and output are not all of one type (not INT4)", 0
    rank = len(y.shape)
    axis = int(op.options.get("axis", 0) or 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank or any(len(t.shape) != rank for t in parts):
        return f"axis {axis} does not fit rank {rank}", 0
    cuts = np.cumsum([t.shape[axis] for t in parts])[:-1]
    pieces = np.split(np.arange(int(np.prod(y.shape))).reshape(y.shape), cuts, axis=axis)
    piece = pieces[at[0]]
    if piece.shape != tuple(parts[at[0]].shape):
        return f"input shape {parts[at[0]].shape} is not its part {piece.shape} of the output", 0
    picked = piece.ravel()
    if not _contiguous(picked):
        return "this input is not one contiguous run of the output", 0
    return None, int(picked[0]) * y.dtype.itemsize


def check_plan(model: Model, plan: Plan) -> None:
    found = plan_problems(model, plan)
    if found:
        raise PlanValidationError(found)
