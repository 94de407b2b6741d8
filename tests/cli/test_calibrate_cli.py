"""`arenaplan calibrate`: logs in, a target TOML out that `plan --target-file` reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from testkit import model_path

pytest.importorskip("scipy", reason="calibration needs scipy (pip install 'arenaplan[calibrate]')")

from kits.profiles_kit import VWW, log_text, placement, true_target

from arenaplan.cli import main
from arenaplan.cost.timing import model_cycles, operator_accesses
from arenaplan.export.tflite_writer import write_model
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


# -- nonsense is refused in one line, nothing written -----------------------------


@pytest.fixture(scope="module")
def logs() -> dict[str, str]:
    """VWW's profile with everything in SRAM, as a Log and as a per-tag table."""
    model = read_model(model_path(VWW))
    truth = true_target()
    cycles = model_cycles(
        operator_accesses(model, truth.traffic), placement(model, "sram"), "sram", truth
    )
    return {fmt: log_text(cycles, fmt) for fmt in ("log", "per-tag")}


def _per_tag_conv(ticks: int) -> Callable[[dict[str, str]], str]:
    """The per-tag table with every convolution's total set to ``ticks``."""

    def edit(logs: dict[str, str]) -> str:
        lines = logs["per-tag"].splitlines()
        return "\n".join(f"CONV_2D, {ticks}" if x.startswith("CONV_2D,") else x for x in lines)

    return edit


def _log(old: str, new: str, count: int = 1) -> Callable[[dict[str, str]], str]:
    """The Log text with ``old`` replaced by ``new`` (``count`` times; -1: all)."""

    return lambda logs: logs["log"].replace(old, new, count)


REFUSALS = {
    "zero ticks": (_log("took 1345038 ticks", "took 0 ticks"), (), "run.log line 3: 0 ticks"),
    "negative ticks": (
        lambda logs: '"Event","Tag","Ticks"\n0,CONV_2D,-5',
        (),
        "run.log line 2: -5 ticks is negative",
    ),
    "non-finite ticks": (
        _log("took 1345038 ticks", "took inf ticks"),
        (),
        "run.log line 3: ticks 'inf'",
    ),
    "ticks beyond an hour": (
        _log("took 1345038 ticks", "took 3000000000000 ticks"),
        (),
        "run.log line 3: CONV_2D took 3,000,000,000,000 ticks, more than 1 hour",
    ),
    "header-only LogCsv": (lambda logs: '"Event","Tag","Ticks"\n', (), "run.log: the LogCsv table"),
    "empty file": (lambda logs: "", (), "run.log: no MicroProfiler output found"),
    "tags of no operator": (
        _log("CONV_2D", "CONV_3D", -1),
        (),
        "run.log: tag(s) CONV_3D, DEPTHWISE_CONV_3D (lines 3, 4, 5",
    ),
    "rate of conv out of bounds": (
        _per_tag_conv(1),
        (),
        "the compute rate of conv came out at 6.69082e+06 work per cycle, outside 1e-06..1e+06: "
        "from run.log line 4",
    ),
    "ticks per second 0": (
        lambda logs: logs["log"],
        ("--ticks-per-second", "0"),
        "ticks per second",
    ),
    "ticks per second nan": (lambda logs: logs["log"], ("--ticks-per-second", "nan"), "got nan"),
    "ticks per second -1": (lambda logs: logs["log"], ("--ticks-per-second=-1",), "got -1"),
    "ticks per second inf": (lambda logs: logs["log"], ("--ticks-per-second", "inf"), "got inf"),
    "ticks per second 1e13": (lambda logs: logs["log"], ("--ticks-per-second", "1e13"), "1e+12"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_nonsense_is_one_line_and_writes_nothing(
    logs: dict[str, str], tmp_path: Path, capsys, case: str
) -> None:
    edit, extra, message = REFUSALS[case]
    log = tmp_path / "run.log"
    log.write_text(edit(logs))
    out = tmp_path / "t.toml"
    argv = ["calibrate", str(log), "--model", str(model_path(VWW)), "-o", str(out)]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.log"]  # no output, no temp


def test_a_model_failing_the_ir_verifier_is_refused(logs, tmp_path: Path, capsys) -> None:
    """VWW with its first two operators swapped: operator 0 reads what operator 1 writes."""
    model = read_model(model_path(VWW))
    sg = model.subgraphs[0]
    ops = list(sg.operators)
    ops[0], ops[1] = replace(ops[1], index=0), replace(ops[0], index=1)
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(write_model(replace(model, subgraphs=(replace(sg, operators=tuple(ops)),))))
    log = tmp_path / "run.log"
    log.write_text(logs["log"])
    out = tmp_path / "t.toml"
    assert main(["calibrate", str(log), "--model", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "bad.tflite: invalid model" in err and "operator 0" in err and err.count("\n") == 1
    assert not out.exists()
