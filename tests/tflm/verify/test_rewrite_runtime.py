"""Every shared model through every pass, planned with sharing, proven in TFLM."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import TFLM_REFUSES, model_params, model_path

pytest.importorskip(
    "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)

from arenaplan.export.tflite_writer import write_model
from arenaplan.passes import make_pass, run_passes
from arenaplan.passes.band_search import model_macs
from arenaplan.passes.inplace import alias_options
from arenaplan.placement import PlanOptions, plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.verify import TflmRunner, compare_models

NAMES = ("reorder", "inplace", "bands")
# planned head after the passes (objective: head), bytes; the goals in brackets
EXPECTED_HEAD = {
    "mlcommons-tiny__vww_96_int8": 44_928,  # [44,928]
    "mlcommons-tiny__pretrainedResnet_quant": 34_816,  # [34,816]
    "arm-ml-examples__cnn_s_quantized": 5_546,  # [5,546]
    "tflite-micro__test_conv_model": 4_288,  # [4,288]
    "mlcommons-tiny__str_ww_ref_model": 6_144,  # [6,144]
}


@pytest.fixture(scope="module")
def runner():
    with TflmRunner() as r:
        yield r


def _rewritten(data: bytes, objective: str, clobber: bool = False):
    model = read_model_bytes(data)
    options = {"objective": objective, "clobber_inputs": clobber}
    new, _ = run_passes(model, [make_pass(n, options) for n in NAMES])
    aliases, clobber = alias_options(NAMES, clobber)
    plan = plan_model(new, PlanOptions(alias_kinds=aliases, clobber_inputs=clobber))
    return model, new, plan, with_offline_plan(write_model(new), plan.tensor_offsets)


@pytest.mark.parametrize("objective", ["head", "arena"])
@pytest.mark.parametrize("path", model_params())
def test_rewritten_model_is_bit_exact_with_the_planned_head(path: Path, objective, runner) -> None:
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    model, new, plan, planned = _rewritten(path.read_bytes(), objective)
    report = compare_models(path.read_bytes(), planned, trials=2, runner=runner)
    assert report.failed is None and report.refused is None
    assert report.identical, report.mismatch
    assert report.planned.head == plan.arena
    assert not report.disagreements()
    assert model_macs(new) <= 1.10 * model_macs(model)
    if objective == "head" and path.stem in EXPECTED_HEAD:
        assert plan.arena <= EXPECTED_HEAD[path.stem]


def test_simple_add_in_place_over_its_input_reaches_32768(runner) -> None:
    data = model_path("tflite-micro__simple_add_model").read_bytes()
    _, _, plan, planned = _rewritten(data, "head", clobber=True)
    assert plan.arena == 32_768
    report = compare_models(data, planned, trials=2, runner=runner)
    assert report.identical and report.planned.head == 32_768


def test_the_lstm_reorders_to_its_optimum() -> None:
    """TFLM refuses this model (FILL with non-constant dims), so it is not proven here."""
    data = model_path("arm-ml-examples__basic_lstm_quantized_small").read_bytes()
    model, _, plan, _ = _rewritten(data, "head")
    assert plan_model(model).arena == 18_512
    assert plan.arena <= 2_464
