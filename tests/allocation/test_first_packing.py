"""A first packing always, and never a worse one: the sweep by first step comes
before every other phase, whatever the time limit, on every problem (fixed
buffers too), and no allocator returns anything higher."""

from __future__ import annotations

import csv
import io
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arenaplan.allocation import Buffer, Problem, check_solution, packing
from arenaplan.allocation.bounds import fixed_overlap
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.minimalloc_csv import REQUIRED, format_solution, solution_bytes
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.packing import DONE, OVER_CAPACITY, Columns, first_packing
from arenaplan.allocation.portfolio import Portfolio
from arenaplan.allocation.problem import height_of
from arenaplan.allocation.sections import split_parts
from arenaplan.allocation.tiling import is_perfect
from arenaplan.cli import main


@st.composite
def problems(draw, max_buffers: int = 25) -> Problem:
    buffers = []
    for i in range(draw(st.integers(1, max_buffers))):
        first = draw(st.integers(0, 12))
        align = draw(st.sampled_from([1, 4, 16]))
        size = draw(st.integers(0, 6)) * align + draw(st.sampled_from([0, 1]))
        fixed = None
        if draw(st.integers(0, 7)) == 0:
            fixed = draw(st.integers(0, 5)) * 16
        buffers.append(Buffer(f"b{i}", first, first + draw(st.integers(0, 6)), size, align, fixed))
    return Problem.of(buffers)


@settings(max_examples=250, deadline=None, derandomize=True)
@given(problems())
def test_the_first_packing_is_valid_with_or_without_fixed_buffers(problem: Problem) -> None:
    if fixed_overlap(problem) is not None:
        return
    status, offsets = first_packing(Columns.of(problem))
    assert status == DONE and offsets is not None
    check_solution(problem, offsets)
    height = height_of(problem, offsets)
    assert first_packing(Columns.of(problem), capacity=height) == (DONE, offsets)
    if height > 0:
        assert first_packing(Columns.of(problem), capacity=height - 1) == (OVER_CAPACITY, None)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(problems(), st.sampled_from([0.0, 1e-4, 0.2]))
def test_no_answer_is_worse_than_the_first_packing(problem: Problem, seconds: float) -> None:
    if fixed_overlap(problem) is not None:
        return
    _, sweep = first_packing(Columns.of(problem))
    ceiling = height_of(problem, sweep)
    for solution in (
        minimize(problem, deadline=Deadline.after(seconds)),
        Portfolio(seconds=seconds).solve(problem),
        Portfolio(seconds=seconds, use_exact=False).solve(problem),
    ):
        check_solution(problem, solution.offsets)
        assert solution.height <= ceiling


def _reference_parts(problem: Problem, members: list[int]) -> list[list[int]]:
    """Parts as first written: walk by first step, cut where everything has ended."""
    order = sorted(members, key=lambda i: (problem.buffers[i].first, i))
    parts: list[list[int]] = []
    reach = None
    for i in order:
        b = problem.buffers[i]
        if reach is None or b.first > reach:
            parts.append([])
            reach = b.last
        parts[-1].append(i)
        reach = max(reach, b.last)
    return [sorted(p) for p in parts]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(problems(), st.randoms(use_true_random=False))
def test_parts_match_the_walk_by_first_step(problem: Problem, rng: random.Random) -> None:
    members = [i for i in range(len(problem.buffers)) if rng.random() < 0.8]
    assert split_parts(problem, members) == _reference_parts(problem, members)


def _reference_is_perfect(problem: Problem, bound: int) -> bool:
    bufs = [b for b in problem.buffers if b.size > 0]
    if not bufs or any(b.offset is not None for b in problem.buffers):
        return False
    align = max(b.alignment for b in bufs)
    if any(align % b.alignment or b.size % align for b in bufs):
        return False
    span = max(b.last for b in bufs) - min(b.first for b in bufs) + 1
    return sum(b.size * (b.last - b.first + 1) for b in bufs) == bound * span


@settings(max_examples=300, deadline=None, derandomize=True)
@given(problems(), st.integers(0, 200))
def test_perfect_problems_are_found_as_defined(problem: Problem, bound: int) -> None:
    free = Problem.of([Buffer(b.id, b.first, b.last, b.size, b.alignment) for b in problem.buffers])
    for p in (problem, free):
        assert is_perfect(p, bound) == _reference_is_perfect(p, bound)
    # the area of each buffer is known: a bound that makes it perfect
    area = sum(b.size * (b.last - b.first + 1) for b in free.buffers)
    span = max(b.last for b in free.buffers) - min(b.first for b in free.buffers) + 1
    if area % span == 0:
        assert is_perfect(free, area // span) == _reference_is_perfect(free, area // span)
    huge = Problem.of([Buffer("a", 0, (1 << 61) - 1, 1 << 40), Buffer("b", 0, 0, 1 << 40)])
    assert is_perfect(huge, 1 << 40) == _reference_is_perfect(huge, 1 << 40)


def _csv_module(problem: Problem, offsets: list[int]) -> str:
    with_align = any(b.alignment != 1 for b in problem.buffers)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*REQUIRED, *(["alignment"] if with_align else []), "offset"])
    for b, off in zip(problem.buffers, offsets, strict=True):
        writer.writerow(
            [b.id, b.first, b.last + 1, b.size, *([b.alignment] if with_align else []), off]
        )
    return out.getvalue()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(problems(), st.sampled_from(["x", "a b", " lead", "c,d", 'q"t', "n\nl"]))
