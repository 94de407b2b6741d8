"""The demo model: a small DS-CNN-like int8 keyword spotter with a residual branch.

    input [1,49,10,1] -> CONV 3x3 (16) -> CONV 1x1 (12) -> DW 3x3 -> CONV 1x1 (16)
    -> DW 3x3 /2 -> CONV 1x1 (16) -> DW 3x3 -> ADD (residual from the DW /2)
    -> AVERAGE_POOL -> RESHAPE -> FULLY_CONNECTED (12) -> SOFTMAX

The bottleneck at full resolution (7,840 -> 5,880 -> 5,880 -> 7,840 bytes) is a
pattern TFLM's greedy-by-size planner packs badly; arenaplan reaches the bound.
Weights are random (fixed seed); activation scales are calibrated with a float
forward pass on a random input so that the int8 ranges are used, not saturated.
Quantisation follows TFLM's int8 reference kernels: per-channel symmetric
filters, int32 biases at input_scale * filter_scale, softmax output 1/256, -128.
"""

from __future__ import annotations

import numpy as np

from arenaplan.builder.float_ops import avg_pool, conv2d, depthwise2d
from arenaplan.builder.writer import ModelBuilder
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization

DEMO_NAME = "arenaplan-demo-dscnn"
INPUT_SHAPE = (1, 49, 10, 1)
CLASSES = 12


