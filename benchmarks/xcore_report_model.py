"""The model assumed for xcore.ai's split-arena figures (xmos/ai_tools #908): the
input of ``xcore_calibration.py``, which fits the built-in xcore_ai target on it.

The report gives per operator kind the count and the time with the arena in SRAM
and in LPDDR, not the model: 14 CONV_2D, 20 ADD, 21 lookups (LOGISTIC, TANH), 12
MUL and 4 SPLIT. Those counts are what a small streaming audio network gives,
a TCN front end and a 4-step LSTM, so that is the architecture assumed here (the
shapes come from it, not from the timings; all int8):

- input ``x``: 1x16x1x64 (16 frames of 64 features, time as height);
- TCN: 6 blocks, each ``c = CONV_2D(h)`` (3x1 over time, 64 -> 64 channels,
  SAME, dilation 1, 2, 4, 1, 2, 4), ``h = ADD(h, c)`` (residual) and
  ``skip = ADD(skip, c)`` (skip sum, starting from ``x``): 6 CONV_2D, 12 ADD of
  1024 elements;
- LSTM, hidden 64, over the last 4 frames of ``h`` (4 STRIDED_SLICE, 1x1x1x64):
  per step ``g = ADD(CONV_2D(x_t), CONV_2D(h_t))`` (1x1 convolutions 64 -> 256,
  xformer's form of the gate matrices), ``i, f, o, u = SPLIT(g)``, three
  LOGISTIC and a TANH, ``c = ADD(MUL(f, c), MUL(i, u))``, ``h = MUL(o, TANH(c))``:
  8 CONV_2D, 8 ADD, 4 SPLIT, 20 lookups, 12 MUL;
- output: ``LOGISTIC(skip)`` (a 1024-element mask) and the LSTM state.

Weights: 6 x 12 KiB + 8 x 16 KiB; activations ~10 KiB at peak (the report's arena,
158,800 bytes, also held the weights ld_flash copies in, one operator's at a time).
"""

from __future__ import annotations

import numpy as np

from arenaplan.builder.writer import ModelBuilder
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Quantization

FRAMES, FEATURES, HIDDEN, STEPS = 16, 64, 64, 4  # frames, channels, LSTM units, steps
DILATIONS = (1, 2, 4, 1, 2, 4)  # of the TCN's 3x1 convolutions
COUNTS = {"CONV_2D": 14, "ADD": 20, "LOOKUP": 21, "MUL": 12, "SPLIT": 4}  # the report's


class _Net:
    def __init__(self, seed: int = 0) -> None:
        self.b = ModelBuilder("xcore split-arena model (assumed shapes)")
        self.rng = np.random.default_rng(seed)
        self.n = 0

    def act(self, shape: tuple[int, ...], scale: float = 0.05) -> int:
        self.n += 1
        q = Quantization((scale,), (0,))
        return self.b.add_tensor(f"t{self.n}", shape, DType.INT8, quantization=q)

    def const(self, data: np.ndarray, dtype: DType, q: Quantization | None = None) -> int:
        self.n += 1
        return self.b.add_tensor(f"c{self.n}", data.shape, dtype, data=data, quantization=q)

    def conv(self, x: int, shape: tuple[int, ...], cout: int, k: int, dil: int = 1) -> int:
        cin = self.b.tensors[x].shape[-1]
        data = self.rng.integers(-100, 100, (cout, k, 1, cin)).astype(np.int8)
        w = self.const(data, DType.INT8, Quantization((0.005,) * cout, (0,) * cout, 0))
        bias = self.const(np.zeros(cout, np.int32), DType.INT32, Quantization((2.5e-4,), (0,)))
        y = self.act((*shape[:-1], cout))
        options = {"padding": "SAME", "dilation_h_factor": dil}
        self.b.add_operator("CONV_2D", [x, w, bias], [y], options)
        return y

    def op(self, opcode: str, ins: list[int], shape: tuple[int, ...], **options) -> int:
        scale = {"LOGISTIC": 1 / 256, "TANH": 1 / 128}.get(opcode, 0.05)
        y = self.act(shape, scale)
        self.b.add_operator(opcode, ins, [y], options)
        return y


def _tcn(net: _Net, x: int) -> tuple[int, int]:
    shape = (1, FRAMES, 1, FEATURES)
    h = skip = x
    for dil in DILATIONS:
        c = net.conv(h, shape, FEATURES, 3, dil)
        h = net.op("ADD", [h, c], shape)
        skip = net.op("ADD", [skip, c], shape)
    return h, skip


def _lstm_step(net: _Net, x: int, h: int, c: int) -> tuple[int, int]:
    one = (1, 1, 1, HIDDEN)
    four = (1, 1, 1, 4 * HIDDEN)
    g = net.op("ADD", [net.conv(x, four, 4 * HIDDEN, 1), net.conv(h, four, 4 * HIDDEN, 1)], four)
    axis = net.const(np.array([3], np.int32), DType.INT32)
    gates = [net.act(one) for _ in range(4)]
    net.b.add_operator("SPLIT", [axis, g], gates, {"num_splits": 4})
    i, f, o = (net.op("LOGISTIC", [t], one) for t in gates[:3])
    u = net.op("TANH", [gates[3]], one)
    c = net.op("ADD", [net.op("MUL", [f, c], one), net.op("MUL", [i, u], one)], one)
    h = net.op("MUL", [o, net.op("TANH", [c], one)], one)
    return h, c


def _frame(net: _Net, h: int, t: int) -> int:
    """Frame ``t`` of the TCN output, 1x1x1x64."""
    begin = net.const(np.array([0, t, 0, 0], np.int32), DType.INT32)
    end = net.const(np.array([1, t + 1, 1, FEATURES], np.int32), DType.INT32)
    strides = net.const(np.ones(4, np.int32), DType.INT32)
    return net.op("STRIDED_SLICE", [h, begin, end, strides], (1, 1, 1, FEATURES))


def split_arena_model() -> Model:
    """The assumed model (see the module doc), as IR."""
    net = _Net()
    x = net.act((1, FRAMES, 1, FEATURES))
    h0, c0 = net.act((1, 1, 1, HIDDEN)), net.act((1, 1, 1, HIDDEN))
    top, skip = _tcn(net, x)
    h, c = h0, c0
    for t in range(FRAMES - STEPS, FRAMES):
        h, c = _lstm_step(net, _frame(net, top, t), h, c)
    mask = net.op("LOGISTIC", [skip], (1, FRAMES, 1, FEATURES))
    net.b.set_io([x, h0, c0], [mask, h, c])
    return net.b.model()
