"""`plan --passes/--fit` and `arenaplan passes`: rewritten, proven in TFLM, or fallen back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import model_path

import arenaplan.tflm.verify.prove as prove_module
from arenaplan.cli import main
from arenaplan.reader import read_model

CONV = "tflite-micro__test_conv_model"


def _plan(tmp_path: Path, capsys, *extra: str) -> tuple[int, dict, str, str]:
    src = model_path(CONV)
    out, js = tmp_path / "out.tflite", tmp_path / "plan.json"
    code = main(["plan", str(src), "-o", str(out), "--json", str(js), *extra])
    captured = capsys.readouterr()
    data = json.loads(js.read_text()) if js.exists() else {}
    return code, data, captured.out, captured.err


def test_passes_lists_every_pass_with_its_options(capsys) -> None:
    assert main(["passes"]) == 0
    out = capsys.readouterr().out
    for name in ("reorder", "bands", "inplace"):
        assert name in out
    assert "max_extra_macs" in out


def test_an_unknown_pass_is_one_usage_line(capsys) -> None:
    assert main(["plan", "x.tflite", "--passes", "bands,fold"]) == 2
    err = capsys.readouterr().err
    assert "unknown pass 'fold'" in err and err.count("\n") == 1
    assert main(["plan", "x.tflite", "--max-extra-macs", "ten"]) == 2
    assert "percentage" in capsys.readouterr().err


def test_bands_rewrite_is_proven_recorded_and_verifies(tmp_path: Path, capsys) -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    code, data, out, _ = _plan(tmp_path, capsys, "--passes", "bands")
    assert code == 0
    (record,) = data["passes"]
    assert record["name"] == "bands" and record["changed"]
    assert record["stats"]["extra_macs_percent"] <= 10
    assert data["proof"]["proven"] and data["proof"]["measured_head"] == data["arena"]["size"]
    assert "pass bands:" in out and "proven in TFLM" in out
    written = read_model(tmp_path / "out.tflite")
    assert written.operator_count > read_model(model_path(CONV)).operator_count
    assert main(["verify", str(model_path(CONV)), str(tmp_path / "out.tflite")]) == 0


def test_the_same_options_give_the_same_bytes(tmp_path: Path, capsys) -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    _plan(tmp_path, capsys, "--passes", "bands,inplace")
    first = (tmp_path / "out.tflite").read_bytes(), (tmp_path / "plan.json").read_bytes()
    _plan(tmp_path, capsys, "--passes", "bands,inplace")
    assert ((tmp_path / "out.tflite").read_bytes(), (tmp_path / "plan.json").read_bytes()) == first


def test_an_unproven_rewrite_falls_back_and_says_why(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(prove_module, "tflm_available", lambda: False)
    code, data, _, err = _plan(tmp_path, capsys, "--passes", "bands")
    assert code == 0
    assert "not proven" in err and "tflm" in err
    assert data["passes"] == [] and data["proof"]["proven"] is False
    original = read_model(model_path(CONV))
    assert read_model(tmp_path / "out.tflite").subgraphs == original.subgraphs


def test_fit_that_no_rewrite_reaches_is_one_line(tmp_path: Path, capsys) -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    code, _, _, err = _plan(tmp_path, capsys, "--fit", "1KiB")
    assert code == 2 and err.count("\n") == 1 and "--fit" in err
    assert not (tmp_path / "out.tflite").exists()


def test_fit_reaches_a_reachable_size_at_small_cost(tmp_path: Path, capsys) -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    bands_only = ("--passes", "reorder,inplace,bands")  # --fit alone may cascade first
    code, data, _, err = _plan(tmp_path, capsys, "--fit", "9000", "--profile", "arm32", *bands_only)
    assert code == 0, err
    bands = next(r for r in data["passes"] if r["name"] == "bands")
    assert bands["stats"]["score_after"] <= 9000
    assert data["persistent"]["arm32"]["min_arena"] <= 9000


def _bands(data: dict) -> dict:
    return next(r for r in data["passes"] if r["name"] == "bands")["stats"]


def test_objective_says_what_the_bands_minimise_and_fit_bounds(tmp_path: Path, capsys) -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    code, default, _, _ = _plan(tmp_path, capsys, "--passes", "bands")
    assert code == 0 and _bands(default)["objective"] == "arena"  # no --persistent-memory
    code, arena, _, _ = _plan(tmp_path, capsys, "--passes", "bands", "--objective", "arena")
    assert code == 0 and arena == default
    code, head, _, _ = _plan(tmp_path, capsys, "--passes", "bands", "--objective", "head")
    stats = _bands(head)
    assert code == 0 and stats["objective"] == "head"
    assert stats["score_after"] == stats["peak_after"] < _bands(arena)["peak_after"]
    # --fit bounds the same figure: the head alone can reach 3,000 B, the arena cannot
    assert _plan(tmp_path, capsys, "--fit", "3000")[0] == 2
    code, fitted, _, err = _plan(tmp_path, capsys, "--fit", "3000", "--objective", "head")
    assert code == 0 and fitted["arena"]["size"] <= 3000, err
    wide = ["--target", "imxrt1170", "--kernels", "reference", "--persistent-memory", "ocram"]
    code, two, _, _ = _plan(tmp_path, capsys, "--passes", "bands", *wide)
    assert code == 0 and _bands(two)["objective"] == "head"  # the tail lives elsewhere
    code, two, _, _ = _plan(tmp_path, capsys, "--passes", "bands", *wide, "--objective", "arena")
    assert code == 0 and _bands(two)["objective"] == "arena"
    assert "invalid choice" in (_plan(tmp_path, capsys, "--objective", "tail")[3])


def test_no_build_for_the_kernels_falls_back_or_writes_unproven(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planned for CMSIS-NN with no build of it here: one line says so and the model is
    planned as given; with --write-unproven the rewrite is written, labelled UNPROVEN
    in the summary and the JSON."""
    monkeypatch.setenv("ARENAPLAN_TFLM_BUILD", str(tmp_path / "no-builds"))
    args = ("--passes", "bands", "--kernels", "cmsis_nn")
    code, data, out, err = _plan(tmp_path, capsys, *args)
    assert code == 0 and "host-cmsis_nn is not built" in err and "planned the model as it" in err
    assert data["proof"]["proven"] is False and data["proof"]["measured_head"] is None
    original = read_model(model_path(CONV)).operator_count
    assert read_model(tmp_path / "out.tflite").operator_count == original
    code, data, out, err = _plan(tmp_path, capsys, *args, "--write-unproven")
    assert code == 0 and "written UNPROVEN" in err and "UNPROVEN" in out
    assert data["proof"]["proven"] is False and "host-cmsis_nn" in data["proof"]["runtime"]
    assert read_model(tmp_path / "out.tflite").operator_count > original


