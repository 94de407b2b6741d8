"""The plan validator judges slice and concatenation views in closed form
(``placement.validate._one_run``): the same verdict and first element as picking
the elements one by one with numpy, on random small shapes, and at once on a
tensor of 2**31 - 1 elements."""

from __future__ import annotations

import numpy as np

from arenaplan.tflm.validate import _one_run


def _by_numpy(shape: tuple[int, ...], runs: list[tuple[int, int, int]]) -> int | None:
    """Every picked element listed (row-major), then checked one step at a time."""
    axes = [start + step * np.arange(n) for start, n, step in runs]
    picked = np.arange(int(np.prod(shape))).reshape(shape)[np.ix_(*axes)].ravel()
    if picked.size == 0 or not np.all(np.diff(picked) == 1):
        return None
    return int(picked[0])


def test_one_run_agrees_with_numpy_on_random_slices() -> None:
    rng = np.random.default_rng(7)
    for _ in range(3000):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(1, 5, rank))
        runs = []
        for d in shape:
            step = int(rng.choice([1, 1, 1, 2, 3, -1, -2]))
            start = int(rng.integers(0, d))
            reach = len(range(start, d if step > 0 else -1, step))
            runs.append((start, int(rng.integers(0, reach + 1)), step))
        assert _one_run(shape, runs) == _by_numpy(shape, runs), (shape, runs)


def test_one_run_of_a_huge_tensor_is_judged_without_listing_it() -> None:
    big = 2**31 - 1
    assert _one_run((1, big, 1), [(0, 1, 1), (5, big - 5, 1), (0, 1, 1)]) == 5
    assert _one_run((big, 1), [(0, big, 2), (0, 1, 1)]) is None
    assert _one_run((2, big // 2), [(0, 2, 1), (1, big // 2 - 1, 1)]) is None
