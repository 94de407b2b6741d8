"""Validate a plan for TFLM against its model before anything is written
(``Runtime.plan_problems`` of ``tflm.runtime``; ``placement.check`` raises).


Independent of the planner: it derives, with code of its own, which tensors TFLM
plans, their bytes and their lifetimes (``_scopes``, ``_tensor_bytes``), then
checks that every one has an offset, that offsets are multiples of 16, that
nothing TFLM must own (constants, variables) is given one, that nothing overlaps
in time and space, and that all fits in the arena. What it shares with the
planner: the IR (``ir.model``, ``DType``'s element sizes), the plan's records
(``Plan``, ``Alias`` and the rule names, ``TFLM_ALIGNMENT``) and the overlap
checker of ``allocation.validate``, which knows nothing of the planner either.

One exception to "nothing overlaps", exact and named: a pair of tensors the
plan records as an alias (``Plan.aliases``) may share bytes if the rule it
names holds, re-derived here from the model with no code of the planner's:
  inplace      the operator is on this module's own list of kernels safe in
               place for the plan's kernels variant (``OVERWRITABLE``, written
               from docs/inplace.md), the input is one it may write over, dies
               at that operator, is no graph output, is a graph input only if
               the plan may clobber inputs; the output element is no wider, the
               counts are equal (and the shapes, but for reshapes); both at the
               same offset;
  slice-view   the slice, applied to the input's element indices with numpy,
               selects one contiguous run; the offsets differ by its bytes;
  concat-view  the output's element indices, split along the axis, give this
               input one contiguous run; the offsets differ by its bytes.
Any other overlap, or a pair whose rule fails, is an error with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.validate import solution_problems
from arenaplan.errors import UnsupportedModelError
from arenaplan.ir.constants import constant_values
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph, Tensor
from arenaplan.placement.plan import Plan, StagingPlacement
from arenaplan.reader.overread import wide_biases
from arenaplan.runtime.records import CONCAT_VIEW, INPLACE, SLICE_VIEW, Alias
from arenaplan.tflm.kernel_sets import REFERENCE
from arenaplan.tflm.sizes import TFLM_ALIGNMENT

TensorKey = tuple[int, int]  # (subgraph, tensor index)
OpKey = tuple[int, int]  # (subgraph, operator index)
NEVER = (-1, -1)  # the scopes of a tensor or operator TFLM never reaches

# The in-place rule's facts, written here from docs/inplace.md (not read from
# ``tflm.alias_rules``; a test checks that the two statements agree): kernels variant
# -> opcode -> (the inputs its output may be written over, whether that input must
# have the output's shape). Element-wise kernels need the shape (the input is not the
# broadcast operand); reshapes copy bytes, so equal element counts suffice.
_REFERENCE_KERNELS: dict[str, tuple[tuple[int, ...], bool]] = {
    "ADD": ((0, 1), True),
    "SUB": ((0, 1), True),
    "MUL": ((0, 1), True),
    "RELU": ((0,), True),
    "RELU6": ((0,), True),
    "LEAKY_RELU": ((0,), True),
    "LOGISTIC": ((0,), True),
    "TANH": ((0,), True),
    "HARD_SWISH": ((0,), True),
    "ELU": ((0,), True),
    "QUANTIZE": ((0,), True),
    "SOFTMAX": ((0,), True),
    "RESHAPE": ((0,), False),
    "SQUEEZE": ((0,), False),
    "EXPAND_DIMS": ((0,), False),
}
# docs/inplace.md, "CMSIS-NN builds": CMSIS-NN's own ADD, MUL and SOFTMAX were read in
# plain C, with DSP and with MVE and are safe under the same conditions; the other
# kernels on the list are the reference ones in those builds.
OVERWRITABLE: dict[str, dict[str, tuple[tuple[int, ...], bool]]] = {
    "reference": _REFERENCE_KERNELS,
    "cmsis_nn": _REFERENCE_KERNELS,
    "cmsis_nn+dsp": _REFERENCE_KERNELS,
    "cmsis_nn+mve": _REFERENCE_KERNELS,
}

# The subgraphs a control-flow operator runs, in order (micro_allocation_info.cc,
# MarkSubgraphLifetimesIfNecessary: IF then/else, WHILE cond/body, CALL_ONCE init).
_CALLS = {
    "IF": ("then_subgraph_index", "else_subgraph_index"),
    "WHILE": ("cond_subgraph_index", "body_subgraph_index"),
    "CALL_ONCE": ("init_subgraph_index",),
}


@dataclass(frozen=True, slots=True)
class _Scopes:
    """TFLM's lifetimes, derived here from ``micro_allocation_info.cc``
    (``AllocationInfoBuilder::MarkAllocationLifetimes``), not from the planner's.

    ``tensors[(s, t)]``: inclusive ``[first, last]`` scopes; ``first`` is -1 for a
    tensor only read (a variable). ``ops[(s, i)]``: the scopes operator i of subgraph
    s spans (its scratch lives there; a control-flow operator spans the subgraphs it
    runs). Absent: never reached (``NEVER``)."""

    tensors: dict[TensorKey, tuple[int, int]]
    ops: dict[OpKey, tuple[int, int]]

    def tensor(self, s: int, t: int) -> tuple[int, int]:
        return self.tensors.get((s, t), NEVER)

    def op(self, s: int, i: int) -> tuple[int, int]:
        return self.ops.get((s, i), NEVER)


def _scopes(model: Model) -> _Scopes:
    """One scope counter over the run from subgraph 0: scope 0 holds its inputs; each
    operator takes the next scope, and a control-flow operator takes one more for
    each subgraph it runs (whose inputs and operators follow); an operator's outputs
    are born at its own scope and, like its inputs, read at the scope it ends in; a
    subgraph's outputs are born and read at its last scope. A tensor lives from the
    first scope it is born in to the last it is read in."""
    born: list[tuple[int, TensorKey]] = []
    read: list[tuple[int, TensorKey]] = []
    ops: dict[OpKey, tuple[int, int]] = {}

    def run(s: int, scope: int, depth: int) -> int:  # -> the scope subgraph s ends in
        if depth > len(model.subgraphs):
            raise UnsupportedModelError(f"subgraph {s} runs itself")
        sg = model.subgraphs[s]
        for t in sg.inputs:
            born.append((scope, (s, t)))
            read.append((scope, (s, t)))
        for op in sg.operators:
            scope += 1
            start = scope
            born.extend((start, (s, t)) for t in op.outputs)
            for callee in _callees(model, op):
                scope = run(callee, scope + 1, depth + 1)
            read.extend((scope, (s, t)) for t in (*op.inputs, *op.outputs) if t >= 0)
            ops[(s, op.index)] = (start, scope)
        for t in sg.outputs:
            born.append((scope, (s, t)))
            read.append((scope, (s, t)))
        return scope

    if model.subgraphs:
        run(0, 0, 0)
    first: dict[TensorKey, int] = {}
    for scope, key in born:
        first[key] = min(first.get(key, scope), scope)
    last: dict[TensorKey, int] = {}
    for scope, key in read:
        last[key] = max(last.get(key, scope), scope)
    keys = first.keys() | last.keys()
    return _Scopes({k: (first.get(k, -1), last.get(k, -1)) for k in keys}, ops)


def _callees(model: Model, op: Operator) -> list[int]:
    """The subgraphs ``op`` runs, in TFLM's order (none for an index out of range)."""
    called = (op.options.get(name) for name in _CALLS.get(op.opcode, ()))
    return [c for c in called if isinstance(c, int) and 0 <= c < len(model.subgraphs)]


