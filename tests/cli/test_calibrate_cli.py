"""`arenaplan calibrate`: logs in, a target TOML out that `plan --target-file` reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import model_path

pytest.importorskip("scipy", reason="calibration needs scipy (pip install 'arenaplan[calibrate]')")

from kits.profiles_kit import VWW, log_text, placement, true_target

from arenaplan.cli import main
from arenaplan.cost.timing import model_cycles, operator_accesses
from arenaplan.reader import read_model
from arenaplan.targets import load_target


def _write_logs(tmp_path: Path) -> list[str]:
    model = read_model(model_path(VWW))
    truth = true_target()
    ops = operator_accesses(model, truth.traffic)
    runs = []
    for memory in ("sram", "lpddr"):
        where = placement(model, memory)
        path = tmp_path / f"run_{memory}.log"
        path.write_text(log_text(model_cycles(ops, where, memory, truth), "log"))
        runs.append(f"{path}@activations={memory},persistent={memory},weights={memory}")
    return runs


def test_calibrate_writes_a_target_that_plans(tmp_path: Path, capsys) -> None:
    runs = _write_logs(tmp_path)
    out = tmp_path / "my_xcore.toml"
    assert main(["calibrate", *runs, "--model", str(model_path(VWW)), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "conv" in printed and "error" in printed
    fitted, truth = load_target(out), true_target()
    extra = [t.memory("lpddr").latency - t.memory("sram").latency for t in (fitted, truth)]
    assert extra[0] == pytest.approx(extra[1], rel=0.02)
    stores = [t.memory("lpddr").write_latency - t.memory("sram").latency for t in (fitted, truth)]
    assert stores[0] == pytest.approx(stores[1], rel=0.02)  # write-through: per store
    assert fitted.rate("conv") == pytest.approx(truth.rate("conv"), rel=0.02)
    planned = tmp_path / "p.tflite"
    argv = ["plan", str(model_path(VWW)), "-o", str(planned), "--target-file", str(out), "-q"]
    assert main(argv) == 0


def test_bad_runs_are_one_line_and_write_nothing(tmp_path: Path, capsys) -> None:
    runs = _write_logs(tmp_path)
    out = tmp_path / "t.toml"
    model = str(model_path(VWW))
    bad = f"{runs[0].split('@')[0]}@activations=ddr"
    assert main(["calibrate", bad, "--model", model, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no memory 'ddr'" in err and err.count("\\n") <= 1
    empty = tmp_path / "empty.log"
    empty.write_text("nothing here\n")
    assert main(["calibrate", str(empty), "--model", model, "-o", str(out)]) == 2
    assert "no MicroProfiler output" in capsys.readouterr().err
    assert not out.exists()
