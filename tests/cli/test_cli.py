"""The command line: outputs, exit codes, one-line errors, no partial files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.cli import main
from arenaplan.reader import read_model


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_writes_the_model_and_the_json(tmp_path: Path, capsys) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    out, js = tmp_path / "vww.planned.tflite", tmp_path / "plan.json"
    code, text, err = _run(["plan", str(src), "-o", str(out), "--json", str(js)], capsys)
    assert code == 0, err
    assert "55,296" in text and "73,728" in text and "optimal" in text
    assert read_model(out).stored_plan is not None
    assert json.loads(js.read_text())["arena"]["size"] == 55296
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "vww.planned.tflite"]


def test_outputs_are_byte_identical_across_runs(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__keyword_scrambled")
    for k in (1, 2):
        assert (
            _run(
                [
                    "plan",
                    str(src),
                    "-q",
                    "-o",
                    str(tmp_path / f"{k}.tflite"),
                    "--json",
                    str(tmp_path / f"{k}.json"),
                ],
                capsys,
            )[0]
            == 0
        )
    assert (tmp_path / "1.tflite").read_bytes() == (tmp_path / "2.tflite").read_bytes()
    assert (tmp_path / "1.json").read_bytes() == (tmp_path / "2.json").read_bytes()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "empty"),
        (b"hello, this is not a model at all\n", "identifier"),
        (b"\x10\x00\x00\x00TFL3", "outside the file"),
        (b"\x89PNG\r\n\x1a\n" + bytes(64), "identifier"),
    ],
)
def test_bad_input_gives_one_line_exit_2_and_no_output(
    tmp_path: Path, capsys, content: bytes, needle: str
) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(content)
    out = tmp_path / "out.tflite"
    code, _, err = _run(
        ["plan", str(bad), "-o", str(out), "--json", str(tmp_path / "p.json")], capsys
    )
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("arenaplan: error: ") and needle in err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tflite"]


def test_truncated_model_is_refused(tmp_path: Path, capsys) -> None:
    data = model_path("tflite-micro__hello_world_int8").read_bytes()
    bad = tmp_path / "cut.tflite"
    bad.write_bytes(data[: len(data) // 2])
    code, _, err = _run(["plan", str(bad), "-o", str(tmp_path / "o.tflite")], capsys)
    assert code == 2 and err.count("\n") == 1 and "cut.tflite" in err
    assert not (tmp_path / "o.tflite").exists()


def test_missing_file_and_refusing_to_overwrite_the_input(tmp_path: Path, capsys) -> None:
    code, _, err = _run(["plan", str(tmp_path / "nope.tflite")], capsys)
    assert code == 2 and "no such file" in err
    src = tmp_path / "m.tflite"
    src.write_bytes(model_path("tflite-micro__hello_world_int8").read_bytes())
    before = src.read_bytes()
    code, _, err = _run(["plan", str(src), "-o", str(src)], capsys)
    assert code == 2 and "overwrite the input" in err
    assert src.read_bytes() == before


def test_inspect_lists_operators_tensors_and_the_bound(capsys) -> None:
    code, text, _ = _run(["inspect", str(model_path("tflite-micro__keyword_scrambled"))], capsys)
    assert code == 0
    assert "SVDF" in text and "variable" in text and "672" in text


def test_console_script_runs_as_a_process(tmp_path: Path) -> None:
    bad = tmp_path / "x.tflite"
    bad.write_bytes(b"")
    proc = subprocess.run(
        [sys.executable, "-m", "arenaplan.cli", "plan", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("empty file, not a TFLite model")
    assert "Traceback" not in proc.stderr


def test_python_dash_m_runs_the_command() -> None:
    """``python -m arenaplan`` is the ``arenaplan`` command (its name in the usage)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "arenaplan", "plan", "/nonexistent.tflite"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.startswith("arenaplan: ")
    assert len(done.stderr.strip().splitlines()) == 1
