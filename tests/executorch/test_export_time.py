"""arenaplan as ExecuTorch's memory planning algorithm at export: the programs
``scripts/export_pte.py`` exported with it (a twin of each exported with ExecuTorch's
greedy planner), and the algorithm itself on specs made here (it reads only their
``lifetime``, ``realign``, ``mem_id``, ``storage_base`` and ``shape``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from kits.pte import TWINS, need_runtime, pte_path

from arenaplan.allocation.registry import get_allocator
from arenaplan.errors import PlanValidationError, UsageError
from arenaplan.executorch.export_time import _banks, plan_specs, spread_specs
from arenaplan.executorch.prove import prove_program
from arenaplan.executorch.simulate import own_plan_problems
from arenaplan.pipeline import PlanRequest, read_source, run_plan
from arenaplan.reader.pte_format import read_program


@pytest.mark.parametrize("name", TWINS)
def test_programs_planned_at_export_reach_the_bound(name: str) -> None:
    mine, theirs = pte_path(f"{name}_arenaplan"), pte_path(name)
    source = read_source(mine)
    assert own_plan_problems(source.model) == []
    again = run_plan(PlanRequest(source)).plan
    pools = [p.pools[1] for p in read_program(source.data).plans]
    assert max(pools) == again.lower_bound  # nothing left to gain by planning again
    assert all(a <= b for a, b in zip(pools, _pools(theirs), strict=True))


def test_at_export_views_and_two_methods_take_less_than_greedy() -> None:
    assert _pools(pte_path("views_arenaplan")) == [640] < _pools(pte_path("views")) == [768]
    assert _pools(pte_path("two_methods_arenaplan"))[0] < _pools(pte_path("two_methods"))[0]


@pytest.mark.parametrize("name", TWINS)
def test_programs_planned_at_export_run_as_their_twins(name: str) -> None:
    need_runtime()
    theirs, mine = pte_path(name).read_bytes(), pte_path(f"{name}_arenaplan").read_bytes()
    proof = prove_program(theirs, mine)
    assert proof.proven, proof.reason


def _pools(path) -> list[int]:
    return [p.pools[1] for p in read_program(path.read_bytes()).plans]


@dataclass(eq=False)
class Spec:
    lifetime: list
    size: int
    mem_id: int | None = None
    storage_base: Spec | None = None
    storage_base_offset: int = 0
    shape: tuple = ()
    mem_offset: int | None = field(default=None)

    @property
    def allocated_memory(self) -> int:
        return self.size

    def realign(self, alignment: int) -> int:
        self.size = -(-self.size // alignment) * alignment
        return self.size


def test_specs_are_placed_pins_kept_aliases_follow_room_kept() -> None:
    a, b, c = Spec([0, 1], 100), Spec([1, 2], 40), Spec([2, 3], 100)
    pinned = Spec([0, 3], 30, mem_id=2)
    view = Spec([3, 3], 16, storage_base=c, storage_base_offset=16)
    solver = get_allocator("portfolio", 1.0)
    sizes = plan_specs([view, c, pinned, b, a], 16, 64, [0, 32], solver)
    assert (a.mem_offset - 32) % 16 == 0 and a.mem_id == c.mem_id == 1
    assert a.mem_offset == c.mem_offset  # a dies before c is born: one slot
    assert pinned.mem_id == 2 and pinned.mem_offset == 0
    assert (view.mem_id, view.mem_offset) == (1, c.mem_offset + 16)
    assert sizes == [0, 32 + 112 + 48 + 64, 32 + 64]  # reserved + 2 slots (a|c, b) + padding


def test_a_solution_is_checked_before_a_spec_is_touched() -> None:
    class Wrong:
        def solve(self, problem):
            solution = get_allocator("greedy").solve(problem)
            return type(solution)(
                tuple(0 for _ in solution.offsets), solution.height, 0, "wrong", False
            )

    a, b = Spec([0, 1], 32), Spec([1, 2], 32)
    with pytest.raises(PlanValidationError):
        plan_specs([a, b], 16, 0, [], Wrong())
    assert a.mem_offset is None and b.mem_offset is None


def test_with_a_target_specs_spread_over_its_memories_within_their_capacities() -> None:
    """imxrt1170 with 128 B of TCM: the specs read most per byte stay there, the
    rest go to OCRAM (memory id 2); the pools within the capacities."""
    hot = [Spec([k, k + 1], 128) for k in range(0, 8, 2)]  # each read by 3 nodes
    cold = [Spec([k + 1, k + 2], 128) for k in range(0, 8, 2)]  # each read once
    reads = {id(s): 3 for s in hot} | {id(s): 1 for s in cold}
    banks = _banks("imxrt1170", {"tcm": 128})
    used = spread_specs([*hot, *cold], 16, banks, reads)
    assert [b.name for b in used] == ["tcm", "ocram"]
    assert {s.mem_id for s in hot} == {1} and {s.mem_id for s in cold} == {2}
    sizes = plan_specs([*hot, *cold], 16, 0, [], get_allocator("portfolio", 1.0))
    assert sizes[1] <= 128 and sizes[2] > 0


def test_a_target_leaves_pinned_specs_to_their_pins_and_names_bad_memories() -> None:
    with pytest.raises(UsageError):
        spread_specs([Spec([0, 1], 64, mem_id=2)], 16, _banks("imxrt1170", None), {})
    with pytest.raises(UsageError):
        _banks("imxrt1170", {"sram": 1024})
    with pytest.raises(UsageError):
        _banks("imxrt1170", {"tcm": 10**12})


def test_a_program_spread_at_export_runs_as_its_twin() -> None:
    """unet planned at export over imxrt1170's TCM (64 KiB) and OCRAM: two pools, the
    first within TCM, bit-identical to the program ExecuTorch planned."""
    program = read_program(pte_path("unet_spread").read_bytes())
    pools = program.plans[0].pools
    assert len(pools) == 3 and 0 < pools[1] <= 65536 and pools[2] > 0
    need_runtime()
    proof = prove_program(pte_path("unet").read_bytes(), pte_path("unet_spread").read_bytes())
    assert proof.proven, proof.reason
