"""Aliasing: which tensors may share bytes, how the planner merges them, and how the
validator judges every shared byte on its own.

The small models here (``ALIAS_MODELS``, ``VIEW_MODELS``) are also run in TFLM by
``tests/verify/test_inplace_runtime.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kits.opmodels import F32, I8, I16, I32, Net, binary, quantize_dequantize, unary
from testkit import kernel_set, model_path

from arenaplan.analysis.buffers import arena_items
from arenaplan.errors import PlanValidationError
from arenaplan.ir.model import Operator, Options
from arenaplan.passes import pass_class
from arenaplan.passes.inplace import InPlace, alias_options
from arenaplan.placement import Plan, PlanOptions, check_plan, plan_model
from arenaplan.placement.alias_classes import alias_layout
from arenaplan.reader import read_model, read_model_bytes
from arenaplan.tflm import cmsis_nn
from arenaplan.tflm.alias_candidates import alias_candidates, contiguous_start
from arenaplan.tflm.alias_rules import (
    CONCAT_VIEW,
    INPLACE,
    INPLACE_KERNELS,
    INPLACE_RULES,
    SLICE_VIEW,
    VIEW_KERNELS,
    Alias,
)
from arenaplan.tflm.kernel_sets import KERNELS, cmsis_features
from arenaplan.tflm.kernels.slice import slice_ranges
from arenaplan.tflm.validate import offline_plan_problems, plan_problems

INPLACE_ONLY = PlanOptions(alias_kinds=frozenset({"inplace"}))
CLOBBER = PlanOptions(alias_kinds=frozenset({"inplace"}), clobber_inputs=True)
VIEWS = PlanOptions(alias_kinds=frozenset({"views"}))
ALL = PlanOptions(alias_kinds=frozenset({"inplace", "views"}))

_LOGISTIC_OUT = {I8: {"scale": 1 / 256, "zero": -128}, I16: {"scale": 1 / 32768}, F32: {}}
_TANH_OUT = {I8: {"scale": 1 / 128}, I16: {"scale": 1 / 32768}, F32: {}}


# ---- small models, one per listed kernel (and dtype path) ---------------------------


def broadcast_add(full_first: bool = True) -> bytes:
    """RELU -> ADD with a broadcast (1,1,1,8) operand -> RELU: the full operand dies
    at the ADD and may be written over; the broadcast one never."""
    n = Net("broadcast_add")
    x, c = n.act((1, 4, 4, 8)), n.act((1, 1, 1, 8))
    r = n.act((1, 4, 4, 8))
    n.op("RELU", [x], [r])
    y = n.act((1, 4, 4, 8), scale=0.1)
    n.op("ADD", [r, c] if full_first else [c, r], [y])
    z = n.act((1, 4, 4, 8), scale=0.1)
    n.op("RELU", [y], [z])
    return n.done([x, c], [z])


def through_relu(opcode: str, dtype, shape=(1, 4, 4, 8), out: dict | None = None, **opts):
    """x -> RELU -> r -> ``opcode`` -> y -> RELU -> z: ``opcode`` may write over r
    (not a graph input, dies there)."""
    n = Net(opcode.lower())
    x = n.act(shape, dtype, scale=0.1)
    r = n.act(shape, dtype, scale=0.1)
    n.op("RELU", [x], [r])
    y = n.act(shape, dtype, **(out or {"scale": 0.1}))
    n.op(opcode, [r], [y], **opts)
    z = n.act(shape, dtype, **(out or {"scale": 0.1}))
    n.op("RELU", [y], [z])
    return n.done([x], [z])


def softmax_chain(dtype) -> bytes:
    n = Net("softmax_chain")
    x = n.act((2, 10), dtype, scale=0.1)
    r = n.act((2, 10), dtype, scale=0.1)
    n.op("RELU", [x], [r])
    out = {I8: (1 / 256, -128), I16: (1 / 32768, 0), F32: (1.0, 0)}[dtype]
    y = n.act((2, 10), dtype, *out)
    n.op("SOFTMAX", [r], [y], beta=1.0)
    return n.done([x], [y])


def quantize_narrowing(source) -> bytes:
    """``source`` -> RELU -> QUANTIZE to int8 -> RELU: a narrowing requantisation."""
    n = Net("quantize_narrowing")
    x = n.act((1, 64), source, scale=0.01)
    r = n.act((1, 64), source, scale=0.01)
    n.op("RELU", [x], [r])
    q = n.act((1, 64), I8, 0.02, 3)
    n.op("QUANTIZE", [r], [q])
    z = n.act((1, 64), I8, 0.02, 3)
    n.op("RELU", [q], [z])
    return n.done([x], [z])


def reshapes() -> bytes:
    """RELU -> RESHAPE -> SQUEEZE -> EXPAND_DIMS -> RELU, float32."""
    n = Net("reshapes")
    x = n.act((1, 4, 6, 2), F32)
    r = n.act((1, 4, 6, 2), F32)
    n.op("RELU", [x], [r])
    flat = n.act((1, 1, 48), F32)
    n.op("RESHAPE", [r, n.const([1, 1, 48], I32)], [flat], new_shape=(1, 1, 48))
    sq = n.act((1, 48), F32)
    n.op("SQUEEZE", [flat], [sq], squeeze_dims=(0,))
    e = n.act((1, 1, 48), F32)
    n.op("EXPAND_DIMS", [sq, n.const(1, I32)], [e])
    z = n.act((1, 1, 48), F32)
    n.op("RELU", [e], [z])
    return n.done([x], [z])


# name -> (builder, the opcode whose output must be written over an input)
ALIAS_MODELS: dict[str, tuple[Callable[[], bytes], str]] = {
    "add_int8": (lambda: binary("ADD"), "ADD"),
    "add_int16": (lambda: binary("ADD", I16), "ADD"),
    "add_float": (lambda: binary("ADD", F32), "ADD"),
    "add_broadcast_int8": (broadcast_add, "ADD"),
    "add_broadcast_first_int8": (lambda: broadcast_add(full_first=False), "ADD"),
    "sub_int8": (lambda: binary("SUB"), "SUB"),
    "sub_float": (lambda: binary("SUB", F32), "SUB"),
    "mul_int8": (lambda: binary("MUL"), "MUL"),
    "mul_int16": (lambda: binary("MUL", I16), "MUL"),
    "mul_float": (lambda: binary("MUL", F32), "MUL"),
    "relu_int8": (lambda: unary("RELU"), "RELU"),
    "relu_int16": (lambda: unary("RELU", I16), "RELU"),
    "relu_float": (lambda: unary("RELU", F32), "RELU"),
    "relu6_int8": (lambda: unary("RELU6"), "RELU6"),
    "relu6_float": (lambda: unary("RELU6", F32), "RELU6"),
    "leaky_relu_int8": (lambda: unary("LEAKY_RELU", alpha=0.2), "LEAKY_RELU"),
    "leaky_relu_int16": (lambda: unary("LEAKY_RELU", I16, alpha=0.2), "LEAKY_RELU"),
    "leaky_relu_float": (lambda: unary("LEAKY_RELU", F32, alpha=0.2), "LEAKY_RELU"),
    "logistic_int8": (lambda: through_relu("LOGISTIC", I8, out=_LOGISTIC_OUT[I8]), "LOGISTIC"),
    "logistic_int16": (lambda: through_relu("LOGISTIC", I16, out=_LOGISTIC_OUT[I16]), "LOGISTIC"),
    "logistic_float": (lambda: unary("LOGISTIC", F32), "LOGISTIC"),
    "tanh_int8": (lambda: through_relu("TANH", I8, out=_TANH_OUT[I8]), "TANH"),
    "tanh_int16": (lambda: through_relu("TANH", I16, out=_TANH_OUT[I16]), "TANH"),
    "tanh_float": (lambda: unary("TANH", F32), "TANH"),
    "hard_swish_int8": (lambda: unary("HARD_SWISH"), "HARD_SWISH"),
    "hard_swish_float": (lambda: unary("HARD_SWISH", F32), "HARD_SWISH"),
    "elu_int8": (lambda: unary("ELU"), "ELU"),
    "elu_float": (lambda: unary("ELU", F32), "ELU"),
    "quantize_float_to_int8": (lambda: quantize_narrowing(F32), "QUANTIZE"),
    "quantize_int16_to_int8": (lambda: quantize_narrowing(I16), "QUANTIZE"),
    "quantize_int8_to_int8": (quantize_dequantize, "QUANTIZE"),
    "softmax_int8": (lambda: softmax_chain(I8), "SOFTMAX"),
    "softmax_int16": (lambda: softmax_chain(I16), "SOFTMAX"),
    "softmax_float": (lambda: softmax_chain(F32), "SOFTMAX"),
    "reshape_squeeze_expand_dims": (reshapes, "RESHAPE SQUEEZE EXPAND_DIMS"),
}


# ---- views --------------------------------------------------------------------------


def _slice(n: Net, x: int, shape, begin, end, strides=None, **masks) -> int:
    strides = strides or [1] * len(begin)
    ins = [x, *(n.const(v, I32) for v in (begin, end, strides))]
    y = n.act(shape, n.b.tensors[x].dtype, scale=0.1)
    n.op("STRIDED_SLICE", ins, [y], **masks)
    return y


def slice_concat(dtype=I8) -> bytes:
    """RELU -> two row bands (STRIDED_SLICE) -> RELU each -> CONCATENATION -> RELU.
    A row is 16 elements, so the second band starts at a multiple of 16 bytes."""
    n = Net("slice_concat")
    x = n.act((1, 8, 4, 4), dtype, scale=0.1)
    a = n.act((1, 8, 4, 4), dtype, scale=0.1)
    n.op("RELU", [x], [a])
    s1 = _slice(n, a, (1, 4, 4, 4), [0, 0, 0, 0], [1, 4, 4, 4])
    s2 = _slice(n, a, (1, 4, 4, 4), [0, 4, 0, 0], [1, 8, 4, 4])
    r1, r2 = n.act((1, 4, 4, 4), dtype, scale=0.1), n.act((1, 4, 4, 4), dtype, scale=0.1)
    n.op("RELU", [s1], [r1])
    n.op("RELU", [s2], [r2])
    y = n.act((1, 8, 4, 4), dtype, scale=0.1)
    n.op("CONCATENATION", [r1, r2], [y], axis=1)
    z = n.act((1, 8, 4, 4), dtype, scale=0.1)
    n.op("RELU", [y], [z])
    return n.done([x], [z])


def masked_slices() -> bytes:
    """float32 bands through masks and negative indices: a[:3] by begin_mask, a[-3:] by
    end_mask; and a shrink-axis slice of an int8 tensor (2, 4, 8) -> (4, 8)."""
    n = Net("masked_slices")
    x = n.act((1, 6, 2, 4), F32)
    top = _slice(n, x, (1, 3, 2, 4), [0, 7, 0, 0], [1, 3, 2, 4], begin_mask=0b0010)
    bottom = _slice(n, x, (1, 3, 2, 4), [0, -3, 0, 0], [1, 0, 2, 4], end_mask=0b0010)
    t1, t2 = n.act((1, 3, 2, 4), F32), n.act((1, 3, 2, 4), F32)
    n.op("RELU", [top], [t1])
    n.op("RELU", [bottom], [t2])
    q = n.act((2, 4, 8), I8, scale=0.1)
    second = _slice(n, q, (4, 8), [1, 0, 0], [2, 4, 8], shrink_axis_mask=0b001)
    s = n.act((4, 8), I8, scale=0.1)
    n.op("RELU", [second], [s])
    return n.done([x, q], [t1, t2, s])


def conv_bands() -> bytes:
    """The band structure: CONV 1x1 -> two row bands -> CONV 1x1 each -> CONCATENATION,
    whose output is the graph output."""
    n = Net("conv_bands")
    one = {"padding": "VALID", "stride_w": 1, "stride_h": 1}

    def conv(x: int, rows: int, c_in: int) -> int:
        y = n.act((1, rows, 8, 8), scale=0.08)
        n.op("CONV_2D", [x, n.weights((8, 1, 1, c_in), 0), n.bias(8, per_channel=8)], [y], **one)
        return y

    x = n.act((1, 8, 8, 4), scale=1 / 128)
    a = conv(x, 8, 4)
    bands = [_slice(n, a, (1, 4, 8, 8), [0, r, 0, 0], [1, r + 4, 8, 8]) for r in (0, 4)]
    pieces = [conv(b, 4, 8) for b in bands]
    y = n.act((1, 8, 8, 8), scale=0.08)
    n.op("CONCATENATION", pieces, [y], axis=1)
    return n.done([x], [y])


def concat_with_constant() -> bytes:
    """int16 CONCATENATION of an activation, a constant and an activation along axis 1."""
    n = Net("concat_const")
    x = n.act((1, 2, 4, 4), I16, scale=0.01)
    a, b = n.act((1, 2, 4, 4), I16, scale=0.01), n.act((1, 1, 4, 4), I16, scale=0.01)
    n.op("RELU", [x], [a])
    xb = n.act((1, 1, 4, 4), I16, scale=0.01)
    n.op("RELU", [xb], [b])
    c = n.b.add_tensor(
        "c",
        (1, 2, 4, 4),
        I16,
        data=np.arange(32, dtype=np.int16),
        quantization=n.b.tensors[x].quantization,
    )
    y = n.act((1, 5, 4, 4), I16, scale=0.01)
    n.op("CONCATENATION", [a, c, b], [y], axis=1)
    return n.done([x, xb], [y])


def expand_bands() -> bytes:
    """CONV 1x1 (4 -> 16 channels) -> two row bands -> RELU each -> CONCATENATION ->
    CONV 1x1 (16 -> 4): with views and in place, the bands, their RELUs and the
    concatenation all live in the 512 bytes of the first CONV's output. Both slices
    come first: a RELU may write over its band only once nothing reads the rest of
    the sliced tensor."""
    n = Net("expand_bands")
    one = {"padding": "VALID", "stride_w": 1, "stride_h": 1}
    x = n.act((1, 8, 4, 4), scale=1 / 128)
    a = n.act((1, 8, 4, 16), scale=0.08)
    n.op("CONV_2D", [x, n.weights((16, 1, 1, 4), 0), n.bias(16, per_channel=16)], [a], **one)
    bands = [_slice(n, a, (1, 4, 4, 16), [0, r, 0, 0], [1, r + 4, 4, 16]) for r in (0, 4)]
    pieces = [n.act((1, 4, 4, 16), scale=0.1) for _ in bands]
    for band, piece in zip(bands, pieces, strict=True):
        n.op("RELU", [band], [piece])
    y = n.act((1, 8, 4, 16), scale=0.1)
    n.op("CONCATENATION", pieces, [y], axis=1)
    z = n.act((1, 8, 4, 4), scale=0.08)
    n.op("CONV_2D", [y, n.weights((4, 1, 1, 16), 0), n.bias(4, per_channel=4)], [z], **one)
    return n.done([x], [z])


VIEW_MODELS: dict[str, tuple[Callable[[], bytes], set[str]]] = {
    "expand_bands": (expand_bands, {SLICE_VIEW, CONCAT_VIEW, INPLACE}),
    "slice_concat_int8": (slice_concat, {SLICE_VIEW, CONCAT_VIEW}),
    "slice_concat_float": (lambda: slice_concat(F32), {SLICE_VIEW, CONCAT_VIEW}),
    "masked_slices": (masked_slices, {SLICE_VIEW}),
    "conv_bands": (conv_bands, {SLICE_VIEW, CONCAT_VIEW}),
    "concat_with_constant": (concat_with_constant, {CONCAT_VIEW}),
}


def _opcode(model, alias: Alias) -> str:
    return model.subgraphs[alias.subgraph].operators[alias.op].opcode


# ---- figures ------------------------------------------------------------------------


def test_simple_add_reaches_32768_in_place_over_a_graph_input() -> None:
    model = read_model(model_path("tflite-micro__simple_add_model"))
    assert plan_model(model).arena == 49152
    kept = plan_model(model, INPLACE_ONLY)
    assert kept.arena == 49152 and kept.aliases == ()  # both inputs are graph inputs
    plan = plan_model(model, CLOBBER)
    assert plan.arena == plan.lower_bound == 32768
    assert [(a.kind, _opcode(model, a)) for a in plan.aliases] == [(INPLACE, "ADD")]
    sg = model.subgraphs[0]
    (alias,) = plan.aliases
    assert alias.tensor in sg.outputs and alias.base in sg.inputs and plan.clobber_inputs
    offsets = plan.tensor_offsets
    assert offsets[alias.tensor] == offsets[alias.base]


def test_without_aliases_the_plan_is_unchanged() -> None:
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    a, b = plan_model(model), plan_model(model, PlanOptions(alias_kinds=frozenset()))
    assert a.aliases == () and not a.clobber_inputs
    assert dataclasses.replace(a, seconds=0) == dataclasses.replace(b, seconds=0)


@pytest.mark.parametrize("name", sorted(ALIAS_MODELS))
def test_every_listed_kernel_is_planned_in_place(name: str) -> None:
    build, opcodes = ALIAS_MODELS[name]
    model = read_model_bytes(build())
    plan = plan_model(model, CLOBBER)
    check_plan(model, plan)
    used = {_opcode(model, a) for a in plan.aliases if a.kind == INPLACE}
    assert set(opcodes.split()) <= used, (name, plan.aliases)
    assert plan.arena <= plan_model(model).arena


def test_the_models_cover_the_whole_list() -> None:
    covered = {op for _, opcodes in ALIAS_MODELS.values() for op in opcodes.split()}
    assert covered == set(INPLACE_KERNELS)


@pytest.mark.parametrize("name", sorted(VIEW_MODELS))
def test_views_are_planned(name: str) -> None:
    build, kinds = VIEW_MODELS[name]
    model = read_model_bytes(build())
    plan = plan_model(model, ALL)
    check_plan(model, plan)
    assert kinds <= {a.kind for a in plan.aliases}
    assert plan.arena <= plan_model(model).arena


def test_bands_with_views_and_in_place_live_in_one_block() -> None:
    model = read_model_bytes(expand_bands())
    assert plan_model(model).arena == 1024  # at the concatenation: two pieces + output
    plan = plan_model(model, ALL)
    assert plan.arena == plan.lower_bound == 640  # x or z beside the 512-byte block
    assert len({plan.tensor_offsets[t] for a in plan.aliases for t in (a.tensor, a.base)}) == 2


def test_slice_concat_is_one_block() -> None:
    """Both bands are views of the input, their RELUs run in place, and the outputs
    are views of the concatenation: everything sits in the same 128 bytes."""
    model = read_model_bytes(slice_concat())
    plan = plan_model(model, ALL)
    kinds = sorted(a.kind for a in plan.aliases)
    assert kinds.count(SLICE_VIEW) == 2 and kinds.count(CONCAT_VIEW) == 2
    assert kinds.count(INPLACE) >= 2
    assert {a.delta for a in plan.aliases if a.kind != INPLACE} == {0, 64}
    assert plan.arena == 256  # x and the block (128 B each)


def test_broadcast_operand_is_never_written_over() -> None:
    for full_first in (True, False):
        model = read_model_bytes(broadcast_add(full_first))
        found = alias_candidates(model, ["inplace"], clobber_inputs=True)
        adds = [a for a in found.aliases if _opcode(model, a) == "ADD"]
        full = model.subgraphs[0].operators[1].inputs[0 if full_first else 1]
        assert [a.base for a in adds] == [full]
        assert any("broadcast" in why for why in found.refused)


def test_widening_is_refused_and_dequantize_is_not_listed() -> None:
    model = read_model_bytes(quantize_dequantize())  # f32 -> i8 -> i8 -> i16 -> f32
    found = alias_candidates(model, ["inplace"], clobber_inputs=True)
    ops = sorted(a.op for a in found.aliases)
    assert ops == [0, 1]  # f32 -> i8 over a graph input, i8 -> i8; not i8 -> i16
    assert any("wider" in why for why in found.refused)
    assert "DEQUANTIZE" not in INPLACE_KERNELS


def test_graph_outputs_and_live_inputs_are_never_written_over() -> None:
    n = Net("keep")
    x = n.act((1, 32))
    a, b, c = n.act((1, 32)), n.act((1, 32)), n.act((1, 32))
    n.op("RELU", [x], [a])
    n.op("RELU", [a], [b])  # a is read again below
    d = n.act((1, 32))
    n.op("ADD", [a, b], [d])
    n.op("RELU", [d], [c])  # d is a graph output, read last here: still never overwritten
    model = read_model_bytes(n.done([x], [d, c]))
    found = alias_candidates(model, ["inplace"], clobber_inputs=True)
    assert [(a.op, a.base) for a in found.aliases] == [(0, x), (2, a), (2, b)]
    text = " | ".join(found.refused)
    assert f"tensor {a} is still read" in text and f"tensor {d} is a graph output" in text


def test_shrinking_quantize_that_would_raise_the_peak_is_dropped() -> None:
    """float32 -> int8 in place keeps the float bytes while the int8 output lives on:
    here that would raise the peak, so the planner drops it and says why."""
    n = Net("quantize_peak")
    x = n.act((1, 256), F32)
    q = n.act((1, 256), I8, 0.02, 3)
    n.op("QUANTIZE", [x], [q])
    ys = []
    for _ in range(2):
        y = n.act((1, 512), I8, 0.02, 3)
        n.op("CONCATENATION", [q, q], [y], axis=1)
        ys.append(y)
    model = read_model_bytes(n.done([x], ys))
    found = alias_candidates(model, ["inplace"], clobber_inputs=True).aliases
    layout = alias_layout(arena_items(model), found)
    assert layout.aliases == ()
    assert "raise the peak" in layout.dropped[0][1]


def test_view_and_in_place_that_would_write_a_live_view_conflict() -> None:
    """x = a[0:4] is a view; RELU(x) in place would write a's bytes while a is still
    read (by the second slice): the planner keeps one alias and says why not both."""
    n = Net("conflict")
    inp = n.act((1, 8, 4, 4))
    a = n.act((1, 8, 4, 4))
    n.op("RELU", [inp], [a])
    s1 = _slice(n, a, (1, 4, 4, 4), [0, 0, 0, 0], [1, 4, 4, 4])
    r1 = n.act((1, 4, 4, 4))
    n.op("RELU", [s1], [r1])
    s2 = _slice(n, a, (1, 4, 4, 4), [0, 4, 0, 0], [1, 8, 4, 4])
    model = read_model_bytes(n.done([inp], [r1, s2]))
    plan = plan_model(model, ALL)
    check_plan(model, plan)
    on_s1 = [a for a in plan.aliases if s1 in (a.tensor, a.base)]
    assert len(on_s1) == 1  # the view of a or the RELU over it, never both


def test_masks_negative_indices_and_shrink_give_exact_deltas() -> None:
    model = read_model_bytes(masked_slices())
    plan = plan_model(model, VIEWS)
    deltas = sorted(a.delta for a in plan.aliases if a.kind == SLICE_VIEW)
    assert deltas == [0, 32, 96]  # a[:3]; the second (4, 8) int8 of q; a[-3:], 3 rows x 32 B


def test_misaligned_band_is_not_a_view() -> None:
    n = Net("misaligned")
    x = n.act((1, 6, 3, 4))  # a row is 12 bytes
    s = _slice(n, x, (1, 3, 3, 4), [0, 3, 0, 0], [1, 6, 3, 4])
    model = read_model_bytes(n.done([x], [s]))
    found = alias_candidates(model, ["views"])
    assert found.aliases == ()
    assert "36 in the input is not a multiple of 16" in found.refused[0]


# ---- the planner's slice arithmetic against numpy's slicing -------------------------


@st.composite
def _slices(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    begin = [draw(st.integers(-6, 6)) for _ in range(rank)]
    end = [draw(st.integers(-6, 6)) for _ in range(rank)]
    strides = [draw(st.sampled_from([1, 1, 1, 2, -1])) for _ in range(rank)]
    masks = {k: draw(st.integers(0, 2**rank - 1)) for k in ("begin_mask", "end_mask")}
    shrink = draw(st.integers(0, 2**rank - 1))
    for d in range(rank):  # a shrunk axis needs an index inside it, as TFLM's Prepare
        if shrink >> d & 1:
            begin[d] = draw(st.integers(-shape[d], shape[d] - 1))
            strides[d] = 1
            masks["begin_mask"] &= ~(1 << d)
    return shape, begin, end, strides, {**masks, "shrink_axis_mask": shrink}


@settings(max_examples=400, deadline=None)
@given(_slices())
def test_slice_arithmetic_matches_numpy(case) -> None:
    shape, begin, end, strides, masks = case
    op = Operator(
        0, "STRIDED_SLICE", False, (0, 1, 2, 3), (4,), options=Options(tuple(sorted(masks.items())))
    )
    index = []
    for d in range(len(shape)):
        if masks["shrink_axis_mask"] >> d & 1:
            index.append(begin[d])
        else:
            lo = None if masks["begin_mask"] >> d & 1 else begin[d]
            hi = None if masks["end_mask"] >> d & 1 else end[d]
            index.append(slice(lo, hi, strides[d]))
    picked = np.arange(math.prod(shape)).reshape(shape)[tuple(index)].ravel()
    ranges = slice_ranges(shape, begin, end, strides, op)
    assert math.prod(r[1] for r in ranges) == picked.size
    start = contiguous_start(shape, ranges)
    contiguous = picked.size > 0 and bool(np.all(np.diff(picked) == 1))
    if picked.size:
        assert (start is not None) == contiguous, (ranges, picked)
        if contiguous:
            assert start == picked[0]


# ---- the validator judges every shared byte ------------------------------------------


def _simple_add_plan() -> tuple:
    model = read_model(model_path("tflite-micro__simple_add_model"))
    return model, plan_model(model, CLOBBER)


def _problems(model, plan: Plan) -> str:
    found = plan_problems(model, plan)
    with pytest.raises(PlanValidationError):
        check_plan(model, plan)
    return " | ".join(found)


def test_validator_rejects_a_graph_input_overwritten_without_clobber() -> None:
    model, plan = _simple_add_plan()
    text = _problems(model, dataclasses.replace(plan, clobber_inputs=False))
    assert "graph input and the plan may not clobber inputs" in text
    assert "overlap at step" in text  # the pair is then no longer justified


def test_validator_rejects_an_overlap_no_alias_records() -> None:
    model, plan = _simple_add_plan()
    text = _problems(model, dataclasses.replace(plan, aliases=()))
    assert "overlap at step 1" in text


def test_validator_rejects_a_wrong_delta() -> None:
    model = read_model_bytes(slice_concat())
    plan = plan_model(model, VIEWS)
    view = next(a for a in plan.aliases if a.kind == SLICE_VIEW and a.delta == 64)
    wrong = dataclasses.replace(view, delta=48)
    offsets = list(plan.tensor_offsets)
    offsets[view.tensor] -= 16  # moved along, so the offsets agree with the false delta
    bad = dataclasses.replace(
        plan,
        aliases=tuple(wrong if a == view else a for a in plan.aliases),
        tensor_offsets=tuple(offsets),
    )
    text = _problems(model, bad)
    assert "records a delta of 48 bytes, the rule gives 64" in text
    moved = dataclasses.replace(plan, tensor_offsets=tuple(offsets))  # delta kept, offset not
    assert "16 bytes apart" not in _problems(model, moved)
    assert "48 bytes apart, the rule gives 64" in _problems(model, moved)


def _in_place_plan(model, op_index: int, base: int, out: int) -> Plan:
    """The unaliased plan with ``out`` moved onto ``base``, recorded as in place."""
    plan = plan_model(model)
    offsets = list(plan.tensor_offsets)
    offsets[out] = offsets[base]
    alias = Alias(INPLACE, 0, op_index, out, base, 0)
    return dataclasses.replace(plan, tensor_offsets=tuple(offsets), aliases=(alias,))


def test_validator_rejects_an_input_that_does_not_die() -> None:
    n = Net("live")
    x = n.act((1, 64))
    a, b, c = n.act((1, 64)), n.act((1, 64)), n.act((1, 64))
    n.op("RELU", [x], [a])
    n.op("RELU", [a], [b])
    n.op("ADD", [a, b], [c])  # a is read again after operator 1
    model = read_model_bytes(n.done([x], [c]))
    text = _problems(model, _in_place_plan(model, 1, a, b))
    assert "does not die there" in text


def test_validator_rejects_an_unsafe_kernel() -> None:
    n = Net("unsafe")
    x = n.act((1, 8, 8, 4))
    a = n.act((1, 8, 8, 4))
    n.op("RELU", [x], [a])
    y = n.act((1, 8, 8, 4))
    same = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    n.op("CONV_2D", [a, n.weights((4, 3, 3, 4), 0), n.bias(4, per_channel=4)], [y], **same)
    model = read_model_bytes(n.done([x], [y]))
    text = _problems(model, _in_place_plan(model, 1, a, y))
    assert "CONV_2D: not on the list of kernels safe" in text


def test_validator_rejects_a_rule_misnamed_or_misplaced() -> None:
    model, plan = _simple_add_plan()
    (alias,) = plan.aliases
    for wrong, says in [
        (dataclasses.replace(alias, kind="overlap"), "is no rule"),
        (dataclasses.replace(alias, kind=SLICE_VIEW), "not a STRIDED_SLICE"),
        (dataclasses.replace(alias, op=5), "there is no operator 5"),
    ]:
        assert says in _problems(model, dataclasses.replace(plan, aliases=(wrong,)))


# ---- per kernels variant ------------------------------------------------------------

CMSIS = tuple(k for k in KERNELS if cmsis_features(k) is not None)
# the models of ALIAS_MODELS whose kernel a CMSIS-NN build replaces by its own
CMSIS_MODELS = sorted(n for n, (_, ops) in ALIAS_MODELS.items() if ops in ("ADD", "MUL", "SOFTMAX"))


def test_each_variant_cites_the_code_it_runs() -> None:
    """Reference: the reference table. CMSIS-NN: the reference rule where the build runs
    the reference kernel; where it runs its own (ADD, MUL, SOFTMAX), the reading of
    that feature level, with the reference rule's input positions and shape check."""
    assert INPLACE_RULES["reference"] == INPLACE_KERNELS
    for kernels in CMSIS:
        level = cmsis_features(kernels)
        table = INPLACE_RULES[kernels]
        assert set(table) == set(INPLACE_KERNELS)  # every CMSIS-NN kernel here was read
        own = {op for op in table if cmsis_nn.is_cmsis_kernel(op)}
        assert own == {"ADD", "MUL", "SOFTMAX"}
        for opcode, rule in table.items():
            ref = INPLACE_KERNELS[opcode]
            assert (rule.inputs, rule.same_shape) == (ref.inputs, ref.same_shape)
            if opcode in own:
                assert rule.source == cmsis_nn.INPLACE_READ[opcode][level]
                assert f"cmsis_nn/{opcode.lower()}.cc" in rule.source
            else:
                assert rule.source == f"the reference kernel: {ref.source}"


