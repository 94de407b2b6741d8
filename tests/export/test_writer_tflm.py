"""The writer in the real TFLM runtime: a model written back computes, bit for bit,
what the model as given computes.

Every quantisation kind the builder makes (float32; int8 and int16x8, each per
channel and per tensor; int16 element-wise and activation kernels; uint8 where
TFLM runs it) and every shared model are written back with ``write_model`` and
run beside the original on the same random inputs.

The builder's own files are already in the writer's layout, so each model is also
re-encoded as other tools lay a file out (``foreign_layout``): quantisation
min/max on every quantised tensor, the operator-code table reversed with an
unused entry and bumped versions, and buffer data packed at 4-byte alignment,
so that an int64 bias may sit off its 8-byte boundary. The writer drops min/max and
the unused code, orders the codes by first use and aligns data to 16 bytes; TFLM
must not see the difference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import flatbuffers
import numpy as np
import pytest
from kits.opmodels import I8, I16, OP_MODELS, SHAPED, Net, q
from testkit import model_params

pytest.importorskip(
    "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)

from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.verify import TflmRunner, compare_models


def uint8_requantize() -> bytes:
    """uint8 in, int8 in the middle, uint8 and float out: the uint8 paths TFLM has
    (QUANTIZE between uint8 and int8, DEQUANTIZE of uint8)."""
    n = Net("uint8")
    x = n.b.add_tensor("x", (1, 16), DType.UINT8, quantization=q(0.02, 128))
    mid = n.act((1, 16), I8, 0.02, 0)
    y = n.b.add_tensor("y", (1, 16), DType.UINT8, quantization=q(0.03, 120))
    f = n.act((1, 16), DType.FLOAT32)
    n.op("QUANTIZE", [x], [mid])
    n.op("QUANTIZE", [mid], [y])
    n.op("DEQUANTIZE", [x], [f])
    return n.done([x], [y, f])


def lstm(act: DType = I16, bias: DType = DType.INT64, steps: int = 4, n_in: int = 8) -> bytes:
    """One UNIDIRECTIONAL_SEQUENCE_LSTM (no peepholes, projection or layer norm)
    with int8 weights, an int16 cell state and ``bias`` biases."""
    n = Net("lstm")
    state = 16
    out_scale = 1 / 32768 if act is I16 else 1 / 128
    x = n.act((1, steps, n_in), act, 0.01)
    w_in = [n.weights((state, n_in), None) for _ in range(4)]
    w_rec = [n.weights((state, state), None) for _ in range(4)]
    values = [n.rng.integers(-5000, 5000, state) for _ in range(4)]
    biases = [n.const(v, bias, q(1e-5)) for v in values]
    h = n.b.add_tensor("h", (1, state), act, quantization=q(out_scale), is_variable=True)
    c = n.b.add_tensor("c", (1, state), I16, quantization=q(2**-11), is_variable=True)
    y = n.act((1, steps, state), act, out_scale)
    none = [-1] * 3
    ins = [x, *w_in, *w_rec, *none, *biases, -1, -1, h, c, *none, -1]
    opts = {"fused_activation_function": "TANH", "time_major": False}
    n.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y], cell_clip=0.0, proj_clip=0.0, **opts)
    return n.done([x], [y])


def depthwise_int16x8_int32_bias() -> bytes:
    """TFLM reads this int32 bias as int64, past the buffer's end (reader/overread.py)."""
    n = Net("depthwise_b32")
    x = n.act((1, 8, 8, 4), I16)
    bias = n.const(n.rng.integers(-3000, 3000, 4), DType.INT32, Quantization((1e-4,) * 4, (0,) * 4))
    y = n.act((1, 8, 8, 4), I16)
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1}
    n.op("DEPTHWISE_CONV_2D", [x, n.weights((1, 3, 3, 4), 3), bias], [y], **opts)
    return n.done([x], [y])


def depthwise_int4_weights(per_channel: bool = True) -> bytes:
    """int8 DEPTHWISE_CONV_2D with int4 weights packed two to a byte (TFLM unpacks them)."""
    n = Net("depthwise_int4")
    x = n.act((1, 8, 8, 4), I8)
    packed = n.rng.integers(0, 256, 18).astype(np.uint8)  # 1 x 3 x 3 x 4 nibbles
    k = 4 if per_channel else 1
    quant = Quantization(tuple(float(v) for v in n.rng.uniform(0.01, 0.05, k)), (0,) * k, 3)
    w = n.b.add_tensor("w4", (1, 3, 3, 4), DType.INT4, data=packed.tobytes(), quantization=quant)
    y = n.act((1, 8, 8, 4), I8, 0.1)
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1}
    n.op("DEPTHWISE_CONV_2D", [x, w, n.bias(4, DType.INT32, k)], [y], **opts)
    return n.done([x], [y])


