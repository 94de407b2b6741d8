"""Where TFLM's kernels let two tensors share bytes: the rules and the candidates.

An alias says ``offset(tensor) == offset(base) + delta`` (bytes) and names the
one rule that makes the overlap safe (``docs/inplace.md`` gives, for each, the
kernel source and loop that were read):

  inplace      an operator writes its output over an input that dies at that
               operator: same start address; the kernel reads input element i
               before it writes output element i, in ascending i, and an output
               element is no wider than an input element (``INPLACE_RULES``: the
               rules read for the kernels the plan's variant runs);
  slice-view   a STRIDED_SLICE output that is one contiguous byte range of its
               input lies on that range (the kernel copies each byte onto itself);
  concat-view  a CONCATENATION input lies on its byte range of the output (its
               producer writes it there; the kernel copies each byte onto itself).

Only tensors of subgraph 0 alias, at operators that take one scope (no control
flow), and only where that variant runs the kernel a rule was read for (a view
needs TFLM's reference STRIDED_SLICE or CONCATENATION, which every variant runs).
A graph input is overwritten in place only when the caller allows it
(``clobber_inputs``); a graph output or a variable is never overwritten. A
view's byte offset must be a multiple of 16 (TFLM's arena alignment): TFLM
places scratch buffers right above offline tensors, so an odd offset would
misalign them.

This module finds candidates; whether two candidates can hold together (views
are read-only: nothing else may write their bytes while both live) is decided
by the planner (``placement.alias_classes``) and checked, independently, by the
plan validator (``placement.validate``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from arenaplan.analysis.lifetimes import Lifetimes, compute_lifetimes
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph, Tensor
from arenaplan.tflm import cmsis_nn
from arenaplan.tflm.kernel_sets import KERNELS, REFERENCE, check_kernels, cmsis_features

ALIGNMENT = 16  # bytes: a view's offset in its base must be a multiple of this

INPLACE = "inplace"
SLICE_VIEW = "slice-view"
CONCAT_VIEW = "concat-view"
RULES = (INPLACE, SLICE_VIEW, CONCAT_VIEW)

# what a planner may be asked for (``PlanOptions.aliases``) -> the rules it enables
KINDS: dict[str, tuple[str, ...]] = {
    "inplace": (INPLACE,),
    "views": (SLICE_VIEW, CONCAT_VIEW),
}


@dataclass(frozen=True, slots=True, order=True)
class Alias:
    """``tensor`` lies at ``offset(base) + delta`` (bytes), by rule ``kind`` at
    operator ``op`` of subgraph ``subgraph``.

    inplace: ``tensor`` is the output, ``base`` the input it writes over, delta 0;
    slice-view: ``tensor`` is the slice, ``base`` its input, delta >= 0;
    concat-view: ``tensor`` is one input, ``base`` the output, delta >= 0.
    """

    kind: str
    subgraph: int
    op: int
    tensor: int
    base: int
    delta: int


@dataclass(frozen=True, slots=True)
class InPlaceRule:
    """A kernel safe with output memory == input memory (``docs/inplace.md``).

    ``inputs``: positions of the inputs the output may take over. ``same_shape``:
    that input must have the output's shape, leading 1s aside (no broadcasting
    of it); otherwise only the element counts must match (reshapes). ``source``:
    the code read for it, file and loop.
    """

    inputs: tuple[int, ...]
    same_shape: bool
    source: str


# TFLM's reference kernels (docs/inplace.md says, for each, which loop was read and why
# it is safe); ``INPLACE_RULES`` below has the table of each kernels variant.
# Every entry also needs equal element counts, an output element no wider than an
# input element, and no INT4 (``_inplace_refusal``).
INPLACE_KERNELS: dict[str, InPlaceRule] = {
    "ADD": InPlaceRule(
        (0, 1), True, "add.cc; reference/add.h, integer_ops/add.h, broadcast_loop.h"
    ),
    "SUB": InPlaceRule((0, 1), True, "sub.cc; reference/sub.h, broadcast_loop.h"),
    "MUL": InPlaceRule((0, 1), True, "mul_common.cc; reference/mul.h, integer_ops/mul.h"),
    "RELU": InPlaceRule((0,), True, "activations.h ReluQuantized; activations_common.cc ReluFloat"),
    "RELU6": InPlaceRule(
        (0,), True, "activations.h Relu6Quantized; activations_common.cc Relu6Float"
    ),
    "LEAKY_RELU": InPlaceRule((0,), True, "reference/leaky_relu.h LeakyRelu, QuantizeLeakyRelu"),
    "LOGISTIC": InPlaceRule((0,), True, "reference/logistic.h, integer_ops/logistic.h Logistic"),
    "TANH": InPlaceRule((0,), True, "reference/tanh.h, integer_ops/tanh.h Tanh"),
    "HARD_SWISH": InPlaceRule((0,), True, "reference/hard_swish.h HardSwish"),
    "ELU": InPlaceRule((0,), True, "reference/elu.h Elu; elu.cc EvalUsingLookupTable"),
    "QUANTIZE": InPlaceRule((0,), True, "quantize_common.cc; reference/quantize.h, requantize.h"),
    "SOFTMAX": InPlaceRule((0,), True, "softmax.cc; reference/softmax.h Softmax, SoftmaxInt16"),
    "RESHAPE": InPlaceRule(
        (0,), False, "reshape.cc EvalReshapeReference: no copy if pointers equal"
    ),
    "SQUEEZE": InPlaceRule(
        (0,), False, "squeeze.cc SqueezeEval: memcpy(output, input) onto itself"
    ),
    "EXPAND_DIMS": InPlaceRule((0,), False, "expand_dims.cc memCopyN: out[i] = in[i], i ascending"),
}


def _runs_reference(kernels: str, opcode: str | None) -> bool:
    """Whether a ``kernels`` build runs TFLM's reference kernel for ``opcode`` (True
    for None: no kernel to ask about)."""
    if opcode is None or cmsis_features(kernels) is None:
        return True
    return not cmsis_nn.is_cmsis_kernel(opcode)


def _variant_rules(kernels: str) -> dict[str, InPlaceRule]:
    """The rules for the kernels a ``kernels`` build runs: the reference table, where
    the build runs the reference kernel; the CMSIS-NN reading of that feature level
    (``cmsis_nn.INPLACE_READ``) where it runs its own; no rule where its own kernel
    was not read."""
    features = cmsis_features(kernels)
    if features is None:
        return dict(INPLACE_KERNELS)
    table: dict[str, InPlaceRule] = {}
    for opcode, rule in INPLACE_KERNELS.items():
        if _runs_reference(kernels, opcode):
            table[opcode] = replace(rule, source=f"the reference kernel: {rule.source}")
            continue
        read = cmsis_nn.INPLACE_READ.get(opcode, {}).get(features)
        if read is not None:
            table[opcode] = replace(rule, source=read)
    return table


# kernels variant (``tflm.kernel_sets.KERNELS``) -> opcode -> the rule read for the
# kernel that variant runs; an opcode of ``INPLACE_KERNELS`` missing here is refused
INPLACE_RULES: dict[str, dict[str, InPlaceRule]] = {k: _variant_rules(k) for k in KERNELS}


def _unread(kernels: str, opcode: str) -> str:
    """Why ``opcode`` has no in-place rule for ``kernels`` though the reference has one."""
    return (
        f"no in-place rule for {kernels}: CMSIS-NN's {opcode} kernel "
        f"(kernels/cmsis_nn/) was not read at feature level {cmsis_features(kernels)!r}"
    )


# the reference kernel each view rule was read for; every variant runs it (a CMSIS-NN
# build too: kernels/cmsis_nn/ has no strided_slice.cc or concatenation.cc)
VIEW_KERNELS = {SLICE_VIEW: "STRIDED_SLICE", CONCAT_VIEW: "CONCATENATION"}


@dataclass(frozen=True, slots=True)
class Candidates:
    """Aliases the kernels allow, each on its own; ``refused`` says, one line each,
    why an operator of an aliasing kind got none (for the curious and the tests)."""

    aliases: tuple[Alias, ...]
    refused: tuple[str, ...]


def rules_of(kinds: Iterable[str]) -> tuple[str, ...]:
    """The rules enabled by ``kinds`` ("inplace", "views"), in ``RULES`` order."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown alias kind(s) {unknown}; known: {sorted(KINDS)}")
    wanted = {rule for kind in kinds for rule in KINDS[kind]}
    return tuple(rule for rule in RULES if rule in wanted)