def test_every_feature_level_path_names_its_code() -> None:
    read = cmsis_nn.INPLACE_READ
    assert "ARM_MATH_DSP" in read["ADD"]["dsp"] and "ARM_MATH_MVEI" in read["ADD"]["mve"]
    assert "ARM_MATH_DSP" in read["MUL"]["dsp"] and "ARM_MATH_MVEI" in read["MUL"]["mve"]
    assert "ARM_MATH_MVEI" in read["SOFTMAX"]["mve"]
    assert all("arm_softmax_s16" in read["SOFTMAX"][level] for level in ("c", "dsp", "mve"))


@pytest.mark.parametrize("kernels", CMSIS)
@pytest.mark.parametrize("name", CMSIS_MODELS)
def test_cmsis_kernels_are_planned_in_place(name: str, kernels: str) -> None:
    build, opcode = ALIAS_MODELS[name]
    model = read_model_bytes(build())
    plan = plan_model(model, dataclasses.replace(CLOBBER, kernels=kernel_set(kernels)))
    assert plan.kernels == kernel_set(kernels)
    check_plan(model, plan)
    assert opcode in {_opcode(model, a) for a in plan.aliases if a.kind == INPLACE}


def test_an_unread_cmsis_kernel_is_refused_naming_the_variant(monkeypatch) -> None:
    """With no reading of CMSIS-NN's ADD for MVE, an ADD planned for cmsis_nn+mve gets
    no alias and the refusal says which variant and level; the others keep theirs."""
    monkeypatch.delitem(INPLACE_RULES["cmsis_nn+mve"], "ADD")
    model = read_model_bytes(binary("ADD"))
    found = alias_candidates(model, ["inplace"], clobber_inputs=True, kernels="cmsis_nn+mve")
    assert found.aliases == ()
    assert found.refused[0] == (
        "operator 0 ADD: no in-place rule for cmsis_nn+mve: CMSIS-NN's ADD kernel "
        "(kernels/cmsis_nn/) was not read at feature level 'mve'"
    )
    mve = PlanOptions(
        alias_kinds=frozenset({"inplace"}), clobber_inputs=True, kernels=kernel_set("cmsis_nn+mve")
    )
    assert plan_model(model, mve).aliases == ()
    dsp = alias_candidates(model, ["inplace"], clobber_inputs=True, kernels="cmsis_nn+dsp")
    assert {a.op for a in dsp.aliases} == {0, 1, 2}


