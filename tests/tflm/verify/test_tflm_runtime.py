"""End to end in the real TFLM runtime: every model TFLM accepts, planned and run."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import TFLM_REFUSES, model_params, model_path

pytest.importorskip(
    "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)

from arenaplan.cli import main
from arenaplan.placement import plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.verify import TflmRunner, compare_models, measure
from arenaplan.tflm.verify.inputs import random_inputs


@pytest.mark.parametrize("path", model_params())
def test_planned_model_runs_bit_exact_with_the_planned_head(path: Path) -> None:
    data = path.read_bytes()
    plan = plan_model(read_model_bytes(data))
    report = compare_models(data, with_offline_plan(data, plan.tensor_offsets), trials=2)
    if path.stem in TFLM_REFUSES:
        assert report.refused and "TFLM refuses the original model" in report.refused
        assert "\n" not in report.refused
        return
    assert report.refused is None
    assert report.identical, report.mismatch
    assert report.original.head == plan.tflm_greedy  # TFLM's own plan, predicted exactly
    assert report.planned.head == plan.arena  # TFLM's head with our plan = our arena
    assert report.planned.head <= report.original.head
    assert report.planned.tail == report.original.tail
    assert report.smallest_arena == report.predicted_arena


def test_vww_measured_head_shrinks_from_73728_to_55296() -> None:
    data = model_path("mlcommons-tiny__vww_96_int8").read_bytes()
    plan = plan_model(read_model_bytes(data))
    assert measure(data).head == 73728 and measure(data).tail == 29952
    assert measure(with_offline_plan(data, plan.tensor_offsets)).head == 55296


def test_a_wrong_plan_is_caught_by_the_outputs() -> None:
    """TFLM trusts any offline plan: all tensors at offset 0 runs, but computes garbage."""
    data = model_path("mlcommons-tiny__pretrainedResnet_quant").read_bytes()
    plan = plan_model(read_model_bytes(data))
    wrong = [0 if o >= 0 else -1 for o in plan.tensor_offsets]
    report = compare_models(data, with_offline_plan(data, wrong), trials=2)
    assert not report.identical
    assert report.mismatch and "differs" in report.mismatch


def test_runner_survives_a_dead_worker() -> None:
    data = model_path("tflite-micro__hello_world_int8").read_bytes()
    inputs = random_inputs(read_model_bytes(data), 1, 0)
    with TflmRunner() as runner:
        assert runner.run(data, 4096, inputs, 1).ok
        runner._proc.kill()  # as if TFLM had aborted
        runner._proc.join()
        result = runner.run(data, 4096, inputs, 1)
        assert result.ok and result.measurement.head == 32


def test_too_small_an_arena_is_a_failure_not_a_crash() -> None:
    data = model_path("mlcommons-tiny__vww_96_int8").read_bytes()
    with TflmRunner() as runner:
        result = runner.run(data, 1024, [], 1)
    assert not result.ok and "failed to allocate" in result.error


def test_verify_command_exit_codes(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__keyword_scrambled")
    planned = tmp_path / "k.tflite"
    assert main(["plan", str(src), "-q", "-o", str(planned)]) == 0
    assert main(["verify", str(src), str(planned)]) == 0
    out = capsys.readouterr().out
    assert "outputs identical" in out and "18,064" in out and "672" in out
    refused = model_path("mlcommons-tiny__kws_ref_model_float32")
    assert main(["verify", str(refused), str(refused)]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "TFLM refuses the original model: operator 0 CONV_2D: hybrid (FLOAT32 input" in out


def test_verify_says_why_in_one_line_and_checks_its_figures(tmp_path: Path, capsys) -> None:
    resnet = model_path("mlcommons-tiny__pretrainedResnet_quant")
    data = resnet.read_bytes()
    plan = plan_model(read_model_bytes(data))
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(with_offline_plan(data, [0 if o >= 0 else -1 for o in plan.tensor_offsets]))
    assert main(["verify", str(resnet), str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "verify failed: outputs differ" in captured.err
    good = tmp_path / "good.tflite"
    good.write_bytes(with_offline_plan(data, plan.tensor_offsets))
    assert main(["verify", str(resnet), str(good)]) == 0
    assert "every predicted figure measured exactly" in capsys.readouterr().out


def test_verify_refuses_two_unrelated_models(capsys) -> None:
    a = model_path("tflite-micro__hello_world_int8")
    b = model_path("mlcommons-tiny__vww_96_int8")
    assert main(["verify", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "do not have the same inputs and outputs" in err


@pytest.mark.parametrize("trials", ["0", "-1", "x"])
def test_verify_trials_must_be_positive(trials: str, capsys) -> None:
    a = model_path("tflite-micro__hello_world_int8")
    assert main(["verify", str(a), str(a), "--trials", trials]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_wrong_prediction_fails_verify() -> None:
    """A disagreement between a predicted and a measured figure is a failure, not a note."""
    from rich.console import Console

    from arenaplan.commands.verify import print_report
    from arenaplan.tflm.verify.compare import Prediction, VerifyReport
    from arenaplan.tflm.verify.runner import Measurement

    m = Measurement(head=1024, tail=2048)
    right = VerifyReport(1, True, None, m, m, 3088, Prediction(1024, 2048, 3088))
    wrong = VerifyReport(1, True, None, m, m, 3104, Prediction(1024, 2048, 3088))
    assert right.disagreements() == [] and print_report(Console(), right, "a", "b") == 0
    assert wrong.disagreements() == ["smallest working arena: predicted 3,088 B, measured 3,104 B"]
    assert print_report(Console(), wrong, "a", "b") == 1


def test_every_built_model_planned_runs_bit_exact_with_every_figure_true() -> None:
    """The 92 small models of the tail rules (one per kernel path, and three shaped like
    real reports), planned and run: outputs identical, head, tail and smallest arena as
    predicted (or the estimate says what it leaves out)."""
    from kits.opmodels import OP_MODELS, SHAPED

    from arenaplan.pipeline import planned_model_bytes

    checked, unverifiable = 0, {}
    with TflmRunner() as runner:
        for name, build in {**OP_MODELS, **SHAPED}.items():
            data = build()
            model = read_model_bytes(data)
            plan = plan_model(model)
            report = compare_models(
                data, planned_model_bytes(data, model, plan), 1, 0, runner=runner
            )
            if report.refused:
                unverifiable[name] = report.refused
                continue
            assert report.identical and report.failed is None, (name, report)
            assert report.planned.head == plan.arena, name
            assert report.disagreements() == [], (name, report.disagreements())
            checked += 1
    assert checked >= 85
    # kernels that read memory nothing wrote (an output left unwritten until a frame is
    # full, a state buffer never cleared) are caught, not blamed on the plan
    for name in ("circular_buffer_int8", "signal_int16"):
        assert "depend on where its tensors lie" in unverifiable[name]