def alias_candidates(
    model: Model, kinds: Iterable[str], clobber_inputs: bool = False, kernels: str = REFERENCE
) -> Candidates:
    """Every alias the rules of ``kinds`` allow in subgraph 0 of a build running
    ``kernels`` (``tflm.kernel_sets``), views first (slices, then concatenations),
    then in-place operators, each in operator order."""
    table = INPLACE_RULES[check_kernels(kernels)]
    rules = tuple(r for r in rules_of(kinds) if _runs_reference(kernels, VIEW_KERNELS.get(r)))
    if not rules or not model.subgraphs:
        return Candidates((), ())
    sg = model.subgraphs[0]
    lt = compute_lifetimes(model)
    found: dict[str, list[Alias]] = {rule: [] for rule in RULES}
    refused: list[str] = []
    for op in sg.operators:
        first, last = lt.operators[0][op.index]
        if first != last:
            continue  # a control-flow operator: its scopes hold other subgraphs
        where = f"operator {op.index} {op.opcode}"
        if SLICE_VIEW in rules and op.opcode == "STRIDED_SLICE":
            alias, why = _slice_view(model, sg, op)
            _keep(alias, why, where, found[SLICE_VIEW], refused)
        if CONCAT_VIEW in rules and op.opcode == "CONCATENATION":
            for alias, why in _concat_views(sg, op):
                _keep(alias, why, where, found[CONCAT_VIEW], refused)
        if INPLACE in rules and op.opcode in table:
            for alias, why in _inplace(sg, op, table[op.opcode], lt, first, clobber_inputs):
                _keep(alias, why, where, found[INPLACE], refused)
        elif INPLACE in rules and op.opcode in INPLACE_KERNELS:
            refused.append(f"{where}: {_unread(kernels, op.opcode)}")
    ordered = (*found[SLICE_VIEW], *found[CONCAT_VIEW], *found[INPLACE])
    return Candidates(ordered, tuple(refused))


