"""Calibration recovers the parameters that generated a profile, from each log format."""

from __future__ import annotations

from dataclasses import replace

import pytest
from testkit import model_path

pytest.importorskip("scipy", reason="calibration needs scipy (pip install 'arenaplan[calibrate]')")

from arenaplan.analysis.calibration import Run, calibrate
from arenaplan.analysis.profile_log import parse_profile
from arenaplan.analysis.timing import model_cycles, one_pass_accesses
from arenaplan.errors import UsageError
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin as load_target

VWW = "mlcommons-tiny__vww_96_int8"


def _truth():
    """xcore.ai with known, made-up parameters: what the profiles come from."""
    base = load_target("xcore_ai")
    rates = {"conv": 0.37, "depthwise": 0.21, "fully_connected": 0.5, "elementwise": 0.8}
    mems = tuple(
        replace(m, latency={"sram": 1.5, "lpddr": 23.0}.get(m.name, m.latency))
        for m in base.memories
    )
    return replace(base, macs_per_cycle=rates | {"default": 0.3}, memories=mems)


def _placement(model, memory: str) -> dict:
    """Everything in ``memory``, weights included (xcore.ai's SRAM may hold them)."""
    return {(sg.index, t.index): memory for sg in model.subgraphs for t in sg.tensors}


def _log(cycles, fmt: str, invocations: int = 2) -> str:
    lines = ["some application output", "MicroInterpreter ready"]
    if fmt == "log":
        for _ in range(invocations):
            lines += [f"{c.op.opcode} took {round(c.total)} ticks (0 ms)." for c in cycles]
    elif fmt == "csv":
        lines.append('"Event","Tag","Ticks"')
        events = [c for _ in range(invocations) for c in cycles]
        lines += [f"{i},{c.op.opcode},{round(c.total)}" for i, c in enumerate(events)]
    else:
        lines.append('"Unique Tag","Total ticks across all events with that tag."')
        totals: dict[str, float] = {}
        for c in cycles:
            totals[c.op.opcode] = totals.get(c.op.opcode, 0.0) + c.total
        lines += [f"{tag}, {round(t)}" for tag, t in totals.items()]
        lines.append(f'"total number of ticks", {round(sum(totals.values()))}')
    return "\n".join(lines)


@pytest.mark.parametrize("fmt", ["log", "csv"])
def test_known_parameters_are_recovered_within_2_percent(fmt: str) -> None:
    model = read_model(model_path(VWW))
    ops, truth = one_pass_accesses(model), _truth()
    runs = []
    for memory in ("sram", "lpddr"):
        where = _placement(model, memory)
        cycles = model_cycles(ops, where, memory, truth)
        runs.append(Run(memory, parse_profile(_log(cycles, fmt)), where, memory))
    start = load_target("xcore_ai")  # other parameters: the fit must move them
    fitted = calibrate(ops, runs, start).target
    for kind in ("conv", "depthwise", "fully_connected"):
        assert fitted.rate(kind) == pytest.approx(truth.rate(kind), rel=0.02)
    for name in ("sram", "lpddr"):
        assert fitted.memory(name).latency == pytest.approx(truth.memory(name).latency, rel=0.02)


def test_per_tag_totals_fit_every_kind_within_2_percent() -> None:
    model = read_model(model_path(VWW))
    ops, truth = one_pass_accesses(model), _truth()
    runs = []
    for memory in ("sram", "lpddr"):
        where = _placement(model, memory)
        text = _log(model_cycles(ops, where, memory, truth), "per-tag")
        runs.append(Run(memory, parse_profile(text), where, memory))
    result = calibrate(ops, runs, load_target("xcore_ai"))
    assert result.worst() < 0.02


def test_a_log_of_another_model_is_one_line() -> None:
    model = read_model(model_path(VWW))
    ops = one_pass_accesses(model)
    where = _placement(model, "sram")
    log = parse_profile("CONV_2D took 10 ticks (0 ms).\nADD took 3 ticks (0 ms).")
    with pytest.raises(UsageError, match="not a whole number of invocations"):
        calibrate(ops, [Run("x.log", log, where, "sram")], load_target("xcore_ai"))
    with pytest.raises(UsageError, match="no MicroProfiler output"):
        parse_profile("hello\nworld")
