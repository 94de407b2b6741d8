"""TFLM's tail, operator by operator: every rule against the real runtime (pypi),
the compiler-derived 32-bit tables pinned, and unknown operators reported."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tflite
from kits.opmodels import OP_MODELS, SHAPED, Net

from arenaplan.ir.dtypes import DType
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.structs import OPTIONS, STATE
from arenaplan.tflm.tail import (
    BUILTIN,
    CUSTOM,
    PROFILES,
    min_arena_estimate,
    predict_tail,
    tail_estimate,
)

ALL_MODELS = {**OP_MODELS, **SHAPED}


@pytest.fixture(scope="module")
def runner() -> Iterator[object]:
    """One TFLM child process for the whole module (fast)."""
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.tflm.verify import TflmRunner

    with TflmRunner() as r:
        yield r


def _run(runner, data: bytes):
    from arenaplan.tflm.verify.inputs import zero_inputs

    ir = read_model_bytes(data)
    inputs = zero_inputs(ir)
    n_out = len(ir.subgraphs[0].outputs)
    result = runner.run(data, 1 << 22, [inputs], n_out)
    assert result.ok, result.error
    return ir, inputs, n_out, result.measurement


@pytest.mark.parametrize("name", sorted(ALL_MODELS))
def test_predicted_tail_equals_the_runtime(runner, name: str) -> None:
    ir, _, _, measured = _run(runner, ALL_MODELS[name]())
    estimate = tail_estimate(ir, "pypi")
    assert estimate.exact, estimate.unmodelled
    assert estimate.bytes == measured.tail


@pytest.mark.parametrize("name", sorted(SHAPED))
def test_smallest_arena_of_the_reported_shapes(runner, name: str) -> None:
    """Rule B6 against bisection in the runtime, from the measured head."""
    from arenaplan.analysis.buffers import arena_items
    from arenaplan.tflm.verify.compare import smallest_arena

    data = SHAPED[name]()
    ir, inputs, n_out, measured = _run(runner, data)
    items = arena_items(ir)
    estimate = min_arena_estimate(ir, measured.head, len(items.tensors) + len(items.scratch))
    assert estimate.exact, estimate.unmodelled
    found = smallest_arena(runner, data, inputs, n_out, high=2 * estimate.bytes)
    assert found == estimate.bytes


def test_a_tiny_model_says_its_smallest_arena_is_an_estimate(runner) -> None:
    """CONV_2D's Prepare makes its temporary tensors twice: on a model whose head is
    smaller than those, the Prepare phase binds and the estimate says so; the bound
    it gives holds."""
    from arenaplan.analysis.buffers import arena_items
    from arenaplan.tflm.verify.compare import smallest_arena

    data = OP_MODELS["conv_int8_per_channel"]()
    ir, inputs, n_out, measured = _run(runner, data)
    items = arena_items(ir)
    estimate = min_arena_estimate(ir, measured.head, len(items.tensors) + len(items.scratch))
    assert not estimate.exact and "Prepare of operator 0 CONV_2D" in estimate.unmodelled[0]
    bound = int(estimate.unmodelled[0].split("up to ")[1].split(" B")[0])
    assert smallest_arena(runner, data, inputs, n_out, high=2 * bound) <= bound


# Tails on 32-bit targets, from the struct sizes arm-none-eabi-g++ 12 gives
# (sizeof/alignof probed in each kernel's own translation unit, TFLM 90b983c2b,
# -DTF_LITE_STATIC_MEMORY; int32 = the same with -fno-short-enums), simulated.
# Not measured on a target here: they pin the tables against accidental edits.
PINNED_32 = {
    "mobilenet_v2_pad_int8": (3684, 3692),  # PAD OpData 56 B -> 64 per PAD
    "int16x8_network": (4484, 4508),
    "keras_residual_relu_int8": (1396, 1420),  # ReluOpData 28 B -> 32 per RELU
    "pad_int8": (628, 636),
    "relu_int8": (500, 508),
    "add_int8": (676, 716),  # TfLiteAddParams 2/1 with one-byte enums, 8/4 with int enums
    "fc_int8_per_channel": (1028, 1068),  # TfLiteFullyConnectedParams 5/1 vs 16/4
    "softmax_int16": (2468, 2476),  # the reference's measured ARM32 2468
    "elu_int8": (1188, 1196),  # a 256-byte lookup table per ELU
    "batch_matmul_int8_adj_x": (644, 668),
    "signal_int16": (7964, 8020),
}


@pytest.mark.parametrize("name", sorted(PINNED_32))
def test_32_bit_tails_from_the_compiler_tables(name: str) -> None:
    ir = read_model_bytes(ALL_MODELS[name]())
    arm32, int32 = PINNED_32[name]
    assert (predict_tail(ir, "arm32"), predict_tail(ir, "int32")) == (arm32, int32)
    assert tail_estimate(ir, "arm32").exact and tail_estimate(ir, "int32").exact


def test_struct_tables_pin_the_probed_sizes() -> None:
    """A few entries as the compilers and the wheel gave them (pypi, arm32, int32)."""
    assert STATE["pad:OpData"] == (56, 56, 56)
    assert STATE["ReluOpData"] == (28, 28, 28)
    assert STATE["OpDataConv"] == (80, 56, 56)
    assert STATE["transpose_conv:OpData"] == (88, 72, 72)
    assert OPTIONS["TfLiteFullyConnectedParams"] == ((32, 8), (5, 1), (16, 4))
    assert OPTIONS["TfLiteAddParams"] == ((8, 4), (2, 1), (8, 4))
    assert OPTIONS["TfLiteSVDFParams"] == ((12, 4), (8, 4), (12, 4))


def test_every_rule_names_real_operators_and_known_structs() -> None:
    for name in BUILTIN:
        assert hasattr(tflite.BuiltinOperator, name), name
    for rule in [*BUILTIN.values(), *CUSTOM.values()]:
        assert rule.options is None or rule.options in OPTIONS
        assert rule.init is None or rule.init in STATE
    for profile in PROFILES.values():
        assert set(profile.options) == set(OPTIONS) and set(profile.state) == set(STATE)


def _unknown_ops_model() -> bytes:
    """Two TILE operators (a builtin TFLM does not register) and a custom op."""
    n = Net("unknown")
    x = n.act((1, 4), DType.FLOAT32)
    a, b, c = (n.act((1, 8), DType.FLOAT32) for _ in range(3))
    n.op("TILE", [x, n.const([1, 2], DType.INT32)], [a])
    n.op("TILE", [x, n.const([1, 2], DType.INT32)], [b])
    n.custom("MyVendorOp", [a], [c], gain=2)
    return n.done([x], [b, c])


def test_unknown_operators_make_the_prediction_an_estimate() -> None:
    ir = read_model_bytes(_unknown_ops_model())
    for profile in PROFILES:
        estimate = tail_estimate(ir, profile)
        assert not estimate.exact
        assert estimate.unmodelled == ("operator 0 TILE", "operator 2 custom MyVendorOp")
        assert estimate.bytes == predict_tail(ir, profile)
    arena = min_arena_estimate(ir, head=64, n_planned=4)
    assert not arena.exact and "operator 0 TILE" in arena.unmodelled


def test_resource_variables_are_the_applications_on_an_mcu() -> None:
    ir = read_model_bytes(OP_MODELS["resource_variables"]())
    assert tail_estimate(ir, "pypi").exact
    notes = tail_estimate(ir, "arm32").unmodelled
    assert notes == ("VAR_HANDLE: resource variables are created by the application",)


def test_compressed_models_are_not_modelled() -> None:
    n = Net("compressed")
    x, y = n.act((1, 4)), n.act((1, 4))
    n.op("RELU", [x], [y])
    n.b.add_metadata("COMPRESSION_METADATA", b"\0" * 8)
    ir = read_model_bytes(n.done([x], [y]))
    assert tail_estimate(ir).unmodelled == ("compressed tensors (COMPRESSION_METADATA)",)