def _keep(alias: Alias | None, why: str, where: str, into: list, refused: list) -> None:
    if alias is not None:
        into.append(alias)
    else:
        refused.append(f"{where}: {why}")


def _arena_tensor(t: Tensor) -> str | None:
    """Why ``t`` cannot alias at all (not a plain activation in the arena), or None."""
    if t.is_constant:
        return f"tensor {t.index} is a constant"
    if t.is_variable:
        return f"tensor {t.index} is a variable"
    if t.dtype in (DType.INT4, DType.STRING, DType.RESOURCE, DType.VARIANT):
        return f"tensor {t.index} is {t.dtype.name}"
    if min(t.shape, default=1) < 0 or t.nbytes == 0:
        return f"tensor {t.index} has no fixed size {t.shape}"
    return None


# ---- in place ----------------------------------------------------------------------


def _inplace(
    sg: Subgraph, op: Operator, rule: InPlaceRule, lt: Lifetimes, scope: int, clobber_inputs: bool
) -> list[tuple[Alias | None, str]]:
    if len(op.outputs) != 1:
        return [(None, f"{len(op.outputs)} outputs")]
    out = sg.tensors[op.outputs[0]]
    why = _arena_tensor(out)
    if why:
        return [(None, why)]
    results: list[tuple[Alias | None, str]] = []
    seen: set[int] = set()
    for k in rule.inputs:
        x = sg.operand(op, k)
        if x is None or x.index in seen:
            continue
        seen.add(x.index)
        why = _inplace_refusal(sg, lt, scope, rule, x, out, clobber_inputs)
        alias = Alias(INPLACE, sg.index, op.index, out.index, x.index, 0)
        results.append((None, f"input {k}: {why}") if why else (alias, ""))
    return results


