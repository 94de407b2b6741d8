"""Small models around TFLM's refusal rules, written with the project's own writer.

Each ``Case`` is a model of one operator and whether TFLM's reference
kernels refuse it (what the runtime does, checked by ``test_support.py``).
Quantised tensors carry per-tensor (scale, zero point); int weights are symmetric.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from arenaplan.builder import ModelBuilder
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization

F32, I8, U8, I32 = DType.FLOAT32, DType.INT8, DType.UINT8, DType.INT32
_Q8 = Quantization((0.05,), (3,))  # a plausible int8 / uint8 activation
_QW = Quantization((0.02,), (0,))  # symmetric weights
_QU8 = Quantization((0.05,), (128,))  # uint8 activation
_QB = Quantization((0.05 * 0.02,), (0,))  # int32 bias: input scale x weight scale


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    build: Callable[[], bytes]
    refused: bool  # what TFLM does with it


def _one_op(
    opcode: str,
    inputs: list[tuple],
    output: tuple,
    options: dict | None = None,
    custom_options: bytes = b"",
) -> bytes:
    """One operator; ``inputs`` are (shape, dtype, quantization, data or None)."""
    b = ModelBuilder("refusal-case")
    ins = [_tensor(b, f"in{k}", spec) for k, spec in enumerate(inputs)]
    graph_inputs = [t for t, spec in zip(ins, inputs, strict=True) if spec[3] is None]
    shape, dtype, q = output
    out = b.add_tensor("out", shape, dtype, quantization=q)
    b.add_operator(opcode, ins, [out], options, custom_options=custom_options)
    b.set_io(graph_inputs, [out])
    return b.finish()


def _tensor(b: ModelBuilder, name: str, spec: tuple) -> int:
    shape, dtype, q, data = spec
    return b.add_tensor(name, shape, dtype, data=data, quantization=q)


def _weights(shape: tuple[int, ...], dtype: DType, q: Quantization | None) -> tuple:
    rng = np.random.default_rng(0)
    if dtype is F32:
        return (shape, F32, None, rng.standard_normal(shape).astype(np.float32))
    data = rng.integers(-100, 100, shape, endpoint=True).astype(np.int8)
    if dtype is U8:
        data = (data.astype(np.int16) + 128).astype(np.uint8)
    return (shape, dtype, q, data)


def _bias(n: int, dtype: DType) -> tuple:
    if dtype is F32:
        return ((n,), F32, None, np.zeros(n, np.float32))
    return ((n,), I32, _QB, np.zeros(n, np.int32))


def _fc(act: DType, weights: DType, bias: DType) -> bytes:
    q = None if act is F32 else (_QU8 if act is U8 else _Q8)
    return _one_op(
        "FULLY_CONNECTED",
        [((1, 8), act, q, None), _weights((4, 8), weights, _QW), _bias(4, bias)],
        ((1, 4), act, q),
    )


def _conv(act: DType, weights: DType, bias: DType) -> bytes:
    q = None if act is F32 else (_QU8 if act is U8 else _Q8)
    return _one_op(
        "CONV_2D",
        [((1, 6, 6, 2), act, q, None), _weights((3, 3, 3, 2), weights, _QW), _bias(3, bias)],
        ((1, 6, 6, 3), act, q),
        {"padding": "SAME", "stride_w": 1, "stride_h": 1},
    )


def _add(dtype: DType) -> bytes:
    q = _QU8 if dtype is U8 else _Q8
    x = ((1, 4, 4, 2), dtype, q, None)
    return _one_op("ADD", [x, x], ((1, 4, 4, 2), dtype, q))


def _fill(constant_dims: bool) -> bytes:
    dims = np.array([2, 3], np.int32) if constant_dims else None
    return _one_op("FILL", [((2,), I32, None, dims), ((), F32, None, None)], ((2, 3), F32, None))


def _quantize(src: DType, dst: DType) -> bytes:
    q = {U8: _QU8, I8: _Q8}
    return _one_op("QUANTIZE", [((1, 16), src, q[src], None)], ((1, 16), dst, q[dst]))


def _dequantize_uint8() -> bytes:
    return _one_op("DEQUANTIZE", [((1, 16), U8, _QU8, None)], ((1, 16), F32, None))


def _reshape_uint8() -> bytes:
    shape = ((2,), I32, None, np.array([4, 4], np.int32))
    return _one_op(
        "RESHAPE", [((1, 16), U8, _QU8, None), shape], ((4, 4), U8, _QU8), {"new_shape": (4, 4)}
    )


def _tile() -> bytes:  # TILE: a builtin TFLM's op resolver does not register
    multiples = ((2,), I32, None, np.array([2, 1], np.int32))
    return _one_op("TILE", [((2, 3), F32, None, None), multiples], ((4, 3), F32, None))


def _custom(code: str) -> bytes:
    return _one_op(f"custom:{code}", [((1, 8), F32, None, None)], ((1, 8), F32, None))


def _relu_with_custom_options() -> bytes:
    x = ((1, 8), F32, None, None)
    return _one_op("RELU", [x], ((1, 8), F32, None), custom_options=b"\x01\x02")


def _lstm() -> bytes:
    """A plain int8 LSTM (int16 cell state, variable states), written without its
    options table (the writer has none for it): TFLM runs it all the same."""
    b = ModelBuilder("refusal-case")
    x = b.add_tensor("x", (1, 2, 3), I8, quantization=_Q8)  # batch 1, 2 steps, 3 inputs
    weights = [_tensor(b, f"w{k}", _weights((4, 3 if k < 4 else 4), I8, _QW)) for k in range(8)]
    biases = [_tensor(b, f"b{k}", _bias(4, I32)) for k in range(4)]
    q16 = Quantization((2**-11,), (0,))
    h = b.add_tensor("h", (1, 4), I8, quantization=_Q8, is_variable=True)
    c = b.add_tensor("c", (1, 4), DType.INT16, quantization=q16, is_variable=True)
    y = b.add_tensor("y", (1, 2, 4), I8, quantization=_Q8)
    no = [-1]
    ins = [x, *weights, *no * 3, *biases, *no * 2, h, c, *no * 4]
    b.add_operator("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y])
    b.set_io([x], [y])
    return b.finish()


def _concatenation_relu() -> bytes:
    x = ((1, 4), F32, None, None)
    options = {"axis": 1, "fused_activation_function": "RELU"}
    return _one_op("CONCATENATION", [x, x], ((1, 8), F32, None), options)


CASES = (
    Case("hybrid FULLY_CONNECTED", lambda: _fc(F32, I8, F32), True),
    Case("hybrid CONV_2D", lambda: _conv(F32, I8, F32), True),
    Case("float FULLY_CONNECTED", lambda: _fc(F32, F32, F32), False),
    Case("int8 CONV_2D", lambda: _conv(I8, I8, I32), False),
    Case("uint8 CONV_2D", lambda: _conv(U8, U8, I32), True),
    Case("uint8 FULLY_CONNECTED", lambda: _fc(U8, U8, I32), True),
    Case("uint8 ADD", lambda: _add(U8), True),
    Case("int8 ADD", lambda: _add(I8), False),
    Case("QUANTIZE uint8 -> int8", lambda: _quantize(U8, I8), False),
    Case("QUANTIZE uint8 -> uint8", lambda: _quantize(U8, U8), True),
    Case("DEQUANTIZE uint8", _dequantize_uint8, False),
    Case("RESHAPE uint8", _reshape_uint8, False),
    Case("FILL with non-constant dims", lambda: _fill(False), True),
    Case("FILL with constant dims", lambda: _fill(True), False),
    Case("TILE (no kernel)", _tile, True),
    Case("unknown custom op", lambda: _custom("ArenaplanNoSuchOp"), True),
    Case("Ethos-U custom op", lambda: _custom("ethos-u"), True),
    Case("builtin with custom options", _relu_with_custom_options, True),
    Case("int8 LSTM", _lstm, False),
    Case("CONCATENATION with a fused RELU", _concatenation_relu, True),
)
