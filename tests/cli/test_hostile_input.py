"""Hostile input: a model that fails the IR verifier is refused when read, in one line
naming the operator, before any pass or plan (nothing written); outputs that are not
regular files are refused (tests/export/test_files.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.cli import main
from arenaplan.export.tflite_writer import write_model
from arenaplan.reader import read_model_bytes


@pytest.fixture
def cyclic(tmp_path: Path) -> Path:
    """DS-CNN M with its first two operators swapped: operator 0 reads a tensor
    operator 1 writes (a use before definition: a cycle in TFLM's order)."""
    model = read_model_bytes(ds_cnn("M"))
    sg = model.subgraphs[0]
    ops = list(sg.operators)
    ops[0], ops[1] = replace(ops[1], index=0), replace(ops[0], index=1)
    path = tmp_path / "cyclic.tflite"
    path.write_bytes(write_model(replace(model, subgraphs=(replace(sg, operators=tuple(ops)),))))
    return path


@pytest.mark.parametrize(
    "extra",
    [(), ("--passes", "reorder"), ("--fit", "20KiB"), ("--passes", "cascade,bands")],
    ids=["plan", "reorder", "fit", "cascade"],
)
def test_an_invalid_model_is_refused_before_anything(
    cyclic: Path, tmp_path: Path, capsys, extra: tuple[str, ...]
) -> None:
    out = tmp_path / "out.tflite"
    assert main(["plan", str(cyclic), "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid model" in err and "operator 0" in err
    assert "pass" not in err.split("invalid model")[0]  # no pass is blamed
    assert not out.exists()


def test_sweep_refuses_it_too(cyclic: Path, capsys) -> None:
    assert main(["sweep", str(cyclic), "--target", "generic", "--points", "2"]) == 2
    assert "invalid model" in capsys.readouterr().err
