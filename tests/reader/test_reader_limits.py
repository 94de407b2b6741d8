"""The read-time size limits: a tensor TFLM cannot address (more than 2**31 - 1
elements or bytes), an operator whose outputs together exceed 32-bit offsets, and a
shape signature with a negative dimension other than -1 are refused on reading, in
one line naming the tensor (or operator), its shape and the limit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from arenaplan.builder import ModelBuilder
from arenaplan.errors import ModelFormatError
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.dtypes import DType
from arenaplan.reader import read_model_bytes
from arenaplan.reader.tflite_reader import TENSOR_LIMIT


def _relu(shape: tuple[int, ...], dtype: DType, outputs: int = 1) -> bytes:
    """x -> RELU -> y (or SPLIT into ``outputs`` tensors of ``shape``)."""
    b = ModelBuilder("limits")
    x = b.add_tensor("x", shape, dtype)
    if outputs == 1:
        y = b.add_tensor("y", shape, dtype)
        b.add_operator("RELU", [x], [y])
        b.set_io([x], [y])
        return b.finish()
    axis = b.add_tensor("axis", (), DType.INT32, data=np.array(0, dtype=np.int32))
    ys = [b.add_tensor(f"y{k}", shape, dtype) for k in range(outputs)]
    b.add_operator("SPLIT", [axis, x], ys, {"num_splits": outputs})
    b.set_io([x], ys)
    return b.finish()


def _refusal(data: bytes) -> str:
    with pytest.raises(ModelFormatError) as info:
        read_model_bytes(data)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_the_largest_addressable_tensor_is_read() -> None:
    model = read_model_bytes(_relu((1, TENSOR_LIMIT, 1, 1), DType.INT8))
    assert model.subgraphs[0].tensors[0].nbytes == TENSOR_LIMIT


def test_a_tensor_of_more_bytes_than_tflm_counts_is_refused() -> None:
    # 2**30 int16 elements: an element count TFLM can hold, a byte count it cannot
    text = _refusal(_relu((1, 2**30, 1, 1), DType.INT16))
    assert "tensor 0 ('x')" in text and "[1, 1073741824, 1, 1] int16" in text
    assert "2,147,483,648 bytes" in text and f"at most {TENSOR_LIMIT:,}" in text


def test_an_element_count_overflowing_int32_is_refused() -> None:
    text = _refusal(_relu((2**16, 2**16), DType.BOOL))
    assert "4,294,967,296 elements" in text and "32-bit" in text


def test_unknown_dims_are_left_out_of_the_count() -> None:
    model = read_model_bytes(_relu((-1, TENSOR_LIMIT), DType.INT8))
    assert model.subgraphs[0].tensors[0].shape == (-1, TENSOR_LIMIT)


def test_outputs_written_together_must_fit_32_bit_offsets() -> None:
    # each output alone is addressable; the two together are not
    half = 2**30
    assert read_model_bytes(_relu((half - 8,), DType.INT8, outputs=2))
    text = _refusal(_relu((half,), DType.INT8, outputs=2))
    assert "operator 0 SPLIT writes 2 tensors of 2,147,483,648 bytes" in text


@pytest.mark.parametrize("signature", [(1, -2, 4), (-5,)])
def test_a_shape_signature_below_minus_one_is_refused(signature: tuple[int, ...]) -> None:
    model = read_model_bytes(_relu((1, 2, 4), DType.INT8))
    sg = model.subgraphs[0]
    x = replace(sg.tensors[0], shape_signature=signature)
    bad = replace(model, subgraphs=(replace(sg, tensors=(x, *sg.tensors[1:])),))
    text = _refusal(write_model(bad))
    assert "tensor 0" in text and "shape signature" in text and str(signature) in text


def test_a_dynamic_shape_signature_is_read() -> None:
    model = read_model_bytes(_relu((1, 2, 4), DType.INT8))
    sg = model.subgraphs[0]
    x = replace(sg.tensors[0], shape_signature=(-1, 2, 4))
    ok = replace(model, subgraphs=(replace(sg, tensors=(x, *sg.tensors[1:])),))
    assert read_model_bytes(write_model(ok)).subgraphs[0].tensors[0].shape_signature == (-1, 2, 4)


def _requantized(scale: float, zero_point: int) -> bytes:
    """DS-CNN M with its first activation's quantisation replaced."""
    from arenaplan.builder.ds_cnn import ds_cnn
    from arenaplan.ir.model import Quantization

    model = read_model_bytes(ds_cnn("M"))
    sg = model.subgraphs[0]
    t = next(t for t in sg.tensors if t.quantization is not None and not t.is_constant)
    tensors = list(sg.tensors)
    tensors[t.index] = replace(t, quantization=Quantization((scale,), (zero_point,)))
    return write_model(replace(model, subgraphs=(replace(sg, tensors=tuple(tensors)),)))


@pytest.mark.parametrize(
    ("scale", "zero_point", "words"),
    [
        (float("nan"), 0, "quantization scale nan"),
        (float("inf"), 0, "quantization scale inf"),
        (-0.5, 0, "quantization scale -0.5"),
        (0.5, 2**40, "zero point 1,099,511,627,776 (TFLM's are int32)"),
    ],
)
def test_quantization_tflm_cannot_hold_is_refused(scale, zero_point, words) -> None:
    assert read_model_bytes(_requantized(0.5, 0))  # the edit alone reads
    with pytest.raises(ModelFormatError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_model_bytes(_requantized(scale, zero_point))
