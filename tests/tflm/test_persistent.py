"""TFLM's tail predicted from the model alone, per build profile."""

from __future__ import annotations

import pytest
from kits.opmodels import OP_MODELS, SHAPED
from testkit import TFLM_REFUSES, model_params, model_path

from arenaplan.reader import read_model, read_model_bytes
from arenaplan.tflm.tail import (
    NATIVE_PROFILES,
    PROFILES,
    min_arena,
    predict_tail,
    tail_estimate,
)

# Measured tails on 32-bit ARM (arm-none-eabi-gcc under qemu), tflm-arena-reference.md B4
ARM32 = {
    "arm-ml-examples__cnn_s_quantized": 1856,
    "arm-ml-examples__dnn_s_quantized": 992,
    "arm-ml-examples__ds_cnn_s_quantized": 6976,
    "google-coral-test-data__keras_lstm_mnist_ptq": 1828,
    "mlcommons-tiny__ad01_int8": 1492,
    "mlcommons-tiny__kws_ref_model": 6772,
    "mlcommons-tiny__pretrainedResnet_quant": 5188,
    "mlcommons-tiny__str_ww_ref_model": 8596,
    "mlcommons-tiny__vww_96_int8": 26932,
    "tflite-micro__audio_preprocessor_int8": 5408,
    "tflite-micro__hello_world_float": 608,
    "tflite-micro__hello_world_int8": 644,
    "tflite-micro__keyword_scrambled": 12500,
    "tflite-micro__micro_speech_quantized": 820,
    "tflite-micro__simple_add_model": 452,
    "tflite-micro__test_conv_model": 1440,
    "tflite-micro__trained_lstm_int8": 1684,
}


@pytest.mark.parametrize("stem", sorted(ARM32))
def test_arm32_tails_match_the_reference_measurements(stem: str) -> None:
    assert predict_tail(read_model(model_path(stem)), "arm32") == ARM32[stem]


@pytest.mark.parametrize("path", model_params())
def test_host_tail_matches_the_runtime(path) -> None:
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.tflm.verify import measure

    model = read_model(path)
    measured = measure(path.read_bytes())
    assert predict_tail(model, "pypi") == measured.tail


def test_profiles_differ_where_the_structs_do() -> None:
    model = read_model(model_path("tflite-micro__hello_world_int8"))
    # int-sized enums: FC options 16/4 instead of 5/1, TfLiteTensor 40 instead of 32
    assert predict_tail(model, "int32") > predict_tail(model, "arm32")
    assert set(PROFILES) == {"pypi", "arm32", "int32"}


def test_minimum_arena_exceeds_head_plus_tail_when_the_head_is_small() -> None:
    model = read_model(model_path("tflite-micro__keyword_scrambled"))
    # 16 tensors and 14 scratch requests in the plan; reference: 18,064 on the host
    assert min_arena(model, head=672, n_planned=30) == 18064
    assert min_arena(model, head=672, n_planned=30) > 672 + predict_tail(model)
    assert min_arena(model, head=672, n_planned=30, profile="arm32") == 15520  # reference B6


@pytest.mark.parametrize("stem", sorted(ARM32))
def test_the_tails_blocks_add_up_to_the_tail(stem: str) -> None:
    from arenaplan.tflm.tail import persistent_extents, tail_estimate

    model = read_model(model_path(stem))
    blocks = persistent_extents(model, "arm32")
    tail = tail_estimate(model, "arm32", with_io=False)
    n_ops = sum(len(sg.operators) for sg in model.subgraphs)
    assert sum(1 for k in blocks if k[1] == "node") == n_ops
    # every block once; the tail adds only alignment padding (and variable tensors)
    variables = sum(t.nbytes for sg in model.subgraphs for t in sg.tensors if t.is_variable)
    assert tail.bytes - 16 * len(blocks) - variables <= sum(blocks.values()) <= tail.bytes


def test_a_cached_tail_is_read_once_per_line_of_its_blocks() -> None:
    from dataclasses import replace

    from arenaplan.cost.timing import PERSISTENT, operator_accesses, per_memory
    from arenaplan.targets import load_builtin

    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    target = load_builtin("imxrt1170")
    slow = [m for m in target.memories if m.cache_bytes and "persistent" in m.holds][-1]
    for op in operator_accesses(model):
        a = op.accesses[PERSISTENT]
        assert 0 < a.footprint <= slow.cache_bytes  # every block of the tail is sized
        where = {k: target.fastest().name for k in op.accesses if not isinstance(k, str)}
        reach = per_memory(op, where, slow.name, target)[slow.name]
        assert reach.reads <= -(-a.footprint // slow.line_bytes)
        uncached = replace(
            target, memories=tuple(replace(m, cache_bytes=0) for m in target.memories)
        )
        assert per_memory(op, where, slow.name, uncached)[slow.name].reads == a.count


# ---- against TFLM built from source for 32-bit ARM (verify.native) -----------------
# The arm32 and int32 columns of structs against the compiler that gave them: the
# reference kernels built for Cortex-M4 with one-byte enums, and with int-sized ones.

# build variant (reference kernels, under qemu-arm) -> the profile its tail is predicted
# with: one-byte enums (arm-none-eabi-gcc's default), int-sized ones (-fno-short-enums)
NATIVE_32 = {
    "arm32-reference": NATIVE_PROFILES["arm32"],
    "arm32-int32-reference": NATIVE_PROFILES["int32"],
}


def _native_tail(variant: str, data: bytes) -> int:
    """TFLM's tail in ``variant`` after AllocateTensors (skips when it is not built)."""
    from arenaplan.tflm.verify.native import NativeRunner, native_available
    from arenaplan.tflm.verify.runner import GENEROUS_ARENA

    why = native_available(variant)
    if why is not None:
        pytest.skip(why)
    with NativeRunner(variant) as runner:
        result = runner.run(data, GENEROUS_ARENA, [], 1)
    assert result.ok, result.error
    return result.measurement.tail


@pytest.mark.parametrize("variant", list(NATIVE_32))
@pytest.mark.parametrize("path", model_params())
def test_tail_equals_the_32_bit_build(path, variant: str) -> None:
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    measured = _native_tail(variant, path.read_bytes())
    estimate = tail_estimate(read_model(path), NATIVE_32[variant])
    print(f"\n{variant} {path.stem}: tail {estimate.bytes} (measured {measured})")
    assert estimate.exact, estimate.unmodelled
    assert measured == estimate.bytes


@pytest.mark.parametrize("variant", list(NATIVE_32))
@pytest.mark.parametrize("name", sorted({**OP_MODELS, **SHAPED}))
def test_op_model_tail_equals_the_32_bit_build(name: str, variant: str) -> None:
    data = {**OP_MODELS, **SHAPED}[name]()
    estimate = tail_estimate(read_model_bytes(data), NATIVE_32[variant])
    if not estimate.exact:
        pytest.skip(f"not modelled: {'; '.join(estimate.unmodelled)}")
    assert _native_tail(variant, data) == estimate.bytes
