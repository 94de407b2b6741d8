"""``plan --passes cascade`` end to end in TFLM built from source: the plan is proven
(host-reference: outputs bit-identical, measured head = the plan), and on 32-bit ARM
(arm32-reference under qemu) the outputs are identical and TFLM's measured head and
tail are the plan's head and the tail arenaplan predicts for that build; ``--fit``
reaches a size only cascades reach, or names the limit it met."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kits.keras_like import bn_classifier, clamp_net
from testkit import MODELS_DIR, SHARED_ABSENT

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1, mobilenet_v2
from arenaplan.builder.unet import unet_denoiser
from arenaplan.cli import main
from arenaplan.pipeline import PlanRequest, Source, run_plan
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.tail import NATIVE_PROFILES, tail_estimate
from arenaplan.verify.compare import compare_models
from arenaplan.verify.native import NativeRunner, native_available

PASSES = ("cascade", "reorder", "inplace")
BUILT = {
    "mobilenet_v1_0.25_96x1": lambda: mobilenet_v1(0.25, 96, 1, 2),
    "mobilenet_v2_0.35_96": lambda: mobilenet_v2(0.35, 96),
    "ds_cnn_M": lambda: ds_cnn("M"),
    "bn_classifier": bn_classifier,  # constant operands (batch norm the converter kept)
    "clamp_net": clamp_net,  # MINIMUM, MAXIMUM, SUB with the constant first, MEAN
    "unet_int16x8": unet_denoiser,  # int16 chains, TRANSPOSE_CONV, CONCATENATION
    # one row (along columns), TRANSPOSE_CONV shapes computed by SHAPE (folded)
    "unet_1d_int16x8": lambda: unet_denoiser(frames=1, bins=64, channels=4, shape_ops=True),
}
REAL = (
    "mlcommons-tiny__vww_96_int8",
    "arm-ml-examples__ds_cnn_s_quantized",
    "mlcommons-tiny__kws_ref_model",
    "mlcommons-tiny__pretrainedResnet_quant",
)


def _need(*variants: str) -> None:
    for variant in variants:
        why = native_available(variant)
        if why is not None:
            pytest.skip(why)


def _source(name: str) -> Source:
    if name in BUILT:
        data = BUILT[name]()
    else:
        path = MODELS_DIR / f"{name}.tflite"
        if not path.is_file():
            pytest.skip(SHARED_ABSENT)
        data = path.read_bytes()
    return Source(data, read_model_bytes(data), name)


@pytest.mark.parametrize("name", [*BUILT, *REAL])
def test_cascaded_plan_is_proven_and_measured_as_planned(name: str) -> None:
    _need("host-reference", "arm32-reference")
    source = _source(name)
    done = run_plan(PlanRequest(source, profile="arm32", passes=PASSES))
    assert done.proof is not None and done.proof.proven, done.proof and done.proof.reason
    assert "ARENAPLAN_CASCADE" in {op.opcode for op in done.model.subgraphs[0].operators}
    assert done.proof.tail == tail_estimate(done.model, NATIVE_PROFILES["host"]).bytes
    with NativeRunner("arm32-reference") as runner:
        report = compare_models(source.data, done.planned, 1, 0, runner=runner, figures=False)
    assert report.identical, report.mismatch or report.failed
    assert report.planned is not None and report.planned.head == done.plan.arena
    assert report.planned.tail == tail_estimate(done.model, NATIVE_PROFILES["arm32"]).bytes
    before = run_plan(PlanRequest(source, profile="arm32", prove=False))
    assert done.figures is not None and before.figures is not None
    assert done.figures.tail < before.figures.tail  # quantisation data left the tail


def test_fit_reaches_what_only_cascades_reach(tmp_path: Path, capsys) -> None:
    _need("host-reference")
    model = tmp_path / "person_detect_shape.tflite"
    model.write_bytes(mobilenet_v1(0.25, 96, 1, 2))
    js = tmp_path / "plan.json"
    code = main(["plan", str(model), "--fit", "32KiB", "--json", str(js), "-q"])
    assert code == 0, capsys.readouterr().err
    data = json.loads(js.read_text())
    assert data["passes"][0]["name"] == "cascade"
    assert data["proof"]["proven"]


def test_fit_names_the_limit_the_cascades_met(tmp_path: Path, capsys) -> None:
    _need("host-reference")
    model = tmp_path / "ds_cnn_m.tflite"
    model.write_bytes(ds_cnn("M"))
    assert main(["plan", str(model), "--fit", "2KiB", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--fit 2,048 B" in err
    assert "the cascades" in err


def test_fit_with_cmsis_nn_trades_speed_for_memory_when_it_must(tmp_path: Path, capsys) -> None:
    """DS-CNN M with CMSIS-NN: steps of 16 pixels (the default) do not reach 25,000 B,
    steps of one row do; ``--step-pixels 0`` asks for them directly."""
    _need("host-cmsis_nn")
    model = tmp_path / "ds_cnn_m.tflite"
    model.write_bytes(ds_cnn("M"))
    js = tmp_path / "plan.json"
    args = ["plan", str(model), "--kernels", "cmsis_nn", "--json", str(js), "-q"]
    assert main([*args, "--fit", "25000"]) == 0, capsys.readouterr().err
    fitted = json.loads(js.read_text())
    assert fitted["passes"][0]["stats"]["step_pixels"] == 0 and fitted["proof"]["proven"]
    assert main([*args, "--passes", "cascade", "--step-pixels", "0"]) == 0
    asked = json.loads(js.read_text())
    assert asked["arena"]["size"] == fitted["arena"]["size"]
    assert main([*args, "--passes", "cascade"]) == 0
    default = json.loads(js.read_text())
    assert default["passes"][0]["stats"]["step_pixels"] == 16
    assert default["rewrite_effect"]["after"]["whole"] > 25_000