def _tensor_bytes(sg: Subgraph, t: Tensor) -> int | None:
    """Bytes TFLM gives ``t`` once the kernels are prepared: its elements times the
    element size. A dim the converter left at -1 is known only for a RESHAPE output
    (its input's element count); None when the size cannot be known."""
    if -1 not in t.shape:
        return math.prod(max(d, 0) for d in t.shape) * t.dtype.itemsize
    for op in sg.operators:
        if op.opcode == "RESHAPE" and t.index in op.outputs and op.inputs:
            source = sg.tensors[op.inputs[0]].shape
            if -1 not in source:
                return math.prod(max(d, 0) for d in source) * t.dtype.itemsize
    return None


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the rules are judged against, derived once per plan: the model, its
    scopes, whether graph inputs may be written over, and which kernels may write
    their output over which inputs (``OVERWRITABLE`` of the plan's kernels)."""

    model: Model
    scopes: _Scopes
    clobber_inputs: bool
    overwritable: dict[str, tuple[tuple[int, ...], bool]]


def _facts(model: Model, clobber_inputs: bool, kernels: str) -> tuple[_Facts, list[str]]:
    """The facts, and a problem if ``kernels`` is no variant this module knows (then
    no operator is safe in place)."""
    table = OVERWRITABLE.get(kernels)
    known = ", ".join(OVERWRITABLE)
    found = [] if table is not None else [f"unknown kernels {kernels!r} (known: {known})"]
    return _Facts(model, _scopes(model), clobber_inputs, table or {}), found


def plan_problems(model: Model, plan: Plan) -> list[str]:
    """Every violation, each naming the tensor or scratch buffer and the step."""
    if len(plan.tensor_offsets) != model.tensor_count:
        return [
            f"offline plan has {len(plan.tensor_offsets)} offsets, "
            f"the model has {model.tensor_count} tensors"
        ]
    facts, found = _facts(model, plan.clobber_inputs, plan.kernels.name)
    buffers: list[Buffer] = []
    offsets: list[int | None] = []
    index_of: dict[TensorKey, int] = {}  # planned tensor -> its buffer
    given = dict(zip(model.tensor_keys(), plan.tensor_offsets, strict=True))
    for sg in model.subgraphs:
        for t in sg.tensors:
            off = given[(sg.index, t.index)]
            label = f"tensor {t.index} {t.name!r} (subgraph {sg.index})"
            why, size = _unplanned(sg, t)
            if why is not None:
                if off != -1:
                    found.append(f"{label} is {why} but has offset {off}; it must be -1")
                continue
            if size is None:
                found.append(f"{label} has an unknown dimension {t.shape}: its bytes are unknown")
                continue
            first, last = facts.scopes.tensor(sg.index, t.index)
            index_of[(sg.index, t.index)] = len(buffers)
            buffers.append(Buffer(label, first, last, _aligned(size), TFLM_ALIGNMENT))
            offsets.append(None if off < 0 else off)
    for sc in plan.scratch:
        label = f"scratch {sc.order} of operator {sc.op} (subgraph {sc.subgraph})"
        if not _has_op(model, sc.subgraph, sc.op):
            found.append(f"{label}: there is no such operator")
            continue
        first, last = facts.scopes.op(sc.subgraph, sc.op)
        buffers.append(Buffer(label, first, last, sc.size, TFLM_ALIGNMENT))
        offsets.append(sc.offset)
    for st in plan.staging:
        found.extend(_staging_problems(model, st, plan.kernels.name))
        if not (_has_op(model, 0, st.first) and _has_op(model, 0, st.op)):
            continue  # said by _staging_problems
        label = f"weight staging buffer of operator {st.op}"
        first, last = facts.scopes.op(0, st.first)[0], facts.scopes.op(0, st.op)[1]
        buffers.append(Buffer(label, first, last, st.size, TFLM_ALIGNMENT))
        offsets.append(st.offset)
    shared: set[frozenset[int]] = set()
    for alias in plan.aliases:
        why = _alias_problem(facts, alias, index_of, offsets)
        if why:
            found.append(f"alias {alias.kind} at operator {alias.op}: {why}")
        else:
            a, b = index_of[(alias.subgraph, alias.tensor)], index_of[(alias.subgraph, alias.base)]
            shared.add(frozenset((a, b)))
    found.extend(solution_problems(Problem(tuple(buffers), plan.arena), offsets, shared))
    return found


def _unplanned(sg: Subgraph, t: Tensor) -> tuple[str | None, int | None]:
    """(why TFLM does not plan ``t`` in the head, or None; its bytes when it does):
    constants lie in the flatbuffer, variables and resource handles in the tail, and
    a tensor of no bytes needs no place."""
    if t.is_constant:
        return "a constant", None
    if t.is_variable:
        return "a variable", None
    if t.dtype is DType.RESOURCE:
        return "a resource handle", None
    size = _tensor_bytes(sg, t)
    return ("empty", 0) if size == 0 else (None, size)


def _aligned(size: int) -> int:
    """``size`` bytes rounded up to TFLM's alignment (what a tensor takes in the head)."""
    return -(-size // TFLM_ALIGNMENT) * TFLM_ALIGNMENT


def _has_op(model: Model, s: int, i: int) -> bool:
    return 0 <= s < len(model.subgraphs) and 0 <= i < len(model.subgraphs[s].operators)


def _staging_problems(model: Model, st: StagingPlacement, kernels: str) -> list[str]:
    """A staging buffer must hold what its policy copies: ``groups:G`` one group of
    G output channels of every weight of the operator, ``,double`` two such; the
    bytes of a channel re-derived here from the weight shapes and the element sizes
    ``kernels`` read."""
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
    # biases the kernels read as int64 whatever their type (reader/overread.py)
    wide = set(wide_biases(sg, op, cmsis_nn=kernels != REFERENCE))
    block = 0  # one group: each weight's slice at a multiple of its element size and 4
    for i in dict.fromkeys(op.inputs[1:]):
        t = sg.tensors[i] if i >= 0 else None
        if t is None or not t.is_constant:
            continue
        size = 8 if i in wide else t.dtype.itemsize  # bytes per element the kernel reads
        block = -(-block // max(4, size)) * max(4, size)
        block += -(-min(int(g), out) * int(np.prod(t.shape)) * size // out)
    block = -(-block // 4) * 4
    need = -(-block // TFLM_ALIGNMENT) * TFLM_ALIGNMENT * (2 if rest else 1)
    if st.size < need:
        return [f"{where}: {st.size} B cannot hold {st.policy} ({need} B)"]
    return []


def offline_plan_problems(
    model: Model, offsets: Sequence[int], clobber_inputs: bool = True, kernels: str = "reference"
) -> list[str]:
    """What is wrong with an offline plan read back from a model file, where no alias
    is recorded: only the tensors it places (offset >= 0) are checked, TFLM plans
    the rest. Two of them may share bytes only if a rule justifies the pair at the
    offsets given: for each operator, the pairs a rule could concern are tried
    (output over an input at the same offset, a slice in its input, an input in
    its concatenation) and judged exactly as ``plan_problems`` judges a recorded
    alias. ``clobber_inputs``: whether writing over a graph input is accepted;
    ``kernels``: the kernels variant the model runs with (whose in-place rules apply)."""
    if len(offsets) != model.tensor_count:
        return [
            f"offline plan has {len(offsets)} offsets, the model has {model.tensor_count} tensors"
        ]
    facts, found = _facts(model, clobber_inputs, kernels)
    given = dict(zip(model.tensor_keys(), offsets, strict=True))
    buffers: list[Buffer] = []
    placed: list[int | None] = []
    index_of: dict[TensorKey, int] = {}
    for sg in model.subgraphs:
        for t in sg.tensors:
            key = (sg.index, t.index)
            size = _tensor_bytes(sg, t)
            if given[key] < 0 or t.is_constant or t.is_variable or not size:
                continue
            first, last = facts.scopes.tensor(sg.index, t.index)
            index_of[key] = len(buffers)
            label = f"tensor {t.index} {t.name!r} (subgraph {sg.index})"
            buffers.append(Buffer(label, first, last, _aligned(size), TFLM_ALIGNMENT))
            placed.append(given[key])
    shared = set()
    for alias in _possible_aliases(model, given, facts.overwritable):
        if not _alias_problem(facts, alias, index_of, placed):
            a, b = index_of[(alias.subgraph, alias.tensor)], index_of[(alias.subgraph, alias.base)]
            shared.add(frozenset((a, b)))
    return found + solution_problems(Problem(tuple(buffers)), placed, shared)


def _possible_aliases(
    model: Model, given: dict[TensorKey, int], overwritable: dict[str, tuple[tuple[int, ...], bool]]
) -> list[Alias]:
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
        if op.opcode in overwritable:
            for x in set(op.inputs):
                add(INPLACE, op, y, x)
        if op.opcode == "STRIDED_SLICE" and op.inputs:
            add(SLICE_VIEW, op, y, op.inputs[0])
        if op.opcode == "CONCATENATION":
            for x in set(op.inputs):
                add(CONCAT_VIEW, op, x, y)
    return found


def _alias_problem(
    facts: _Facts, alias: Alias, index_of: dict[TensorKey, int], offsets: list[int | None]
) -> str | None:
    """Why ``alias`` does not justify its pair sharing bytes, or None if it does."""
    model = facts.model
    if alias.subgraph != 0 or not model.subgraphs:
        return f"aliases are only made in subgraph 0, not {alias.subgraph}"
    sg = model.subgraphs[0]
    if not 0 <= alias.op < len(sg.operators):
        return f"there is no operator {alias.op}"
    op = sg.operators[alias.op]
    first, last = facts.scopes.op(0, op.index)
    if first != last:
        return f"{op.opcode} spans scopes {first}..{last} (control flow)"
    for t in (alias.tensor, alias.base):
        if (0, t) not in index_of:
            return f"tensor {t} is not a tensor TFLM plans in the arena"
    at, ab = offsets[index_of[(0, alias.tensor)]], offsets[index_of[(0, alias.base)]]
    if at is None or ab is None:
        return "one of its tensors has no offset"
    if alias.kind == INPLACE:
        why, delta = _inplace_problem(facts, sg, op, alias, first), 0
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
    facts: _Facts, sg: Subgraph, op: Operator, alias: Alias, scope: int
) -> str | None:
    rule = facts.overwritable.get(op.opcode)
    if rule is None:
        return "not on the list of kernels safe with output memory == input memory"
    inputs, same_shape = rule
    if op.outputs != (alias.tensor,):
        return f"tensor {alias.tensor} is not its only output"
    at = [k for k, i in enumerate(op.inputs) if i == alias.base]
    if not at:
        return f"tensor {alias.base} is not one of its inputs"
    if not any(k in inputs for k in at):
        return f"its input {at[0]} may not be written over (only inputs {inputs})"
    x, y = sg.tensors[alias.base], sg.tensors[alias.tensor]
    last = facts.scopes.tensor(0, x.index)[1]
    if last != scope:
        return f"input tensor {x.index} does not die there (read until scope {last}, not {scope})"
    if x.index in sg.outputs:
        return f"input tensor {x.index} is a graph output"
    if x.index in sg.inputs and not facts.clobber_inputs:
        return f"input tensor {x.index} is a graph input and the plan may not clobber inputs"
    if DType.INT4 in (x.dtype, y.dtype):
        return "INT4 is packed: elements are not bytes"
    if y.dtype.itemsize > x.dtype.itemsize:
        return f"its output elements ({y.dtype.name}) are wider than its input's ({x.dtype.name})"
    if int(np.prod(x.shape)) != int(np.prod(y.shape)):
        return f"input shape {x.shape} and output shape {y.shape} differ in elements"
    if same_shape:
        try:
            broadcast = np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            broadcast = None
        if broadcast != tuple(y.shape):
            return f"input shape {x.shape} is not the output shape {y.shape}"
    return None


def _int32s(model: Model, sg: Subgraph, i: int) -> np.ndarray | None:
    t = sg.tensors[i] if 0 <= i < len(sg.tensors) else None
    if t is None or t.dtype is not DType.INT32:
        return None
    return constant_values(model.buffers, t)  # the bytes its shape says


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
    if any(d < 0 for d in x.shape):
        return f"the input's shape {x.shape} has unknown dims", 0
    runs: list[tuple[int, int, int]] = []  # per axis: (first index, count, step)
    for d in range(rank):
        size = x.shape[d]
        if shrink >> d & 1:
            at = int(begin[d]) + (size if begin[d] < 0 else 0)
            if not 0 <= at < size:
                return f"the slice is out of range (index {int(begin[d])} of axis {d})", 0
            runs.append((at, 1, 1))
        else:
            lo = None if begin_mask >> d & 1 else int(begin[d])
            hi = None if end_mask >> d & 1 else int(end[d])
            start, stop, step = slice(lo, hi, int(strides[d])).indices(size)
            runs.append((start, len(range(start, stop, step)), step))
    picked = math.prod(n for _, n, _ in runs)
    if picked != y.elements:
        return f"the slice picks {picked} elements, the output has {y.elements}", 0
    first = _one_run(x.shape, runs)
    if first is None:
        return "the slice is not one contiguous run of the input", 0
    return None, first * x.dtype.itemsize


def _one_run(shape: tuple[int, ...], runs: list[tuple[int, int, int]]) -> int | None:
    """The first element index if the elements the per-axis ``runs`` (first index,
    count, step) pick, in row-major order, are one run of consecutive elements of a
    tensor of ``shape``; None otherwise (or if nothing is picked). Closed form: each
    step from one picked element to the next in row-major order must be +1."""
    if any(n == 0 for _, n, _ in runs):
        return None
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]  # elements
    span = 0  # how far the axes inside the current one move, first to last element
    for d in reversed(range(len(shape))):
        _, n, step = runs[d]
        if n > 1:
            if step * strides[d] - span != 1:  # the jump when axis d moves on
                return None
            span += (n - 1) * step * strides[d]
    return sum(start * stride for (start, _, _), stride in zip(runs, strides, strict=True))


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
    if any(d < 0 for t in (y, *parts) for d in t.shape):
        return "its shapes have unknown dims", 0
    k = at[0]
    lo = sum(t.shape[axis] for t in parts[:k])  # rows of the output before this input
    hi = y.shape[axis] if k == len(parts) - 1 else lo + parts[k].shape[axis]
    lo, hi = min(lo, y.shape[axis]), min(hi, y.shape[axis])  # the rows this input is given
    rows = max(0, hi - lo)
    piece = (*y.shape[:axis], rows, *y.shape[axis + 1 :])
    if piece != tuple(parts[k].shape):
        return f"input shape {parts[k].shape} is not its part {piece} of the output", 0
    runs = [(0, n, 1) for n in y.shape]
    runs[axis] = (lo, rows, 1)
    first = _one_run(tuple(y.shape), runs)
    if first is None:
        return "this input is not one contiguous run of the output", 0
    return None, first * y.dtype.itemsize
