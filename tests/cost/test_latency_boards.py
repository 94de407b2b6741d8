"""The time model against MLPerf Tiny's published latencies (benchmarks/latency_boards.py),
and the reference release's counted instructions it times the reference board by."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest
from testkit import MODELS_DIR, SHARED_ABSENT

from arenaplan.reader import read_model_bytes
from arenaplan.tflm.kernel_counts import op_counts

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import latency_boards as lb  # noqa: E402  (benchmarks/)

RELEASE = json.loads(lb.RELEASE_COUNTS.read_text())
# the plugin's classes that partition the instructions (taken is a part of branch,
# multi_regs counts registers, not instructions)
PARTS = ("alu", "mul", "div", "load", "load_next", "store", "multi", "branch", "lob",
         "vload", "vop")  # fmt: skip


@pytest.fixture(scope="module")
def models() -> dict:
    if not MODELS_DIR.is_dir():
        pytest.skip(SHARED_ABSENT)
    return {k: read_model_bytes((MODELS_DIR / f).read_bytes()) for k, f in lb.NAMES.items()}


def test_the_release_counts_say_what_was_counted() -> None:
    assert RELEASE["release"].startswith("TFLM 2.3.")
    assert "-Os" in RELEASE["flags"] and "-mcpu=cortex-m4" in RELEASE["flags"]
    assert set(RELEASE["models"]) == set(lb.NAMES)
    for key, row in RELEASE["models"].items():
        assert row["file"] == lb.NAMES[key]
        c = row["classes"]
        assert sum(c[k] for k in PARTS) == c["insns"] > 0, key
        assert c["taken"] <= c["branch"] and c["vload"] == c["vop"] == 0, key


def test_the_release_counts_are_of_the_shared_models(models: dict) -> None:
    counts = lb.release_counts()  # SystemExit when a model file is not the one counted
    assert {k: c["insns"] for k, c in counts.items()} == {
        k: r["classes"]["insns"] for k, r in RELEASE["models"].items()
    }


def test_the_2020_kernels_differ_from_the_table_as_documented(models: dict) -> None:
    """More instructions than today's -Os build on the convolutional networks, about
    as many on AD's fully connected layers (the benchmark's docstring)."""
    ratio = {
        k: RELEASE["models"][k]["classes"]["insns"]
        / sum(c["insns"] for c in op_counts(m, "dsp", "size"))
        for k, m in models.items()
    }
    assert all(1.15 < ratio[k] < 1.5 for k in ("KWS", "VWW", "IC")), ratio
    assert 0.85 < ratio["AD"] < 1.1, ratio


def test_the_boards_meet_the_bar(models: dict) -> None:
    """The figures docs/memories.md states: every estimate within 25% of the published
    latency, the median within 10%, the reference board's four within 15%, the four
    models ranked right on every board; one parameter, from the reference board."""
    scale, rows = lb.board_rows(models, lb.release_counts())
    assert 1.0 < scale < 1.6
    errors = {(board, key): est / pub - 1 for board, key, est, pub in rows}
    assert len(errors) == 12
    assert all(abs(e) <= 0.25 for e in errors.values()), errors
    assert statistics.median(abs(e) for e in errors.values()) <= 0.10
    assert all(abs(e) <= 0.15 for (b, _), e in errors.items() if b == lb.REFERENCE)
    assert all(lb.ranking_right(rows, board) for board in lb.PUBLISHED)


def test_the_other_boards_take_nothing_from_the_reference_counts(models: dict) -> None:
    """Only the reference board's row reads the counted release: another board's
    estimate is the time model's own, whatever the reference counts say."""
    _, rows = lb.board_rows(models, lb.release_counts())
    ra6m4 = lb.load_builtin("ra6m4")
    for board, key, est, _ in rows:
        if board == "ra6m4":
            compute, stall = lb.split_cycles(models[key], ra6m4, None)
            assert est == pytest.approx((compute + stall) / ra6m4.clock_hz * 1e3)


def test_a_program_counted_by_path_counts_as_its_variant(tmp_path: Path) -> None:
    """``qemu_user_classes`` (what the release counts are taken with) counts the
    project's own Cortex-M4 runner as ``invoke_classes``' path does, run for run."""
    from arenaplan.tflm.verify import instructions as ins
    from arenaplan.tflm.verify.inputs import random_inputs
    from arenaplan.tflm.verify.native import runner_path

    variant = "arm32-cmsis_nn"
    why = ins.instructions_available(variant)
    if why is not None:
        pytest.skip(why)
    data = (MODELS_DIR / lb.NAMES["AD"]).read_bytes() if MODELS_DIR.is_dir() else None
    if data is None:
        pytest.skip(SHARED_ABSENT)
    trials = random_inputs(read_model_bytes(data), 1, 0)
    args = ins._write_run(tmp_path, data, trials)
    got = ins.qemu_user_classes(runner_path(variant), args, tmp_path)
    assert got == ins._qemu_classes(data, trials, variant)
    assert got["insns"] > RELEASE["models"]["AD"]["classes"]["insns"]  # a whole run
