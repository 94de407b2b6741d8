"""Deciding a capacity runs every phase of minimising: on problems known to pack at
their bound, a capacity that minimising reaches is decided feasible (by the same
phase), and the bound less a byte is proven infeasible."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kits.tilings import Piece, tiling_pieces
from testkit import shared_path

from arenaplan.allocation import Buffer, Problem, check_solution
from arenaplan.allocation import exact as exact_module
from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.exact import check_capacity
from arenaplan.allocation.heuristics import best_greedy
from arenaplan.allocation.minimize import decide, minimize
from arenaplan.cli import main


def _pieces(n: int, seed: int, pinwheel: bool, steps: int = 400, height: int = 1 << 20):
    return tiling_pieces(n, seed, pinwheel, steps, height)


def _problem(pieces: list[Piece], scale: int = 1, aligns: tuple[int, ...] = (1,)) -> Problem:
    rng = random.Random(len(pieces))
    return Problem.of(
        [
            Buffer(f"p{i}", t0, t1, h * scale, rng.choice(aligns))
            for i, (t0, t1, h) in enumerate(pieces)
        ]
    )


def holes(n: int, seed: int, pinwheel: bool) -> Problem:
    """A tiling less a fifth of the pieces not live at one step: that step is still
    full (the bound is the height), the others are not (no tiling to rebuild)."""
    rng = random.Random(seed)
    peak = rng.randrange(400)
    kept = [p for p in _pieces(n, seed, pinwheel) if p[0] <= peak <= p[1] or rng.random() > 0.2]
    return _problem(kept)


def epochs(n: int, seed: int) -> Problem:
    """Two tilings of different heights, one after the other in time."""
    first = _pieces(n // 2, seed, True, steps=300, height=1 << 20)
    then = _pieces(n // 2, seed + 1, True, steps=300, height=3 << 18)
    return _problem(first + [(t0 + 300, t1 + 300, h) for t0, t1, h in then])


def traces(names: list[str]) -> Problem:
    """Real models' arena buffers shifted so that their peaks coincide: each is
    packed at its own bound, so the stack packs at the sum of the peaks."""
    from arenaplan.analysis.buffers import arena_items
    from arenaplan.reader import read_model

    buffers: list[Buffer] = []
    for name in names:
        bufs = arena_items(read_model(shared_path(f"models/{name}.tflite"))).buffers
        steps = range(max(b.last for b in bufs) + 1)
        peak = max(steps, key=lambda s: sum(b.size for b in bufs if b.first <= s <= b.last))
        buffers += [
            Buffer(f"{name}:{b.id}", b.first + 500 - peak, b.last + 500 - peak, b.size, b.alignment)
            for b in bufs
        ]
    return Problem.of(buffers)


# (name, problem, the phase expected to reach the bound): other seeds and sizes
# than benchmarks/solver_hard.py's, and families it does not have.
FAMILIES = {
    "guillotine-41": lambda: _problem(_pieces(600, 41, False)),
    "guillotine-43": lambda: _problem(_pieces(600, 43, False)),
    "pinwheel-51": lambda: _problem(_pieces(600, 51, True)),
    "pinwheel-53": lambda: _problem(_pieces(600, 53, True)),
    "aligned-1": lambda: _problem(_pieces(400, 1, True, height=1 << 14), 64, (16, 32, 64)),
    "aligned-3": lambda: _problem(_pieces(400, 3, True, height=1 << 14), 64, (16, 32, 64)),
    "fine-1": lambda: _problem(_pieces(300, 1, True, steps=3000, height=1 << 12)),
    "fine-2": lambda: _problem(_pieces(300, 2, True, steps=3000, height=1 << 12)),
    "holes-guillotine-1": lambda: holes(200, 1, False),
    "holes-guillotine-3": lambda: holes(200, 3, False),
    "holes-pinwheel-2": lambda: holes(200, 2, True),
    "epochs-1": lambda: epochs(200, 1),
    "epochs-3": lambda: epochs(200, 3),
    "traces-small": lambda: traces(
        [
            "arm-ml-examples__cnn_s_quantized",
            "arm-ml-examples__dnn_s_quantized",
            "mlcommons-tiny__ad01_int8",
            "tflite-micro__test_conv_model",
        ]
    ),
    "traces-mixed": lambda: traces(
        [
            "mlcommons-tiny__kws_ref_model_float32",
            "tflite-micro__trained_lstm_int8",
            "tflite-micro__hello_world_int8",
            "mlcommons-tiny__vww_96_int8",
        ]
    ),
}


@pytest.mark.parametrize("name", FAMILIES)
def test_both_paths_reach_the_bound_by_the_same_phase(name: str) -> None:
    problem = FAMILIES[name]()
    bound = live_bytes_bound(problem)
    solution = minimize(problem, seconds=20)
    check_solution(problem, solution.offsets)
    assert solution.height == bound == solution.lower_bound
    answer = decide(problem, bound, seconds=20)
    assert answer.status == "feasible" and answer.offsets is not None
    check_solution(Problem(problem.buffers, bound), answer.offsets)
    assert answer.reason == solution.allocator  # the phase minimising reached it with
    below = decide(problem, bound - 1, seconds=20)
    assert below.status == "infeasible" and f"{bound} bytes are live" in below.reason


def test_a_tiling_is_decided_by_its_rebuild_where_greedy_and_a_short_search_fail() -> None:
    problem = FAMILIES["pinwheel-51"]()
    bound = live_bytes_bound(problem)
    assert best_greedy(problem, bound) is None
    answer = decide(problem, bound, seconds=20)
    assert (answer.status, answer.reason) == ("feasible", "tiling")


def test_a_capacity_above_the_bound_is_decided_by_the_sweep_at_once() -> None:
    problem = FAMILIES["holes-guillotine-1"]()
    answer = decide(problem, 4 * live_bytes_bound(problem), seconds=20)
    assert (answer.status, answer.reason) == ("feasible", "greedy:start")


def test_fixed_buffers_above_the_capacity_or_overlapping_are_infeasible_at_once() -> None:
    above = Problem.of([Buffer("a", 0, 3, 8, 1, 24), Buffer("b", 0, 1, 4)])
    answer = decide(above, 16)
    assert answer.status == "infeasible" and "buffer a is fixed at offset 24" in answer.reason
    pair = Problem.of([Buffer("a", 0, 3, 8, 1, 0), Buffer("b", 2, 5, 8, 1, 4)])
    answer = decide(pair, 1 << 20)
    assert answer.status == "infeasible" and "fixed buffers a and b overlap" in answer.reason


def test_the_local_search_decides_where_the_exact_search_cannot_run(monkeypatch) -> None:
    rng = random.Random(5)
    bufs = []
    for i in range(800):  # network-like: short lives, a few long, log-uniform sizes
        first = rng.randrange(400)
        life = 130 if rng.random() < 1 / 7 else rng.choice([1, 1, 2, 3, 5, 8])
        size = max(16, int(2 ** rng.uniform(6, 20)) // 16 * 16)
        bufs.append(Buffer(f"b{i}", first, min(first + life, 400), size, 16))
    problem = Problem.of(bufs)
    greedy = best_greedy(problem)
    assert greedy is not None
    height = max(o + b.size for o, b in zip(greedy[1], bufs, strict=True))
    monkeypatch.setattr(exact_module, "MAX_SEARCH_BUFFERS", 100)  # every part too large
    answer = decide(problem, height - 16)
    assert (answer.status, answer.reason) == ("feasible", "improve")
    check_solution(Problem(problem.buffers, height - 16), answer.offsets)


@st.composite
def small(draw) -> Problem:
    bufs = []
    for i in range(draw(st.integers(1, 7))):
        first = draw(st.integers(0, 5))
        last = draw(st.integers(first, first + 4))
        align = draw(st.sampled_from([1, 1, 2, 4]))
        offset = draw(st.sampled_from([None, None, None, None, 0, 4]))
        bufs.append(Buffer(f"b{i}", first, last, draw(st.integers(0, 5)) * align, align, offset))
    return Problem.of(bufs)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(small(), st.integers(0, 24))
def test_decisions_agree_with_the_exact_search(problem: Problem, capacity: int) -> None:
    answer = decide(problem, capacity)
    assert answer.status == check_capacity(problem, capacity).status
    if answer.offsets is not None:
        check_solution(Problem(problem.buffers, capacity), answer.offsets)


def test_solve_capacity_decides_a_tiling_and_names_the_phase(tmp_path, capsys) -> None:
    problem = FAMILIES["pinwheel-53"]()
    bound = live_bytes_bound(problem)
    path = tmp_path / "tiling.csv"
    rows = ["id,lower,upper,size"] + [
        f"{b.id},{b.first},{b.last + 1},{b.size}" for b in problem.buffers
    ]
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "solution.csv"
    assert main(["solve", str(path), "--capacity", str(bound), "-q", "-o", str(out)]) == 0
    assert main(["solve", str(path), "--capacity", str(bound), "--json"]) == 0
    assert '"status": "feasible", "reason": "tiling"' in capsys.readouterr().out
    offsets = [int(line.split(",")[-1]) for line in out.read_text().splitlines()[1:]]
    check_solution(Problem(problem.buffers, bound), offsets)
