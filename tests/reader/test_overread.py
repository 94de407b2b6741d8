"""The reader keeps the bytes past a bias buffer's end that TFLM's int16x8
DEPTHWISE_CONV_2D, TRANSPOSE_CONV (and CMSIS-NN's FULLY_CONNECTED) read (they read
the bias as int64 whatever its type)."""

from __future__ import annotations

import numpy as np
import tflite
from kits.opmodels import I8, I16, I32, I64, Net
from kits.weights_models import one_weighted

from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization
from arenaplan.reader import read_model_bytes
from arenaplan.reader.overread import READ_AS, bytes_read

CHANNELS = 4


def depthwise(act: DType, bias: DType) -> bytes:
    n = Net("depthwise")
    x = n.act((1, 4, 4, CHANNELS), act)
    quant = Quantization((1e-4,) * CHANNELS, (0,) * CHANNELS)
    b = n.const(np.arange(1, CHANNELS + 1), bias, quant)
    y = n.act((1, 4, 4, CHANNELS), act)
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1}
    n.op("DEPTHWISE_CONV_2D", [x, n.weights((1, 3, 3, CHANNELS), 3), b], [y], **opts)
    return n.done([x], [y])


def _bias_data(data: bytes) -> tuple[int, int]:
    """(file position, length) of the bias buffer's data (the operator's input 2)."""
    m = tflite.Model.GetRootAsModel(data, 0)
    sg = m.Subgraphs(0)
    buf = m.Buffers(sg.Tensors(sg.Operators(0).Inputs(2)).Buffer())
    return buf._tab.Vector(buf._tab.Offset(4)), buf.DataLength()


def test_an_int32_bias_on_the_int16_path_keeps_what_the_kernel_reads() -> None:
    data = depthwise(I16, I32)
    start, length = _bias_data(data)
    assert length == CHANNELS * 4
    model = read_model_bytes(data)
    bias = model.subgraphs[0].tensors[model.subgraphs[0].operators[0].inputs[2]]
    kept = model.buffers[bias.buffer]
    assert kept == data[start : start + CHANNELS * READ_AS]
    assert model.buffer_sizes[bias.buffer] == len(kept)
    assert bytes_read(model) == {}  # nothing more to read


def test_the_kept_bytes_are_written_and_read_back_the_same() -> None:
    model = read_model_bytes(depthwise(I16, I32))
    written = write_model(model)
    assert read_model_bytes(written) == model
    assert _bias_data(written)[1] == CHANNELS * READ_AS


def test_biases_the_kernel_reads_as_stored_are_left_alone() -> None:
    for act, bias in ((I16, I64), (I8, I32)):
        data = depthwise(act, bias)
        model = read_model_bytes(data)
        bias_buffer = model.subgraphs[0].tensors[model.subgraphs[0].operators[0].inputs[2]].buffer
        assert len(model.buffers[bias_buffer]) == _bias_data(data)[1]


def test_transpose_conv_and_cmsis_nn_fully_connected_biases_are_kept_too() -> None:
    """TRANSPOSE_CONV's int16x8 kernel reads an int32 bias as int64 (an int16 one it
    widens itself); CMSIS-NN's int16x8 FULLY_CONNECTED reads it as int64 as well."""
    for opcode, slot in (("TRANSPOSE_CONV", 3), ("FULLY_CONNECTED", 2)):
        model = read_model_bytes(one_weighted(opcode, I16, I32))
        sg = model.subgraphs[0]
        bias = sg.tensors[sg.operators[0].inputs[slot]]
        assert len(model.buffers[bias.buffer]) == bias.elements * READ_AS, opcode
    model = read_model_bytes(one_weighted("TRANSPOSE_CONV", I16, DType.INT16))
    bias = model.subgraphs[0].tensors[model.subgraphs[0].operators[0].inputs[3]]
    assert len(model.buffers[bias.buffer]) == bias.elements * 2
