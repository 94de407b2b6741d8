"""The cascade on the command line where its kernel cannot run: one line, nothing
cascaded written; ``--kernel-source``. (Where TFLM built from source runs it:
tests/tflm/test_cascade_kernel.py and tests/tflm/test_cascade_plan.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.cli import main
from arenaplan.export.kernel_source import REGISTER, SOURCES
from arenaplan.export.tflite_writer import write_model
from arenaplan.passes import make_pass, run_passes
from arenaplan.reader import read_model, read_model_bytes


@pytest.fixture
def no_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No TFLM build from source here (an empty build folder)."""
    monkeypatch.setenv("ARENAPLAN_TFLM_BUILD", str(tmp_path / "no-builds"))


@pytest.fixture
def dscnn(tmp_path: Path) -> Path:
    path = tmp_path / "ds_cnn_m.tflite"
    path.write_bytes(ds_cnn("M"))
    return path


def test_cascade_unprovable_plans_the_model_as_given(
    no_build: None, dscnn: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "out.tflite"
    assert main(["plan", str(dscnn), "--passes", "cascade", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cascade kernel runs only in TFLM built from source" in err
    assert "ARENAPLAN_CASCADE" not in {op.opcode for op in read_model(out).subgraphs[0].operators}


def test_verify_of_a_cascaded_model_needs_a_build(
    no_build: None, dscnn: Path, tmp_path: Path, capsys
) -> None:
    model = read_model_bytes(dscnn.read_bytes())
    cascaded, _ = run_passes(model, [make_pass("cascade", {})])
    planned = tmp_path / "cascaded.tflite"
    planned.write_bytes(write_model(cascaded))
    assert main(["verify", str(dscnn), str(planned)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot verify in TFLM host-reference" in err
    assert main(["verify", str(dscnn), str(planned), "--build", "nowhere"]) == 2
    assert "no TFLM build nowhere" in capsys.readouterr().err


def test_kernel_source_writes_the_kernel_and_its_registration(
    dscnn: Path, tmp_path: Path, capsys
) -> None:
    folder = tmp_path / "firmware"
    folder.mkdir()
    assert main(["plan", str(dscnn), "--kernel-source", str(folder), "-q"]) == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted([*SOURCES, REGISTER])
    source = (folder / "arenaplan_cascade.cc").read_text()
    assert "ARENAPLAN_CASCADE" in source or "Register_ARENAPLAN_CASCADE" in source
    assert 'AddCustom("ARENAPLAN_CASCADE"' in (folder / REGISTER).read_text()


def test_kernel_source_folder_must_exist(dscnn: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.tflite"
    missing = tmp_path / "nowhere"
    assert main(["plan", str(dscnn), "-o", str(out), "--kernel-source", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    assert not out.exists()