def test_int8_to_int16_softmax_is_refused_in_every_variant() -> None:
    """arm_softmax_s8_s16 (and the reference ``Softmax<int8_t, int16_t>``) widens:
    writing output element c covers input elements 2c and 2c + 1."""
    n = Net("softmax_s8_s16")
    x, r = n.act((2, 10), I8, scale=0.1), n.act((2, 10), I8, scale=0.1)
    n.op("RELU", [x], [r])
    y = n.act((2, 10), I16, 1 / 32768, -32768)
    n.op("SOFTMAX", [r], [y], beta=1.0)
    model = read_model_bytes(n.done([x], [y]))
    for kernels in KERNELS:
        found = alias_candidates(model, ["inplace"], clobber_inputs=True, kernels=kernels)
        assert [a.op for a in found.aliases] == [0], kernels
        assert any("operator 1 SOFTMAX" in w and "wider" in w for w in found.refused)


def test_views_are_the_same_for_every_variant() -> None:
    """STRIDED_SLICE and CONCATENATION are TFLM's reference kernels in every build
    (kernels/cmsis_nn/ has neither), so the views do not depend on the variant."""
    assert not any(cmsis_nn.is_cmsis_kernel(op) for op in VIEW_KERNELS.values())
    model = read_model_bytes(expand_bands())
    views = {k: alias_candidates(model, ["views"], kernels=k) for k in KERNELS}
    assert all(v == views["reference"] for v in views.values())
    assert views["reference"].aliases