class _Net:
    """Builds layers in float and int8 side by side."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.b = ModelBuilder(DEMO_NAME)

    def activation(self, name: str, x: np.ndarray, relu: bool) -> tuple[int, float, int]:
        """A tensor for float values ``x``: (index, scale, zero point)."""
        lo, hi = (0.0, float(x.max())) if relu else (float(x.min()), float(x.max()))
        lo, hi = min(lo, 0.0), max(hi, 1e-3)
        scale = (hi - lo) / 255.0
        zero = round(-128 - lo / scale)
        t = self.b.add_tensor(
            name, x.shape, DType.INT8, quantization=Quantization((scale,), (zero,))
        )
        return t, scale, zero

    def weights(self, name: str, w: np.ndarray, axis: int) -> tuple[int, np.ndarray]:
        """Per-channel symmetric int8 filter along ``axis``; returns (index, scales)."""
        moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
        scales = np.maximum(np.abs(moved).max(axis=1), 1e-6) / 127.0
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.clip(np.round(w / scales.reshape(shape)), -127, 127).astype(np.int8)
        t = self.b.add_tensor(
            name,
            w.shape,
            DType.INT8,
            data=q,
            quantization=Quantization(tuple(float(s) for s in scales), (0,) * len(scales), axis),
        )
        return t, scales

    def bias(self, name: str, values: np.ndarray, scales: np.ndarray) -> int:
        q = np.round(values / scales).astype(np.int32)
        return self.b.add_tensor(
            name,
            values.shape,
            DType.INT32,
            data=q,
            quantization=Quantization(tuple(float(s) for s in scales), (0,) * len(scales)),
        )


def _layer(
    net: _Net,
    name: str,
    kind: str,
    x: np.ndarray,
    xt: tuple[int, float, int],
    out_ch: int,
    stride: int = 1,
) -> tuple[np.ndarray, tuple[int, float, int]]:
    rng = net.rng
    if kind == "dw":
        w = rng.normal(0, 0.4, (1, 3, 3, x.shape[3])).astype(np.float32)
        bias = rng.normal(0, 0.05, x.shape[3]).astype(np.float32)
        y = np.maximum(depthwise2d(x, w[0], stride) + bias, 0)
        wt, ws = net.weights(f"{name}/weights", w, 3)
        op, opts = "DEPTHWISE_CONV_2D", {"depth_multiplier": 1}
    else:
        k = 3 if kind == "conv3" else 1
        w = rng.normal(0, 1.0 / np.sqrt(k * k * x.shape[3]), (out_ch, k, k, x.shape[3]))
        w = w.astype(np.float32)
        bias = rng.normal(0, 0.05, out_ch).astype(np.float32)
        y = np.maximum(conv2d(x, w, stride) + bias, 0)
        wt, ws = net.weights(f"{name}/weights", w, 0)
        op, opts = "CONV_2D", {}
    bt = net.bias(f"{name}/bias", bias, xt[1] * ws)
    yt = net.activation(f"{name}/relu", y, relu=True)
    net.b.add_operator(
        op,
        [xt[0], wt, bt],
        [yt[0]],
        {
            "padding": "SAME",
            "stride_w": stride,
            "stride_h": stride,
            "fused_activation_function": "RELU",
            **opts,
        },
    )
    return y, yt


def demo_model(seed: int = 0) -> bytes:
    """The demo network as `.tflite` bytes (the same bytes for the same seed), with a
    ``serving_default`` signature def as TensorFlow's converter writes one."""
    net = _Net(seed)
    x = net.rng.uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
    xt = (
        net.b.add_tensor(
            "input", INPUT_SHAPE, DType.INT8, quantization=Quantization((1 / 128,), (0,))
        ),
        1 / 128,
        0,
    )
    y, yt = _layer(net, "conv1", "conv3", x, xt, 16)
    for name, kind, ch, stride in (
        ("block1/expand", "pw", 12, 1),
        ("block1/dw", "dw", 12, 1),
        ("block1/project", "pw", 16, 1),
        ("block2/dw", "dw", 16, 2),
    ):
        y, yt = _layer(net, name, kind, y, yt, ch, stride)
    skip, skip_t = y, yt
    y, yt = _layer(net, "block3/pw", "pw", y, yt, 16)
    f, ft = _layer(net, "block3/dw", "dw", y, yt, 16)
    added = np.maximum(skip + f, 0)
    add_t = net.activation("block3/add", added, relu=True)
    net.b.add_operator("ADD", [skip_t[0], ft[0]], [add_t[0]], {"fused_activation_function": "RELU"})
    f, ft = added, add_t
    g = avg_pool(f)
    gt = (
        net.b.add_tensor(
            "pool", g.shape, DType.INT8, quantization=Quantization((ft[1],), (ft[2],))
        ),
        ft[1],
        ft[2],
    )  # TFLM: pooling keeps its input's scale
    net.b.add_operator(
        "AVERAGE_POOL_2D",
        [ft[0]],
        [gt[0]],
        {
            "padding": "VALID",
            "stride_w": 1,
            "stride_h": 1,
            "filter_width": f.shape[2],
            "filter_height": f.shape[1],
        },
    )
    flat = g.reshape(1, -1)
    shape_t = net.b.add_tensor(
        "flatten/shape", (2,), DType.INT32, data=np.array([1, flat.shape[1]], np.int32)
    )
    ht = net.b.add_tensor(
        "flatten", flat.shape, DType.INT8, quantization=Quantization((gt[1],), (gt[2],))
    )
    net.b.add_operator("RESHAPE", [gt[0], shape_t], [ht], {"new_shape": (1, flat.shape[1])})
    w = net.rng.normal(0, 1.0 / np.sqrt(flat.shape[1]), (CLASSES, flat.shape[1]))
    w = w.astype(np.float32)
    logits = flat @ w.T
    wt, ws = net.weights("fc/weights", w, 0)
    bias_t = net.bias("fc/bias", np.zeros(CLASSES, np.float32), gt[1] * ws)
    lt = net.activation("fc", logits, relu=False)
    net.b.add_operator("FULLY_CONNECTED", [ht, wt, bias_t], [lt[0]])
    out = net.b.add_tensor(
        "softmax", (1, CLASSES), DType.INT8, quantization=Quantization((1 / 256,), (-128,))
    )
    net.b.add_operator("SOFTMAX", [lt[0]], [out], {"beta": 1.0})
    net.b.set_io([xt[0]], [out], "serving_default")
    return net.b.finish()
