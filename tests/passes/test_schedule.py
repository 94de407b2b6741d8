"""The order search on its own: the exact programme against brute force on small random
problems, the beams on wide ones, and the cost model against TFLM's conventions."""

from __future__ import annotations

import itertools
import random

import pytest

from arenaplan.errors import ModelFormatError
from arenaplan.passes.schedule import (
    OrderProblem,
    best_order,
    find_cycle,
    is_topological,
    lower_bound,
    peak_bytes,
    step_bytes,
)


def random_problem(n: int, seed: int, density: float = 0.3, scratch: bool = True) -> OrderProblem:
    """Operator v makes buffer v and uses the buffers of its random predecessors;
    buffers n.. are subgraph inputs used by the first operators; sinks are pinned."""
    rng = random.Random(seed)
    preds, uses = [], []
    for v in range(n):
        ps = sorted(u for u in range(v) if rng.random() < density)
        preds.append(frozenset(ps))
        uses.append((*ps, n) if v < 2 else tuple(ps))
    sinks = {v for v in range(n) if not any(v in p for p in preds)}
    return OrderProblem(
        preds=tuple(preds),
        makes=tuple((v,) for v in range(n)),
        uses=tuple(uses),
        scratch=tuple(16 * rng.randint(0, 3) if scratch else 0 for _ in range(n)),
        sizes=tuple(16 * rng.randint(1, 12) for _ in range(n + 1)),
        held=frozenset({n}),
        pinned=frozenset(sinks),
    )


def topological_orders(problem: OrderProblem):
    for order in itertools.permutations(range(problem.n)):
        if is_topological(problem, order):
            yield order


def test_step_bytes_follow_tflm_scopes() -> None:
    # 0: a(in) -> op0 -> b ; op1: b -> c ; op2: a, c -> d (output). Sizes 16, 32, 48, 64.
    problem = OrderProblem(
        preds=(frozenset(), frozenset({0}), frozenset({1})),
        makes=((1,), (2,), (3,)),
        uses=((0,), (1,), (0, 2)),
        scratch=(0, 100, 0),
        sizes=(16, 32, 48, 64),
        held=frozenset({0}),
        pinned=frozenset({3}),
    )
    # step 0: a; step 1: a b; step 2: a b c + scratch; step 3: a c d
    assert step_bytes(problem, (0, 1, 2)) == [16, 48, 196, 128]
    assert peak_bytes(problem, (0, 1, 2)) == 196
    assert lower_bound(problem) == 196  # a is held and used last: live in op1's step


@pytest.mark.parametrize("seed", range(40))
def test_the_exact_search_matches_brute_force(seed: int) -> None:
    problem = random_problem(7, seed, density=0.25)
    optimum = min(peak_bytes(problem, order) for order in topological_orders(problem))
    found = best_order(problem, range(problem.n), budget=10**6)
    assert found.optimal
    assert is_topological(problem, found.order)
    assert found.peak == peak_bytes(problem, found.order) == optimum
    assert found.lower_bound <= optimum


def test_the_exact_search_runs_when_the_heuristics_fall_short() -> None:
    methods = set()
    for seed in range(60):
        problem = random_problem(12, seed, density=0.15)
        found = best_order(problem, range(problem.n), budget=10**6)
        assert found.optimal and found.peak == peak_bytes(problem, found.order)
        methods.add(found.method)
    assert "exact" in methods


def test_no_order_is_worse_than_the_given_one() -> None:
    for seed in range(30):
        problem = random_problem(30, seed, density=0.08)
        given = tuple(range(problem.n))
        for budget in (0, 2_000, 50_000):
            found = best_order(problem, given, budget)
            assert is_topological(problem, found.order)
            assert found.peak == peak_bytes(problem, found.order) <= peak_bytes(problem, given)
            assert found.work <= budget + problem.n  # one layer may finish past the budget


def test_wide_problems_fall_back_to_beams_within_the_budget() -> None:
    problem = random_problem(60, 6, density=0.05)
    found = best_order(problem, range(problem.n), budget=200_000, moves=False)
    assert not found.optimal and found.method.startswith("beam")
    assert found.peak == peak_bytes(problem, found.order)
    greedy_only = best_order(problem, range(problem.n), budget=0)
    assert found.peak < greedy_only.peak
    assert found.work <= 200_000 + 60 * 64


def test_the_search_is_deterministic() -> None:
    problem = random_problem(40, 7, density=0.06)
    runs = {best_order(problem, range(problem.n), budget=100_000) for _ in range(3)}
    assert len(runs) == 1


def test_an_empty_problem() -> None:
    problem = OrderProblem((), (), (), (), (16,), frozenset({0}), frozenset({0}))
    found = best_order(problem, (), budget=10)
    assert found.order == () and found.peak == 16 and found.optimal


# ---- a cycle is refused, never searched -------------------------------------------


def _cyclic(n: int, cycle: tuple[int, ...]) -> OrderProblem:
    """A chain 0 <- 1 <- ... <- n-1 (each after the one before) plus the edges of
    ``cycle`` (each of its operators after the next)."""
    preds = [set() if v == 0 else {v - 1} for v in range(n)]
    for a, b in itertools.pairwise(cycle):
        preds[a].add(b)
    return OrderProblem(
        preds=tuple(frozenset(p) for p in preds),
        makes=tuple((v,) for v in range(n)),
        uses=tuple(() for _ in range(n)),
        scratch=(0,) * n,
        sizes=(16,) * n,
        held=frozenset(),
        pinned=frozenset({n - 1}),
    )


def test_find_cycle_names_the_operators_of_one_cycle() -> None:
    assert find_cycle(random_problem(8, seed=3)) is None
    cycle = find_cycle(_cyclic(6, (1, 4)))  # 1 after 4, 4 after 3 after 2 after 1
    assert cycle is not None and cycle[0] == cycle[-1]
    assert set(cycle) == {1, 2, 3, 4}
    problem = _cyclic(6, (1, 4))
    for a, b in itertools.pairwise(cycle):
        assert b in problem.preds[a]  # each must run after the next
    assert find_cycle(_cyclic(3, (0, 0))) == (0, 0)  # an operator after itself


def test_best_order_refuses_a_cycle() -> None:
    """Before, the greedy found no ready operator: ``min() arg is an empty sequence``."""
    with pytest.raises(ModelFormatError, match=r"operators 1 -> 4 -> 3 -> 2 -> 1 form a cycle"):
        best_order(_cyclic(6, (1, 4)), range(6), budget=1000)
