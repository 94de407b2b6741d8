"""Bounds beyond the max-load bound: never above the optimum found by brute force,
above max-load where the optimum is, and every refutation accepted by the
independent checker (and a corrupted one refused)."""

from __future__ import annotations

import random

import pytest

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.lower_bound import (
    compact,
    refute,
    search_bound,
    subset,
    time_windows,
    window,
)
from arenaplan.allocation.lower_bound_check import CertificateError, check_refutation
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.validate import solution_problems

# Load 8 at steps 1 and 3, but no packing lower than 9 (found by a random search,
# shrunk buffer by buffer while the gap remained; the brute force below agrees).
GAP = ((0, 0, 5), (0, 1, 3), (1, 2, 3), (1, 3, 2), (2, 4, 2), (3, 5, 4), (5, 5, 4))


def make(spec, scale: int = 1) -> Problem:
    return Problem(tuple(Buffer(f"b{i}", a, b, s * scale) for i, (a, b, s) in enumerate(spec)))


def brute_optimum(problem: Problem) -> int:
    """The lowest height, by trying every offset of every buffer (no canonical
    form, no cut but the height reached): slow, obviously right."""
    bufs = problem.buffers
    best = sum(b.size for b in bufs)
    offsets = [0] * len(bufs)

    def fits(i: int, off: int) -> bool:
        return not any(
            bufs[i].overlaps_in_time(bufs[j])
            and off < offsets[j] + bufs[j].size
            and offsets[j] < off + bufs[i].size
            for j in range(i)
        )

    def place(i: int, height: int) -> None:
        nonlocal best
        if height >= best:
            return
        if i == len(bufs):
            best = height
            return
        for off in range(best - bufs[i].size):
            if fits(i, off):
                offsets[i] = off
                place(i + 1, max(height, off + bufs[i].size))

    place(0, 0)
    return best


def random_problem(rng: random.Random) -> Problem:
    n = rng.randint(1, 6)
    spec = []
    for _ in range(n):
        first = rng.randint(0, 5)
        spec.append((first, first + rng.randint(0, 3), rng.randint(1, 4)))
    return make(spec)


def check(problem: Problem, refutation) -> int:
    r = refutation
    return check_refutation(r.problem, r.capacity, r.unit, r.units, r.tree)


def test_gap_instance_beats_max_load_and_is_checked():
    problem = make(GAP)
    assert live_bytes_bound(problem) == 8
    assert brute_optimum(problem) == 9
    result = search_bound(problem)
    assert (result.max_load, result.bound, result.optimal) == (8, 9, True)
    assert check(problem, result.refutation) == 9


def test_bytes_and_units():
    """Sizes in bytes (multiples of 16): the refutation works in units of 16 and
    still proves the byte bound."""
    problem = make(GAP, scale=16)
    assert compact(problem).unit == 16
    result = search_bound(problem)
    assert result.bound == 9 * 16
    assert check(problem, result.refutation) == 9 * 16


def test_never_above_the_optimum_on_random_problems():
    rng = random.Random(12)
    for _ in range(120):
        problem = random_problem(rng)
        optimum = brute_optimum(problem)
        result = search_bound(problem)
        assert result.max_load <= result.bound <= optimum
        assert result.optimal and result.bound == optimum
        if result.refutation is not None:
            assert check(problem, result.refutation) == result.bound


def test_packings_found_are_valid():
    rng = random.Random(3)
    for _ in range(60):
        problem = random_problem(rng)
        load = live_bytes_bound(problem)
        out = refute(problem, load + 2)
        assert out.offsets is not None
        capped = Problem(problem.buffers, load + 2)
        assert solution_problems(capped, out.offsets) == []


def test_windows_and_subsets_are_relaxations():
    """A bound on a window or a subset never exceeds the bound on the whole."""
    problem = make(GAP)
    whole = search_bound(problem).bound
    for first, last in [(0, 2), (1, 3), (2, 5), (0, 5)]:
        assert search_bound(window(problem, first, last)).bound <= whole
    assert search_bound(subset(problem, [0, 1, 2])).bound <= whole
    assert time_windows(problem, 2) == [(0, 1), (0, 2), (2, 4), (4, 5)]  # peaks 0, 1, 3, 5


def test_node_limit_proves_nothing():
    out = refute(make(GAP), 8, node_limit=1)
    assert out.offsets is None and out.refutation is None


def replaced(tree, k, node):
    return [*tree[:k], node, *tree[k + 1 :]]


def corrupted(tree):
    """Certificates that must be refused: a subtree dropped, a cut that does not
    hold, a move at a wrong offset, a tree cut short."""
    tree = list(tree)
    expanded = next(k for k, node in enumerate(tree) if node[2] > 0)
    move, cut, children = tree[expanded]
    yield replaced(tree, expanded, (move, cut, children - 1))
    leaf = next(k for k, node in enumerate(tree) if node[1][0] == "step")
    yield replaced(tree, leaf, (tree[leaf][0], ("step", 99), 0))
    moved = next(k for k, node in enumerate(tree) if node[0][1] > 0)
    (i, off), cut, children = tree[moved]
    yield replaced(tree, moved, ((i, off + 1), cut, children))
    yield tree[:-1]


def test_checker_refuses_corrupted_certificates():
    problem = make(GAP)
    proof = search_bound(problem).refutation
    assert proof is not None
    for bad in corrupted(proof.tree):
        with pytest.raises(CertificateError):
            check_refutation(proof.problem, proof.capacity, proof.unit, proof.units, bad)
    with pytest.raises(CertificateError):  # claims a capacity it did not search
        check_refutation(proof.problem, 9, proof.unit, 9, proof.tree)


def test_checker_refuses_a_packing_in_the_tree():
    """A 'refutation' of a feasible capacity cannot pass: its tree must contain
    a complete placement, or miss a legal move."""
    problem = make(((0, 1, 2), (1, 2, 2)))
    tree = [((-1, -1), ("none", -1), 2), ((0, 0), ("none", -1), 1), ((1, 2), ("none", -1), 0)]
    with pytest.raises(CertificateError):
        check_refutation(problem, 4, 1, 4, tree)
