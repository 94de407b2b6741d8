"""Calibration recovers the parameters that generated a profile, from each log format."""

from __future__ import annotations

from dataclasses import replace

import pytest
from kits.profiles_kit import VWW, log_text, placement, true_target
from testkit import model_path

pytest.importorskip("scipy", reason="calibration needs scipy (pip install 'arenaplan[calibrate]')")

from arenaplan.cost.calibration import Run, calibrate
from arenaplan.cost.profile_log import parse_profile
from arenaplan.cost.timing import OpCycles, model_cycles, operator_accesses
from arenaplan.errors import UsageError
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin as load_target
from arenaplan.targets import load_target as load_target_file
from arenaplan.targets.save import target_to_toml


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
    log = parse_profile("CONV_2D took 10 ticks (0 ms).\nCONV_2D took 3 ticks (0 ms).")
    with pytest.raises(UsageError, match="not a whole number of invocations"):
        calibrate(ops, [Run("x.log", log, where, "sram")], load_target("xcore_ai"))
    with pytest.raises(UsageError, match="no MicroProfiler output"):
        parse_profile("hello\nworld")


# -- nonsense is refused in one line, naming the log and the line ----------------

HEADER = ["app output", "MicroInterpreter ready"]  # lines 1, 2 of every log below
CSV = '"Event","Tag","Ticks"'
PER_TAG = '"Unique Tag","Total ticks across all events with that tag."'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (["CONV_2D took 0 ticks (0 ms)."], "x.log line 3: 0 ticks: the timer does not run"),
        ([CSV, "0,CONV_2D,5", "1,ADD,-7"], "x.log line 5: -7 ticks is negative"),
        ([CSV, "0,CONV_2D,nan"], "x.log line 4: ticks 'nan' is not a whole number"),
        (["CONV_2D took 1e40 ticks (0 ms)."], "x.log line 3: ticks '1e40' is not a whole"),
        ([PER_TAG, "CONV_2D, 0"], "x.log line 4: 0 ticks"),
        ([PER_TAG, "CONV_2D, -2147483000"], "x.log line 4: -2147483000 ticks is negative"),
        ([CSV], "x.log: the LogCsv table (line 3) has no rows"),
        ([PER_TAG, '"total number of ticks", 0'], "x.log: the per-tag table (line 3) has no"),
        ([], "x.log: no MicroProfiler output found"),
    ],
    ids=[
        "zero",
        "negative",
        "nan",
        "float",
        "tag-zero",
        "tag-wrapped",
        "csv-empty",
        "tag-empty",
        "empty",
    ],
)
def test_bad_ticks_and_empty_logs_name_the_line(body: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_profile("\n".join(HEADER + body), "x.log")
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def vww():
    """VWW's operators, the true target, and its LogCsv, per-tag and Log texts with
    everything in SRAM."""
    model = read_model(model_path(VWW))
    truth = true_target()
    ops = operator_accesses(model, truth.traffic)
    cycles = model_cycles(ops, placement(model, "sram"), "sram", truth)
    texts = {fmt: log_text(cycles, fmt) for fmt in ("log", "csv", "per-tag")}
    return model, ops, texts


def _calibrate(vww, text: str, ticks_per_second: float | None = None):
    model, ops, _ = vww
    run = Run("x.log", parse_profile(text, "x.log"), placement(model, "sram"), "sram")
    return calibrate(ops, [run], load_target("xcore_ai"), ticks_per_second)


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan"), float("inf"), 1e13])
def test_a_timer_rate_that_is_no_timer_is_refused(vww, rate: float) -> None:
    with pytest.raises(UsageError, match="ticks per second must be a positive finite number"):
        _calibrate(vww, vww[2]["csv"], rate)


def test_an_event_longer_than_an_hour_is_refused(vww) -> None:
    """4e12 ticks is 400 s at 10 GHz (accepted), over an hour at the default 600 MHz."""
    text = vww[2]["log"].replace("took 1345038 ticks", "took 4000000000000 ticks", 1)
    with pytest.raises(UsageError, match=r"x\.log line 3: CONV_2D took 4,000,000,000,000 ticks"):
        _calibrate(vww, text)
    assert _calibrate(vww, text, 1e10).target.rate("conv") > 0  # 400 s: a duration


def test_tags_of_no_operator_are_refused_naming_them(vww) -> None:
    for fmt, line in (
        ("log", "lines 3, 4, 5"),
        ("csv", "lines 4, 5, 6"),
        ("per-tag", "lines 4, 5)"),
    ):
        text = vww[2][fmt].replace("CONV_2D", "CONV_3D")
        with pytest.raises(UsageError) as info:
            _calibrate(vww, text)
        assert f"x.log: tag(s) CONV_3D, DEPTHWISE_CONV_3D ({line}" in str(info.value)
        assert "match no operator of the model" in str(info.value)


def test_events_out_of_the_models_order_are_refused(vww) -> None:
    lines = vww[2]["log"].splitlines()
    lines[2], lines[3] = lines[3], lines[2]  # DEPTHWISE_CONV_2D before CONV_2D
    with pytest.raises(UsageError, match=r"x\.log line 3: event DEPTHWISE_CONV_2D, where"):
        _calibrate(vww, "\n".join(lines))


def test_a_log_of_the_interpreter_only_is_refused(vww) -> None:
    with pytest.raises(UsageError, match=r"x\.log: the log has no ticks of any operator"):
        _calibrate(vww, "AllocateTensors took 100 ticks (0 ms).\nInvoke took 9 ticks (0 ms).")
    with pytest.raises(UsageError, match=r"x\.log: the log has no ticks of any operator"):
        _calibrate(vww, "\n".join([PER_TAG, "AllocateTensors, 100"]))


def test_a_fit_outside_physical_bounds_is_refused_with_its_lines(vww) -> None:
    """All convolutions in one tick: 6.7 million MACs per cycle, above 1e6."""
    text = "\n".join(
        "CONV_2D, 1" if line.startswith("CONV_2D,") else line
        for line in vww[2]["per-tag"].splitlines()
    )
    with pytest.raises(UsageError) as info:
        _calibrate(vww, text)
    message = str(info.value)
    assert "the compute rate of conv came out at 6.69" in message
    assert "outside 1e-06..1e+06: from x.log line 4" in message


def test_a_latency_outside_physical_bounds_is_refused_with_its_lines(vww) -> None:
    model, ops, _ = vww
    truth = true_target()
    runs = []
    for memory, scale in (("sram", 1), ("lpddr", 100_000)):  # LPDDR 100,000 times slower
        cycles = model_cycles(ops, placement(model, memory), memory, truth)
        slow = [_scaled(c, scale) for c in cycles]
        text = log_text(slow, "log")
        runs.append(Run(f"{memory}.log", parse_profile(text), placement(model, memory), memory))
    with pytest.raises(UsageError) as info:
        calibrate(ops, runs, load_target("xcore_ai"))
    message = str(info.value)
    assert "the latency of lpddr came out at" in message and "above 1e+06" in message
    assert "from lpddr.log lines 3, 4, 5, 6, 7 and" in message and "sram.log" not in message


def _scaled(c: OpCycles, scale: float) -> OpCycles:
    return replace(c, compute=c.compute * scale, memory={m: v * scale for m, v in c.memory.items()})


def test_a_good_calibration_loads_back_as_it_was_fitted(vww, tmp_path) -> None:
    model, ops, _ = vww
    truth = true_target()
    runs = []
    for memory in ("sram", "lpddr"):
        cycles = model_cycles(ops, placement(model, memory), memory, truth)
        log = parse_profile(log_text(cycles, "csv"))
        runs.append(Run(memory, log, placement(model, memory), memory))
    fitted = calibrate(ops, runs, load_target("xcore_ai")).target
    path = tmp_path / "fitted.toml"
    path.write_text(target_to_toml(fitted, "a header\nof two lines"))
    assert load_target_file(path) == fitted
