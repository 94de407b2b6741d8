"""The validator names every kind of violation."""

from __future__ import annotations

import pytest

from arenaplan.allocation import Buffer, Problem, check_solution, solution_problems
from arenaplan.errors import PlanValidationError


def _problem(capacity: int | None = None) -> Problem:
    return Problem.of(
        [Buffer("x", 0, 2, 32, 16), Buffer("y", 2, 3, 16, 16), Buffer("z", 4, 5, 64, 16, offset=0)],
        capacity,
    )


def test_valid_solution_has_no_problems() -> None:
    assert solution_problems(_problem(), [0, 32, 0]) == []


def test_overlap_names_both_buffers_and_the_step() -> None:
    found = solution_problems(_problem(), [0, 16, 0])
    assert found == ["buffers x and y overlap at step 2 (bytes 16..31)"]


def test_buffers_apart_in_time_may_share_bytes() -> None:
    assert solution_problems(_problem(), [0, 32, 0]) == []
    assert solution_problems(Problem.of([Buffer("a", 0, 1, 8), Buffer("b", 2, 3, 8)]), [0, 0]) == []


def test_misaligned_missing_fixed_and_capacity() -> None:
    found = solution_problems(_problem(capacity=48), [8, None, 16])
    assert "buffer x is misaligned: offset 8 is not a multiple of 16" in found
    assert "buffer y is missing (no offset)" in found
    assert "buffer z was fixed at offset 0 but placed at 16" in found
    assert "buffer z ends at byte 80, over the capacity of 48" in found


def test_wrong_length_and_negative_offset() -> None:
    assert solution_problems(_problem(), [0]) == ["1 offsets for 3 buffers"]
    assert "buffer x has a negative offset -16" in solution_problems(_problem(), [-16, 32, 0])


def test_check_raises_with_every_reason() -> None:
    with pytest.raises(PlanValidationError) as info:
        check_solution(_problem(), [0, 16, 0])
    assert info.value.problems == ["buffers x and y overlap at step 2 (bytes 16..31)"]
    assert "overlap at step 2" in str(info.value)
