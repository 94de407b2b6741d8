"""The project's own .tflite writer and the demo model."""

from __future__ import annotations

import numpy as np
import pytest
import tflite

from arenaplan.builder import DEMO_NAME, ModelBuilder, demo_model
from arenaplan.errors import UsageError
from arenaplan.ir import DType, Quantization
from arenaplan.placement import plan_model
from arenaplan.reader import read_model_bytes


def _small() -> bytes:
    b = ModelBuilder("small")
    x = b.add_tensor("x", (1, 4, 4, 2), DType.INT8, quantization=Quantization((0.5,), (-3,)))
    w = b.add_tensor(
        "w",
        (3, 1, 1, 2),
        DType.INT8,
        data=np.arange(6, dtype=np.int8),
        quantization=Quantization((0.1, 0.2, 0.3), (0, 0, 0), 0),
    )
    y = b.add_tensor("y", (1, 4, 4, 3), DType.INT8, quantization=Quantization((1.0,), (0,)))
    z = b.add_tensor("z", (1, 48), DType.INT8)
    b.add_operator(
        "CONV_2D",
        [x, w, -1],
        [y],
        {"padding": "VALID", "stride_w": 1, "stride_h": 1, "fused_activation_function": "RELU"},
    )
    b.add_operator("RESHAPE", [y], [z], {"new_shape": (1, 48)})
    b.set_io([x], [z])
    b.add_metadata("note", b"hello")
    return b.finish()


def test_written_model_reads_back() -> None:
    data = _small()
    m = read_model_bytes(data)
    sg = m.subgraphs[0]
    assert [t.name for t in sg.tensors] == ["x", "w", "y", "z"]
    assert sg.tensors[0].shape == (1, 4, 4, 2) and sg.tensors[0].dtype is DType.INT8
    assert sg.tensors[0].quantization == Quantization((0.5,), (-3,), 0)
    assert sg.tensors[1].is_constant and not sg.tensors[0].is_constant
    assert sg.tensors[1].quantization.scales == pytest.approx((0.1, 0.2, 0.3))
    conv, reshape = sg.operators
    assert conv.opcode == "CONV_2D" and conv.inputs == (0, 1, -1) and conv.outputs == (2,)
    opts = conv.options.as_dict()
    assert opts["padding"] == "VALID" and opts["fused_activation_function"] == "RELU"
    assert reshape.options.get("new_shape") == (1, 48)
    assert sg.inputs == (0,) and sg.outputs == (3,)
    assert [name for name, _ in m.metadata] == ["note"]
    raw = tflite.Model.GetRootAsModel(data, 0).Buffers(1).DataAsNumpy()
    assert raw.tobytes() == bytes(range(6))


def test_constant_data_is_16_byte_aligned_and_output_deterministic() -> None:
    data = _small()
    assert data == _small()
    m = tflite.Model.GetRootAsModel(data, 0)
    for i in range(m.BuffersLength()):
        buf = m.Buffers(i)
        if buf.DataLength():
            pos = buf._tab.Vector(buf._tab.Offset(4))
            assert pos % 16 == 0


def test_unknown_operator_and_option_are_usage_errors() -> None:
    b = ModelBuilder()
    t = b.add_tensor("t", (1,), DType.INT8)
    with pytest.raises(UsageError, match="unknown builtin operator"):
        b.add_operator("NOT_AN_OP", [t], [t])
    b.add_operator("CONV_2D", [t], [t], {"strides": 2})
    with pytest.raises(UsageError, match="unknown option 'strides'"):
        b.finish()
    with pytest.raises(UsageError, match="does not exist"):
        ModelBuilder().add_operator("RELU", [5], [0])


def test_demo_model_is_planned_below_tflm() -> None:
    data = demo_model()
    assert data == demo_model()
    m = read_model_bytes(data)
    assert m.description == DEMO_NAME and m.operator_count == 12
    assert "ADD" in [op.opcode for op in m.subgraphs[0].operators]
    plan = plan_model(m)
    assert plan.arena == plan.lower_bound == 13728
    assert plan.tflm_greedy == 19616


def test_demo_model_runs_in_tflm_with_informative_outputs() -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.tflm.verify.inputs import random_inputs
    from arenaplan.tflm.verify.runner import TflmRunner

    data = demo_model()
    inputs = random_inputs(read_model_bytes(data), 4, 1)
    with TflmRunner() as runner:
        result = runner.run(data, 1 << 20, inputs, 1)
    assert result.ok, result.error
    outs = [o[0] for o in result.outputs]
    assert all(o.shape == (1, 12) and o.dtype == np.int8 for o in outs)
    assert len({o.tobytes() for o in outs}) > 1  # depends on the input
    assert any(len(set(o.ravel().tolist())) > 1 for o in outs)  # not one saturated value