def test_an_unknown_variant_is_refused() -> None:
    model = read_model_bytes(binary("ADD"))
    with pytest.raises(ValueError, match="unknown kernels 'cmsis'"):
        alias_candidates(model, ["inplace"], kernels="cmsis")


# ---- the pass -----------------------------------------------------------------------


def test_inplace_pass_changes_nothing_and_counts() -> None:
    model = read_model(model_path("tflite-micro__simple_add_model"))
    assert pass_class("inplace") is InPlace
    assert InPlace.name == "inplace" and InPlace.summary
    kept = InPlace().run(model)
    assert kept.model is model and not kept.changed
    assert kept.note == "0 operators may write over an input (graph inputs kept)"
    clobber = InPlace(clobber_inputs=True).run(model)
    assert clobber.note == "1 operator may write over an input"
    assert clobber.stats == {"inplace_operators": 1}
    for kernels in KERNELS:
        inplace = InPlace(clobber_inputs=True, kernels=kernel_set(kernels))
        assert inplace.run(model).stats == clobber.stats


def test_alias_options_for_the_command_layer() -> None:
    assert alias_options([]) == (frozenset(), False)
    aliases, clobber = alias_options(["reorder", "inplace"], clobber=True)
    options = PlanOptions(alias_kinds=aliases, clobber_inputs=clobber)
    assert options.alias_kinds == frozenset({"inplace"}) and options.clobber_inputs
    assert alias_options(["bands", "inplace"])[0] == frozenset({"inplace", "views"})


def test_an_offline_plan_alone_is_judged_by_the_same_rules() -> None:
    """Read back from a file, an offline plan has no alias records: each overlapping
    pair must be one a rule justifies at the offsets given."""
    model = read_model_bytes(expand_bands())
    plan = plan_model(model, ALL)
    assert plan.aliases and offline_plan_problems(model, plan.tensor_offsets) == []
    model = read_model(model_path("tflite-micro__simple_add_model"))
    plan = plan_model(model, CLOBBER)
    assert offline_plan_problems(model, plan.tensor_offsets) == []
    text = " | ".join(offline_plan_problems(model, plan.tensor_offsets, clobber_inputs=False))
    assert "overlap at step 1" in text
    flat = [0 if o >= 0 else -1 for o in plan.tensor_offsets]  # all three at 0
    (only,) = offline_plan_problems(model, flat)  # the output over either input is fine,
    assert "tensor 0" in only and "tensor 1" in only  # but not the two inputs together
