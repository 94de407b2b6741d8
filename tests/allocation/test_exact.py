"""The exact solver: never wrong on instances small enough to enumerate."""

from __future__ import annotations

import dataclasses
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import shared_path

from arenaplan.allocation import Buffer, Problem, check_solution
from arenaplan.allocation.exact import SearchParams, check_capacity
from arenaplan.allocation.minimalloc_csv import read_problem
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.sections import make_part, preorder
from arenaplan.errors import AllocationError

SWITCHES = [f.name for f in dataclasses.fields(SearchParams) if f.type == "bool"]


def _brute_force(problem: Problem, capacity: int) -> bool:
    """Is there any packing? Tries every aligned offset of every buffer."""
    bufs = problem.buffers
    placed: list[tuple[int, int, int, int]] = []

    def place(i: int) -> bool:
        if i == len(bufs):
            return True
        b = bufs[i]
        choices = (
            [b.offset] if b.offset is not None else range(0, capacity - b.size + 1, b.alignment)
        )
        for off in choices:
            if off + b.size > capacity:
                continue
            if any(
                f <= b.last and b.first <= last and off < hi and lo < off + b.size
                for f, last, lo, hi in placed
            ):
                continue
            placed.append((b.first, b.last, off, off + b.size))
            if place(i + 1):
                return True
            placed.pop()
        return False

    return place(0)


@st.composite
def tiny(draw) -> Problem:
    n = draw(st.integers(1, 5))
    bufs = []
    for i in range(n):
        first = draw(st.integers(0, 4))
        last = draw(st.integers(first, first + 3))
        align = draw(st.sampled_from([1, 1, 2]))
        size = draw(st.integers(1, 4)) * align
        fixed = draw(st.sampled_from([None, None, None, 0, 2, 4]))
        bufs.append(Buffer(f"b{i}", first, last, size, align, fixed))
    return Problem.of(bufs)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(tiny(), st.integers(1, 12))
def test_feasibility_answers_match_enumeration(problem: Problem, capacity: int) -> None:
    answer = check_capacity(problem, capacity)
    assert answer.status in ("feasible", "infeasible")
    assert (answer.status == "feasible") == _brute_force(problem, capacity)
    if answer.offsets is not None:
        check_solution(Problem(problem.buffers, capacity), answer.offsets)


@pytest.mark.parametrize("switch", SWITCHES)
def test_every_switch_off_still_answers_right(switch: str) -> None:
    params = SearchParams(**{switch: False})
    cases = [(p, c) for p, c in product(_fixed_cases(), range(4, 13))]
    for problem, capacity in cases:
        answer = check_capacity(problem, capacity, params)
        assert (answer.status == "feasible") == _brute_force(problem, capacity), (switch, capacity)


def _fixed_cases() -> list[Problem]:
    return [
        Problem.of(
            [
                Buffer("b1", 0, 2, 4),
                Buffer("b2", 3, 8, 4),
                Buffer("b3", 0, 8, 4),
                Buffer("b4", 9, 20, 4),
                Buffer("b5", 0, 20, 4),
            ]
        ),
        Problem.of(
            [
                Buffer("a", 0, 3, 3),
                Buffer("b", 1, 2, 5),
                Buffer("c", 2, 5, 2),
                Buffer("d", 4, 6, 4),
                Buffer("e", 0, 6, 1),
            ]
        ),
        Problem.of([Buffer("x", 0, 1, 4, 2), Buffer("y", 1, 2, 3), Buffer("z", 0, 2, 2, 2, 4)]),
    ]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(tiny())
def test_minimize_finds_the_enumerated_optimum(problem: Problem) -> None:
    if not _brute_force(problem, 64):
        with pytest.raises(
            AllocationError, match=r"fixed buffers \S+ and \S+ overlap .*: no packing exists"
        ):
            minimize(problem)
        return
    solution = minimize(problem)
    check_solution(problem, solution.offsets)
    best = next(c for c in range(0, 64) if _brute_force(problem, c))
    assert solution.height == best
    assert solution.optimal


def test_readme_example_and_infeasibility_reasons() -> None:
    problem = read_problem(shared_path("benchmarks/minimalloc/input.12.csv"))
    solution = minimize(problem)
    assert solution.height == 12 and solution.optimal
    tight = check_capacity(problem, 11)
    assert tight.status == "infeasible"
    assert "12 bytes are live at step 0" in tight.reason
    # live bytes fit, but no packing does: the search itself must prove it
    odd = Problem.of([Buffer("a", 0, 0, 2), Buffer("e", 0, 2, 1, offset=1)])
    answer = check_capacity(odd, 3)  # 3 bytes live, but no 2 contiguous bytes free
    assert answer.status == "infeasible" and answer.reason == "the search space is exhausted"
    assert not _brute_force(odd, 3)


def test_a_time_limit_returns_the_best_so_far() -> None:
    problem = read_problem(shared_path("benchmarks/minimalloc/D.1048576.csv"))
    solution = minimize(problem, SearchParams(tiling=False), seconds=0.5)
    check_solution(problem, solution.offsets)
    assert solution.lower_bound == 986112 < solution.height
    assert not solution.optimal
    unknown = check_capacity(problem, 986112, seconds=0.2)
    assert unknown.status == "unknown" and unknown.reason == "time limit reached"


def test_d_packs_at_its_max_load_bound_by_the_tiling_rebuild() -> None:
    """MiniMalloc's D: 986,112 bytes, the max-load bound, so optimal (the best known
    height in ../shared's table is 1,029,120); the rebuild merges its buffers into
    blocks the exact search places at the bound, unfolded and validated."""
    problem = read_problem(shared_path("benchmarks/minimalloc/D.1048576.csv"))
    solution = minimize(problem, seconds=30)
    check_solution(problem, solution.offsets)
    assert solution.optimal and solution.height == 986112 and solution.allocator == "tiling"


@pytest.mark.parametrize("name", ["A", "C", "E", "G", "I", "K"])
def test_public_hard_instances_reach_their_optimum(name: str) -> None:
    problem = read_problem(shared_path(f"benchmarks/minimalloc/{name}.1048576.csv"))
    solution = minimize(problem, seconds=60)
    check_solution(problem, solution.offsets)
    assert solution.optimal
    assert solution.height == {"C": 1039360}.get(name, 1048576)


def _preorder_by_statement(part, heuristic: str) -> list[int]:
    """The exact search's preorder as its docstring states it, key by key."""
    keys = []
    for k in range(len(part.buffers)):
        lo, hi = part.sec_lo[k], part.sec_hi[k]
        first, last = part.first[k], part.last[k]
        width = last - first + 1
        data = {
            "W": width,
            "A": width * part.size[k],
            "Z": part.size[k],
            "C": hi - lo,
            "T": max(part.loads[lo:hi], default=0),
            "L": first,
            "U": last,
            "O": part.ov_start[k + 1] - part.ov_start[k],
        }
        keys.append((*(-data[c] for c in heuristic), k))
    return sorted(range(len(part.buffers)), key=lambda k: keys[k])


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(st.integers(-5, 30), st.integers(0, 9), st.sampled_from([1, 2, 8, 1 << 58])),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["WAT", "TAW", "TWA", "ZCLUO", "OUL", "A", "T"]),
)
def test_the_preorders_sort_by_their_stated_keys(rows, heuristic: str) -> None:
    problem = Problem.of([Buffer(f"b{i}", f, f + w, z) for i, (f, w, z) in enumerate(rows)])
    part = make_part(problem, list(range(len(rows))))
    assert list(preorder(part, heuristic)) == _preorder_by_statement(part, heuristic)
