"""The built models of known shapes: MobileNetV1 with other inputs and heads, DS-CNN."""

from __future__ import annotations

import hashlib

import pytest
from testkit import need_prover

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1
from arenaplan.errors import UsageError
from arenaplan.placement import plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.offline_plan import with_offline_plan

# sha256 of mobilenet_v1(0.25, 96) before ``channels`` and ``classes`` existed
V1_025_96 = "a3616fc308660a23d46999430a816cc5f3b4f1f73bccbc85feff2f89ab3d7e64"


def _shapes(data: bytes) -> list[tuple[str, tuple[int, ...]]]:
    """(opcode, first output's shape) of every operator."""
    sg = read_model_bytes(data).subgraphs[0]
    return [(op.opcode, sg.tensors[op.outputs[0]].shape) for op in sg.operators]


def test_mobilenet_v1_defaults_keep_their_bytes() -> None:
    assert hashlib.sha256(mobilenet_v1(0.25, 96)).hexdigest() == V1_025_96
    assert mobilenet_v1(0.25, 96, channels=3, classes=1000) == mobilenet_v1(0.25, 96)


def test_person_detect_shape() -> None:
    data = mobilenet_v1(0.25, 96, channels=1, classes=2)
    assert data == mobilenet_v1(0.25, 96, channels=1, classes=2)
    sg = read_model_bytes(data).subgraphs[0]
    assert sg.tensors[sg.inputs[0]].shape == (1, 96, 96, 1)
    assert sg.tensors[sg.outputs[0]].shape == (1, 2)
    stem = sg.operators[0]
    assert stem.opcode == "CONV_2D" and sg.tensors[stem.inputs[1]].shape == (8, 3, 3, 1)
    shapes = _shapes(data)
    assert shapes[0] == ("CONV_2D", (1, 48, 48, 8))
    assert shapes[-4] == ("CONV_2D", (1, 3, 3, 256))
    assert [s[0] for s in shapes[-3:]] == ["AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED"]
    assert len(shapes) == 1 + 13 * 2 + 3


@pytest.mark.parametrize(
    ("size", "hw", "c", "blocks"), [("M", (25, 5), 172, 4), ("L", (25, 10), 276, 5)]
)
def test_ds_cnn_shapes(size: str, hw: tuple[int, int], c: int, blocks: int) -> None:
    data = ds_cnn(size)
    assert data == ds_cnn(size)
    m = read_model_bytes(data)
    sg = m.subgraphs[0]
    assert sg.tensors[sg.inputs[0]].shape == (1, 49, 10, 1)
    assert sg.tensors[sg.outputs[0]].shape == (1, 12)
    stem = sg.operators[0]
    assert sg.tensors[stem.inputs[1]].shape == (c, 10, 4, 1)
    expected = [("CONV_2D", (1, *hw, c))]
    expected += [("DEPTHWISE_CONV_2D", (1, *hw, c)), ("CONV_2D", (1, *hw, c))] * blocks
    expected += [
        ("AVERAGE_POOL_2D", (1, 1, 1, c)),
        ("RESHAPE", (1, c)),
        ("FULLY_CONNECTED", (1, 12)),
    ]
    assert _shapes(data) == expected
    for op in sg.operators[: 1 + 2 * blocks]:
        assert op.options.get("fused_activation_function") == "RELU"
        assert sg.tensors[op.inputs[1]].quantization.axis == (
            3 if op.opcode == "DEPTHWISE_CONV_2D" else 0
        )


def test_ds_cnn_unknown_size_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown DS-CNN size 'S'"):
        ds_cnn("S")


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: mobilenet_v1(0.25, 96, channels=1, classes=2), id="person_detect"),
        pytest.param(lambda: ds_cnn("M"), id="ds_cnn_M"),
        pytest.param(lambda: ds_cnn("L"), id="ds_cnn_L"),
    ],
)
def test_built_models_plan_and_run_in_tflm(build) -> None:
    data = build()
    plan = plan_model(read_model_bytes(data))
    assert plan.arena >= plan.lower_bound > 0
    need_prover()
    from arenaplan.tflm.verify.prove import prove

    proof = prove(data, with_offline_plan(data, plan.tensor_offsets), plan.arena)
    assert proof.proven, proof.reason
