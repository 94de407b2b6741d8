"""Perfect packings rebuilt as tilings: found at the bound, checked, never claimed
where there is none."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kits import tiling_rules
from kits.tilings import tiling_pieces

from arenaplan.allocation import Buffer, Problem, check_solution, tiling
from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.exact import SearchParams, check_capacity
from arenaplan.allocation.heuristics import best_greedy
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.tiling import (
    ATTEMPTS,
    Blocks,
    _banned,
    _banning_chains,
    _busy,
    _joined,
    _next_key,
    _scan_bans,
    block_problem,
    is_perfect,
    perfect_packing,
    reduce_blocks,
)


def _tiling(n: int, seed: int, pinwheel: bool, height: int = 1 << 16, steps: int = 400) -> Problem:
    pieces = tiling_pieces(n, seed, pinwheel, steps, height)
    return Problem.of([Buffer(f"p{i}", t0, t1, h) for i, (t0, t1, h) in enumerate(pieces)])


def _rows(blocks: Blocks) -> list[tuple[int, int, int]]:
    return list(zip(blocks.first.tolist(), blocks.last.tolist(), blocks.size.tolist(), strict=True))


def _oracle(
    problem: Problem, stack: str, match: bool, banned: list[tuple[int, int]]
) -> tuple[list, list[int], list[int], list[tuple[int, int]]]:
    """The Python rules' blocks, each buffer's block and offset in it, and the
    chains joined."""
    joined: list[tuple[int, int]] = []
    found = tiling_rules.reduce_blocks(problem, stack, match, banned, joined)
    block, at = [-1] * len(problem.buffers), [0] * len(problem.buffers)
    for k, b in enumerate(found):
        inside: list[int | None] = [None] * len(problem.buffers)
        tiling_rules._unfold(b, 0, inside)
        for i, off in enumerate(inside):
            if off is not None:
                block[i], at[i] = k, off
    return [(b.first, b.last, b.size) for b in found], block, at, joined


@st.composite
def tilings(draw) -> Problem:
    """Tilings, some with holes (pieces dropped away from one step), some with
    buffers of size 0, in a shuffled order."""
    n, seed = draw(st.integers(2, 160)), draw(st.integers(0, 10**6))
    pieces = tiling_pieces(n, seed, draw(st.booleans()), draw(st.sampled_from([7, 40, 400])), 256)
    rng = random.Random(seed)
    if draw(st.booleans()):
        peak = rng.randrange(400)
        pieces = [p for p in pieces if p[0] <= peak <= p[1] or rng.random() > 0.2]
    pieces += [(0, rng.randrange(7), 0)] * draw(st.integers(0, 2))
    rng.shuffle(pieces)
    return Problem.of([Buffer(f"p{i}", *p) for i, p in enumerate(pieces)])


@settings(max_examples=200, deadline=None, derandomize=True)
@given(tilings(), st.sampled_from(list(ATTEMPTS)), st.booleans(), st.data())
def test_the_native_rules_merge_as_the_python_rules(
    problem: Problem, stack: str, match: bool, data: st.DataObject
) -> None:
    keys = sorted({(b.first, b.size) for b in problem.buffers})  # chains the rule may join
    banned = data.draw(st.lists(st.sampled_from(keys), max_size=3)) if keys else []
    got = reduce_blocks(problem, stack, Deadline(None), match, banned)
    assert got is not None
    joined = [tuple(k) for k in got.joined.tolist()]
    want = _oracle(problem, stack, match, banned)
    assert (_rows(got), got.block.tolist(), got.at.tolist(), joined) == want


def test_the_rules_stop_at_the_deadline() -> None:
    deadline = Deadline.after(1e-9)
    assert reduce_blocks(_tiling(200, 3, pinwheel=True), "earliest", deadline) is None
    assert deadline.ended_by == "tiling"


@pytest.mark.parametrize("pinwheel", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tilings_are_packed_at_their_bound(seed: int, pinwheel: bool) -> None:
    problem = _tiling(250, seed, pinwheel)
    bound = live_bytes_bound(problem)
    assert bound == 1 << 16 and is_perfect(problem, bound)
    sol = minimize(problem, seconds=20)
    check_solution(problem, sol.offsets)
    assert sol.height == bound == sol.lower_bound


def test_a_tiling_stack_to_match_misbuilds_is_packed_in_two_passes() -> None:
    """A guillotine tiling where stack-to-match stacks buffers that no packing keeps
    together: with it, every lifetime order's blocks are proven not to fit the
    bound; without it they fit; the two-pass attempt packs the tiling at its bound."""
    problem = _tiling(500, 12, pinwheel=False)
    bound = live_bytes_bound(problem)
    for stack in ("earliest", "latest", "shortest"):
        for match, status in ((True, "infeasible"), (False, "feasible")):
            blocks = reduce_blocks(problem, stack, Deadline(None), match)
            assert blocks is not None
            found = check_capacity(block_problem(problem, blocks), bound, SearchParams(), 30.0)
            assert found.status == status, (stack, match)
    offsets = perfect_packing(problem, bound, Deadline.after(30.0))
    assert offsets is not None
    check_solution(Problem(problem.buffers, bound), offsets)


def test_a_pinwheel_is_rebuilt_into_its_rectangle() -> None:
    pieces = [(0, 5, 3), (6, 9, 7), (3, 9, 5), (0, 2, 9), (3, 5, 4)]  # b, r, t, l, centre
    problem = Problem.of([Buffer(f"p{i}", *p) for i, p in enumerate(pieces)])
    assert is_perfect(problem, 12)
    blocks = reduce_blocks(problem, "", Deadline(None))
    assert blocks is not None and _rows(blocks) == [(0, 9, 12)]  # the five, one rectangle
    assert blocks.block.tolist() == [0] * 5 and blocks.at.tolist() == [0, 0, 7, 3, 3]
    offsets = perfect_packing(problem, 12, Deadline(None))
    assert offsets == [0, 0, 7, 3, 3]
    check_solution(Problem(problem.buffers, 12), offsets)


@pytest.mark.parametrize("cut", range(5))
def test_a_pinwheel_member_cut_across_is_stacked_to_complete_it(cut: int) -> None:
    """One of the five members cut into two pieces of its lifetime: no block across
    a boundary has the member's size, so only completing the pinwheel (its size from
    the other four) stacks the two, and the five become one rectangle."""
    pieces = [(0, 5, 3), (6, 9, 7), (3, 9, 5), (0, 2, 9), (3, 5, 4)]  # b, r, t, l, centre
    t0, t1, size = pieces.pop(cut)
    pieces += [(t0, t1, 1), (t0, t1, size - 1)]
    problem = Problem.of([Buffer(f"p{i}", *p) for i, p in enumerate(pieces)])
    blocks = reduce_blocks(problem, "", Deadline(None))
    assert blocks is not None and _rows(blocks) == [(0, 9, 12)]
    assert blocks.block.tolist() == [0] * 6
    offsets = perfect_packing(problem, 12, Deadline(None))
    assert offsets is not None
    check_solution(Problem(problem.buffers, 12), offsets)


def test_a_chain_joined_by_chance_is_banned_and_the_tiling_packed() -> None:
    """A pinwheel tiling whose blocks, in every lifetime order, are proven not to fit
    the bound: two buffers of one size meet at a boundary by chance and the chain
    rule joins them. With that chain banned the blocks fit, and the last attempt
    (banning the chains joined, busiest boundary first) finds it."""
    problem = _tiling(500, 28, pinwheel=True)
    bound = live_bytes_bound(problem)
    for stack in ("earliest", "latest", "shortest"):
        blocks = reduce_blocks(problem, stack, Deadline(None))
        assert blocks is not None
        found = check_capacity(block_problem(problem, blocks), bound, SearchParams(), 30.0)
        assert found.status == "infeasible", stack
    key = (264, 57)  # a buffer of 57 bytes ends at step 263, another starts at 264
    earliest = reduce_blocks(problem, "earliest", Deadline(None))
    assert earliest is not None and key in [tuple(k) for k in earliest.joined.tolist()]
    banned = reduce_blocks(problem, "earliest", Deadline(None), banned=[key])
    assert banned is not None
    found = check_capacity(block_problem(problem, banned), bound, SearchParams(), 30.0)
    assert found.status == "feasible"
    offsets = _banning_chains(problem, bound, Deadline.after(30.0), SearchParams())
    assert offsets is not None
    check_solution(Problem(problem.buffers, bound), offsets)


def test_the_last_attempt_bans_by_size_without_stack_to_match() -> None:
    """A pinwheel tiling 4,096 bytes high (small sizes: chance meetings and subset
    sums everywhere): banning at the busiest boundaries with stack-to-match ends
    with blocks that do not fit; by size, without stack-to-match, they pack."""
    problem = _tiling(300, 46, pinwheel=True, height=1 << 12)
    bound = live_bytes_bound(problem)
    assert _banning_chains(problem, bound, Deadline.after(30.0), SearchParams()) is None
    offsets = _banning_chains(problem, bound, Deadline.after(30.0), SearchParams(), False)
    assert offsets is not None
    check_solution(Problem(problem.buffers, bound), offsets)
    packed = perfect_packing(problem, bound, Deadline.after(60.0))
    assert packed is not None
    check_solution(Problem(problem.buffers, bound), packed)


def test_a_ban_that_leaves_few_blocks_gets_the_exact_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pinwheel tiling 4,096 bytes high over 3,000 steps: the greedy orders pack
    none of the block sets the bans leave, the exact search packs the 21 blocks
    one leaves (its time raised here: what is tested is that it is tried)."""
    monkeypatch.setattr(tiling, "QUICK_SECONDS", 30.0)
    problem = _tiling(400, 4, pinwheel=True, height=1 << 12, steps=3000)
    bound = live_bytes_bound(problem)
    blocks = reduce_blocks(problem, "earliest", Deadline(None))
    assert blocks is not None and len(blocks.first) > tiling.QUICK_BLOCKS
    busy = _busy(problem)
    packed, fewest = _scan_bans(problem, bound, blocks, Deadline(None), busy, SearchParams())
    assert packed is not None and len(fewest.first) == 21
    check_solution(Problem(problem.buffers, bound), packed)
    assert best_greedy(block_problem(problem, fewest), bound, Deadline(None)) is None


