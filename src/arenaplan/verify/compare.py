"""``compare_models``: the original and the planned model, side by side in TFLM."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arenaplan.analysis.persistent import min_arena
from arenaplan.placement.buffers import arena_items
from arenaplan.reader import read_model_bytes
from arenaplan.verify.inputs import random_inputs
from arenaplan.verify.runner import GENEROUS_ARENA, Measurement, TflmRunner


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What the runtime showed. ``refused`` says why TFLM would not run the original.

    ``smallest_arena``: the smallest arena (bytes, multiple of 16) in which the
    planned model allocates and runs, found by bisection; ``predicted_arena`` the
    formula's prediction from the measured head and tail.
    """

    trials: int
    identical: bool
    mismatch: str | None
    original: Measurement | None
    planned: Measurement | None
    smallest_arena: int
    predicted_arena: int
    refused: str | None = None


def _first_mismatch(a: list[list[np.ndarray]], b: list[list[np.ndarray]]) -> str | None:
    for trial, (xs, ys) in enumerate(zip(a, b, strict=True)):
        for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
            if x.dtype != y.dtype or x.shape != y.shape:
                return f"output {k}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
            if x.tobytes() != y.tobytes():
                n = int(np.count_nonzero(x != y)) or x.size
                return f"output {k} differs in {n} of {x.size} elements on trial {trial}"
    return None


def smallest_arena(
    runner: TflmRunner,
    model: bytes,
    inputs: list[np.ndarray],
    n_outputs: int,
    high: int,
    low: int = 0,
) -> int:
    """Bisection (multiples of 16) for the smallest arena that allocates and invokes."""
    lo, hi = low // 16, -(-high // 16)  # lo fails (or is 0), hi works
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if runner.run(model, mid * 16, [inputs], n_outputs).ok:
            hi = mid
        else:
            lo = mid
    return hi * 16


def _predicted(planned: bytes, m: Measurement) -> int:
    """The smallest arena predicted from the model and the head alone (no tail measured)."""
    ir = read_model_bytes(planned)
    items = arena_items(ir)
    return min_arena(ir, m.head, len(items.tensors) + len(items.scratch))


def compare_models(
    original: bytes,
    planned: bytes,
    trials: int = 3,
    seed: int = 0,
    arena_size: int = GENEROUS_ARENA,
) -> VerifyReport:
    """Run both models on the same random inputs; compare outputs bit for bit."""
    ir = read_model_bytes(original)
    inputs = random_inputs(ir, trials, seed)
    n_out = len(ir.subgraphs[0].outputs)
    with TflmRunner() as runner:
        before = runner.run(original, arena_size, inputs, n_out)
        if not before.ok:
            return VerifyReport(
                trials,
                False,
                None,
                None,
                None,
                0,
                0,
                refused=f"TFLM refuses the original model: {before.error}",
            )
        after = runner.run(planned, arena_size, inputs, n_out)
        if not after.ok:
            return VerifyReport(
                trials,
                False,
                f"TFLM failed on the planned model: {after.error}",
                before.measurement,
                None,
                0,
                0,
            )
        m = after.measurement
        assert m is not None
        predicted = _predicted(planned, m)
        found = smallest_arena(runner, planned, inputs[0], n_out, high=max(predicted, 16) * 2)
    mismatch = _first_mismatch(before.outputs, after.outputs)
    return VerifyReport(trials, mismatch is None, mismatch, before.measurement, m, found, predicted)
