"""The cascade on the command line where its kernel cannot run: one line, nothing
cascaded written; ``--kernel-source``. (Where TFLM built from source runs it:
tests/tflm/test_cascade_kernel.py and tests/tflm/test_cascade_plan.py.)"""

from __future__ import annotations

from dataclasses import replace
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


def _cascaded_file(dscnn: Path, tmp_path: Path, **edits: int) -> Path:
    """The cascaded DS-CNN with header words changed (``word_N=value``)."""
    from flatbuffers import flexbuffers

    from arenaplan.ir.cascade_format import OPCODE

    model = read_model_bytes(dscnn.read_bytes())
    cascaded, _ = run_passes(model, [make_pass("cascade", {})])
    sg = cascaded.subgraphs[0]
    op = next(o for o in sg.operators if o.opcode == OPCODE)
    blob = bytearray(flexbuffers.Loads(op.custom_options)["chain"])
    for key, value in edits.items():
        k = int(key.split("_")[1])
        blob[4 * k : 4 * k + 4] = value.to_bytes(4, "little", signed=True)
    options = bytes(flexbuffers.Dumps({"version": 2, "chain": bytes(blob)}))
    ops = tuple(replace(o, custom_options=options) if o is op else o for o in sg.operators)
    bad = replace(cascaded, subgraphs=(replace(sg, operators=ops),))
    path = tmp_path / "bad.tflite"
    path.write_bytes(write_model(bad))
    return path


@pytest.mark.parametrize("edit", [{"word_0": 7}, {"word_1": 0}, {"word_3": 41}, {"word_2": -5}])
def test_a_corrupt_chain_is_one_line(dscnn: Path, tmp_path: Path, capsys, edit) -> None:
    bad = _cascaded_file(dscnn, tmp_path, **edit)
    assert main(["plan", str(bad), "-o", str(tmp_path / "out.tflite")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt model" in err and "ARENAPLAN_CASCADE" in err
    assert not (tmp_path / "out.tflite").exists()


def test_the_pass_writes_the_same_bytes_every_time(dscnn: Path) -> None:
    model = read_model_bytes(dscnn.read_bytes())
    once = write_model(run_passes(model, [make_pass("cascade", {})])[0])
    again = write_model(run_passes(model, [make_pass("cascade", {})])[0])
    assert once == again


@pytest.mark.parametrize("with_source", [False, True])
def test_the_summary_ends_with_the_kernel_the_model_needs(
    dscnn: Path, tmp_path: Path, capsys, with_source: bool
) -> None:
    """A written model with the cascade operator: the last lines name the kernel, where
    its source is (or the option that writes it) and the line that registers it."""
    out = tmp_path / "out.tflite"
    cmd = ["plan", str(dscnn), "--passes", "cascade", "-o", str(out), "--write-unproven"]
    folder = tmp_path / "fw"
    if with_source:
        folder.mkdir()
        cmd += ["--kernel-source", str(folder)]
    assert main(cmd) == 0
    assert "ARENAPLAN_CASCADE" in {op.opcode for op in read_model(out).subgraphs[0].operators}
    # the terminal's lines wrapped (long paths too): compared without white space
    last = "".join(capsys.readouterr().out.split()).split("setthetensorarena")[-1]
    assert "needsarenaplan'skernelARENAPLAN_CASCADE" in last
    assert 'AddCustom("ARENAPLAN_CASCADE",tflite::Register_ARENAPLAN_CASCADE());' in last
    where = f"itssourceisin{folder}" if with_source else "--kernel-sourceDIRwrites"
    assert where in last


def test_no_kernel_words_for_a_model_without_the_cascade(dscnn: Path, tmp_path: Path, capsys):
    out = tmp_path / "out.tflite"
    assert main(["plan", str(dscnn), "-o", str(out)]) == 0
    assert "ARENAPLAN_CASCADE" not in capsys.readouterr().out