def test_a_ban_whose_freed_blocks_meet_by_chance_is_tried_with_that_join() -> None:
    """A guillotine tiling 4,096 bytes high over 3,000 steps: banning the chain of
    3 bytes at step 1,526 leaves no fewer blocks (freed, its blocks meet others by
    chance: a chain of 159 bytes there, new); banned with that one, fewer."""
    problem = _tiling(600, 27, pinwheel=False, height=1 << 12, steps=3000)
    blocks = reduce_blocks(problem, "earliest", Deadline(None))
    alone = reduce_blocks(problem, "earliest", Deadline(None), banned=[(1526, 3)])
    assert blocks is not None and alone is not None
    assert len(alone.first) >= len(blocks.first)
    assert (1526, 159) in _joined(alone) - _joined(blocks)
    found, keys = _banned(problem, blocks, [], (1526, 3), Deadline(None), True)
    assert keys == [(1526, 3), (1526, 159)]
    assert found is not None and len(found.first) < len(blocks.first)


def test_bans_are_tried_at_the_busiest_boundary_first() -> None:
    """Where one buffer ends and one starts, a join is all but always right: the
    keys at boundaries where several end and start come first, then by size."""
    rows = [(0, 4, 8), (5, 9, 8), (0, 2, 3), (0, 2, 5), (3, 9, 3), (3, 9, 5), (0, 6, 2), (7, 9, 2)]
    problem = Problem.of([Buffer(f"p{i}", *r) for i, r in enumerate(rows)])
    blocks = reduce_blocks(problem, "", Deadline(None))
    assert blocks is not None
    joined = {tuple(k) for k in blocks.joined.tolist()}
    assert joined == {(5, 8), (3, 3), (3, 5), (7, 2)}  # each size meets itself once
    busy = _busy(problem)
    assert busy == {3: 2, 5: 1, 7: 1}
    tried: set[tuple[int, int]] = set()
    order = []
    while (key := _next_key(blocks, tried, busy)) is not None:
        tried.add(key)
        order.append(key)
    assert order == [(3, 3), (3, 5), (7, 2), (5, 8)]
    tried.clear()
    by_size = []
    while (key := _next_key(blocks, tried, {})) is not None:
        tried.add(key)
        by_size.append(key)
    assert by_size == [(7, 2), (3, 3), (3, 5), (5, 8)]


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
    assert blocks is not None
    assert sorted(blocks.size.tolist()) == [64, 64]  # the 5,000 steps chained into one
    offsets = perfect_packing(problem, 128, Deadline(None))
    assert offsets is not None
    check_solution(Problem(problem.buffers, 128), offsets)
