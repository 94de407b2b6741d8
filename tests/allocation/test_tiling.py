"""Perfect packings rebuilt as tilings: found at the bound, checked, never claimed
where there is none."""

from __future__ import annotations

import pytest
from kits.tilings import tiling_pieces

from arenaplan.allocation import Buffer, Problem, check_solution
from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.tiling import is_perfect, perfect_packing, reduce_blocks


def _tiling(n: int, seed: int, pinwheel: bool, height: int = 1 << 16) -> Problem:
    pieces = tiling_pieces(n, seed, pinwheel, 400, height)
    return Problem.of([Buffer(f"p{i}", t0, t1, h) for i, (t0, t1, h) in enumerate(pieces)])


@pytest.mark.parametrize("pinwheel", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tilings_are_packed_at_their_bound(seed: int, pinwheel: bool) -> None:
    problem = _tiling(250, seed, pinwheel)
    bound = live_bytes_bound(problem)
    assert bound == 1 << 16 and is_perfect(problem, bound)
    sol = minimize(problem, seconds=20)
    check_solution(problem, sol.offsets)
    assert sol.height == bound == sol.lower_bound


def test_a_pinwheel_is_rebuilt_into_its_rectangle() -> None:
    pieces = [(0, 5, 3), (6, 9, 7), (3, 9, 5), (0, 2, 9), (3, 5, 4)]  # b, r, t, l, centre
    problem = Problem.of([Buffer(f"p{i}", *p) for i, p in enumerate(pieces)])
    assert is_perfect(problem, 12)
    blocks = reduce_blocks(problem, "", Deadline(None))
    assert [(b.first, b.last, b.size, b.kind) for b in blocks] == [(0, 9, 12, "pinwheel")]
    offsets = perfect_packing(problem, 12, Deadline(None))
    assert offsets == [0, 0, 7, 3, 3]
    check_solution(Problem(problem.buffers, 12), offsets)


def test_no_packing_is_claimed_below_the_bound_and_slack_is_not_perfect() -> None:
    problem = _tiling(120, 5, pinwheel=True)
    bound = live_bytes_bound(problem)
    assert perfect_packing(problem, bound - 1, Deadline.after(2.0)) is None
    loose = Problem.of([*problem.buffers, Buffer("extra", 0, 0, 16)])
    assert not is_perfect(loose, live_bytes_bound(loose))  # step 0 is higher than the rest
    odd = Problem.of([Buffer("a", 0, 1, 24, 16), Buffer("b", 0, 1, 8)])
    assert not is_perfect(odd, 32)  # a 24-byte buffer cannot keep 16-byte blocks aligned


def test_the_same_tiling_gives_the_same_packing() -> None:
    problem = _tiling(200, 7, pinwheel=True)
    bound = live_bytes_bound(problem)
    runs = [perfect_packing(problem, bound, Deadline(None)) for _ in range(2)]
    assert runs[0] is not None and runs[0] == runs[1]


def test_a_long_chain_unfolds_without_recursion() -> None:
    bufs = [Buffer(f"t{i}", i, i, 64) for i in range(5000)] + [Buffer("all", 0, 4999, 64)]
    problem = Problem.of(bufs)
    assert is_perfect(problem, 128)
    blocks = reduce_blocks(problem, "", Deadline(None))
    assert sorted(b.size for b in blocks) == [64, 64]  # the 5,000 steps chained into one
    offsets = perfect_packing(problem, 128, Deadline(None))
    assert offsets is not None
    check_solution(Problem(problem.buffers, 128), offsets)
