"""Local search over first-fit orders: never worse, valid, deterministic, and used
by ``minimize`` where the exact search cannot go."""

from __future__ import annotations

import random

from arenaplan.allocation import Buffer, Problem, check_solution
from arenaplan.allocation import minimize as minimize_module
from arenaplan.allocation.bounds import lower_bound
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.heuristics import COLUMN_ORDERS, best_greedy
from arenaplan.allocation.improve import squeaky_wheel
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.packing import Columns


def _network_like(n: int, seed: int) -> Problem:
    """Short lifetimes and a few long ones, sizes log-uniform: greedy stays above
    the bound."""
    rng = random.Random(seed)
    steps = max(n // 2, 8)
    buffers = []
    for i in range(n):
        first = rng.randrange(steps)
        life = steps // 3 if rng.random() < 1 / 7 else rng.choice([1, 1, 2, 3, 5, 8])
        size = max(16, int(2 ** rng.uniform(6, 20)) // 16 * 16)
        buffers.append(Buffer(f"b{i}", first, min(first + life, steps), size, 16))
    return Problem.of(buffers)


def test_local_search_lowers_the_greedy_packing_and_repeats_itself() -> None:
    problem = _network_like(600, 1)
    cols, lb = Columns.of(problem), lower_bound(problem)
    name, offsets = best_greedy(problem, None, None, cols)
    greedy = max(o + b.size for o, b in zip(offsets, problem.buffers, strict=True))
    assert greedy > lb  # else there is nothing to improve
    runs = [
        squeaky_wheel(cols, offsets, lb, Deadline(None), COLUMN_ORDERS[name](cols), rounds=60)
        for _ in range(2)
    ]
    assert runs[0] == runs[1]  # no time, no randomness in the result
    found = runs[0]
    check_solution(problem, found.offsets)
    tops = max(o + b.size for o, b in zip(found.offsets, problem.buffers, strict=True))
    assert found.height == tops < greedy
    assert found.height >= lb


def test_local_search_from_offsets_alone_is_never_worse() -> None:
    problem = _network_like(300, 2)
    cols, lb = Columns.of(problem), lower_bound(problem)
    _, offsets = best_greedy(problem, None, None, cols)
    start = max(o + b.size for o, b in zip(offsets, problem.buffers, strict=True))
    found = squeaky_wheel(cols, offsets, lb, Deadline(None), rounds=20)
    check_solution(problem, found.offsets)
    assert lb <= found.height <= start


def test_local_search_stops_at_the_bound_and_at_the_deadline() -> None:
    problem = Problem.of([Buffer("a", 0, 1, 32), Buffer("b", 1, 2, 32), Buffer("c", 2, 3, 32)])
    cols = Columns.of(problem)
    found = squeaky_wheel(cols, [0, 32, 0], 64, Deadline(None))
    assert (found.height, found.rounds) == (64, 0)  # already at the bound: no round
    big = _network_like(600, 3)
    cols, lb = Columns.of(big), lower_bound(big)
    _, offsets = best_greedy(big, None, None, cols)
    gone = Deadline.after(0.0)
    found = squeaky_wheel(cols, offsets, lb, gone)
    assert found.rounds == 0 and gone.ended_by == "improve"
    assert found.offsets == offsets


def test_minimize_searches_locally_where_the_exact_search_cannot(monkeypatch) -> None:
    problem = _network_like(600, 4)
    greedy = best_greedy(problem)
    assert greedy is not None
    monkeypatch.setattr(minimize_module, "LARGE", 10**9)
    from arenaplan.allocation import exact

    monkeypatch.setattr(exact, "MAX_SEARCH_BUFFERS", 100)  # every part too large
    sol = minimize(problem, seconds=3)
    check_solution(problem, sol.offsets)
    height = max(o + b.size for o, b in zip(greedy[1], problem.buffers, strict=True))
    assert sol.height < height and sol.allocator.startswith("improve")
    assert "beyond the exact search's limits" in sol.allocator


def test_capacities_tried_are_multiples_of_the_sizes_gcd() -> None:
    from arenaplan.allocation.minimize import _next_try, _State, _unit
    from arenaplan.allocation.packing import Columns

    def unit(*buffers: Buffer) -> int:
        return _unit(Columns.of(Problem.of(buffers)))

    assert unit(Buffer("a", 0, 1, 3072), Buffer("b", 1, 2, 1024)) == 1024
    assert unit(Buffer("a", 0, 1, 48, 16), Buffer("b", 1, 2, 32, 16)) == 16
    assert unit(Buffer("a", 0, 1, 48, 32), Buffer("b", 1, 2, 32)) == 1
    assert unit(Buffer("a", 0, 1, 64, 16, offset=48), Buffer("b", 1, 2, 64, 16)) == 16
    state = _State(lo=986_112, ub=1_025_024, offsets=[], how="", unit=1024)
    first, _ = _next_try(state, None)
    assert first == 986_112
    caps = []
    last = object()
    for misses in range(40):
        state.misses = misses
        cap, _ = _next_try(state, last)  # type: ignore[arg-type]
        caps.append(cap)
    assert all(c % 1024 == 0 and state.lo <= c < state.ub for c in caps)


def test_the_answer_says_why_the_exact_search_did_not_run_when_the_rounds_use_all_the_time(
    monkeypatch,
) -> None:
    problem = _network_like(4000, 2)  # 1,000 rounds of 4,000 buffers: far beyond 2 s
    from arenaplan.allocation import exact

    monkeypatch.setattr(exact, "MAX_SEARCH_BUFFERS", 100)  # every part too large
    sol = minimize(problem, seconds=2)
    check_solution(problem, sol.offsets)
    assert sol.stopped == "improve"
    assert "beyond the exact search's limits" in sol.allocator