def _inplace_refusal(
    sg: Subgraph,
    lt: Lifetimes,
    scope: int,
    rule: InPlaceRule,
    x: Tensor,
    out: Tensor,
    clobber_inputs: bool,
) -> str | None:
    why = _arena_tensor(x)
    if why:
        return why
    if lt.tensors[sg.index][x.index].last != scope:
        return f"tensor {x.index} is still read after this operator"
    if x.index in sg.outputs:
        return f"tensor {x.index} is a graph output"
    if x.index in sg.inputs and not clobber_inputs:
        return f"tensor {x.index} is a graph input (clobber_inputs is off)"
    if out.dtype.itemsize > x.dtype.itemsize:
        return (
            f"the output's elements ({out.dtype.name}) are wider than the input's "
            f"({x.dtype.name}): writing element i would overwrite unread input"
        )
    if x.elements != out.elements:
        return f"{x.elements} input elements for {out.elements} output elements (broadcast)"
    if rule.same_shape and _strip_ones(x.shape) != _strip_ones(out.shape):
        return f"input shape {x.shape} is not the output shape {out.shape}"
    return None


def _strip_ones(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape without its leading 1s (how broadcasting extends a shape)."""
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return shape[k:]


# ---- views -------------------------------------------------------------------------


def _int_data(t: Tensor | None, model: Model) -> list[int] | None:
    """The int32 values of a constant tensor, or None."""
    if t is None or not t.is_constant or t.dtype is not DType.INT32:
        return None
    if t.buffer >= len(model.buffers):
        return None
    raw = model.buffers[t.buffer]
    if len(raw) != 4 * t.elements:
        return None
    return [int(v) for v in np.frombuffer(raw, dtype="<i4")]


def slice_ranges(
    shape: tuple[int, ...], begin: list[int], end: list[int], strides: list[int], op: Operator
) -> list[tuple[int, int, int]]:
    """(start, count, stride) per dim, as TFLM's reference StridedSlice walks it
    (``strided_slice_logic.h`` StridedSliceStartForAxis / EndForAxis; TFLM passes
    begin, end and shrink masks and ignores the others)."""
    begin_mask = int(op.options.get("begin_mask", 0) or 0)
    end_mask = int(op.options.get("end_mask", 0) or 0)
    shrink = int(op.options.get("shrink_axis_mask", 0) or 0)
    out = []
    for axis, size in enumerate(shape):
        stride = strides[axis]
        start = begin[axis] + (size if begin[axis] < 0 else 0)
        start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
        if begin_mask & (1 << axis):
            start = 0 if stride > 0 else size - 1
        if shrink & (1 << axis):
            stop = start if start >= size else start + 1
        else:
            stop = end[axis] + (size if end[axis] < 0 else 0)
            stop = _clamp(stop, 0, size) if stride > 0 else _clamp(stop, -1, size - 1)
            if end_mask & (1 << axis):
                stop = size if stride > 0 else -1
        count = max(0, math.ceil((stop - start) / stride))
        out.append((start, count, stride))
    return out


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


def contiguous_start(shape: tuple[int, ...], ranges: list[tuple[int, int, int]]) -> int | None:
    """The first element of the selection when it is one contiguous run of the
    row-major ``shape``; None otherwise. Contiguous: every dim inside some dim j is
    taken whole; j itself with stride 1 (or one index); every dim outside j, one
    index."""
    j = len(shape) - 1
    while j >= 0 and _whole(shape[j], ranges[j]):
        j -= 1
    if j >= 0:
        _, count, stride = ranges[j]
        if count > 1 and stride != 1:
            return None
        if any(ranges[i][1] != 1 for i in range(j)):
            return None
    first, step = 0, 1
    for axis in range(len(shape) - 1, -1, -1):
        first += ranges[axis][0] * step if ranges[axis][1] else 0
        step *= shape[axis]
    return first


def _whole(size: int, r: tuple[int, int, int]) -> bool:
    start, count, stride = r
    return count == size and (size <= 1 or (start == 0 and stride == 1))


def _slice_view(model: Model, sg: Subgraph, op: Operator) -> tuple[Alias | None, str]:
    x, y = sg.operand(op, 0), sg.operand(op, 0, output=True)
    if x is None or y is None or len(op.outputs) != 1:
        return None, "no input or output"
    for t in (x, y):
        why = _arena_tensor(t)
        if why:
            return None, why
    if x.dtype is not y.dtype:
        return None, f"input {x.dtype.name}, output {y.dtype.name}"
    for name in ("ellipsis_mask", "new_axis_mask"):
        if op.options.get(name, 0):
            return None, f"{name} is set (TFLM ignores it)"
    if op.options.get("offset", False):
        return None, "offset is set (TFLM ignores it)"
    bounds = [_int_data(sg.operand(op, k), model) for k in (1, 2, 3)]
    begin, end, strides = (v if v is not None and len(v) == len(x.shape) else None for v in bounds)
    if begin is None or end is None or strides is None:
        return None, "begin, end and strides are not int32 constants of the input's rank"
    if 0 in strides:
        return None, "a stride is 0"
    ranges = slice_ranges(x.shape, begin, end, strides, op)
    picked = math.prod(r[1] for r in ranges)
    if picked != y.elements:
        return None, f"the slice selects {picked} elements, the output has {y.elements}"
    first = contiguous_start(x.shape, ranges)
    if first is None:
        return None, "the slice is not one contiguous byte range of the input"
    delta = first * x.dtype.itemsize
    if delta % ALIGNMENT:
        return None, f"its byte offset {delta} in the input is not a multiple of {ALIGNMENT}"
    return Alias(SLICE_VIEW, sg.index, op.index, y.index, x.index, delta), ""


def _concat_views(sg: Subgraph, op: Operator) -> list[tuple[Alias | None, str]]:
    y = sg.operand(op, 0, output=True)
    if y is None or len(op.outputs) != 1:
        return [(None, "no output")]
    why = _arena_tensor(y)
    if why:
        return [(None, why)]
    if op.options.get("fused_activation_function", "NONE") not in ("NONE", 0, None):
        return [(None, "a fused activation")]
    rank = len(y.shape)
    axis = int(op.options.get("axis", 0) or 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        return [(None, f"axis {axis} is outside rank {rank}")]
    if any(d != 1 for d in y.shape[:axis]):
        return [(None, f"output dims before axis {axis} are not all 1 {y.shape}")]
    if any(i < 0 for i in op.inputs):
        return [(None, "an input is omitted")]
    inputs = [sg.tensors[i] for i in op.inputs]
    if sum(t.nbytes for t in inputs) != y.nbytes:
        return [(None, "the inputs' bytes do not add up to the output's")]
    counts = {t.index: op.inputs.count(t.index) for t in inputs}
    results: list[tuple[Alias | None, str]] = []
    delta = 0
    for k, t in enumerate(inputs):
        if t.is_constant:
            delta += t.nbytes
            continue  # copied from flash into the output: nothing to place
        why = _arena_tensor(t)
        if not why and t.dtype is not y.dtype:
            why = f"tensor {t.index} is {t.dtype.name}, the output {y.dtype.name}"
        if not why and counts[t.index] > 1:
            why = f"tensor {t.index} is concatenated {counts[t.index]} times"
        if not why and delta % ALIGNMENT:
            why = f"its byte offset {delta} in the output is not a multiple of {ALIGNMENT}"
        if why:
            results.append((None, f"input {k}: {why}"))
        else:
            results.append((Alias(CONCAT_VIEW, sg.index, op.index, t.index, y.index, delta), ""))
        delta += t.nbytes
    return results
