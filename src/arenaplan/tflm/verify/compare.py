"""``compare_models``: the original and the planned model, side by side in TFLM.

Besides comparing outputs bit for bit, it checks arenaplan's own numbers against
the runtime: the head TFLM uses with the planned model's offline plan, the tail,
and the smallest working arena, each predicted from the planned model alone (for
the runtime's build profile, ``pypi``) and then measured. Any disagreement is a
wrong number and is reported as such.
"""

from __future__ import annotations

import numpy as np

from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.tflm_greedy import TflmGreedy
from arenaplan.analysis.buffers import arena_items
from arenaplan.errors import UsageError
from arenaplan.ir.model import Model
from arenaplan.reader import read_model_bytes
from arenaplan.runtime.report import Prediction, VerifyReport
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.refusals import refusal_reason
from arenaplan.tflm.tail import min_arena_estimate, tail_estimate
from arenaplan.tflm.validate import offline_plan_problems
from arenaplan.tflm.verify.inputs import random_inputs
from arenaplan.tflm.verify.runner import GENEROUS_ARENA, RunResult, TflmRunner

RUNTIME_PROFILE = "pypi"  # the PyPI runtime's build: 64-bit, compression, recording


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
    """Bisection (multiples of 16) for the smallest arena that allocates and invokes.

    ``high`` is a first guess; it is doubled until the model runs (up to the
    generous arena, where the model is known to run)."""
    hi = -(-max(high, 16) // 16)
    while hi * 16 < GENEROUS_ARENA and not runner.run(model, hi * 16, [inputs], n_outputs).ok:
        hi = min(hi * 2, GENEROUS_ARENA // 16)
    lo = min(low // 16, hi - 1)  # lo fails (or is 0), hi works
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if runner.run(model, mid * 16, [inputs], n_outputs).ok:
            hi = mid
        else:
            lo = mid
    return hi * 16


def _io_signature(model: Model) -> list[tuple[str, tuple[int, ...], str]]:
    sg = model.subgraphs[0]
    return [
        (kind, sg.tensors[i].shape, sg.tensors[i].dtype.name)
        for kind, group in (("input", sg.inputs), ("output", sg.outputs))
        for i in group
    ]


def check_comparable(original: Model, planned: Model) -> None:
    """Two models can be compared when their inputs and outputs are alike."""
    a, b = _io_signature(original), _io_signature(planned)
    if a != b:
        diff = next(
            (
                f"{x[0]} {x[1]} {x[2]} vs {y[0]} {y[1]} {y[2]}"
                for x, y in zip(a, b, strict=False)
                if x != y
            ),
            f"{len(a)} vs {len(b)} inputs and outputs",
        )
        raise UsageError(
            f"the two models do not have the same inputs and outputs ({diff}): "
            "give the original model and the one planned from it"
        )


def predict(planned: Model) -> Prediction:
    """Head, tail and smallest arena of ``planned`` for the runtime's build profile.

    The head is TFLM's greedy planner simulated as TFLM runs it: offline offsets
    where the model gives them (no check, as in TFLM), the rest placed online."""
    items = arena_items(planned)
    given = _offline_offsets(planned, items.tensors)
    fixed = [
        Buffer(b.id, b.first, b.last, b.size, b.alignment, off)
        for b, off in zip(items.tensor_buffers, given, strict=True)
    ]
    problem = Problem((*fixed, *items.scratch_buffers))
    head = TflmGreedy().solve(problem).height
    # only what the plan places (TFLM plans the rest itself); shared bytes only where
    # a rule of docs/inplace.md justifies the pair at the offsets given
    wrong = (
        offline_plan_problems(planned, planned.stored_plan)
        if planned.stored_plan is not None
        else []
    )
    n_planned = len(items.tensors) + len(items.scratch)
    tail = tail_estimate(planned, RUNTIME_PROFILE)
    arena = min_arena_estimate(planned, head, n_planned, RUNTIME_PROFILE)
    return Prediction(head, tail.bytes, arena.bytes, tuple(wrong), arena.unmodelled)


def _offline_offsets(model: Model, keys: tuple[tuple[int, int], ...]) -> list[int | None]:
    """The model's offline offset of each planned tensor; None where TFLM plans it."""
    if model.stored_plan is None:
        return [None] * len(keys)
    given = dict(zip(model.tensor_keys(), model.stored_plan, strict=True))
    return [given[key] if given[key] >= 0 else None for key in keys]


def _apart(model: Model) -> tuple[int, ...]:
    """An offline plan with every planned tensor in bytes of its own (no reuse): a
    layout that is valid whatever the lifetimes, and unlike TFLM's own."""
    items = arena_items(model)
    where, top = {}, 0
    for key, b in zip(items.tensors, items.tensor_buffers, strict=True):
        where[key] = top
        top += b.size
    return model.plan_layout(where)


def _reads_unwritten_memory(
    runner: TflmRunner,
    original: bytes,
    model: Model,
    inputs: list[list[np.ndarray]],
    n_out: int,
    reference: RunResult,
) -> str | None:
    """How the original's outputs change when its tensors are laid out apart, if they
    do: then its kernels read memory that nothing wrote (a kernel that leaves an output
    unwritten, state that is never reset) and bit-exact comparison means nothing."""
    offsets = _apart(model)
    if max(offsets, default=0) > GENEROUS_ARENA // 2:
        return None  # too large to lay out apart in the runtime's arena
    moved = runner.run(with_offline_plan(original, offsets), GENEROUS_ARENA, inputs, n_out)
    if not moved.ok:
        return None
    return _first_mismatch(reference.outputs, moved.outputs)


def compare_models(
    original: bytes,
    planned: bytes,
    trials: int = 3,
    seed: int = 0,
    arena_size: int = GENEROUS_ARENA,
    runner: TflmRunner | None = None,
    figures: bool = True,
) -> VerifyReport:
    """Run both models on the same random inputs; compare outputs bit for bit, and
    arenaplan's predictions for the planned model with what TFLM measures.
    ``runner``: a TFLM worker to reuse (many comparisons), or a ``NativeRunner`` (the
    same interface); by default a new PyPI one. ``figures=False``: outputs and the
    measured head and tail only, no predictions and no search for the smallest arena
    (the predictions are for the PyPI runtime's build)."""
    if runner is None:
        with TflmRunner() as own:
            return compare_models(original, planned, trials, seed, arena_size, own, figures)
    ir, planned_ir = read_model_bytes(original), read_model_bytes(planned)
    check_comparable(ir, planned_ir)
    inputs = random_inputs(ir, trials, seed)
    n_out = len(ir.subgraphs[0].outputs)
    before = runner.run(original, arena_size, inputs, n_out)
    if not before.ok:
        why = f"TFLM refuses the original model: {refusal_reason(ir, before.error)}"
        return VerifyReport(trials, False, None, None, None, 0, None, refused=why)
    unstable = _reads_unwritten_memory(runner, original, ir, inputs, n_out, before)
    if unstable is not None:
        why = (
            f"the original model's outputs depend on where its tensors lie ({unstable} "
            "with every tensor apart): a kernel reads memory nothing wrote, so no plan "
            "can be compared with it bit for bit"
        )
        return VerifyReport(trials, False, None, None, None, 0, None, refused=why)
    after = runner.run(planned, arena_size, inputs, n_out)
    if not after.ok or after.measurement is None:
        why = f"TFLM fails on the planned model: {after.error}"
        return VerifyReport(trials, False, None, before.measurement, None, 0, None, failed=why)
    mismatch = _first_mismatch(before.outputs, after.outputs)
    if not figures:
        return VerifyReport(
            trials, mismatch is None, mismatch, before.measurement, after.measurement, 0, None
        )
    prediction = predict(planned_ir)
    found = smallest_arena(runner, planned, inputs[0], n_out, high=prediction.arena)
    return VerifyReport(
        trials,
        mismatch is None,
        mismatch,
        before.measurement,
        after.measurement,
        found,
        prediction,
        original_predicted=predict(ir),
    )
