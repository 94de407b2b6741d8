"""Property tests: every allocator returns valid solutions, never below the bound."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from arenaplan.allocation import ALLOCATORS, Buffer, Problem, check_solution
from arenaplan.allocation.bounds import lower_bound


@st.composite
def problems(draw, max_buffers: int = 14, fixed: bool = True) -> Problem:
    n = draw(st.integers(1, max_buffers))
    buffers = []
    for i in range(n):
        first = draw(st.integers(0, 10))
        last = draw(st.integers(first, first + 6))
        align = draw(st.sampled_from([1, 4, 16]))
        size = draw(st.integers(0, 8)) * align + draw(st.sampled_from([0, align]))
        offset = None
        if fixed and draw(st.integers(0, 9)) == 0:
            offset = draw(st.integers(0, 4)) * align * 8
        buffers.append(Buffer(f"b{i}", first, last, size, align, offset))
    # keep fixed buffers apart from each other so that a solution exists
    placed = [b for b in buffers if b.offset is not None]
    for k, b in enumerate(placed):
        for other in placed[:k]:
            if (
                b.overlaps_in_time(other)
                and b.offset < other.offset + other.size
                and other.offset < b.offset + b.size
            ):
                buffers[buffers.index(b)] = Buffer(b.id, b.first, b.last, b.size, b.alignment)
                break
    return Problem.of(buffers)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(problems())
def test_portfolio_and_greedy_solutions_are_valid(problem: Problem) -> None:
    for name in ("portfolio", "greedy", "exact"):
        solution = ALLOCATORS[name].solve(problem)
        check_solution(problem, solution.offsets)
        assert solution.height >= lower_bound(problem)
        assert solution.optimal == (solution.height <= solution.lower_bound)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(problems(fixed=False))
def test_tflm_greedy_is_valid_without_fixed_buffers(problem: Problem) -> None:
    # TFLM's planner ignores alignment (it is given sizes already rounded), so use 1
    plain = Problem.of([Buffer(b.id, b.first, b.last, b.size) for b in problem.buffers])
    solution = ALLOCATORS["tflm-greedy"].solve(plain)
    check_solution(plain, solution.offsets)


def test_chain_reaches_the_bound_where_greedy_by_size_does_not() -> None:
    # a chain like a MobileNet: each tensor overlaps its two neighbours only
    sizes = [27648, 18432, 36864, 36864, 18432, 18432, 9216, 18432, 9216]
    problem = Problem.of([Buffer(f"t{i}", i, i + 1, s, 16) for i, s in enumerate(sizes)])
    tflm = ALLOCATORS["tflm-greedy"].solve(problem)
    ours = ALLOCATORS["portfolio"].solve(problem)
    check_solution(problem, ours.offsets)
    assert ours.height == lower_bound(problem) == 73728
    assert ours.optimal
    assert tflm.height >= ours.height
