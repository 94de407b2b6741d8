"""Every real model loads into the IR, and the IR agrees with the schema bindings."""

from __future__ import annotations

import numpy as np
import pytest
import tflite
from testkit import model_params, model_path

from arenaplan.ir import DType
from arenaplan.reader import read_model

OPS = {
    "arm-ml-examples__basic_lstm_quantized_small": 697,
    "mlcommons-tiny__vww_96_int8": 31,
    "tflite-micro__audio_preprocessor_int8": 22,
    "tflite-micro__keyword_scrambled": 15,
    "tflite-micro__simple_add_model": 1,
    "tflite-micro__trained_lstm_int8": 4,
}


@pytest.mark.parametrize("path", model_params())
def test_model_matches_the_schema_bindings(path) -> None:
    model = read_model(path)
    ref = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    assert len(model.subgraphs) == ref.SubgraphsLength()
    for sg, rsg in zip(
        model.subgraphs, (ref.Subgraphs(i) for i in range(ref.SubgraphsLength())), strict=True
    ):
        assert len(sg.tensors) == rsg.TensorsLength()
        assert len(sg.operators) == rsg.OperatorsLength()
        for t in sg.tensors:
            rt = rsg.Tensors(t.index)
            shape = rt.ShapeAsNumpy()
            assert t.shape == (
                tuple(int(d) for d in shape) if isinstance(shape, np.ndarray) else ()
            )
            assert t.dtype is DType.from_code(rt.Type())
            if t.is_constant:
                assert model.buffer_sizes[t.buffer] > 0
        for op in sg.operators:
            for i in (*op.inputs, *op.outputs):
                assert -1 <= i < len(sg.tensors)
    if path.stem in OPS:
        assert model.operator_count == OPS[path.stem]


def test_vww_first_operator_and_input() -> None:
    sg = read_model(model_path("mlcommons-tiny__vww_96_int8")).subgraphs[0]
    op = sg.operators[0]
    assert op.opcode == "CONV_2D" and not op.is_custom
    opts = op.options.as_dict()
    assert (opts["stride_w"], opts["stride_h"], opts["padding"]) == (2, 2, "SAME")
    assert opts["fused_activation_function"] == "RELU"
    x = sg.tensors[sg.inputs[0]]
    assert x.shape == (1, 96, 96, 3) and x.dtype is DType.INT8
    assert x.quantization.zero_points == (-128,)
    assert x.quantization.scales[0] == pytest.approx(1 / 255)


def test_variables_custom_ops_and_pooling_options() -> None:
    kws = read_model(model_path("tflite-micro__keyword_scrambled")).subgraphs[0]
    assert sum(t.is_variable for t in kws.tensors) == 7
    audio = read_model(model_path("tflite-micro__audio_preprocessor_int8")).subgraphs[0]
    rfft = next(op for op in audio.operators if op.opcode == "SignalRfft")
    assert rfft.is_custom and rfft.custom_options
    ds = read_model(model_path("arm-ml-examples__ds_cnn_s_quantized")).subgraphs[0]
    pool = next(op for op in ds.operators if op.opcode == "AVERAGE_POOL_2D")
    assert pool.options.get("filter_width") and pool.options.get("filter_height")
    dw = next(op for op in ds.operators if op.opcode == "DEPTHWISE_CONV_2D")
    assert dw.options.get("depth_multiplier") == 1
