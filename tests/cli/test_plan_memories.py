"""``plan --target --memory``: a plan over several memories, verified in TFLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.cli import main
from arenaplan.reader import read_model


def test_fits_the_fast_memory_stays_one_arena(tmp_path: Path, capsys) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    js = tmp_path / "p.json"
    assert main(["plan", str(src), "--target", "imxrt1170", "--json", str(js)]) == 0
    assert "memories of imxrt1170" in capsys.readouterr().out
    assert json.loads(js.read_text())["arena"]["size"] == 55296


def test_spreads_over_memories_and_runs_bit_exact(tmp_path: Path, capsys) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    out = tmp_path / "vww.tflite"
    assert (
        main(["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=32KiB", "-o", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "ocram" in text and "memories end to" in text
    assert read_model(out).offline_plan is not None
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.verify import compare_models

    report = compare_models(src.read_bytes(), out.read_bytes(), trials=2)
    assert report.identical
    plan_json = tmp_path / "p.json"
    main(
        [
            "plan",
            str(src),
            "-q",
            "--target",
            "imxrt1170",
            "--memory",
            "tcm=32KiB",
            "--json",
            str(plan_json),
        ]
    )
    head = json.loads(plan_json.read_text())["arena"]["size"]
    assert report.planned.head == head > 32 * 1024  # 55,296 B live at the peak: not all in tcm


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--memory", "tcm=1KiB"], "--memory needs --target"),
        (["--target", "imxrt1170", "--memory", "tcm"], "expected NAME=SIZE"),
        (["--target", "imxrt1170", "--memory", "dram=1KiB"], "no memory 'dram'"),
        (["--target", "imxrt1170", "--memory", "tcm=lots"], "'lots' is not a size"),
    ],
)
def test_memory_option_errors(argv: list[str], message: str, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    assert main(["plan", str(src), *argv]) == 2
    assert message in capsys.readouterr().err


def test_persistent_arena_advice(capsys) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    assert main(["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=100KiB"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # i.MX RT1170 runs CMSIS-NN with DSP: its tail (26,980 B), not the reference one (26,932)
    assert "arm32 tail 26,980 B) fits beside the head: one arena of 82,276 B in tcm" in out
    assert main(["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=64KiB"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "does not fit beside the head in tcm: it goes to ocram" in out
