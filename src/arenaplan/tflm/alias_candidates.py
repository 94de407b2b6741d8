"""Where TFLM's kernels let two tensors share bytes in a model: the alias candidates
(``Runtime.alias_candidates`` of ``tflm.runtime``).

The rules are TFLM facts and live in ``tflm.alias_rules`` (with the kernel each was read
for, in its family module of ``tflm.kernels``); this module applies them to a model:

  inplace      an operator writes its output over an input that dies at that
               operator (lifetimes from ``tflm.lifetimes``), for the kernels
               the plan's variant runs (``tflm.alias_rules.INPLACE_RULES``);
  slice-view   a STRIDED_SLICE output that is one contiguous byte range of its
               input lies on that range;
  concat-view  a CONCATENATION input lies on its byte range of the output.

Only tensors of subgraph 0 alias, at operators that take one scope (no control
flow). A graph input is overwritten in place only when the caller allows it
(``clobber_inputs``); a graph output or a variable is never overwritten. A view's
byte offset must be a multiple of 16 (TFLM's arena alignment): TFLM places scratch
buffers right above offline tensors, so an odd offset would misalign them.

This module finds candidates; whether two candidates can hold together (views are
read-only: nothing else may write their bytes while both live) is decided by the
planner (``placement.alias_classes``) and checked, independently, by the plan
validator (``tflm.validate``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from arenaplan.ir.constants import constant_ints
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph, Tensor
from arenaplan.runtime.records import Candidates, Lifetimes
from arenaplan.tflm.alias_rules import (
    CONCAT_VIEW,
    INPLACE,
    INPLACE_KERNELS,
    INPLACE_RULES,
    RULES,
    SLICE_VIEW,
    VIEW_KERNELS,
    Alias,
    InPlaceRule,
    runs_reference,
    unread,
)
from arenaplan.tflm.kernel_sets import REFERENCE, check_kernels
from arenaplan.tflm.kernels.slice import slice_ranges
from arenaplan.tflm.lifetimes import compute_lifetimes
from arenaplan.tflm.sizes import TFLM_ALIGNMENT

__all__ = [
    "CONCAT_VIEW",
    "INPLACE",
    "KINDS",
    "SLICE_VIEW",
    "Alias",
    "Candidates",
    "alias_candidates",
    "contiguous_start",
    "rules_of",
]

# what a planner may be asked for (``PlanOptions.alias_kinds``) -> the rules it enables
KINDS: dict[str, tuple[str, ...]] = {
    "inplace": (INPLACE,),
    "views": (SLICE_VIEW, CONCAT_VIEW),
}


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
    rules = tuple(r for r in rules_of(kinds) if runs_reference(kernels, VIEW_KERNELS.get(r)))
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
            refused.append(f"{where}: {unread(kernels, op.opcode)}")
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
    """The int32 values of a constant tensor (the bytes its shape says), or None."""
    if t is None or t.dtype is not DType.INT32:
        return None
    return constant_ints(model.buffers, t)


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
    if delta % TFLM_ALIGNMENT:
        return None, f"its byte offset {delta} in the input is not a multiple of {TFLM_ALIGNMENT}"
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
        if not why and delta % TFLM_ALIGNMENT:
            why = f"its byte offset {delta} in the output is not a multiple of {TFLM_ALIGNMENT}"
        if why:
            results.append((None, f"input {k}: {why}"))
        else:
            results.append((Alias(CONCAT_VIEW, sg.index, op.index, t.index, y.index, delta), ""))
        delta += t.nbytes
    return results
