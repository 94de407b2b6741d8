"""Models shaped as TensorFlow's converter writes Keras CNNs, with the project's writer:
a signature def (``serving_default``), batch norm the converter did not fold (MUL and
ADD by per-channel constants after a convolution), separate RELU operators,
residual ADDs, scalar scalings and clamps (MUL, SUB with the constant first,
MINIMUM, MAXIMUM) and global average pooling as MEAN. int8, weights per channel,
random with a fixed seed; each factory returns ``.tflite`` bytes that TFLM's reference
kernels run.
"""

from __future__ import annotations

import numpy as np
from kits.opmodels import I8, I32, Net, q

from arenaplan.ir.model import Quantization

KEY = "serving_default"
SAME = {"padding": "SAME", "stride_w": 1, "stride_h": 1}


def _channel_const(n: Net, c: int, shape: tuple[int, ...], scale: float) -> int:
    """An int8 constant of ``c`` values (per channel), quantised per tensor."""
    data = n.rng.integers(-127, 127, c).astype(np.int8).reshape(shape)
    return n.b.add_tensor(n._name("bn"), shape, I8, data=data, quantization=q(scale, 0))


def _conv(n: Net, x: int, shape: tuple[int, ...], c_out: int, k: int, stride: int = 1) -> tuple:
    _, h, w, c_in = shape
    out = (1, -(-h // stride), -(-w // stride), c_out)
    y = n.act(out, scale=0.05, zero=3)
    ins = [x, n.weights((c_out, k, k, c_in), 0), n.bias(c_out, I32, c_out)]
    n.op("CONV_2D", ins, [y], padding="SAME", stride_w=stride, stride_h=stride)
    return y, out


def _batch_norm(n: Net, x: int, shape: tuple[int, ...], scalar: bool = False) -> int:
    """MUL then ADD by per-channel constants (``scalar``: the ADD's is one value)."""
    c = shape[3]
    m = n.act(shape, scale=0.04, zero=-2)
    n.op("MUL", [x, _channel_const(n, c, (c,), 0.01)], [m])
    a = n.act(shape, scale=0.05, zero=1)
    bias = _channel_const(n, 1, (), 0.02) if scalar else _channel_const(n, c, (1, 1, 1, c), 0.02)
    n.op("ADD", [m, bias], [a], fused_activation_function="RELU")
    return a


def _head(n: Net, x: int, shape: tuple[int, ...], classes: int) -> int:
    """Average pool over the whole image, RESHAPE, FULLY_CONNECTED, SOFTMAX."""
    _, h, w, c = shape
    p = n.b.add_tensor(n._name("pool"), (1, 1, 1, c), I8, quantization=Quantization((0.05,), (1,)))
    n.op("AVERAGE_POOL_2D", [x], [p], padding="VALID", stride_w=1, stride_h=1,
         filter_height=h, filter_width=w)  # fmt: skip
    r = n.b.add_tensor(n._name("flat"), (1, c), I8, quantization=Quantization((0.05,), (1,)))
    n.op("RESHAPE", [p, n.const([1, c], I32)], [r], new_shape=(1, c))
    f = n.act((1, classes), scale=0.1)
    n.op("FULLY_CONNECTED", [r, n.weights((classes, c), None), n.bias(classes)], [f])
    y = n.act((1, classes), scale=1 / 256, zero=-128)
    n.op("SOFTMAX", [f], [y], beta=1.0)
    return y


def bn_classifier(size: int = 32, widths: tuple[int, ...] = (8, 16, 16)) -> bytes:
    """CONV_2D (stride 2 after the first) -> MUL -> ADD (RELU) per layer, then the
    classifier head; the last layer's ADD adds a scalar."""
    n = Net("bn_classifier", seed=7)
    shape = (1, size, size, 3)
    x = n.act(shape, scale=1 / 128)
    y = x
    for k, c in enumerate(widths):
        y, shape = _conv(n, y, shape, c, 3, 1 if k == 0 else 2)
        y = _batch_norm(n, y, shape, scalar=k == len(widths) - 1)
    return n.done([x], [_head(n, y, shape, 4)], KEY)


def residual_net(size: int = 32, c: int = 8, blocks: int = 2) -> bytes:
    """Full-resolution convolutions with skip ADDs: CONV -> RELU, then per block
    CONV -> RELU -> CONV -> ADD(skip) -> RELU; then the classifier head."""
    n = Net("residual_net", seed=11)
    shape = (1, size, size, 3)
    x = n.act(shape, scale=1 / 128)
    y, shape = _conv(n, x, shape, c, 3)
    for _ in range(blocks):
        r = n.act(shape, scale=0.05, zero=-128)
        n.op("RELU", [y], [r])
        a, _ = _conv(n, r, shape, c, 3)
        ra = n.act(shape, scale=0.05, zero=-128)
        n.op("RELU", [a], [ra])
        b, _ = _conv(n, ra, shape, c, 3)
        s = n.act(shape, scale=0.08, zero=0)
        n.op("ADD", [r, b], [s])
        y = s
    out = n.act(shape, scale=0.08, zero=-128)
    n.op("RELU", [y], [out])
    return n.done([x], [_head(n, out, shape, 4)], KEY)


def _scalar(n: Net, value: int, scale: float, zero: int = 0) -> int:
    data = np.array(value, np.int8)
    return n.b.add_tensor(n._name("k"), (), I8, data=data, quantization=q(scale, zero))


def clamp_net(size: int = 24, c: int = 8) -> bytes:
    """As the converter writes Keras' hard sigmoid, a clip and ``1 - x``: CONV_2D ->
    MUL by a scalar -> MINIMUM and MAXIMUM by scalars -> SUB (per-channel constant
    first) -> MAXIMUM of it and a depthwise convolution of it -> MEAN over rows and
    columns (keep_dims false, GlobalAveragePooling2D), the output."""
    n = Net("clamp_net", seed=13)
    shape = (1, size, size, 3)
    x = n.act(shape, scale=1 / 128)
    y, shape = _conv(n, x, shape, c, 3)
    m = n.act(shape, scale=0.01, zero=0)
    n.op("MUL", [y, _scalar(n, 40, 0.001, -128)], [m])
    lo = n.act(shape, scale=0.01, zero=0)
    n.op("MINIMUM", [m, _scalar(n, 70, 0.01)], [lo])
    hi = n.act(shape, scale=0.01, zero=0)
    n.op("MAXIMUM", [lo, _scalar(n, -50, 0.01)], [hi])
    s = n.act(shape, scale=0.004, zero=10)
    n.op("SUB", [_channel_const(n, c, (1, 1, 1, c), 0.005), hi], [s])
    d = n.act(shape, scale=0.004, zero=10)
    n.op("DEPTHWISE_CONV_2D", [s, n.weights((1, 3, 3, c), 3), n.bias(c, I32, c)], [d],
         padding="SAME", stride_w=1, stride_h=1, depth_multiplier=1)  # fmt: skip
    mx = n.act(shape, scale=0.004, zero=10)
    n.op("MAXIMUM", [s, d], [mx])
    pooled = n.act((1, c), scale=0.004, zero=-5)
    n.op("MEAN", [mx, n.const([1, 2], I32)], [pooled], keep_dims=False)
    return n.done([x], [pooled], KEY)


KERAS_LIKE = {"bn_classifier": bn_classifier, "residual_net": residual_net, "clamp_net": clamp_net}
