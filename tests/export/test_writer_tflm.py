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
from kits.opmodels import I8, OP_MODELS, SHAPED, Net, q
from testkit import model_params

pytest.importorskip(
    "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)

from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.dtypes import DType
from arenaplan.reader import read_model_bytes
from arenaplan.verify import TflmRunner, compare_models


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
