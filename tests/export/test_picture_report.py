"""Pictures and the HTML report of a plan."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.cli import main

pytest.importorskip("matplotlib", reason="pictures need matplotlib (extra 'report')")


def test_picture_and_report_files(tmp_path: Path) -> None:
    src = model_path("tflite-micro__keyword_scrambled")
    png, svg, report = tmp_path / "p.png", tmp_path / "p.svg", tmp_path / "r.html"
    argv = [
        "plan",
        str(src),
        "-q",
        "--picture",
        str(png),
        "--report",
        str(report),
        "--target",
        "generic",
    ]
    assert main(argv) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert stat.S_IMODE(png.stat().st_mode) & 0o044  # readable by others, like any file
    text = report.read_text()
    assert "<svg" in text and "Operators on generic" in text and "SVDF" in text
    assert "672" in text and "smallest working arena" in text
    assert main(["plan", str(src), "-q", "--picture", str(svg)]) == 0
    first = svg.read_bytes()
    assert main(["plan", str(src), "-q", "--picture", str(svg)]) == 0
    assert svg.read_bytes() == first  # deterministic
    # 16 tensors and 14 scratch buffers, each one rectangle path in the picture
    assert first.count(b"<path") >= 30


def test_bad_picture_name_and_target(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    assert main(["plan", str(src), "--picture", str(tmp_path / "p.gif")]) == 2
    assert "must end in .png or .svg" in capsys.readouterr().err
    assert main(["plan", str(src), "--report", str(tmp_path / "r.html"), "--target", "mars"]) == 2
    assert "unknown target 'mars'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_several_memories_get_one_panel_each(tmp_path: Path) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    svg, report = tmp_path / "p.svg", tmp_path / "r.html"
    assert (
        main(
            [
                "plan",
                str(src),
                "-q",
                "--target",
                "imxrt1170",
                "--memory",
                "tcm=32KiB",
                "--picture",
                str(svg),
                "--report",
                str(report),
            ]
        )
        == 0
    )
    text = svg.read_text()
    assert "tcm: " in text and "ocram: " in text and "capacity 32,768 B" in text
    page = report.read_text()
    assert "as placed" in page and "activations in" in page and "ocram 1" in page
