"""A ``.pte`` planned through ``run_plan``, checked by the independent simulation,
written back and read again; wrong plans refused by the check, never written."""

from __future__ import annotations

import pytest
from kits.pte import PROGRAMS, WRONG, pte_path

from arenaplan.cli import main
from arenaplan.errors import PlanValidationError, UnsupportedModelError
from arenaplan.executorch import simulate
from arenaplan.executorch.runtime import RUNTIME, new_places
from arenaplan.pipeline import PlanRequest, Wanted, read_source, run_plan
from arenaplan.reader import read_model_bytes
from arenaplan.reader.pte_format import read_program


def _planned(name: str):
    source = read_source(pte_path(name))
    return source, run_plan(PlanRequest(source, outputs=Wanted(model=True, json=True)))


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_program_is_planned_at_most_at_its_own_plan(name: str) -> None:
    source, done = _planned(name)
    assert done.plan.kernels.runtime == "executorch" and done.plan.alignment == 16
    _, own = RUNTIME.own_plan(source.model, done.plan)
    assert done.plan.arena <= own and done.plan.arena >= done.plan.lower_bound
    again = read_model_bytes(done.files["model"])
    assert again.subgraphs == source.model.subgraphs  # nothing but the plan moved
    assert RUNTIME.read_plan(again) == done.plan.tensor_offsets
    assert simulate.own_plan_problems(again) == []
    program = read_program(done.files["model"])
    for plan in program.plans:  # every pool holds what its tensors reach
        reach = [t.offset + 0 for t in plan.tensors() if t.memory == 1]
        assert plan.pools[1] % 16 == 0 and all(o < plan.pools[1] for o in reach)


def test_the_naive_plan_is_halved_and_views_shrink() -> None:
    """ExecuTorch's naive planner leaves 184,368 B; views' own plan 768 B."""
    assert _planned("cnn_naive")[1].plan.arena == _planned("cnn")[1].plan.arena == 90_160
    assert _planned("views")[1].plan.arena < 768


def test_a_program_planned_as_it_is_is_written_byte_for_byte() -> None:
    data = pte_path("attention").read_bytes()
    model = read_model_bytes(data)
    assert RUNTIME.write_plan(data, RUNTIME.read_plan(model)) == data


@pytest.mark.parametrize("name", ["cnn", "views", "counter", "two_methods"])
def test_the_check_refuses_every_tensor_at_zero(name: str) -> None:
    data = pte_path(name).read_bytes()
    zero = [0 if o >= 0 else -1 for o in RUNTIME.read_plan(read_model_bytes(data))]
    with pytest.raises(PlanValidationError):
        RUNTIME.write_plan(data, zero)


def test_the_check_sees_state_overwritten_between_calls() -> None:
    """counter's buffer at the offset of a tensor written before it is read: one call
    alone cannot tell; the second call reads what the first left."""
    model = read_model_bytes(pte_path("counter").read_bytes())
    offsets = list(RUNTIME.read_plan(model))
    state = next(iter(simulate.stored_places(model)))  # the buffer is tensor 0
    assert model.subgraphs[0].tensors[state[1]].is_variable
    offsets[0] = offsets[model.subgraphs[0].operators[0].outputs[0]]  # where add writes
    problems = simulate.plan_problems(model, new_places(model, offsets))
    assert any("call 2" in p for p in problems)


def test_a_program_whose_own_plan_is_wrong_is_refused_in_one_line() -> None:
    source = read_source(pte_path(WRONG))
    with pytest.raises(UnsupportedModelError) as info:
        run_plan(PlanRequest(source))
    assert "own memory plan is wrong" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--passes", "inplace"], "planned as exported"),
        (["--target", "imxrt1170", "--weights", "auto"], "planned as exported"),
        (["--kernels", "cmsis_nn"], "is TFLM's; this model is ExecuTorch's"),
        (["--target", "imxrt1170", "--planner-cpp", "h.h"], "ExecuTorch has no planner source"),
        (["--fit", "1KiB"], "--fit 1,024 B"),
    ],
)
def test_what_a_program_cannot_have_is_one_line(args, says, tmp_path, capsys) -> None:
    path = pte_path("cnn")
    arguments = [a if a != "h.h" else str(tmp_path / "h.h") for a in args]
    assert main(["plan", str(path), *arguments]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]
    assert not (tmp_path / "h.h").exists()


def test_weight_transposes_planned_as_activations_are_named_with_the_fix(capsys) -> None:
    """Plain ``to_edge`` splits linear: its transposed weights are planned activations
    (mlp_split: three, 57,344 B); with linear kept whole there are none."""
    assert main(["plan", str(pte_path("mlp_split")), "-q"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "3 weight transposes" in err[0] and "preserve_ops" in err[0]
    assert main(["plan", str(pte_path("mlp_linear")), "-q"]) == 0
    assert capsys.readouterr().err == ""
