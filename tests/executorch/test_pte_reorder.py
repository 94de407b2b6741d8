"""``reorder`` on ExecuTorch programs: the pass never raises the bound of an
exported program; where it lowers it (lstm, rnn) the program written in the new
order has a smaller pool and runs bit-identical in ExecuTorch's runtime; the
checker refuses an order that breaks a data edge or state."""

from __future__ import annotations

from dataclasses import replace

import pytest
from kits.pte import PROGRAMS, need_runtime, pte_path

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Problem
from arenaplan.analysis.buffers import arena_items
from arenaplan.cli import main
from arenaplan.errors import PlanValidationError
from arenaplan.executorch import native, simulate
from arenaplan.executorch.order import with_order
from arenaplan.executorch.prove import prove_program
from arenaplan.executorch.runtime import PORTABLE, RUNTIME
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Options, Subgraph, Tensor
from arenaplan.passes.reorder import Reorder
from arenaplan.passes.reorder import with_order as reordered_subgraph
from arenaplan.pipeline import PlanRequest, Wanted, read_source, run_plan
from arenaplan.reader.pte_format import read_program
from arenaplan.reader.pte_reader import WRITTEN_INPUTS, read_pte_bytes

# the pool of the order as exported (its bound), bytes
GAINS = {"lstm": 23_296, "rnn": 4_992, "int8": 182_912}
BEST = {"int8": 131_072}  # the README's figure: each weight dequantized just before its use


def _bound(model: Model) -> int:
    return live_bytes_bound(Problem(arena_items(model, kernels=PORTABLE).buffers))


@pytest.mark.parametrize("name", PROGRAMS)
def test_reorder_never_raises_the_bound(name: str) -> None:
    model = read_pte_bytes(pte_path(name).read_bytes())
    done = Reorder().run(model)
    assert _bound(done.model) <= _bound(model)
    assert done.changed == (name in GAINS)


@pytest.mark.parametrize("name", sorted(GAINS))
def test_a_reordered_program_has_a_smaller_pool_and_is_proven(name: str) -> None:
    need_runtime()
    source = read_source(pte_path(name))
    assert _bound(source.model) == GAINS[name]
    done = run_plan(PlanRequest(source, passes=("reorder",), outputs=Wanted(model=True)))
    assert done.proof is not None and done.proof.proven, done.proof
    written = done.files["model"]
    pools = [p.pools[1] for p in read_program(written).plans]
    assert max(pools) < GAINS[name]
    assert max(pools) == BEST.get(name, max(pools))
    proof = prove_program(source.data, written)
    assert proof.proven, proof.reason
    again = read_program(written).plans[0].instructions
    assert sorted(again, key=repr) == sorted(
        read_program(source.data).plans[0].instructions, key=repr
    )
    assert again != read_program(source.data).plans[0].instructions


def test_the_chain_is_permuted_and_nothing_else() -> None:
    data = pte_path("cnn").read_bytes()
    order = (3, 0, 1, 2, 4)
    out = with_order(data, {0: order})
    assert len(out) == len(data)
    before, after = read_program(data).plans[0], read_program(out).plans[0]
    assert after.instructions == tuple(before.instructions[k] for k in order)
    assert replace(after, instructions=()) == replace(before, instructions=())


def _moved(model: Model, order: tuple[int, ...]) -> Model:
    sg = reordered_subgraph(model.subgraphs[0], order)
    return replace(model, subgraphs=(sg, *model.subgraphs[1:]))


def test_a_consumer_before_its_producer_is_refused() -> None:
    data = pte_path("cnn").read_bytes()
    model = read_pte_bytes(data)
    bad = _moved(model, (1, 0, 2, 3, 4))  # relu before the convolution it reads
    problems = simulate.plan_problems(bad, simulate.stored_places(model))
    assert problems and "instruction 1 (aten::relu.out)" in problems[0]
    with pytest.raises(PlanValidationError):
        RUNTIME.write_rewrite(data, bad, RUNTIME.read_plan(model))


def _stateful() -> Model:
    """A method with state S: op 0 reads it, op 1 (copy_) writes it, op 2 adds."""
    f32 = DType.FLOAT32
    tensors = tuple(
        Tensor(i, f"value {i}", (4,), f32, 0, False, i == 0, has_rank=True) for i in range(4)
    )
    written = Options(((WRITTEN_INPUTS, (0,)),), "ExecuTorch")
    ops = (
        Operator(0, "aten::mul.out", True, (0, 1), (2,), source=0),
        Operator(1, "aten::copy_", True, (0, 1), (0,), options=written, source=1),
        Operator(2, "aten::add.out", True, (2, 1), (3,), source=2),
    )
    sg = Subgraph(0, "forward", tensors, ops, (1,), (3,))
    return Model((sg,), stored_plan=(0, 16, 32, 48), stored_memory=(1, 1, 1, 1), file_format="pte")


def test_a_state_write_before_its_read_is_refused() -> None:
    model = _stateful()
    assert not simulate.plan_problems(model, simulate.stored_places(model))
    assert (0, 1) in RUNTIME.order_facts(model, 0).before  # write after read
    bad = _moved(model, (1, 0, 2))
    problems = simulate.plan_problems(bad, simulate.stored_places(model))
    assert problems and "call 2" in problems[0]


def test_plan_with_reorder_on_the_command_line(tmp_path) -> None:
    need_runtime()
    out = tmp_path / "out.pte"
    assert main(["plan", str(pte_path("lstm")), "--passes", "reorder", "-o", str(out), "-q"]) == 0
    written = out.read_bytes()
    model = read_pte_bytes(written)
    sg = model.subgraphs[0]
    run = native.run_method(written, sg.name, native.random_inputs(sg, 0), 2)
    assert run.guards and len(run.outputs) == 2
