"""The bands pass on models built for it: geometry, budget, and bit-exact in TFLM."""

from __future__ import annotations

import pytest
from kits.opmodels import F32, I8, I32, SHAPED, Net
from testkit import kernel_set

from arenaplan.ir.model import Model
from arenaplan.ir.verifier import verify_ir
from arenaplan.passes import run_passes
from arenaplan.passes.band_search import model_macs, view_peak
from arenaplan.passes.bands import Bands
from arenaplan.passes.rows import same_padding, window
from arenaplan.reader import read_model_bytes


def _bias(net: Net, n: int, dtype) -> int:
    return net.bias(n, per_channel=n) if dtype is I8 else net.bias(n, F32)


def _chain_model(dtype=I8, padding: str = "SAME", dilation: int = 1) -> bytes:
    """x -> conv 3x3 -> a -> depthwise 3x3 -> b -> ADD(a, b) -> c -> max pool 2x2/2 ->
    reshape -> fully connected: a residual ADD inside a chain of row-local operators."""
    net = Net(f"chain-{dtype.name}-{padding}-{dilation}")
    shrink = 0 if padding == "SAME" else 2 * dilation
    h, w = 24, 12
    x = net.act((1, h, w, 4), dtype)
    conv = dict(padding=padding, stride_h=1, stride_w=1)
    conv |= dict(dilation_h_factor=dilation, dilation_w_factor=dilation)
    a = net.act((1, h - shrink, w - shrink, 8), dtype)
    net.op("CONV_2D", [x, net.weights((8, 3, 3, 4), 0, dtype), _bias(net, 8, dtype)], [a], **conv)
    h, w = h - shrink, w - shrink
    b = net.act((1, h - shrink, w - shrink, 8), dtype)
    dw = net.weights((1, 3, 3, 8), 3, dtype)
    net.op("DEPTHWISE_CONV_2D", [a, dw, _bias(net, 8, dtype)], [b], depth_multiplier=1, **conv)
    if shrink:  # VALID: crop a to b's rows and columns is not row-local; add b to itself
        a = b
    c = net.act((1, h - shrink, w - shrink, 8), dtype)
    net.op("ADD", [a, b], [c])
    h, w = h - shrink, w - shrink
    d = net.act((1, h // 2, w // 2, 8), dtype)
    pool = dict(padding="VALID", stride_h=2, stride_w=2, filter_height=2, filter_width=2)
    net.op("MAX_POOL_2D", [c], [d], **pool)
    n = (h // 2) * (w // 2) * 8
    flat = net.act((1, n), dtype)
    net.op("RESHAPE", [d, net.const([1, n], I32)], [flat])
    out = net.act((1, 4), dtype)
    fc_bias = net.bias(4) if dtype is I8 else net.bias(4, F32)
    net.op("FULLY_CONNECTED", [flat, net.weights((4, n), None, dtype), fc_bias], [out])
    net.b.set_io([x], [out])
    return net.b.finish()


MODELS = {
    "int8 SAME": lambda: _chain_model(I8, "SAME"),
    "int8 VALID": lambda: _chain_model(I8, "VALID"),
    "int8 SAME dilated": lambda: _chain_model(I8, "SAME", 2),
    "float32 SAME": lambda: _chain_model(F32, "SAME"),
    # explicit PAD operators (one whose output zero point differs from its input's)
    "MobileNetV2 PAD blocks": SHAPED["mobilenet_v2_pad_int8"],
    "Keras residual with RELU": SHAPED["keras_residual_relu_int8"],
}


def _banded(data: bytes, **options) -> tuple[Model, Model, dict]:
    model = read_model_bytes(data)
    new, records = run_passes(model, [Bands(objective="head", **options)])
    return model, new, records[0].stats


def _count(model: Model, opcode: str) -> int:
    return sum(op.opcode == opcode for op in model.subgraphs[0].operators)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bands_lower_the_peak_within_the_budget(name: str) -> None:
    model, new, stats = _banded(MODELS[name](), max_extra_macs=0.3)
    verify_ir(new)
    assert view_peak(new) < view_peak(model)
    assert stats["peak_after"] == view_peak(new)
    extra = model_macs(new) - model_macs(model)
    assert extra == stats["extra_macs"]  # the pass's count, checked by counting again
    assert 0 <= extra <= 0.3 * model_macs(model)
    assert _count(new, "CONCATENATION") >= 1 and _count(new, "STRIDED_SLICE") >= 1


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_band_operator_comes_from_the_operator_it_splits(name: str) -> None:
    """``origin``: a band's copy of an operator maps to that operator (same opcode, its
    output a band of rows of the original's); slices, the bands' own padding and the
    concatenations are new (None); every other operator maps to itself."""
    model = read_model_bytes(MODELS[name]())
    result = Bands(objective="head", max_extra_macs=0.3).run(model)
    old, new = model.subgraphs[0], result.model.subgraphs[0]
    assert result.changed and len(result.origin) == len(new.operators)
    inserted = {op.opcode for op, i in zip(new.operators, result.origin, strict=True) if i is None}
    assert "CONCATENATION" in inserted and inserted <= {"STRIDED_SLICE", "PAD", "CONCATENATION"}
    split = set()
    for op, i in zip(new.operators, result.origin, strict=True):
        if i is None:
            continue
        was = old.operators[i]
        assert op.opcode == was.opcode
        y, out = old.tensors[was.outputs[0]], new.tensors[op.outputs[0]]
        if out.name == y.name:  # not banded: the operator itself
            assert out.shape == y.shape and op.inputs == tuple(
                _new_index(old, new, t) for t in was.inputs
            )
            continue
        split.add(i)
        assert out.shape[0] == y.shape[0] and out.shape[2:] == y.shape[2:]
        assert out.shape[1] < y.shape[1]  # some rows of it
        if was.opcode != "PAD":
            assert out.name.startswith(f"{y.name}/band")
    assert split  # some operators were banded, each into several
    assert all(result.origin.count(i) > 1 for i in split)
    kept = {i for i in result.origin if i is not None}
    assert kept == set(range(len(old.operators)))  # no operator lost


def _new_index(old, new, t: int) -> int:
    """Tensor ``t`` of ``old``'s index in ``new`` (found by name; -1 stays)."""
    if t < 0:
        return t
    return next(x.index for x in new.tensors if x.name == old.tensors[t].name)


def test_same_padding_becomes_explicit_and_valid_needs_none() -> None:
    _, same, _ = _banded(MODELS["int8 SAME"](), max_extra_macs=0.25)
    _, valid, _ = _banded(MODELS["int8 VALID"](), max_extra_macs=0.25)
    assert _count(same, "PAD") > 0
    assert _count(valid, "PAD") == 0
    sg = same.subgraphs[0]
    for op in sg.operators:
        if "/band" in sg.tensors[op.outputs[0]].name and op.opcode != "ADD":
            assert op.options.get("padding") == "VALID"


def test_no_budget_no_change_and_the_same_input_gives_the_same_model() -> None:
    model = read_model_bytes(MODELS["int8 SAME"]())
    result = Bands(objective="head", max_extra_macs=0.0).run(model)
    assert model_macs(result.model) == model_macs(model)
    a = Bands(objective="head").run(model).model
    b = Bands(objective="head").run(model).model
    assert a == b


def test_fit_stops_at_the_first_budget_that_reaches_it() -> None:
    model = read_model_bytes(MODELS["int8 SAME"]())
    full = Bands(objective="head", max_extra_macs=4.0).run(model).stats["peak_after"]
    target = (view_peak(model) + full) // 2
    fitted = Bands(objective="head", fit=target).run(model)
    assert fitted.stats["score_after"] <= target


def test_same_padding_is_tflm_s() -> None:
    # ComputePaddingHeightWidth: out = ceil(in / s), total = (out - 1) s + eff - in
    assert same_padding(24, 24, 1, 3) == (1, 1)
    assert same_padding(24, 12, 2, 3) == (0, 1)
    assert same_padding(25, 13, 2, 3) == (1, 1)
    assert same_padding(4, 4, 1, 1) == (0, 0)


def test_pools_that_read_padding_are_not_row_local() -> None:
    net = Net("avgpool-same")
    x, y = net.act((1, 8, 8, 4)), net.act((1, 8, 8, 4))
    pool = dict(stride_h=1, stride_w=1, filter_height=3, filter_width=3)
    net.op("AVERAGE_POOL_2D", [x], [y], padding="SAME", **pool)
    net.b.set_io([x], [y])
    sg = read_model_bytes(net.b.finish()).subgraphs[0]
    assert window(sg, sg.operators[0]) is None


@pytest.mark.parametrize("name", sorted(MODELS))
def test_banded_models_run_bit_exact_in_tflm(name: str) -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.export.tflite_writer import write_model
    from arenaplan.tflm.verify import compare_models

    data = MODELS[name]()
    _, new, _ = _banded(data, max_extra_macs=0.3)
    report = compare_models(data, write_model(new), trials=3)
    assert report.refused is None and report.failed is None
    assert report.identical, report.mismatch


def test_fit_records_the_budget_that_reached_it_and_why_others_stop() -> None:
    """``stopped``: "fit" with the least budget that reached the size; on a model whose
    bands add more tail than they save, "tail", at the largest budget tried."""
    model = read_model_bytes(MODELS["int8 SAME"]())
    full = Bands(objective="head", max_extra_macs=4.0).run(model).stats["peak_after"]
    fitted = Bands(objective="head", fit=(view_peak(model) + full) // 2).run(model)
    assert fitted.stats["stopped"] == "fit" and fitted.stats["budget_percent"] < 400
    from testkit import model_path

    from arenaplan.reader import read_model

    str_ww = read_model(model_path("mlcommons-tiny__str_ww_ref_model"))
    stuck = Bands(fit=1024).run(str_ww)
    assert not stuck.changed
    assert stuck.stats == {"score_before": 15252, "stopped": "tail", "budget_percent": 400}
    assert "activations + kernel scratch + tail (15,252 B)" in stuck.note
    assert "add more tail than they save" in stuck.note


def test_the_score_counts_kernel_scratch_as_the_planner_does() -> None:
    """The head the search ranks by counts the kernels' scratch requests: on a model
    CMSIS-NN gives scratch, it is the plan's lower bound, not the activations alone."""
    from testkit import model_path

    from arenaplan.passes.band_search import head_peak
    from arenaplan.pipeline import PlanRequest, read_source, run_plan
    from arenaplan.tflm.tail import tail_estimate

    src = read_source(model_path("arm-ml-examples__cnn_s_quantized"))
    plan = run_plan(PlanRequest(src, kernels=kernel_set("cmsis_nn+dsp"))).plan
    assert (
        head_peak(src.model, kernel_set("cmsis_nn+dsp")) == plan.lower_bound > view_peak(src.model)
    )
    tail = tail_estimate(src.model, "arm32", kernels="cmsis_nn+dsp").bytes
    result = Bands(kernels=kernel_set("cmsis_nn+dsp"), max_extra_macs=0.0).run(src.model)
    assert result.stats["score_before"] == plan.lower_bound + tail
    assert f"({plan.lower_bound + tail:,} B)" in result.note