def test_fit_failure_names_the_limit_and_the_figure_in_parts(tmp_path: Path, capsys) -> None:
    """str_ww: every band that lowers the head adds more tail than it saves. The error
    says so, gives head (with its kernel scratch) + tail = the arena, and does not
    blame the MACs the bands were allowed (they used none)."""
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    src = model_path("mlcommons-tiny__str_ww_ref_model")
    bands = ("--passes", "reorder,inplace,bands")  # --fit alone cascades where it can
    assert main(["plan", str(src), "--fit", "10000", "--profile", "arm32", *bands]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert (
        "the smallest arena, head 6,656 B (kernel scratch 0 B of it) + tail 8,596 B, "
        "profile arm32, is 15,252 B; more bands lower the head, but the tail grows by more"
    ) in err
    assert "+0% MACs used of the 400% allowed" in err and "4x" not in err


def test_lower_bound_row_says_it_is_the_rewritten_graphs(tmp_path: Path, capsys) -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    code, _, out, err = _plan(tmp_path, capsys, "--passes", "bands")
    assert code == 0, err
    text = " ".join(out.split())
    assert "lower bound of the rewritten graph" in text  # the table wraps the rest
    assert "TFLM's own planner on the rewritten graph" in text
    code, _, out, err = _plan(tmp_path, capsys)
    assert "lower bound (live bytes at the peak)" in " ".join(out.split())
    assert "rewritten graph" not in out
