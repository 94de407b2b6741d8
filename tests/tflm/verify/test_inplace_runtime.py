"""Aliased plans in the real TFLM runtime: TFLM takes the overlapping offline offsets,
computes bit for bit what the unaliased model computes, and its head is the plan's.

One small model per kernel on the in-place list (and dtype path), the STRIDED_SLICE
and CONCATENATION views, a band structure, and every shared model TFLM runs. The
kernels CMSIS-NN replaces also run in TFLM built with CMSIS-NN (scripts/build_tflm.py;
skipped, naming the command, where it is not built): in plain C on the host and with
DSP on 32-bit ARM. No MVE build runs here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from placement.test_aliases import ALIAS_MODELS, ALL, CLOBBER, CMSIS_MODELS, VIEW_MODELS
from testkit import kernel_set, model_params, model_path

pytest.importorskip(
    "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)

from arenaplan.placement import Plan, PlanOptions, plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.alias_rules import INPLACE, INPLACE_KERNELS
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.validate import offline_plan_problems
from arenaplan.tflm.verify import TflmRunner, compare_models, measure
from arenaplan.tflm.verify.compare import VerifyReport
from arenaplan.tflm.verify.inputs import random_inputs
from arenaplan.tflm.verify.native import VARIANTS, NativeRunner, native_available
from arenaplan.tflm.verify.runner import GENEROUS_ARENA, RunResult

CLOBBER_ALL = PlanOptions(alias_kinds=frozenset({"inplace", "views"}), clobber_inputs=True)


@pytest.fixture(scope="module")
def runner():
    with TflmRunner() as own:
        yield own


def _run(data: bytes, options: PlanOptions, runner: TflmRunner) -> tuple[Plan, VerifyReport]:
    model = read_model_bytes(data)
    plan = plan_model(model, options)
    planned = with_offline_plan(data, plan.tensor_offsets)
    report = compare_models(data, planned, trials=2, seed=0, runner=runner)
    return plan, report


def _check(data: bytes, plan: Plan, report: VerifyReport) -> None:
    """Outputs bit-identical, head = the plan's arena, every other figure as predicted;
    the overlaps TFLM was handed are exactly what the rules allow."""
    assert report.refused is None and report.failed is None, (report.refused, report.failed)
    assert report.identical, report.mismatch
    assert report.planned.head == plan.arena
    # verify's own check of the offline plan may not know aliases yet: it then flags
    # the aliased pairs; every other figure must be as predicted
    flagged = "the offline plan is invalid"
    assert [d for d in report.disagreements() if not d.startswith(flagged)] == []
    model = read_model_bytes(data)
    assert offline_plan_problems(model, plan.tensor_offsets, plan.clobber_inputs) == []


@pytest.mark.parametrize("name", sorted(ALIAS_MODELS))
def test_each_kernel_in_place_is_bit_exact_in_tflm(name: str, runner) -> None:
    build, opcodes = ALIAS_MODELS[name]
    data = build()
    plan, report = _run(data, CLOBBER, runner)
    model = read_model_bytes(data)
    ops = model.subgraphs[0].operators
    used = {ops[a.op].opcode for a in plan.aliases if a.kind == INPLACE}
    assert set(opcodes.split()) <= used
    for a in plan.aliases:  # the output really is at its input's address
        assert plan.tensor_offsets[a.tensor] == plan.tensor_offsets[a.base]
    _check(data, plan, report)


def test_every_listed_kernel_ran_in_place() -> None:
    assert {op for _, ops in ALIAS_MODELS.values() for op in ops.split()} == set(INPLACE_KERNELS)


@pytest.mark.parametrize("name", sorted(VIEW_MODELS))
def test_views_are_bit_exact_in_tflm(name: str, runner) -> None:
    build, kinds = VIEW_MODELS[name]
    data = build()
    plan, report = _run(data, ALL, runner)
    assert kinds <= {a.kind for a in plan.aliases}
    _check(data, plan, report)


def test_simple_add_measured_head_is_32768_with_clobbered_inputs(runner) -> None:
    data = model_path("tflite-micro__simple_add_model").read_bytes()
    plan, report = _run(data, CLOBBER, runner)
    assert report.original.head == 49152
    assert plan.arena == report.planned.head == 32768
    _check(data, plan, report)
    kept = plan_model(read_model_bytes(data), PlanOptions(alias_kinds=frozenset({"inplace"})))
    assert measure(with_offline_plan(data, kept.tensor_offsets)).head == 49152


@pytest.mark.parametrize("path", model_params())
def test_every_shared_model_aliased_runs_bit_exact(path: Path, runner) -> None:
    data = path.read_bytes()
    plan, report = _run(data, CLOBBER_ALL, runner)
    if report.refused and "TFLM refuses the original model" in report.refused:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    _check(data, plan, report)
    assert plan.arena <= plan_model(read_model_bytes(data)).arena


def test_an_unlisted_kernel_in_place_is_caught_by_the_outputs(runner) -> None:
    """The negative control: DEQUANTIZE widens int8 to float32, so writing its output
    over its input corrupts input bytes before they are read. TFLM runs the plan and
    computes garbage; the validator would have refused it."""
    from kits.opmodels import F32, I8, Net

    n = Net("dequantize_in_place")
    x = n.act((1, 64), F32)
    q = n.act((1, 64), I8, 0.02, 3)
    n.op("QUANTIZE", [x], [q])
    y = n.act((1, 64), F32)
    n.op("DEQUANTIZE", [q], [y])
    data = n.done([x], [y])
    model = read_model_bytes(data)
    offsets = list(plan_model(model).tensor_offsets)
    offsets[y] = offsets[q]
    assert offline_plan_problems(model, offsets)  # no rule for it
    report = compare_models(data, with_offline_plan(data, offsets), 2, 0, runner=runner)
    assert not report.identical and "differs" in report.mismatch


# ---- CMSIS-NN builds ----------------------------------------------------------------

NATIVE_BUILDS = ("host-cmsis_nn", "arm32-cmsis_nn")


def _native_pair(variant: str, data: bytes, offsets: list[int]) -> tuple[RunResult, RunResult]:
    """(the model as given, the model with ``offsets`` as its offline plan) in a TFLM
    build from source, on the same random inputs."""
    why = native_available(variant)
    if why is not None:
        pytest.skip(why)
    model = read_model_bytes(data)
    inputs = random_inputs(model, 2, seed=0)
    n_out = len(model.subgraphs[0].outputs)
    with NativeRunner(variant) as native:
        before = native.run(data, GENEROUS_ARENA, inputs, n_out)
        after = native.run(with_offline_plan(data, offsets), GENEROUS_ARENA, inputs, n_out)
    assert before.ok and after.ok, before.error or after.error
    return before, after


def _same(a: RunResult, b: RunResult) -> bool:
    return all(
        x.tobytes() == y.tobytes()
        for ta, tb in zip(a.outputs, b.outputs, strict=True)
        for x, y in zip(ta, tb, strict=True)
    )


@pytest.mark.parametrize("variant", list(NATIVE_BUILDS))
@pytest.mark.parametrize("name", CMSIS_MODELS)
def test_cmsis_nn_kernels_in_place_are_bit_exact(name: str, variant: str) -> None:
    build, opcode = ALIAS_MODELS[name]
    data = build()
    model = read_model_bytes(data)
    options = PlanOptions(
        alias_kinds=frozenset({"inplace"}),
        clobber_inputs=True,
        kernels=kernel_set(VARIANTS[variant].kernels),
    )
    plan = plan_model(model, options)
    ops = model.subgraphs[0].operators
    assert opcode in {ops[a.op].opcode for a in plan.aliases if a.kind == INPLACE}
    before, after = _native_pair(variant, data, list(plan.tensor_offsets))
    assert _same(before, after)
    assert after.measurement.head == plan.arena


@pytest.mark.parametrize("variant", list(NATIVE_BUILDS))
def test_cmsis_nn_widening_softmax_in_place_is_caught_by_the_outputs(variant: str) -> None:
    """The negative control: arm_softmax_s8_s16 writes int16 elements, so its output
    over its input overwrites input bytes before they are read."""
    from kits.opmodels import I8, I16, Net

    n = Net("softmax_s8_s16_in_place")
    x, r = n.act((2, 10), I8, scale=0.1), n.act((2, 10), I8, scale=0.1)
    n.op("RELU", [x], [r])
    y = n.act((2, 10), I16, 1 / 65536, -32768)
    n.op("SOFTMAX", [r], [y], beta=1.0)
    data = n.done([x], [y])
    model = read_model_bytes(data)
    offsets = list(plan_model(model).tensor_offsets)
    offsets[y] = offsets[r]
    kernels = VARIANTS[variant].kernels
    assert offline_plan_problems(model, offsets, kernels=kernels)  # no rule for it
    before, after = _native_pair(variant, data, offsets)
    assert not _same(before, after)
