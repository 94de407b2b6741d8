"""An int16x8 U-Net denoiser (int16 activations, int8 weights, int64 biases) written
with the project's own writer, shaped like the audio denoisers TensorFlow's
converter makes from Keras:

    input [1, T, F, 1] (a magnitude spectrogram, T frames x F bins)
    encoder: 2 x [CONV 3x3 /2 -> LEAKY_RELU]           -> e1 [T/2, F/2, c], e2 [T/4, F/4, 2c]
    bottleneck: RESHAPE to [T/4, F/4*2c], a gated recurrent cell (FULLY_CONNECTED,
        LOGISTIC, TANH, MUL, SUB, ADD: h' = n + z * (h - n)) with its state h a second
        input, RESHAPE back
    decoder: TRANSPOSE_CONV 3x3 /2 -> QUANTIZE to e1's scale ->
        CONCATENATION with e1 -> CONV 3x3 -> LEAKY_RELU, TRANSPOSE_CONV 3x3 /2 ->
        QUANTIZE to the input's scale -> CONCATENATION with the input -> CONV 3x3
    mask: LOGISTIC, then MUL with the input: the denoised spectrogram.

As TensorFlow's converter writes them: the TRANSPOSE_CONVs without a bias, and a
QUANTIZE before each CONCATENATION that brings its input to the other's scale.

Weights are random (fixed seed), per-channel symmetric int8; activations symmetric
int16 (zero point 0): right for planning and for running in TFLM, not for accuracy.
The same call gives the same bytes.
"""

from __future__ import annotations

import numpy as np

from arenaplan.builder.writer import ModelBuilder
from arenaplan.errors import UsageError
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization

SIGMOID_SCALE = 1 / 32768  # LOGISTIC's and TANH's int16 outputs (TFLM requires it)


