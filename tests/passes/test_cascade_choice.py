"""How the cascade pass steps its stages with CMSIS-NN kernels: by the time model
(``cost.cascade_steps``), within the memory asked for (``passes.cascade_choice``).

DS-CNN M with the Cortex-M4's kernels (cmsis_nn+dsp) is one chain at the model's
peak: by default every stage steps a row (the least arena); ``--fit`` a few kilobytes
above that buys larger steps where the time model finds them faster, and a size
between takes fewer of them. That the larger steps run fewer instructions in TFLM
is measured in tests/tflm/test_cascade_plan.py."""

from __future__ import annotations

from testkit import kernel_set

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1
from arenaplan.ir.cascade_format import BLOCK_ROWS, CONV_PATH, OPCODE, decode, is_pointwise
from arenaplan.ir.model import Model
from arenaplan.passes import make_pass, run_passes
from arenaplan.passes.cascade import longest_chains
from arenaplan.passes.cascade_choice import STEP_PIXELS, Chooser
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.cascade_steps import cascade_instructions, coefficients, extra_instructions

DSP = "cmsis_nn+dsp"


def _cascaded(model: Model, **options) -> tuple[Model, dict]:
    out, (record,) = run_passes(model, [make_pass("cascade", {"objective": "head", **options})])
    return out, record.stats


def _records(model: Model) -> list[tuple[int, ...]]:
    ops = [op for op in model.subgraphs[0].operators if op.opcode == OPCODE]
    return [r for op in ops for r in decode(op).records]


def _rows(model: Model) -> list[int]:
    return [max(r[BLOCK_ROWS], 1) for r in _records(model)]


def test_the_table_has_every_cmsis_nn_kernel_set_it_was_measured_for() -> None:
    for kernels in ("cmsis_nn", DSP):
        theta = coefficients(kernels)
        assert theta["conv_1x1.sums"] > 0  # CMSIS-NN's C and DSP products sum per call
        assert theta["steps"] > 0


def test_by_default_the_least_arena_and_the_fastest_ways_within_it() -> None:
    """No fit: every stage a row per step (the chain is at the peak), each pointwise
    CONV_2D by the way the time model finds fastest at one row."""
    model = read_model_bytes(ds_cnn("M"))
    out, stats = _cascaded(model, kernels=kernel_set(DSP))
    _, one_row = _cascaded(model, kernels=kernel_set(DSP), step_pixels=0)
    assert _rows(out) == [1] * 10
    assert stats["score_after"] == one_row["score_after"]
    assert stats["steps"] == "time model"
    for r in _records(out):
        if not is_pointwise(r):
            continue
        costs = {}
        for path in (0, 1, 2):
            w = list(r)
            w[CONV_PATH] = path
            costs[path] = cascade_instructions([w], DSP)
        assert r[CONV_PATH] == min(costs, key=costs.get)


def test_fit_buys_the_larger_steps_that_pay_and_a_smaller_fit_fewer() -> None:
    model = read_model_bytes(ds_cnn("M"))
    least, base = _cascaded(model, kernels=kernel_set(DSP))
    roomy, wide = _cascaded(model, kernels=kernel_set(DSP), fit=base["score_after"] + 4096)
    assert base["score_after"] < wide["score_after"] <= base["score_after"] + 4096
    assert sum(_rows(roomy)) > sum(_rows(least))  # larger steps where they fit ...
    assert wide["extra_instructions"] < base["extra_instructions"]  # ... and pay
    between = (base["score_after"] + wide["score_after"]) // 2
    tight, mid = _cascaded(model, kernels=kernel_set(DSP), fit=between)
    assert mid["score_after"] <= between
    assert sum(_rows(least)) <= sum(_rows(tight)) < sum(_rows(roomy))
    assert wide["extra_instructions"] <= mid["extra_instructions"] <= base["extra_instructions"]
    below, low = _cascaded(model, kernels=kernel_set(DSP), fit=base["score_after"] - 1)
    assert _rows(below) == _rows(least)  # nothing smaller: the least
    assert low["score_after"] == base["score_after"]


def test_the_choice_is_no_slower_than_any_uniform_step_that_fits() -> None:
    """The search starts from every uniform step that fits: what it keeps is
    estimated no slower than each of them."""
    model = read_model_bytes(mobilenet_v1(0.25, 96, 1, 2))
    sg = model.subgraphs[0]
    for ops in longest_chains(sg, model.buffers):
        chooser = Chooser(sg, ops, model.buffers, kernel_set("cmsis_nn"))
        least = chooser.least()
        assert least is not None
        room = least.requests + 8192
        best = chooser.fastest(room)
        assert best is not None and best.requests <= room
        for pixels in (0, *STEP_PIXELS, None):
            blocks = [chooser.uniform_block(s, pixels) for s in range(len(ops))]
            other = chooser.option(chooser.steps(blocks))
            if other is not None and other.requests <= room:
                assert best.instructions <= other.instructions


def test_reference_kernels_step_a_row() -> None:
    model = read_model_bytes(ds_cnn("M"))
    out, stats = _cascaded(model)
    assert _rows(out) == [1] * 10 and "steps" not in stats
    assert all(r[CONV_PATH] == 0 for r in _records(out))
    assert extra_instructions(_records(out), "reference") == 0
