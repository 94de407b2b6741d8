"""The solver at scale: the fast structures give the answers of the simple ones,
and one deadline ends every phase with the best so far, named."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import shared_path

from arenaplan.allocation import Buffer, Problem, check_solution
from arenaplan.allocation import exact as exact_module
from arenaplan.allocation.bounds import fixed_overlap, live_bytes_bound
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.exact import SearchParams, check_capacity
from arenaplan.allocation.heuristics import ORDERS, best_greedy, conflict_weight
from arenaplan.allocation.minimalloc_csv import parse_problem, read_problem
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.packing import (
    Columns,
    align_up,
    first_fit,
    first_packing,
    pack,
    skyline,
)
from arenaplan.allocation.portfolio import Portfolio
from arenaplan.allocation.sections import make_part, table_entries
from arenaplan.allocation.validate import _all_overlaps, _disjoint
from arenaplan.cli import main
from arenaplan.errors import AllocationError


@st.composite
def problems(draw, max_buffers: int = 30) -> Problem:
    n = draw(st.integers(1, max_buffers))
    buffers = []
    for i in range(n):
        first = draw(st.integers(0, 15))
        last = draw(st.integers(first, first + 8))
        align = draw(st.sampled_from([1, 2, 4, 16]))
        size = draw(st.integers(0, 9)) * align + draw(st.sampled_from([0, 1, align]))
        offset = None
        if draw(st.integers(0, 9)) == 0:
            offset = draw(st.integers(0, 6)) * 16
        buffers.append(Buffer(f"b{i}", first, last, size, align, offset))
    if draw(st.booleans()):  # one live from the first step to the last: the tree's root
        buffers.append(Buffer("all", 0, 23, draw(st.integers(1, 40)), 1))
    return Problem.of(buffers)


def _reference_pack(problem: Problem, order: list[int], capacity: int | None) -> list[int] | None:
    """First-fit as it was written before: scan every placed buffer live at the same time."""
    bufs = problem.buffers
    offsets = [0] * len(bufs)
    placed: list[tuple[int, int, int, int]] = []  # first, last, lo, hi
    for i, b in enumerate(bufs):
        if b.offset is not None:
            offsets[i] = b.offset
            placed.append((b.first, b.last, b.offset, b.offset + b.size))
    for i in order:
        b = bufs[i]
        if b.offset is not None:
            continue
        busy = sorted(
            (lo, hi) for f, la, lo, hi in placed if f <= b.last and la >= b.first and hi > lo
        )
        cand = 0
        for lo, hi in busy:
            if lo - cand >= b.size:
                break
            cand = max(cand, align_up(hi, b.alignment))
        if capacity is not None and cand + b.size > capacity:
            return None
        offsets[i] = cand
        placed.append((b.first, b.last, cand, cand + b.size))
    return offsets


@settings(max_examples=300, deadline=None, derandomize=True)
@given(problems(), st.sampled_from(sorted(ORDERS)), st.sampled_from([None, 48, 96, 400]))
def test_first_fit_gives_the_offsets_of_the_plain_scan(problem, order_name, capacity) -> None:
    order = ORDERS[order_name](problem)
    assert pack(problem, order, capacity) == _reference_pack(problem, order, capacity)


def test_capped_gap_search_stays_valid_and_skyline_never_probes() -> None:
    rng = random.Random(11)
    bufs = [
        Buffer(f"d{i}", (a := rng.randrange(100)), a + rng.randrange(100), rng.randrange(1, 500))
        for i in range(3000)
    ]
    problem = Problem.of(bufs)
    cols = Columns.of(problem)
    order = ORDERS["size"](problem)
    exact = first_fit(cols, order, probes=-1)[1]
    assert exact == _reference_pack(problem, order, None)
    assert first_fit(cols, order)[1] == exact  # 3,000 buffers < PROBES: exact
    capped = first_fit(cols, order, probes=2)[1]
    check_solution(problem, capped)
    assert capped != exact
    check_solution(problem, skyline(cols))


def test_first_fit_on_larger_random_problems_matches_and_is_valid() -> None:
    rng = random.Random(7)
    for _ in range(5):
        bufs = []
        for i in range(600):
            first = rng.randrange(300)
            last = first + rng.choice([0, 1, 2, 5, 40, 150])
            bufs.append(Buffer(f"r{i}", first, last, rng.randrange(1, 64) * 16, 16))
        problem = Problem.of(bufs)
        for name, order in ORDERS.items():
            offsets = pack(problem, order(problem))
            assert offsets == _reference_pack(problem, order(problem), None), name
            check_solution(problem, offsets)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(problems())
def test_conflict_weight_and_live_bytes_match_brute_force(problem: Problem) -> None:
    bufs = problem.buffers
    brute = [sum(o.size for o in bufs if o.overlaps_in_time(b)) for b in bufs]
    assert conflict_weight(Columns.of(problem)).tolist() == brute
    steps = range(min(b.first for b in bufs), max(b.last for b in bufs) + 1)
    peak = max(sum(b.size for b in bufs if b.first <= t <= b.last) for t in steps)
    assert live_bytes_bound(problem) == peak


@settings(max_examples=200, deadline=None, derandomize=True)
@given(problems())
def test_search_tables_match_their_definition(problem: Problem) -> None:
    members = [i for i, b in enumerate(problem.buffers) if b.size > 0]
    if not members:
        return
    part = make_part(problem, members)
    bufs = [problem.buffers[i] for i in members]
    for k, b in enumerate(bufs):
        near = [j for j, o in enumerate(bufs) if j != k and o.overlaps_in_time(b)]
        assert list(part.ov[part.ov_start[k] : part.ov_start[k + 1]]) == near
    for t, start in enumerate(part.starts):
        live = [k for k, b in enumerate(bufs) if b.first <= start <= b.last]
        assert list(part.sb[part.sb_start[t] : part.sb_start[t + 1]]) == live
        assert part.loads[t] == sum(bufs[k].size for k in live)
    assert table_entries(problem, members) == len(part.ov) + len(part.sb)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(problems(max_buffers=12), st.lists(st.integers(0, 40), min_size=12, max_size=12))
def test_the_validator_sweep_agrees_with_the_pairwise_check(problem, offsets) -> None:
    offs = offsets[: len(problem.buffers)]
    placed = list(range(len(offs)))
    assert _disjoint(problem, offs, placed) == (not _all_overlaps(problem, offs, placed, ()))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(problems(max_buffers=12))
def test_fixed_overlap_finds_a_pair_exactly_when_one_exists(problem: Problem) -> None:
    fixed = [b for b in problem.buffers if b.offset is not None and b.size > 0]
    clash = any(
        a.overlaps_in_time(b) and a.offset < b.offset + b.size and b.offset < a.offset + a.size
        for k, a in enumerate(fixed)
        for b in fixed[:k]
    )
    assert (fixed_overlap(problem) is not None) == clash


def _two_fixed_overlapping(n: int = 300) -> Problem:
    rng = random.Random(3)
    bufs = [
        Buffer(f"t{i}", (f := rng.randrange(100)), f + rng.randrange(5), rng.randrange(1, 9) * 16)
        for i in range(n)
    ]
    bufs.append(Buffer("pinned_a", 10, 30, 64, 16, 0))
    bufs.append(Buffer("pinned_b", 25, 40, 64, 16, 32))
    return Problem.of(bufs)


def test_overlapping_fixed_buffers_are_refused_in_every_mode(tmp_path, capsys) -> None:
    problem = _two_fixed_overlapping()
    named = r"fixed buffers pinned_a and pinned_b overlap at step 25 \(bytes 32..63\)"
    with pytest.raises(AllocationError, match=named):
        minimize(problem, seconds=30)
    for allocator in (Portfolio(), Portfolio(use_exact=False)):
        with pytest.raises(AllocationError, match=named):
            allocator.solve(problem)
    answer = check_capacity(problem, 1 << 20, seconds=30)
    assert answer.status == "infeasible" and "pinned_a and pinned_b" in answer.reason
    path = tmp_path / "p.csv"
    rows = ["id,lower,upper,size,alignment,offset"]
    for b in problem.buffers:
        off = "" if b.offset is None else b.offset
        rows.append(f"{b.id},{b.first},{b.last + 1},{b.size},{b.alignment},{off}")
    path.write_text("\n".join(rows) + "\n")
    assert main(["solve", str(path), "--time-limit", "20"]) == 2  # an input error
    err = capsys.readouterr().err
    assert "pinned_a and pinned_b overlap" in err and len(err.strip().splitlines()) == 1
    assert main(["solve", str(path), "--capacity", "100000", "--time-limit", "20"]) == 1
    out = capsys.readouterr().out  # a decision: proven infeasible, the pair named
    assert "infeasible" in out and "pinned_a and pinned_b overlap" in out


def _random_problem(n: int, seed: int = 1) -> Problem:
    rng = random.Random(seed)
    return Problem.of(
        [
            Buffer(
                f"r{i}",
                (f := rng.randrange(n)),
                f + rng.choice([0, 1, 3, n // 3]),
                16 * (i % 7 + 1),
                16,
            )
            for i in range(n)
        ]
    )


def test_a_deadline_before_any_order_still_gives_the_first_packing() -> None:
    problem = _random_problem(200)
    sweep = first_packing(Columns.of(problem))
    assert (
        sweep[0] == 0
        and sweep[1] == first_fit(Columns.of(problem), ORDERS["start"](problem), probes=-1)[1]
    )
    solution = minimize(problem, deadline=Deadline.after(0.0))
    check_solution(problem, solution.offsets)
    assert solution.stopped == "preparation" and solution.allocator.startswith("sweep")
    assert solution.offsets == tuple(sweep[1])
    quick = Portfolio(seconds=0.0).solve(problem)
    check_solution(problem, quick.offsets)
    assert quick.stopped == "preparation" and quick.allocator == "portfolio:start"
    assert quick.offsets == tuple(sweep[1])


def test_the_first_packing_comes_first_then_each_order_checks_the_deadline() -> None:
    problem = _random_problem(200)
    late = Deadline.after(0.0)
    found = best_greedy(problem, deadline=late)
    assert found == ("start", first_packing(Columns.of(problem))[1])
    assert late.ended_by == "greedy:size"  # the first order after the sweep
    assert best_greedy(problem, deadline=Deadline.after(None)) is not None


def test_reading_past_the_deadline_is_said_and_still_answers() -> None:
    text = "id,lower,upper,size\n" + "".join(
        f"b{i},{i % 50},{i % 50 + 3},{i % 9 + 1}\n" for i in range(500)
    )
    late = Deadline.after(0.0)
    problem = parse_problem(text, deadline=late)
    assert late.ended_by == "reading" and len(problem.buffers) == 500
    solution = minimize(problem, deadline=late)
    check_solution(problem, solution.offsets)
    assert solution.stopped == "reading"


def test_the_search_phase_is_named_when_it_runs_out() -> None:
    problem = read_problem(shared_path("benchmarks/minimalloc/D.1048576.csv"))
    # without the tiling rebuild, which packs D at its bound in a tenth of a second
    solution = minimize(problem, SearchParams(tiling=False), seconds=0.5)
    check_solution(problem, solution.offsets)
    assert solution.stopped == "search" and not solution.optimal
    done = minimize(read_problem(shared_path("benchmarks/minimalloc/input.12.csv")), seconds=30)
    assert done.stopped == "" and done.optimal


def test_parts_beyond_the_search_limits_keep_the_greedy_and_say_why(monkeypatch) -> None:
    problem = _random_problem(300)
    monkeypatch.setattr(exact_module, "MAX_SEARCH_BUFFERS", 50)
    solution = minimize(problem, seconds=30)
    check_solution(problem, solution.offsets)
    if not solution.optimal:
        assert "beyond the exact search's limits" in solution.allocator
        assert solution.allocator.startswith("greedy:")


def test_solve_json_names_the_phase(tmp_path, capsys) -> None:
    import json

    src = shared_path("benchmarks/minimalloc/D.1048576.csv")
    untiled = ["--disable", "tiling"]  # the tiling rebuild packs D at its bound at once
    assert main(["solve", str(src), *untiled, "--time-limit", "0.5", "-q", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["stopped"] == "search" and summary["optimal"] is False
    assert summary["lower_bound"] == 986112 and summary["height"] > 986112
    decide = ["solve", str(src), *untiled, "--capacity", "986112", "--time-limit", "0.3"]
    assert main([*decide, "--json"]) == 3
    decided = json.loads(capsys.readouterr().out.splitlines()[0])
    assert decided["status"] == "unknown" and decided["stopped"] == "search"


def test_columns_compress_steps_into_sections() -> None:
    problem = Problem.of([Buffer("a", 10, 19, 4), Buffer("b", 15, 40, 4), Buffer("c", 41, 41, 0)])
    cols = Columns.of(problem)
    assert cols.n_sections == 4  # [10,15) [15,20) [20,41) [41,42)
    assert cols.sec_lo.tolist() == [0, 1, 3] and cols.sec_hi.tolist() == [2, 3, 4]
    assert np.array_equal(cols.fixed, [-1, -1, -1])


@settings(max_examples=300, deadline=None)
@given(problems())
def test_the_sweep_is_first_fit_in_start_order(problem: Problem) -> None:
    from arenaplan.allocation.packing import sweep_fit

    free = Problem.of([Buffer(b.id, b.first, b.last, b.size, b.alignment) for b in problem.buffers])
    cols = Columns.of(free)
    order = ORDERS["start"](free)
    status, offsets = sweep_fit(cols, order)
    assert status == 0 and offsets == first_fit(cols, order, probes=-1)[1]
    check_solution(free, offsets)
    height = max((o + b.size for o, b in zip(offsets, free.buffers, strict=True)), default=0)
    if height > 0:
        assert sweep_fit(cols, order, capacity=height - 1)[0] == 2  # over capacity
    assert sweep_fit(cols, order[::-1]) is None or len(order) < 2 or len(set(cols.first)) == 1


def test_the_sweep_does_not_apply_to_fixed_buffers_and_keeps_the_deadline() -> None:
    from arenaplan.allocation.packing import sweep_fit

    fixed = Problem.of([Buffer("a", 0, 1, 16, 16, 32), Buffer("b", 0, 1, 16)])
    assert sweep_fit(Columns.of(fixed), [0, 1]) is None
    rng = random.Random(3)
    rows = [
        (f := rng.randrange(50_000), f + rng.randrange(20), 16 * rng.randint(1, 64))
        for _ in range(200_000)
    ]
    big = Problem.of([Buffer(f"b{i}", f, last, s, 16) for i, (f, last, s) in enumerate(rows)])
    cols = Columns.of(big)
    status, offsets = sweep_fit(cols, ORDERS["start"](big), deadline=Deadline.after(1e-4))
    assert (status, offsets) == (3, None)