class _Net:
    """The model under construction and the tensors its layers need."""

    def __init__(self, name: str, dense_axis: int | None, kh: int, shape_ops: bool) -> None:
        self.b = ModelBuilder(name)
        self.rng = np.random.default_rng(0)
        self.n = 0
        self.kh = kh  # the filters' rows: 3, or 1 for a one-row input
        self.shape_ops = shape_ops  # TRANSPOSE_CONV shapes computed as the converter does
        self.dense_axis = dense_axis  # the FULLY_CONNECTED weights' scales: per row, or one

    def _name(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def act(self, shape: tuple[int, ...], scale: float) -> int:
        """An int16 activation, symmetric (zero point 0)."""
        q = Quantization((scale,), (0,))
        return self.b.add_tensor(self._name("a"), shape, DType.INT16, quantization=q)

    def weights(self, shape: tuple[int, ...], axis: int | None) -> int:
        """Constant int8 weights, symmetric, one scale per channel along ``axis`` (None:
        one scale)."""
        data = self.rng.integers(-100, 100, shape).astype(np.int8)
        k = 1 if axis is None else shape[axis]
        scales = tuple(float(s) for s in self.rng.uniform(0.002, 0.01, k))
        q = Quantization(scales, (0,) * k, axis or 0)
        return self.b.add_tensor(self._name("w"), shape, DType.INT8, data=data, quantization=q)

    def bias(self, k: int) -> int:
        """A constant int64 bias of ``k`` channels (the converter's int16x8 bias)."""
        data = self.rng.integers(-20_000, 20_000, k).astype(np.int64)
        q = Quantization((1e-5,) * k, (0,) * k)
        return self.b.add_tensor(self._name("b"), (k,), DType.INT64, data=data, quantization=q)

    def shape(self, values: tuple[int, ...]) -> int:
        data = np.array(values, np.int32)
        return self.b.add_tensor(self._name("s"), data.shape, DType.INT32, data=data)

    def shape_of(self, x: int, values: tuple[int, ...]) -> int:
        """``values`` (a 4-D shape) as the converter computes it when the batch is
        dynamic: PACK(STRIDED_SLICE(SHAPE(x), 0, 1, shrunk), the other three dims);
        with ``shape_ops`` off, a constant."""
        if not self.shape_ops:
            return self.shape(values)
        dims = self.b.add_tensor(self._name("s"), (4,), DType.INT32)
        self.op("SHAPE", [x], [dims], out_type=2)  # TensorType INT32
        batch = self.b.add_tensor(self._name("s"), (), DType.INT32)
        ends = [self.shape((0,)), self.shape((1,)), self.shape((1,))]
        self.op("STRIDED_SLICE", [dims, *ends], [batch], shrink_axis_mask=1)
        rest = [self.b.add_tensor(self._name("c"), (), DType.INT32, data=np.array(v, np.int32))
                for v in values[1:]]  # fmt: skip
        packed = self.b.add_tensor(self._name("s"), (4,), DType.INT32)
        return self.op("PACK", [batch, *rest], [packed], axis=0, values_count=4)

    def op(self, opcode: str, ins: list[int], outs: list[int], **options) -> int:
        self.b.add_operator(opcode, ins, outs, options)
        return outs[0]

    def conv(self, x: int, hw: tuple[int, int], c_in: int, c_out: int, stride: int) -> int:
        """A 3x3 (one-row: 1x3) SAME CONV_2D, no fused activation (as Keras exports one);
        ``stride`` 2 halves the rows (not one row) and the columns."""
        y = self.act((1, *hw, c_out), 0.004)
        ins = [x, self.weights((c_out, self.kh, 3, c_in), 0), self.bias(c_out)]
        sh = stride if self.kh > 1 else 1
        return self.op("CONV_2D", ins, [y], padding="SAME", stride_h=sh, stride_w=stride)

    def leaky(self, x: int, shape: tuple[int, ...]) -> int:
        return self.op("LEAKY_RELU", [x], [self.act(shape, 0.004)], alpha=0.2)

    def up(
        self, x: int, hw: tuple[int, int], c_in: int, c_out: int, scale: float, bias: bool
    ) -> int:
        """A 3x3 TRANSPOSE_CONV with stride 2 to ``hw`` (an int64 bias or none),
        requantised to ``scale`` (a QUANTIZE, as the converter writes before a
        CONCATENATION)."""
        y = self.act((1, *hw, c_out), 0.003)
        ins = [self.shape_of(x, (1, *hw, c_out)), self.weights((c_out, self.kh, 3, c_in), 0), x]
        if bias:
            ins.append(self.bias(c_out))
        sh = 2 if self.kh > 1 else 1
        self.op("TRANSPOSE_CONV", ins, [y], padding="SAME", stride_h=sh, stride_w=2)
        return self.op("QUANTIZE", [y], [self.act((1, *hw, c_out), scale)])

    def dense(self, x: int, rows: int, c_in: int, c_out: int) -> int:
        y = self.act((rows, c_out), 0.004)
        ins = [x, self.weights((c_out, c_in), self.dense_axis), self.bias(c_out)]
        return self.op("FULLY_CONNECTED", ins, [y])

    def gate(self, x: int, h: int, rows: int, width: int, opcode: str) -> int:
        """``opcode`` (LOGISTIC or TANH) of FC(x) + FC(h)."""
        s = self.act((rows, width), 0.008)
        self.op("ADD", [self.dense(x, rows, width, width), self.dense(h, rows, width, width)], [s])
        return self.op(opcode, [s], [self.act((rows, width), SIGMOID_SCALE)])


def _cell(n: _Net, x: int, h: int, rows: int, width: int) -> int:
    """A gated recurrent cell: z = sigmoid, n = tanh of FC(x) + FC(h); h' = n + z * (h - n)."""
    z = n.gate(x, h, rows, width, "LOGISTIC")
    cand = n.gate(x, h, rows, width, "TANH")
    diff = n.op("SUB", [h, cand], [n.act((rows, width), 2 / 32768)])
    scaled = n.op("MUL", [z, diff], [n.act((rows, width), 2 / 32768)])
    return n.op("ADD", [cand, scaled], [n.act((rows, width), 2 / 32768)])


def unet_denoiser(
    frames: int = 32,
    bins: int = 16,
    channels: int = 8,
    out_up: int = 2,
    transpose_bias: bool = False,
    dense_per_channel: bool = True,
    shape_ops: bool = False,
) -> bytes:
    """The U-Net as .tflite bytes: an input of ``frames`` x ``bins`` (multiples of 4;
    ``frames`` 1: one row, 1x3 filters, strides along the columns alone, as the
    one-dimensional denoisers' converted models), ``channels`` in the first encoder
    (twice as many in the second), ``out_up`` channels out of the last
    TRANSPOSE_CONV; ``transpose_bias``: the TRANSPOSE_CONVs have an int64 bias (TFLM's
    CMSIS-NN TRANSPOSE_CONV crashes without one); ``dense_per_channel``: the cell's
    FULLY_CONNECTED weights have a scale per output (TFLM's CMSIS-NN FULLY_CONNECTED
    refuses that for int16: False, one scale); ``shape_ops``: each TRANSPOSE_CONV's
    shape computed from its input by SHAPE, STRIDED_SLICE and PACK, as the converter
    writes it for a model of dynamic batch."""
    if (frames % 4 and frames != 1) or bins % 4 or min(frames, bins, channels, out_up) <= 0:
        raise UsageError("the U-Net needs frames 1 or a multiple of 4, bins a multiple of 4")
    kh = 1 if frames == 1 else 3
    n = _Net("unet_denoiser_int16x8", 0 if dense_per_channel else None, kh, shape_ops)
    c1, c2 = channels, 2 * channels
    rows = [frames, max(frames // 2, 1), max(frames // 4, 1)]
    hw0, hw1, hw2 = (rows[0], bins), (rows[1], bins // 2), (rows[2], bins // 4)
    x = n.act((1, *hw0, 1), 1 / 32768)
    e1 = n.leaky(n.conv(x, hw1, 1, c1, 2), (1, *hw1, c1))
    e2 = n.leaky(n.conv(e1, hw2, c1, c2, 2), (1, *hw2, c2))
    width = hw2[1] * c2
    flat = n.op("RESHAPE", [e2, n.shape((hw2[0], width))], [n.act((hw2[0], width), 0.004)])
    h = n.act((hw2[0], width), 2 / 32768)
    cell = _cell(n, flat, h, hw2[0], width)
    back = n.op("RESHAPE", [cell, n.shape((1, *hw2, c2))], [n.act((1, *hw2, c2), 2 / 32768)])
    d1 = n.up(back, hw1, c2, c1, 0.004, transpose_bias)
    cat1 = n.op("CONCATENATION", [d1, e1], [n.act((1, *hw1, 2 * c1), 0.004)], axis=3)
    u1 = n.leaky(n.conv(cat1, hw1, 2 * c1, c1, 1), (1, *hw1, c1))
    d2 = n.up(u1, hw0, c1, out_up, 1 / 32768, transpose_bias)
    cat0 = n.op("CONCATENATION", [d2, x], [n.act((1, *hw0, out_up + 1), 1 / 32768)], axis=3)
    logits = n.conv(cat0, hw0, out_up + 1, 1, 1)
    mask = n.op("LOGISTIC", [logits], [n.act((1, *hw0, 1), SIGMOID_SCALE)])
    y = n.op("MUL", [mask, x], [n.act((1, *hw0, 1), 1 / 32768)])
    n.b.set_io([x, h], [y])
    return n.b.finish()
