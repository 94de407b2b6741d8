"""CMSIS-NN kernels: buffer sizes against the C source by hand, and head and tail
against TFLM built from source with CMSIS-NN (``verify.native``).

The size functions are checked against values worked out by hand from CMSIS-NN's
``*_get_buffer_sizes_*.c`` (each case says which branch it takes). The native cases
plan every shared model (and small models shaped for CMSIS-NN's branches) with
``kernels`` set, write our offline plan into it, run it in the ``host-cmsis_nn``
build (plain C), the ``arm32-cmsis_nn`` one (Cortex-M4 under qemu-arm: DSP) and the
``m55-cmsis_nn`` one (Cortex-M55 on qemu-system-arm's Corstone-300 board: MVE) and
require the measured head and tail to equal the prediction; each is skipped, naming
the build command, when its build is absent.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from kits.opmodels import I8, I16, I32, I64, OP_MODELS, SHAPED, Net
from testkit import TFLM_REFUSES, kernel_set, model_params, model_path, need_prover

from arenaplan.cli import main
from arenaplan.placement import PlanOptions, plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.tflm import cmsis_nn as c
from arenaplan.tflm.cmsis_nn import Dims, Window
from arenaplan.tflm.kernel_sets import KERNELS, check_kernels, cmsis_features
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.scratch import scratch_requests
from arenaplan.tflm.sizes import tensor_bytes
from arenaplan.tflm.tail import NATIVE_PROFILES, PROFILES, tail_estimate

LEVELS = ("c", "dsp", "mve")


# ---- the size functions, by hand from the C source ---------------------------------


def test_convolve_s8_im2col_size() -> None:
    """arm_convolve_s8_get_buffer_size, 3x3 over 3 channels: 27 columns, 4-aligned to
    28, two int16 rows = 112; MVE: ceil(27 / 16) = 2 lanes of 16, four rows = 128."""
    x, f = Dims(1, 8, 8, 3), Dims(1, 3, 3, 3)
    assert c.convolve_s8_buffer("c", x, f) == 112
    assert c.convolve_s8_buffer("dsp", x, f) == 112
    assert c.convolve_s8_buffer("mve", x, f) == 128


def test_convolve_wrapper_1x1_needs_nothing_with_gcc() -> None:
    """A 1x1, unpadded, undilated convolution: arm_convolve_1x1_s8_fast (stride 1)
    asks 0 under GCC (4 * C only under Arm Compiler 6), the strided one 0."""
    x, f = Dims(1, 8, 8, 16), Dims(1, 1, 1, 16)
    for level in LEVELS:
        for stride in (1, 2):
            p = Window(stride_h=stride, stride_w=stride)
            assert c.convolve_wrapper_s8_buffer(level, p, x, f, Dims(1, 8, 8, 32)) == 0


def test_convolve_wrapper_1_x_n() -> None:
    """One input row of 16, 8 channels, a 1x3 filter, SAME (pad 1): 1xN. Without MVE,
    the generic size (24 columns -> 2 * 24 * 2 = 96); with MVE, 16 outputs = 1 left
    + 14 middle + 1 right padded ones, so max(24 + 8, 24 - 8 + 8) = 32."""
    x, f, y = Dims(1, 1, 16, 8), Dims(1, 1, 3, 8), Dims(1, 1, 16, 4)
    p = Window(pad_w=1)
    assert c.convolve_wrapper_s8_buffer("c", p, x, f, y) == 96
    assert c.convolve_wrapper_s8_buffer("dsp", p, x, f, y) == 96
    assert c.convolve_wrapper_s8_buffer("mve", p, x, f, y) == 32


def test_convolve_wrapper_s16() -> None:
    """arm_convolve_s16_get_buffer_size: 27 columns -> 2 * 27 * 2 = 108; MVE:
    ceil(27 / 8) = 4 lanes of 8 int16, four rows: 4 * 4 * 8 * 2 = 256."""
    x, f = Dims(1, 8, 8, 3), Dims(1, 3, 3, 3)
    assert c.convolve_wrapper_s16_buffer("c", x, f) == 108
    assert c.convolve_wrapper_s16_buffer("dsp", x, f) == 108
    assert c.convolve_wrapper_s16_buffer("mve", x, f) == 256


def test_depthwise_s8() -> None:
    """8 channels, multiplier 1, batch 1, no dilation. 3x3 with pad <= 1: the 3x3
    kernel, 0 (not with MVE: 4 * 124 * 9 = 4464). 5x5: DSP C * 25 * 2 = 400, MVE
    4 * 124 * 25 = 12400, plain C 0. Multiplier 2: no optimised kernel, 0."""
    x = Dims(1, 16, 16, 8)
    three, five = Dims(1, 3, 3, 8), Dims(1, 5, 5, 8)
    y = Dims(1, 16, 16, 8)
    expect3 = {"c": 0, "dsp": 0, "mve": 4464}
    expect5 = {"c": 0, "dsp": 400, "mve": 12400}
    for level in LEVELS:
        p1, p2 = Window(pad_h=1, pad_w=1), Window(pad_h=2, pad_w=2)
        assert c.depthwise_wrapper_s8_buffer(level, p1, x, three, y) == expect3[level]
        assert c.depthwise_wrapper_s8_buffer(level, p2, x, five, y) == expect5[level]
        y2 = Dims(1, 16, 16, 16)
        assert c.depthwise_wrapper_s8_buffer(level, p1, x, Dims(1, 3, 3, 16), y2) == 0


def test_depthwise_s8_one_input_channel_with_mve() -> None:
    """MVE, one input channel, 8 outputs, 3x3: run as a convolution of filter
    (8, 3, 3, 1): im2col ceil(9 / 16) = 1 lane -> 64, plus the 72-byte filter."""
    x, f, y = Dims(1, 16, 16, 1), Dims(1, 3, 3, 8), Dims(1, 16, 16, 8)
    p = Window(pad_h=1, pad_w=1)
    assert c.depthwise_wrapper_s8_buffer("mve", p, x, f, y) == 64 + 72
    assert c.depthwise_wrapper_s8_buffer("dsp", p, x, f, y) == 0  # multiplier 8


def test_depthwise_s4_has_no_3x3_exception() -> None:
    """arm_depthwise_conv_wrapper_s4: the optimised size whenever it applies, the DSP
    formula also in plain C: 8 * 9 * 2 = 144; MVE 4 * 124 * 9 = 4464."""
    x, f, y = Dims(1, 16, 16, 8), Dims(1, 3, 3, 8), Dims(1, 16, 16, 8)
    p = Window(pad_h=1, pad_w=1)
    assert c.depthwise_wrapper_s4_buffer("c", p, x, f, y) == 144
    assert c.depthwise_wrapper_s4_buffer("dsp", p, x, f, y) == 144
    assert c.depthwise_wrapper_s4_buffer("mve", p, x, f, y) == 4464


def test_fully_connected_avgpool_svdf() -> None:
    assert [c.fully_connected_s8_buffer(level, 10) for level in LEVELS] == [0, 0, 40]
    assert [c.avgpool_buffer(level, 24) for level in LEVELS] == [0, 96, 0]
    assert [c.svdf_s8_buffer(level, 64) for level in LEVELS] == [0, 0, 256]


def test_transpose_conv_s8() -> None:
    """Stride 2 over 20 input channels (> 16): the reverse-convolution path, im2col of
    a 3x3 filter over 20 channels: 180 columns -> 2 * 180 * 2 = 720 (MVE: 12 lanes of
    16 -> 768), the reversed filter 20 * 3 * 3 * 16 = 2880. Over 8 channels: rows of
    int32 outputs, ((4 - 1) * 2 + max(3, 2)) * 16 = 144 wide, max(3, 2) = 3 high:
    144 * 3 * 4 = 1728, and no reversed filter."""
    x, f, y = Dims(1, 4, 4, 20), Dims(16, 3, 3, 20), Dims(1, 8, 8, 16)
    assert c.transpose_conv_s8_buffer("c", 2, 2, x, f, y) == 720
    assert c.transpose_conv_s8_buffer("mve", 2, 2, x, f, y) == 768
    assert c.transpose_conv_reverse_buffer(2, 2, x, f) == 2880
    x8, f8 = Dims(1, 4, 4, 8), Dims(16, 3, 3, 8)
    assert c.transpose_conv_s8_buffer("dsp", 2, 2, x8, f8, y) == 1728
    assert c.transpose_conv_reverse_buffer(2, 2, x8, f8) == 0


def test_kernel_names() -> None:
    assert KERNELS[0] == "reference"
    assert [cmsis_features(k) for k in KERNELS] == [None, "c", "dsp", "mve"]
    with pytest.raises(ValueError, match="cmsis_nn\\+dsp"):
        check_kernels("cmsis")


# ---- small models shaped for CMSIS-NN's branches -------------------------------------


def _conv(
    x_shape: tuple[int, ...],
    filt: tuple[int, int],
    c_out: int,
    stride: int = 1,
    padding: str = "SAME",
    dtype=I8,
    bias_dtype=None,
) -> bytes:
    n = Net("cmsis_conv")
    x = n.act(x_shape, dtype)
    w = n.weights((c_out, *filt, x_shape[3]), 0)
    bias = n.bias(c_out, bias_dtype or (I64 if dtype is I16 else I32), c_out)
    oh = -(-x_shape[1] // stride) if padding == "SAME" else (x_shape[1] - filt[0]) // stride + 1
    ow = -(-x_shape[2] // stride) if padding == "SAME" else (x_shape[2] - filt[1]) // stride + 1
    y = n.act((1, oh, ow, c_out), dtype)
    n.op("CONV_2D", [x, w, bias], [y], padding=padding, stride_w=stride, stride_h=stride)
    return n.done([x], [y])


def _depthwise(channels: int, filt: int, multiplier: int = 1) -> bytes:
    n = Net("cmsis_dw")
    x = n.act((1, 12, 12, channels))
    c_out = channels * multiplier
    w = n.weights((1, filt, filt, c_out), 3)
    bias = n.bias(c_out, I32, c_out)
    y = n.act((1, 12, 12, c_out))
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": multiplier}
    n.op("DEPTHWISE_CONV_2D", [x, w, bias], [y], **opts)
    return n.done([x], [y])


def _fc_rank3(per_channel: bool) -> bytes:
    """An FC keeping a 3-d output with 16 inputs (a multiple of 4): CMSIS-NN runs it
    as a 1x1 convolution."""
    n = Net("cmsis_fc3")
    x = n.act((1, 4, 16))
    w = n.weights((12, 16), 0 if per_channel else None)
    bias = n.bias(12, I32, 12 if per_channel else 1)
    y = n.act((1, 4, 12))
    n.op("FULLY_CONNECTED", [x, w, bias], [y], keep_num_dims=True)
    return n.done([x], [y])


def _transpose_conv(c_in: int) -> bytes:
    n = Net("cmsis_tconv")
    x = n.act((1, 4, 4, c_in))
    w = n.weights((6, 3, 3, c_in), 0)
    shape = n.const([1, 8, 8, 6], I32)
    y = n.act((1, 8, 8, 6))
    n.op("TRANSPOSE_CONV", [shape, w, x, -1], [y], padding="SAME", stride_w=2, stride_h=2)
    return n.done([x], [y])


def _avg_pool(dtype) -> bytes:
    n = Net("cmsis_avg")
    x = n.act((1, 8, 8, 12), dtype)
    y = n.act((1, 4, 4, 12), dtype)
    opts = {"padding": "VALID", "stride_w": 2, "stride_h": 2}
    n.op("AVERAGE_POOL_2D", [x], [y], filter_width=2, filter_height=2, **opts)
    return n.done([x], [y])


CMSIS_MODELS = {
    "conv_3x3_int8": lambda: _conv((1, 10, 10, 3), (3, 3), 8),
    "conv_1x1_int8": lambda: _conv((1, 10, 10, 16), (1, 1), 8, padding="VALID"),
    "conv_1x1_stride2_int8": lambda: _conv((1, 10, 10, 16), (1, 1), 8, 2, "VALID"),
    "conv_1xn_int8": lambda: _conv((1, 1, 16, 8), (1, 3), 4),
    "conv_1xn_stride2_int8": lambda: _conv((1, 1, 16, 8), (1, 3), 4, 2),
    "conv_3x3_int16_int64_bias": lambda: _conv((1, 10, 10, 3), (3, 3), 8, dtype=I16),
    "conv_3x3_int16_int32_bias": lambda: _conv(
        (1, 10, 10, 3), (3, 3), 8, dtype=I16, bias_dtype=I32
    ),
    "depthwise_3x3_int8": lambda: _depthwise(8, 3),
    "depthwise_5x5_int8": lambda: _depthwise(8, 5),
    "depthwise_multiplier_2_int8": lambda: _depthwise(4, 3, 2),
    "depthwise_one_input_channel_int8": lambda: _depthwise(1, 3, 8),
    "fc_rank3_per_tensor": lambda: _fc_rank3(False),
    "fc_rank3_per_channel": lambda: _fc_rank3(True),
    "transpose_conv_reverse_int8": lambda: _transpose_conv(20),
    "transpose_conv_rows_int8": lambda: _transpose_conv(8),
    "avg_pool_int8": lambda: _avg_pool(I8),
    "avg_pool_int16": lambda: _avg_pool(I16),
}

# (model, kernels) -> scratch bytes requested, in order: by hand from the kernels.
EXPECTED_SCRATCH = {
    ("conv_3x3_int8", "cmsis_nn"): [2 * 28 * 2],  # 27 columns, aligned to 28
    ("conv_3x3_int8", "cmsis_nn+mve"): [128],
    ("conv_1x1_int8", "cmsis_nn+dsp"): [],
    ("conv_1x1_stride2_int8", "cmsis_nn"): [],
    ("conv_1xn_int8", "cmsis_nn+dsp"): [96],
    ("conv_1xn_int8", "cmsis_nn+mve"): [32],
    # stride 2, SAME: 8 outputs, padding 0 before and 1 after (asymmetric): no left
    # padded output, 1 right, 7 middle; max(24 + 0, 24 - 8 + 1 * 8) = 24
    ("conv_1xn_stride2_int8", "cmsis_nn+mve"): [24],
    ("conv_1xn_stride2_int8", "cmsis_nn+dsp"): [96],
    ("conv_3x3_int16_int64_bias", "cmsis_nn"): [108],
    ("conv_3x3_int16_int32_bias", "cmsis_nn"): [108],  # the bias check reads no bias
    ("conv_3x3_int16_int64_bias", "cmsis_nn+mve"): [4 * 4 * 8 * 2],  # 27 -> 4 lanes of 8
    ("depthwise_3x3_int8", "cmsis_nn+dsp"): [],
    ("depthwise_5x5_int8", "cmsis_nn"): [],
    ("depthwise_5x5_int8", "cmsis_nn+dsp"): [8 * 25 * 2],
    ("depthwise_multiplier_2_int8", "cmsis_nn+dsp"): [],
    ("depthwise_3x3_int8", "cmsis_nn+mve"): [4 * 124 * 9],  # no 3x3 exception with MVE
    ("depthwise_5x5_int8", "cmsis_nn+mve"): [4 * 124 * 25],
    # one input channel, 8 outputs: MVE runs it as a convolution (im2col of 9 columns
    # in one 16-lane block, four rows: 64) and reorders the 72-byte filter
    ("depthwise_one_input_channel_int8", "cmsis_nn+mve"): [64 + 72],
    ("depthwise_one_input_channel_int8", "cmsis_nn+dsp"): [],  # multiplier 8
    ("fc_rank3_per_tensor", "cmsis_nn"): [2 * 4 * 12],  # fake per-channel arrays
    ("fc_rank3_per_channel", "cmsis_nn"): [],
    ("fc_rank3_per_tensor", "cmsis_nn+mve"): [2 * 4 * 12],  # a 1x1 convolution, no sums
    ("transpose_conv_reverse_int8", "cmsis_nn"): [720, 20 * 9 * 6],
    ("transpose_conv_reverse_int8", "cmsis_nn+mve"): [4 * 12 * 16, 20 * 9 * 6],
    ("transpose_conv_rows_int8", "cmsis_nn"): [((4 - 1) * 2 + 3) * 6 * 3 * 4, 0],
    ("avg_pool_int8", "cmsis_nn"): [],
    ("avg_pool_int8", "cmsis_nn+dsp"): [4 * 12],
    ("avg_pool_int16", "cmsis_nn+dsp"): [4 * 12],
    ("avg_pool_int8", "cmsis_nn+mve"): [],
}


@pytest.mark.parametrize(("name", "kernels"), sorted(EXPECTED_SCRATCH))
def test_scratch_requests_of_shaped_models(name: str, kernels: str) -> None:
    ir = read_model_bytes(CMSIS_MODELS[name]())
    got = [r.bytes for r in scratch_requests(ir, tensor_bytes(ir), 8, kernels)]
    assert got == EXPECTED_SCRATCH[(name, kernels)]


def test_reference_kernels_are_unchanged() -> None:
    """The reference variant asks what it always did: int4 unpacking, not CMSIS-NN."""
    for name, factory in CMSIS_MODELS.items():
        ir = read_model_bytes(factory())
        sizes = tensor_bytes(ir)
        assert scratch_requests(ir, sizes) == scratch_requests(ir, sizes, 8, "reference"), name


def test_float_conv_keeps_no_per_channel_arrays() -> None:
    """The reference CONV_2D allocates per-channel multipliers and shifts for float
    too; CMSIS-NN's only for int8/int16: two 16-aligned arrays of 6 channels less
    (2 * 32 B), and OpData 60 instead of 56 on arm32 (both round to 64)."""
    ir = read_model_bytes(OP_MODELS["conv_float"]())
    ref = tail_estimate(ir, "arm32")
    cmsis = tail_estimate(ir, "arm32", kernels="cmsis_nn")
    assert ref.exact and cmsis.exact
    assert ref.bytes - cmsis.bytes == 2 * 32


def test_lstm_kernel_sums_and_three_buffers() -> None:
    """The CMSIS-NN LSTM (int8 activations, int16 cell) keeps eight int32 kernel sums
    of the state width in the tail and asks for three scratch buffers, not four."""
    path = next((p for p in _shared() if p.stem == "tflite-micro__trained_lstm_int8"), None)
    if path is None:
        pytest.skip("../shared/models is absent (CI has it beside the clone)")
    ir = read_model_bytes(path.read_bytes())
    sizes = tensor_bytes(ir)
    assert len(scratch_requests(ir, sizes)) == 4
    assert len(scratch_requests(ir, sizes, 8, "cmsis_nn")) == 3
    state = ir.subgraphs[0].tensors[ir.subgraphs[0].operators[0].inputs[18]].shape[1]
    assert state == 20
    base = tail_estimate(ir, "arm32", kernels="reference").bytes
    assert tail_estimate(ir, "arm32", kernels="cmsis_nn").bytes > base + 8 * 4 * state


def test_mve_fc_kernel_sums_go_to_the_tail() -> None:
    """With MVE and constant weights, an int8 FC keeps 4 B per output in the tail
    (KERNELS_OPTIMIZED_FOR_SPEED) instead of asking for scratch."""
    ir = read_model_bytes(OP_MODELS["fc_int8_per_tensor"]())
    sizes = tensor_bytes(ir)
    assert scratch_requests(ir, sizes, 8, "cmsis_nn+mve") == ()
    plain = tail_estimate(ir, "arm32", kernels="cmsis_nn").bytes
    mve = tail_estimate(ir, "arm32", kernels="cmsis_nn+mve").bytes
    assert mve - plain == 3 * 64  # three FCs, 16 outputs * 4 B each, 16-aligned


def test_plan_records_and_plans_the_kernels_scratch() -> None:
    ir = read_model_bytes(CMSIS_MODELS["avg_pool_int8"]())
    ref = plan_model(ir)
    dsp = plan_model(ir, PlanOptions(kernels=kernel_set("cmsis_nn+dsp")))
    assert ref.kernels.name == "reference" and dsp.kernels.name == "cmsis_nn+dsp"
    assert not ref.scratch and [s.bytes for s in dsp.scratch] == [48]
    assert dsp.arena == ref.arena + 48


# ---- against TFLM built with CMSIS-NN ------------------------------------------------

# build variant -> (our kernels, the profile the build's tail is predicted with)
NATIVE = {
    "host-cmsis_nn": ("cmsis_nn", NATIVE_PROFILES["host"]),
    "arm32-cmsis_nn": ("cmsis_nn+dsp", NATIVE_PROFILES["arm32"]),  # Cortex-M4
    # Cortex-M55: the same compiler and ABI as arm32 (one-byte enums), MVE code
    "m55-cmsis_nn": ("cmsis_nn+mve", NATIVE_PROFILES["arm32"]),
}


def _shared() -> list[Path]:
    return [p.values[0] for p in model_params() if p.values[0] is not None]


def _need(variant: str) -> None:
    from arenaplan.tflm.verify.native import native_available

    why = native_available(variant)
    if why is not None:
        pytest.skip(why)


@cache
def _run(variant: str, data: bytes, kernels: str):
    """``data`` planned for ``kernels``, with our offline plan, allocated in
    ``variant``: (the plan, TFLM's result)."""
    from arenaplan.tflm.verify.native import NativeRunner
    from arenaplan.tflm.verify.runner import GENEROUS_ARENA

    options = PlanOptions(kernels=kernel_set(kernels), pointer_size=NATIVE[variant][1].pointer)
    plan = plan_model(read_model_bytes(data), options)
    planned = with_offline_plan(data, plan.tensor_offsets)
    with NativeRunner(variant) as runner:
        return plan, runner.run(planned, GENEROUS_ARENA, [], 1)


def _measure(variant: str, data: bytes, kernels: str):
    """(model, plan, measurement); the run must succeed."""
    plan, result = _run(variant, data, kernels)
    assert result.ok, result.error
    return read_model_bytes(data), plan, result.measurement


def _check(variant: str, name: str, data: bytes) -> None:
    kernels, profile = NATIVE[variant]
    refused = c.model_refusals(read_model_bytes(data))
    if refused:  # predicted to fail in the build: it must
        assert not _run(variant, data, kernels)[1].ok, refused
        print(f"\n{variant} {name}: refused as predicted ({'; '.join(refused)})")
        return
    ir, plan, measured = _measure(variant, data, kernels)
    tail = tail_estimate(ir, profile, kernels=kernels)
    print(
        f"\n{variant} {name}: head {plan.arena} (measured {measured.head}), "
        f"tail {tail.bytes} (measured {measured.tail})"
    )
    assert tail.exact, tail.unmodelled
    assert (measured.head, measured.tail) == (plan.arena, tail.bytes)


@pytest.mark.parametrize("variant", list(NATIVE))
@pytest.mark.parametrize("path", model_params())
def test_shared_model_head_and_tail_equal_the_cmsis_nn_build(path: Path, variant: str) -> None:
    _need(variant)
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    _check(variant, path.stem, path.read_bytes())


@pytest.mark.parametrize("variant", list(NATIVE))
@pytest.mark.parametrize("path", model_params())
def test_shared_model_smallest_arena_in_the_cmsis_nn_build(path: Path, variant: str) -> None:
    """The smallest working arena (with our offline plan, allocating and invoking),
    found by bisection over multiples of 16 in the build, is the estimate rounded up
    to 16 (the estimate may say it is one)."""
    from arenaplan.tflm.tail import min_arena_estimate
    from arenaplan.tflm.verify.compare import smallest_arena
    from arenaplan.tflm.verify.inputs import zero_inputs
    from arenaplan.tflm.verify.native import NativeRunner

    _need(variant)
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    kernels, profile = NATIVE[variant]
    data = path.read_bytes()
    ir = read_model_bytes(data)
    plan = plan_model(ir, PlanOptions(kernels=kernel_set(kernels), pointer_size=profile.pointer))
    n_planned = len(plan.tensors) + len(plan.scratch)
    estimate = min_arena_estimate(ir, plan.arena, n_planned, profile, kernels).bytes
    planned = with_offline_plan(data, plan.tensor_offsets)
    n_out = len(ir.subgraphs[0].outputs)
    with NativeRunner(variant) as runner:
        found = smallest_arena(runner, planned, zero_inputs(ir), n_out, estimate, estimate - 256)
    assert found == -(-estimate // 16) * 16


_OP_MODELS = {**OP_MODELS, **SHAPED, **CMSIS_MODELS}


@pytest.mark.parametrize("variant", list(NATIVE))
@pytest.mark.parametrize("name", sorted(_OP_MODELS))
def test_op_model_head_and_tail_equal_the_cmsis_nn_build(name: str, variant: str) -> None:
    _need(variant)
    _check(variant, name, _OP_MODELS[name]())


def test_an_mve_plan_is_proven_in_the_m55_build() -> None:
    """A plan for CMSIS-NN with MVE is proven where that code runs: the Cortex-M55
    build on qemu-system-arm (outputs as the original's, the planned head measured)."""
    from arenaplan.tflm.verify.prove import prove

    need_prover("cmsis_nn+mve")
    data = model_path("arm-ml-examples__ds_cnn_s_quantized").read_bytes()
    options = PlanOptions(
        kernels=kernel_set("cmsis_nn+mve"), pointer_size=NATIVE_PROFILES["arm32"].pointer
    )
    plan = plan_model(read_model_bytes(data), options)
    planned = with_offline_plan(data, plan.tensor_offsets)
    proof = prove(data, planned, plan.arena, "cmsis_nn+mve")
    assert proof.proven, proof.reason
    assert proof.runtime == "TFLM m55-cmsis_nn (built from source)"


def test_native_profiles_are_the_runner_setups() -> None:
    """The native builds' profiles: the host one is 64-bit without compression, the
    ARM one the arm32 profile behind recording allocators (236 B, not 132)."""
    assert NATIVE_PROFILES["host"].pointer == 8
    assert (
        sum(NATIVE_PROFILES["arm32"].allocator_objects) - sum(PROFILES["arm32"].allocator_objects)
        == 236 - 132
    )
    assert all(p.resource_variables for p in NATIVE_PROFILES.values())


# ---- the command line, the JSON plan and the header ----------------------------------


def test_plan_kernels_option_reaches_json_and_header(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__test_conv_model")
    out, js, header = tmp_path / "p.tflite", tmp_path / "p.json", tmp_path / "a.h"
    argv = ["plan", str(src), "-q", "-o", str(out), "--json", str(js), "--header", str(header)]
    assert main([*argv, "--kernels", "cmsis_nn+dsp"]) == 0
    plan = json.loads(js.read_text())
    ir = read_model_bytes(src.read_bytes())
    requests = scratch_requests(ir, tensor_bytes(ir), 8, "cmsis_nn+dsp")
    assert plan["kernels"] == "cmsis_nn+dsp"
    assert [s["bytes"] for s in plan["scratch"]] == [r.bytes for r in requests] != []
    tail = tail_estimate(ir, "arm32", kernels="cmsis_nn+dsp").bytes
    assert plan["persistent"]["arm32"]["tail"] == tail != tail_estimate(ir, "arm32").bytes
    text = header.read_text()
    assert '#define ARENAPLAN_KERNELS "cmsis_nn+dsp"' in text
    assert f"#define ARENAPLAN_TAIL_BYTES {tail}u" in text
    assert "CMSIS-NN with the DSP extension" in text
    # a target names its kernels; --kernels overrides them
    assert main([*argv, "--target", "generic"]) == 0
    assert json.loads(js.read_text())["kernels"] == "cmsis_nn+dsp"
    assert main([*argv, "--target", "generic", "--kernels", "reference"]) == 0
    assert json.loads(js.read_text())["kernels"] == "reference"
    assert "ARENAPLAN_KERNELS" not in header.read_text()
    assert main([*argv, "--kernels", "cmsis"]) == 2
    assert "--kernels" in capsys.readouterr().err


def test_inspect_shows_the_kernels_scratch(capsys) -> None:
    src = model_path("tflite-micro__test_conv_model")
    assert main(["inspect", str(src)]) == 0
    assert "0 scratch requests" in capsys.readouterr().out
    assert main(["inspect", str(src), "--kernels", "cmsis_nn"]) == 0
    assert "2 scratch requests" in capsys.readouterr().out
