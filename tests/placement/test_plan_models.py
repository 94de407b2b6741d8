"""Plans of every real model: at the lower bound, validated, never worse than TFLM."""

from __future__ import annotations

import dataclasses

import pytest
from testkit import model_params, model_path

from arenaplan.errors import PlanValidationError
from arenaplan.placement import PlanOptions, check_plan, plan_model
from arenaplan.reader import read_model

# TFLM's measured head on the unmodified model (models README; PyPI runtime)
TFLM_HEAD = {
    "arm-ml-examples__cnn_s_quantized": 9760,
    "arm-ml-examples__dnn_s_quantized": 1264,
    "arm-ml-examples__ds_cnn_s_quantized": 16000,
    "google-coral-test-data__keras_lstm_mnist_ptq": 1568,
    "mlcommons-tiny__ad01_int8": 768,
    "mlcommons-tiny__kws_ref_model": 16000,
    "mlcommons-tiny__pretrainedResnet_quant": 49152,
    "mlcommons-tiny__str_ww_ref_model": 6656,
    "mlcommons-tiny__vww_96_int8": 73728,
    "tflite-micro__audio_preprocessor_int8": 3040,
    "tflite-micro__hello_world_float": 128,
    "tflite-micro__hello_world_int8": 32,
    "tflite-micro__keyword_scrambled": 672,
    "tflite-micro__micro_speech_quantized": 5968,
    "tflite-micro__simple_add_model": 49152,
    "tflite-micro__test_conv_model": 7744,
    "tflite-micro__trained_lstm_int8": 1536,
}
# the naive lower bound of the models README (unaligned tensor bytes at the peak)
README_LB = {
    "arm-ml-examples__basic_lstm_quantized_small": 18144,
    "mlcommons-tiny__vww_96_int8": 55296,
    "tflite-micro__audio_preprocessor_int8": 2060,
    "tflite-micro__keyword_scrambled": 288,
    "arm-ml-examples__dnn_s_quantized": 1250,
    "mlcommons-tiny__kws_ref_model_float32": 64000,
}


@pytest.mark.parametrize("path", model_params())
def test_every_model_is_planned_at_its_lower_bound(path) -> None:
    model = read_model(path)
    plan = plan_model(model)
    check_plan(model, plan)
    assert plan.arena == plan.lower_bound
    assert plan.optimal
    assert plan.arena <= plan.tflm_greedy
    assert len(plan.tensor_offsets) == model.tensor_count
    assert all(o == -1 or o % 16 == 0 for o in plan.tensor_offsets)
    if path.stem in TFLM_HEAD:
        assert plan.tflm_greedy == TFLM_HEAD[path.stem]  # our TFLM re-implementation
    if path.stem in README_LB:
        assert plan.tensor_lower_bound == README_LB[path.stem]


@pytest.mark.parametrize(
    ("stem", "arena"),
    [
        ("mlcommons-tiny__vww_96_int8", 55296),
        ("tflite-micro__audio_preprocessor_int8", 3040),
        ("tflite-micro__keyword_scrambled", 672),
        ("tflite-micro__trained_lstm_int8", 1536),
    ],
)
def test_reference_figures(stem: str, arena: int) -> None:
    assert plan_model(read_model(model_path(stem))).arena == arena


def test_scratch_blind_plan_would_be_worse_on_audio() -> None:
    """Without scratch-awareness TFLM's head would exceed its own plan (3,120 > 3,040)."""
    model = read_model(model_path("tflite-micro__audio_preprocessor_int8"))
    plan = plan_model(model)
    scratch = plan.scratch[0]
    assert (scratch.op, scratch.bytes) == (3, 1024)
    live = [t for t in plan.tensors if t.first <= scratch.first <= t.last]
    for t in live:  # the scratch buffer sits apart from every tensor live at its operator
        assert t.offset + t.size <= scratch.offset or scratch.offset + scratch.size <= t.offset


def test_variables_and_constants_stay_with_tflm() -> None:
    model = read_model(model_path("tflite-micro__keyword_scrambled"))
    plan = plan_model(model)
    tensors = model.subgraphs[0].tensors
    for t, off in zip(tensors, plan.tensor_offsets, strict=True):
        if t.is_variable or t.is_constant:
            assert off == -1


def test_validator_catches_a_broken_plan() -> None:
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    plan = plan_model(model)
    offsets = list(plan.tensor_offsets)
    planned = [i for i, o in enumerate(offsets) if o >= 0]
    offsets[planned[1]] = offsets[planned[0]]  # input and first conv output: same bytes
    offsets[planned[2]] = 8  # misaligned
    offsets[planned[3]] = -1  # missing
    constant = next(i for i, t in enumerate(model.subgraphs[0].tensors) if t.is_constant)
    offsets[constant] = 0
    broken = dataclasses.replace(plan, tensor_offsets=tuple(offsets))
    with pytest.raises(PlanValidationError) as info:
        check_plan(model, broken)
    text = " | ".join(info.value.problems)
    assert "overlap at step 1" in text
    assert "misaligned" in text
    assert "missing" in text
    assert "is a constant but has offset 0" in text


def test_allocator_choice_and_tflm_only() -> None:
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    tflm = plan_model(model, PlanOptions(allocator="tflm-greedy"))
    assert tflm.arena == 73728 and not tflm.optimal
    assert plan_model(model, PlanOptions(allocator="greedy")).arena >= 55296
