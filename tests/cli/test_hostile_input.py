"""Hostile input: a model that fails the IR verifier is refused when read, in one line
naming the operator and the reason, before any pass, plan, analysis or TFLM run
(nothing written), by plan, sweep, profile, verify and inspect; ``inspect --all``
lists every problem instead (exit 0). Outputs that are not regular files are refused
(tests/export/test_files.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.cli import main
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir import Model
from arenaplan.reader import read_model_bytes


def _ds_cnn_with(tmp_path: Path, name: str, edit) -> Path:
    """DS-CNN M with ``edit(subgraph) -> subgraph`` applied, written to ``name``."""
    model: Model = read_model_bytes(ds_cnn("M"))
    sg = edit(model.subgraphs[0])
    path = tmp_path / name
    path.write_bytes(write_model(replace(model, subgraphs=(sg,))))
    return path


def _cycle(sg):
    """Operator 0 (CONV_2D) reads what operator 1 writes, and 1 reads 0's output: a
    cycle in the data flow, which no order runs."""
    a, b = sg.operators[:2]
    return replace(
        sg, operators=(replace(a, inputs=(b.outputs[0], *a.inputs[1:])), *sg.operators[1:])
    )


def _wrong_shape(sg):
    """Operator 0's output (a CONV_2D of 172 filters) one channel wider."""
    tensors = list(sg.tensors)
    y = tensors[sg.operators[0].outputs[0]]
    tensors[y.index] = replace(y, shape=(*y.shape[:-1], y.shape[-1] + 1))
    return replace(sg, tensors=tuple(tensors))


# every kind of invalid model: its file edit and the words its one line must hold
BROKEN = {
    "cycle": (_cycle, "operator 0 CONV_2D: input 0 (tensor 4 'a5') is read before", "a cycle"),
    "shape": (_wrong_shape, "operator 0 CONV_2D: output 0", "the filter [172, 10, 4, 1] gives 172"),
}


@pytest.fixture(params=sorted(BROKEN))
def broken(request, tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    edit, *words = BROKEN[request.param]
    return _ds_cnn_with(tmp_path, f"{request.param}.tflite", edit), tuple(words)


def _one_line_refusal(err: str, path: Path, words: tuple[str, ...]) -> None:
    assert err.count("\n") == 1 and err.startswith(f"arenaplan: error: {path}: invalid model: ")
    for word in words:
        assert word in err, err
    assert "internal error" not in err


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


@pytest.mark.parametrize(
    "extra",
    [(), ("--passes", "reorder"), ("--target", "xcore_ai", "--weights", "auto")],
    ids=["plan", "reorder", "weights"],
)
def test_plan_names_the_operator_and_the_reason(
    broken: tuple[Path, tuple[str, ...]], tmp_path: Path, capsys, extra: tuple[str, ...]
) -> None:
    path, words = broken
    out = tmp_path / "out.tflite"
    assert main(["plan", str(path), "-o", str(out), *extra]) == 2
    _one_line_refusal(capsys.readouterr().err, path, words)
    assert not out.exists()


def test_profile_refuses_it_before_any_analysis(
    broken: tuple[Path, tuple[str, ...]], tmp_path: Path, capsys
) -> None:
    path, words = broken
    out = tmp_path / "profile.json"
    assert main(["profile", str(path), "--json", str(out)]) == 2
    _one_line_refusal(capsys.readouterr().err, path, words)
    assert not out.exists()


@pytest.mark.parametrize("which", ["original", "planned"])
def test_verify_refuses_either_model_before_running_tflm(
    broken: tuple[Path, tuple[str, ...]], tmp_path: Path, capsys, which: str
) -> None:
    path, words = broken
    good = tmp_path / "good.tflite"
    good.write_bytes(ds_cnn("M"))
    args = [path, good] if which == "original" else [good, path]
    assert main(["verify", *map(str, args)]) == 2
    _one_line_refusal(capsys.readouterr().err, path, words)


def test_inspect_refuses_it_in_one_line(broken: tuple[Path, tuple[str, ...]], capsys) -> None:
    path, words = broken
    assert main(["inspect", str(path)]) == 2
    captured = capsys.readouterr()
    _one_line_refusal(captured.err, path, words)
    assert "inspect --all lists every problem" in captured.err
    assert captured.out == ""


def test_inspect_all_reports_every_problem(broken: tuple[Path, tuple[str, ...]], capsys) -> None:
    """The diagnostic: every problem on a line of its own, then the tables; exit 0."""
    from arenaplan.ir.verifier import ir_problems

    path, words = broken
    found = ir_problems(read_model_bytes(path.read_bytes()))
    assert len(found) >= 2  # each edit breaks more than one operator
    assert main(["inspect", str(path), "--all"]) == 0
    out = capsys.readouterr().out
    assert f"{path.name}: invalid model: {len(found)} problems" in out
    lines = out.splitlines()
    for problem in found:
        assert f"  {problem}" in lines  # whole, one line each, naming its operator
    assert all(word in out for word in words)
    assert "operators" in out and "tensors" in out  # the tables follow


def test_a_variable_read_before_a_later_write_reorders(tmp_path: Path, capsys) -> None:
    """Operator 0 reads a variable's state that operator 1, on 0's output, then writes:
    valid for the verifier, and reorder keeps the order instead of ending in
    ``min() arg is an empty sequence`` (a data edge from the later writer was a cycle)."""
    from kits.opmodels import OP_MODELS

    model = read_model_bytes(OP_MODELS["relu_int8"]())  # t0 -> t1 -> t2 -> t3
    sg = model.subgraphs[0]
    tensors = list(sg.tensors)
    tensors[2] = replace(tensors[2], is_variable=True)
    ops = (replace(sg.operators[0], inputs=(2,)), *sg.operators[1:])
    path, out = tmp_path / "variable.tflite", tmp_path / "out.tflite"
    sg = replace(sg, tensors=tuple(tensors), operators=ops)
    path.write_bytes(write_model(replace(model, subgraphs=(sg,))))
    assert main(["plan", str(path), "-o", str(out), "--passes", "reorder"]) == 0
    assert "internal error" not in capsys.readouterr().err
    assert out.exists()
