"""Calibration recovers the parameters that generated a profile, from each log format."""

from __future__ import annotations

import pytest
from kits.profiles_kit import VWW, log_text, placement, true_target
from testkit import model_path

pytest.importorskip("scipy", reason="calibration needs scipy (pip install 'arenaplan[calibrate]')")

from arenaplan.cost.calibration import Run, calibrate
from arenaplan.cost.profile_log import parse_profile
from arenaplan.cost.timing import model_cycles, operator_accesses
from arenaplan.errors import UsageError
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin as load_target


@pytest.mark.parametrize("fmt", ["log", "csv"])
def test_known_parameters_are_recovered_within_2_percent(fmt: str) -> None:
    model = read_model(model_path(VWW))
    truth = true_target()
    ops = operator_accesses(model, truth.traffic)
    runs = []
    for memory in ("sram", "lpddr"):
        where = placement(model, memory)
        cycles = model_cycles(ops, where, memory, truth)
        runs.append(Run(memory, parse_profile(log_text(cycles, fmt)), where, memory))
    start = load_target("xcore_ai")  # other parameters: the fit must move them
    fitted = calibrate(ops, runs, start).target
    for kind in ("conv", "depthwise", "fully_connected"):
        assert fitted.rate(kind) == pytest.approx(truth.rate(kind), rel=0.02)
    # the fastest memory's own cost is part of the compute rates: what is fitted is
    # how much more an access to LPDDR costs
    assert _extra(fitted) == pytest.approx(_extra(truth), rel=0.02)


def _extra(target) -> float:
    return target.memory("lpddr").latency - target.memory("sram").latency


def test_per_tag_totals_fit_every_kind_within_2_percent() -> None:
    model = read_model(model_path(VWW))
    truth = true_target()
    ops = operator_accesses(model, truth.traffic)
    runs = []
    for memory in ("sram", "lpddr"):
        where = placement(model, memory)
        text = log_text(model_cycles(ops, where, memory, truth), "per-tag")
        runs.append(Run(memory, parse_profile(text), where, memory))
    result = calibrate(ops, runs, load_target("xcore_ai"))
    assert result.worst() < 0.02


def test_a_log_of_another_model_is_one_line() -> None:
    model = read_model(model_path(VWW))
    ops = operator_accesses(model)
    where = placement(model, "sram")
    log = parse_profile("CONV_2D took 10 ticks (0 ms).\nADD took 3 ticks (0 ms).")
    with pytest.raises(UsageError, match="not a whole number of invocations"):
        calibrate(ops, [Run("x.log", log, where, "sram")], load_target("xcore_ai"))
    with pytest.raises(UsageError, match="no MicroProfiler output"):
        parse_profile("hello\nworld")