# One or more models of each quantisation kind the builder makes.
BUILT: dict[str, Callable[[], bytes]] = {
    name: OP_MODELS[name]
    for name in (
        "conv_float",
        "fc_float",
        "softmax_float",
        "conv_int8_per_channel",
        "conv_int8_per_tensor",
        "depthwise_int8",
        "fc_int8_per_channel",
        "fc_int8_per_tensor",
        "transpose_conv_int8",
        "softmax_int8",
        "conv_int16x8",
        "depthwise_int16x8",
        "fc_int16x8_per_channel",
        "fc_int16x8_per_tensor",
        "transpose_conv_int16x8",
        "batch_matmul_int16",
        "add_int16",
        "mul_int16",
        "softmax_int16",
        "logistic_int16",
        "tanh_int16",
        "leaky_relu_int16",
        "max_pool_int16",
        "sum_int16",
        "quantize_dequantize",
    )
}
BUILT |= SHAPED
BUILT["uint8_requantize"] = uint8_requantize
BUILT["depthwise_int4_weights_per_channel"] = depthwise_int4_weights
BUILT["depthwise_int4_weights_per_tensor"] = lambda: depthwise_int4_weights(per_channel=False)
BUILT["lstm_int8"] = lambda: lstm(I8, DType.INT32)
BUILT["lstm_int16x8"] = lstm
BUILT["lstm_int16x8_int32_bias"] = lambda: lstm(I16, DType.INT32)
BUILT["depthwise_int16x8_int32_bias"] = depthwise_int16x8_int32_bias


@pytest.fixture(scope="module")
def runner() -> Iterator[TflmRunner]:
    with TflmRunner() as own:
        yield own


def foreign_layout(data: bytes) -> bytes:
    """``data`` re-encoded in another tool's layout (the module docstring says how);
    what TFLM computes from it is unchanged."""
    model = fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(data, 0))
    for sg in model.subgraphs:
        for t in sg.tensors:
            quant = t.quantization
            if quant is not None and quant.scale is not None and len(quant.scale):
                scale = np.asarray(quant.scale, dtype=np.float32)
                quant.min, quant.max = list(-128 * scale), list(127 * scale)
    codes = list(reversed(model.operatorCodes))
    for code in codes:
        code.version += 1
        code.builtinCode = max(code.builtinCode, code.deprecatedBuiltinCode)  # older files
        code.deprecatedBuiltinCode = min(code.builtinCode, 127)
    unused = fb.OperatorCodeT(deprecatedBuiltinCode=0, builtinCode=0, version=9)  # ADD
    model.operatorCodes = [unused, *codes]
    last = len(codes)  # old index i is now 1 + (last - 1 - i)
    for sg in model.subgraphs:
        for op in sg.operators:
            op.opcodeIndex = last - op.opcodeIndex
    b = flatbuffers.Builder(len(data) + 4096)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def assert_written_runs_bit_exact(original: bytes, runner: TflmRunner) -> None:
    """``original`` and the writer's copy of it give the same outputs in TFLM."""
    written = write_model(read_model_bytes(original))
    assert read_model_bytes(written) == read_model_bytes(original)
    report = compare_models(original, written, runner=runner, figures=False)
    if report.refused:
        pytest.skip(report.refused)
    assert report.failed is None, report.failed
    assert report.identical, report.mismatch


@pytest.mark.parametrize("name", sorted(BUILT))
def test_built_model_written_back_runs_bit_exact(name: str, runner: TflmRunner) -> None:
    assert_written_runs_bit_exact(BUILT[name](), runner)


@pytest.mark.parametrize("name", sorted(BUILT))
def test_foreign_layout_written_back_runs_bit_exact(name: str, runner: TflmRunner) -> None:
    foreign = foreign_layout(BUILT[name]())
    assert_written_runs_bit_exact(foreign, runner)


@pytest.mark.parametrize("path", model_params())
def test_shared_model_written_back_runs_bit_exact(path: Path, runner: TflmRunner) -> None:
    assert_written_runs_bit_exact(path.read_bytes(), runner)


@pytest.mark.parametrize("path", model_params())
def test_shared_model_in_foreign_layout_runs_bit_exact(path: Path, runner: TflmRunner) -> None:
    assert_written_runs_bit_exact(foreign_layout(path.read_bytes()), runner)


def test_foreign_layout_has_what_the_writer_drops() -> None:
    """The re-encoding does differ from the writer's layout where it should."""
    original = BUILT["int16x8_network"]()
    foreign = foreign_layout(original)
    model = fb.Model.GetRootAsModel(foreign, 0)
    tensors = model.Subgraphs(0)
    assert any(
        tensors.Tensors(i).Quantization() is not None
        and tensors.Tensors(i).Quantization().MinLength() > 0
        for i in range(tensors.TensorsLength())
    )
    n_codes = fb.Model.GetRootAsModel(original, 0).OperatorCodesLength()
    assert model.OperatorCodesLength() == n_codes + 1
    written = write_model(read_model_bytes(foreign))
    assert len(written) != len(foreign)
    assert fb.Model.GetRootAsModel(written, 0).OperatorCodesLength() == n_codes