def test_solutions_are_written_as_the_csv_module_writes_them(problem: Problem, name: str) -> None:
    renamed = Problem.of(
        [
            Buffer(f"{name}{i}", b.first, b.last, b.size, b.alignment)
            for i, b in enumerate(problem.buffers)
        ]
    )
    offsets = list(range(len(renamed.buffers)))
    assert format_solution(renamed, offsets) == _csv_module(renamed, offsets)


BIG = (1 << 62) - 1  # the largest magnitude the reader takes


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["b", "é", "名前", " pad ", "x y", "a,b", 'q"', "l\nm", ""]),
            st.integers(-BIG, BIG - 1),
            st.integers(0, 3),
            st.sampled_from([0, 1, 7, BIG]),
            st.sampled_from([1, 1, 2, 64]),
            st.sampled_from([0, 5, -3, BIG]),
        ),
        max_size=12,
    )
)
def test_the_native_writer_writes_what_the_csv_module_writes(rows) -> None:
    buffers = [
        Buffer(f"{name}{k}", first, min(first + width, BIG - 1), size, align)
        for k, (name, first, width, size, align, _) in enumerate(rows)
    ]
    problem = Problem(tuple(buffers))
    offsets = [off for *_, off in rows]
    assert solution_bytes(problem, offsets) == _csv_module(problem, offsets).encode()
    assert format_solution(problem, offsets) == _csv_module(problem, offsets)


def test_solve_at_a_vanishing_time_limit_answers_with_the_first_packing(tmp_path, capsys) -> None:
    rng = random.Random(4)
    rows = ["id,lower,upper,size,alignment,offset"]
    for i in range(3000):
        f = rng.randrange(500)
        rows.append(f"b{i},{f},{f + rng.randint(1, 40)},{16 * rng.randint(1, 64)},16,")
    rows.append("pinned,0,600,64,64,0")
    path = tmp_path / "p.csv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "s.csv"
    assert (
        main(["solve", str(path), "--time-limit", "0.000001", "-q", "--json", "-o", str(out)]) == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["stopped"] in ("reading", "preparation")
    assert summary["how"].startswith("sweep")
    offsets = [int(r["offset"]) for r in csv.DictReader(out.open())]
    assert offsets[-1] == 0 and min(offsets[:-1]) >= 64  # the free ones swept above the pinned one


def test_the_time_kept_back_is_the_measured_work_over_the_measured_share() -> None:
    """The reserve is the CPU seconds the caller measured for the work after the
    deadline, over the share of a CPU this process has had: a process that
    waited (here: slept) keeps back more than one that ran."""
    import time

    from arenaplan.allocation import deadline as dl

    assert Deadline.after(10.0).reserve == 0.0  # nothing measured yet
    ran, waited = Deadline.after(10.0), Deadline.after(10.0)
    for d in (ran, waited):
        d.expect("check", 0.1)
        d.expect("write", 0.1)
    end = time.monotonic() + 2 * dl.SETTLED
    while time.monotonic() < end:
        pass  # on CPU
    time.sleep(2 * dl.SETTLED)  # both have waited this long, ``ran`` ran as long before
    waited.cpu_at_start = time.process_time()  # it had no CPU at all
    assert waited.share() == dl.MIN_SHARE and 0 < ran.share() <= 1
    assert waited.reserve == pytest.approx(0.2 / dl.MIN_SHARE + dl.SLACK)
    assert ran.reserve == pytest.approx(0.2 / ran.share() + dl.SLACK, rel=0.05)
    assert waited.reserve > ran.reserve
    before = waited.left()
    waited.expect("check", 0.0)  # a measure replaces the last one of the same work
    assert waited.left() > before


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.integers(-(2**40), 2**40), st.integers(0, 2**62 - 1)), max_size=300),
    st.integers(0, 3),
)
def test_the_start_order_is_lexsorts(rows: list[tuple[int, int]], repeat: int) -> None:
    """By first step, larger first among equals, then by index: what
    ``np.lexsort((-size, first))`` gives, from the radix sort in C."""
    import numpy as np

    from arenaplan.allocation.packing import start_order

    rows = rows * (repeat + 1)  # ties in both keys
    first = np.array([f for f, _ in rows], dtype=np.int64)
    size = np.array([s for _, s in rows], dtype=np.int64)
    assert start_order(first, size).tolist() == np.lexsort((-size, first)).tolist()


def test_a_limit_since_the_start_counts_the_process_age() -> None:
    """``arenaplan solve`` as a program counts its limit from the process's start
    (the interpreter's start-up included); a call from Python counts from the call."""
    import time

    from arenaplan.allocation.deadline import process_age

    age = process_age()
    assert age > 0  # this test process has run a while (Linux's /proc)
    whole, call = Deadline.after(10.0, since_start=True), Deadline.after(10.0)
    assert whole.at is not None and call.at is not None
    assert call.at - whole.at == pytest.approx(age, abs=0.1)
    assert whole.cpu_at_start == 0.0 and call.cpu_at_start <= time.process_time()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(-50, 10**6), st.integers(0, 3000)), min_size=1, max_size=40))
def test_sections_are_numbered_alike_by_table_and_by_sorting(lives) -> None:
    first = np.array([f for f, _ in lives], dtype=np.int64)
    last = first + np.array([w for _, w in lives], dtype=np.int64)
    bounds = np.unique(np.concatenate((first, last + 1)))
    expected = (np.searchsorted(bounds, first), np.searchsorted(bounds, last + 1), len(bounds) - 1)
    for table in (0, 10**9):  # by sorting, then by a table
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(packing, "SPAN_TABLE", table)
            lo, hi, n = packing._sections(first, last)
        assert lo.tolist() == expected[0].tolist() and hi.tolist() == expected[1].tolist()
        assert n == expected[2] and lo.dtype == hi.dtype == np.int32
