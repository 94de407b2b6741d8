"""Planned programs run in ExecuTorch's own C++ runtime (the wheel's library, no
torch) against the programs as exported: outputs bit for bit over two calls, bytes
written inside the planned pools; a plan that bypasses the check is caught there."""

from __future__ import annotations

import json

import pytest
from kits.pte import PROGRAMS, need_runtime, pte_path

from arenaplan.cli import main
from arenaplan.executorch.prove import prove_program
from arenaplan.executorch.runtime import RUNTIME
from arenaplan.executorch.write import with_allocations
from arenaplan.pipeline import PlanRequest, Wanted, read_source, run_plan
from arenaplan.reader.pte_format import read_program


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_planned_program_is_proven(name: str) -> None:
    need_runtime()
    source = read_source(pte_path(name))
    done = run_plan(PlanRequest(source, outputs=Wanted(model=True)))
    proof = prove_program(source.data, done.files["model"])
    assert proof.proven, proof.reason
    assert proof.head <= done.plan.arena and proof.tail > 0  # measured: pool 1, allocator


def test_a_wrong_plan_written_past_the_check_fails_its_proof() -> None:
    """Every tensor of cnn at offset 0, written without the check: ExecuTorch runs
    it, and the proof sees the outputs differ."""
    need_runtime()
    data = pte_path("cnn").read_bytes()
    program = read_program(data)
    plan = program.plans[0]
    moved = {(0, t.value): (1, 0) for t in plan.tensors() if t.memory == 1}
    wrong = with_allocations(data, program, moved, {0: plan.pools})
    proof = prove_program(data, wrong)
    assert not proof.proven and "outputs differ" in (proof.reason or "")


def test_plan_and_verify_from_the_command_line(tmp_path, capsys) -> None:
    need_runtime()
    path = pte_path("views")
    out, plan_json = tmp_path / "views.planned.pte", tmp_path / "plan.json"
    assert main(["plan", str(path), "-o", str(out), "--json", str(plan_json)]) == 0
    doc = json.loads(plan_json.read_text())
    assert doc["kernels"] == "portable" and doc["tensor_count"] == 14
    assert doc["offline_offsets"] == list(RUNTIME.read_plan(read_source(out).model))
    assert main(["verify", str(path), str(out)]) == 0
    said = capsys.readouterr().out
    assert "ExecuTorch runtime" in said and "outputs identical" in said
    assert RUNTIME.read_plan(read_source(out).model) is not None


def test_a_program_whose_own_plan_is_wrong_exits_2(capsys) -> None:
    assert main(["plan", str(pte_path("cnn_overlap"))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "own memory plan is wrong" in err[0]
