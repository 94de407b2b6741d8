"""``plan --passes cascade`` end to end in TFLM built from source: the plan is proven
(host-reference: outputs bit-identical, measured head = the plan), and on 32-bit ARM
(arm32-reference under qemu) the outputs are identical and TFLM's measured head and
tail are the plan's head and the tail arenaplan predicts for that build; ``--fit``
reaches a size only cascades reach, or names the limit it met. With CMSIS-NN
kernels, at every step the pass may take, the same in each CMSIS-NN build, and the
larger steps --fit buys run fewer instructions there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kits.keras_like import bn_classifier, clamp_net
from testkit import MODELS_DIR, SHARED_ABSENT, build_profile, kernel_set

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1, mobilenet_v2
from arenaplan.builder.unet import unet_denoiser
from arenaplan.cli import main
from arenaplan.ir.cascade_format import OPCODE as CASCADE
from arenaplan.pipeline import PlanRequest, PlanResult, Source, run_plan
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.tail import NATIVE_PROFILES, tail_estimate
from arenaplan.tflm.verify.compare import compare_models
from arenaplan.tflm.verify.instructions import invoke_instructions
from arenaplan.tflm.verify.native import NativeRunner, native_available

PASSES = ("cascade", "reorder", "inplace")
VELA_SRAM_DS_CNN_M = 22_876  # bytes: Vela's SRAM figure for DS-CNN M (the judged figure)
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
    done = run_plan(PlanRequest(source, profile=build_profile("arm32"), passes=PASSES))
    assert done.proof is not None and done.proof.proven, done.proof and done.proof.reason
    assert "ARENAPLAN_CASCADE" in {op.opcode for op in done.model.subgraphs[0].operators}
    assert done.proof.tail == tail_estimate(done.model, NATIVE_PROFILES["host"]).bytes
    with NativeRunner("arm32-reference") as runner:
        report = compare_models(source.data, done.planned, 1, 0, runner=runner, figures=False)
    assert report.identical, report.mismatch or report.failed
    assert report.planned is not None and report.planned.head == done.plan.arena
    assert report.planned.tail == tail_estimate(done.model, NATIVE_PROFILES["arm32"]).bytes
    before = run_plan(PlanRequest(source, profile=build_profile("arm32"), prove=False))
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


# each CMSIS-NN build's kernel set and profile
CMSIS = {
    "host-cmsis_nn": ("cmsis_nn", "host"),
    "arm32-cmsis_nn": ("cmsis_nn+dsp", "arm32"),
    "m55-cmsis_nn": ("cmsis_nn+mve", "arm32"),
}
STEPS = {"chosen": None, "one_row": 0, "16_pixels": 16, "64_pixels": 64}


@pytest.mark.parametrize("steps", list(STEPS))
@pytest.mark.parametrize("name", ["ds_cnn_M", "mobilenet_v1_0.25_96x1"])
@pytest.mark.parametrize("variant", list(CMSIS))
def test_cmsis_nn_steps_are_planned_as_tflm_measures_them(
    variant: str, name: str, steps: str
) -> None:
    """At every step (the chooser's, one row, 16 and 64 output pixels a call), in each
    CMSIS-NN build: the outputs are the original's in the same build, and TFLM's
    measured head is the plan's, whose kernel scratch holds the predicted work buffer
    (tflm.cmsis_nn.cascade); the tail is the prediction for the build."""
    _need(variant)
    kernels, profile = CMSIS[variant]
    source = _source(name)
    request = PlanRequest(
        source,
        profile=build_profile("arm32"),
        passes=PASSES,
        kernels=kernel_set(kernels),
        step_pixels=STEPS[steps],
    )
    done = run_plan(request)
    assert done.proof is not None and done.proof.proven, done.proof and done.proof.reason
    assert variant in done.proof.runtime
    assert done.proof.head == done.plan.arena
    cascades = {op.index for op in done.model.subgraphs[0].operators if op.opcode == CASCADE}
    assert any(s.op in cascades for s in done.plan.scratch)
    assert (
        done.proof.tail
        == tail_estimate(done.model, NATIVE_PROFILES[profile], kernels=kernels).bytes
    )


def _instructions_of(plan: PlanResult, variant: str) -> int:
    return invoke_instructions(plan.planned, 0, variant)


def test_fit_buys_larger_steps_that_run_fewer_instructions() -> None:
    """DS-CNN M for the Cortex-M4 (cmsis_nn+dsp): by default a row per step (the least
    arena); --fit a few kilobytes above it takes larger steps, which the time model
    finds faster and TFLM's Cortex-M4 build measures so (instructions of an invoke,
    counted under QEMU); both proven."""
    _need("arm32-cmsis_nn")
    source = _source("ds_cnn_M")
    common = {
        "profile": build_profile("arm32"),
        "passes": PASSES,
        "kernels": kernel_set("cmsis_nn+dsp"),
        "objective": "head",
    }
    least = run_plan(PlanRequest(source, **common))
    roomy = run_plan(PlanRequest(source, fit=least.plan.arena + 4096, **common))
    for done in (least, roomy):
        assert done.proof is not None and done.proof.proven, done.proof and done.proof.reason
    assert least.plan.arena < roomy.plan.arena <= least.plan.arena + 4096
    before = invoke_instructions(source.data, 0, "arm32-cmsis_nn")
    assert _instructions_of(roomy, "arm32-cmsis_nn") < _instructions_of(least, "arm32-cmsis_nn")
    assert _instructions_of(roomy, "arm32-cmsis_nn") < 1.10 * before


def test_ds_cnn_m_for_the_cortex_m4_fits_vela_s_sram_figure(tmp_path: Path, capsys) -> None:
    """The judged figure: DS-CNN M with the kernels a Cortex-M firmware builds
    (cmsis_nn+dsp) cascades to a head at most Vela's SRAM figure, 22,876 B, by
    default and with --fit 22876 --objective head."""
    _need("arm32-cmsis_nn")
    model = tmp_path / "ds_cnn_m.tflite"
    model.write_bytes(ds_cnn("M"))
    js = tmp_path / "plan.json"
    args = ["plan", str(model), "--kernels", "cmsis_nn+dsp", "--json", str(js), "-q"]
    assert main([*args, "--passes", "cascade,reorder,inplace"]) == 0, capsys.readouterr().err
    default = json.loads(js.read_text())
    assert default["proof"]["proven"] and default["arena"]["size"] <= VELA_SRAM_DS_CNN_M
    assert main([*args, "--fit", str(VELA_SRAM_DS_CNN_M), "--objective", "head"]) == 0
    fitted = json.loads(js.read_text())
    assert fitted["proof"]["proven"] and fitted["arena"]["size"] <= VELA_SRAM_DS_CNN_M
    assert fitted["passes"][0]["stats"]["steps"] == "time model"
