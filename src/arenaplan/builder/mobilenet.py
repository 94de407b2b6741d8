"""MobileNetV1- and V2-style int8 models written with the project's own writer.

The layer shapes follow the papers (V1: Howard et al. 2017, table 1; V2: Sandler
et al. 2018, table 2), scaled by the width multiplier ``alpha`` and the input
``size``; weights are random (fixed seed), per-channel symmetric int8, biases
int32: right for planning and for running in TFLM, not for accuracy. The V2
blocks have their residual ADDs; the heads end in average pooling, a fully
connected layer (1000 classes unless V1 is given ``classes``) and no softmax.
person_detect's shape is ``mobilenet_v1(0.25, 96, channels=1, classes=2)``.
"""

from __future__ import annotations

from arenaplan.builder.int8_net import Int8Net

# V1: (output channels, stride) of each depthwise-separable block after the stem
_V1 = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), *[(512, 1)] * 5, (1024, 2),
       (1024, 1))  # fmt: skip
# V2: (expansion t, output channels c, repeats n, stride s) of each bottleneck stage
_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
       (6, 160, 3, 2), (6, 320, 1, 1))  # fmt: skip


def _width(c: int, alpha: float) -> int:
    """Channels scaled by ``alpha``, rounded to a multiple of 8 (at least 8)."""
    return max(8, int(c * alpha + 4) // 8 * 8)


class _Net(Int8Net):
    def conv(self, x: int, hw: int, c_in: int, c_out: int, k: int, stride: int, relu=True):
        out = -(-hw // stride)
        y = self.act((1, out, out, c_out))
        w, b = self.weights((c_out, k, k, c_in), 0), self.bias(c_out)
        opts = {"padding": "SAME", "stride_h": stride, "stride_w": stride}
        if relu:
            opts["fused_activation_function"] = "RELU6"
        self.b.add_operator("CONV_2D", [x, w, b], [y], opts)
        return y, out

    def depthwise(self, x: int, hw: int, c: int, stride: int) -> tuple[int, int]:
        out = -(-hw // stride)
        y = self.act((1, out, out, c))
        w, b = self.weights((1, 3, 3, c), 3), self.bias(c)
        opts = {"padding": "SAME", "stride_h": stride, "stride_w": stride, "depth_multiplier": 1}
        self.b.add_operator(
            "DEPTHWISE_CONV_2D", [x, w, b], [y], opts | {"fused_activation_function": "RELU6"}
        )
        return y, out

    def head(self, x: int, hw: int, c: int, classes: int = 1000) -> int:
        p = self.act((1, 1, 1, c))
        self.b.add_operator(
            "AVERAGE_POOL_2D",
            [x],
            [p],
            {"padding": "VALID", "stride_h": 1, "stride_w": 1, "filter_height": hw,
             "filter_width": hw},
        )  # fmt: skip
        r = self.act((1, c))
        self.b.add_operator("RESHAPE", [p], [r])
        y = self.act((1, classes))
        self.b.add_operator(
            "FULLY_CONNECTED", [r, self.weights((classes, c), 0), self.bias(classes)], [y]
        )
        return y


def mobilenet_v1(
    alpha: float = 1.0,
    size: int = 224,
    channels: int = 3,
    classes: int = 1000,
    signature: str | None = None,
) -> bytes:
    """MobileNetV1 (width ``alpha``, ``size`` x ``size`` x ``channels`` input,
    ``classes`` outputs) as .tflite bytes; the defaults' bytes are those of the
    3-channel, 1000-class model built before the two parameters existed.
    ``signature``: the key of a signature def over its input and output, as
    TensorFlow's converter writes (None: none)."""
    n = _Net(f"mobilenet_v1_{alpha}_{size}")
    x = n.act((1, size, size, channels))
    c = _width(32, alpha)
    y, hw = n.conv(x, size, channels, c, 3, 2)
    for c_out, stride in _V1:
        y, hw = n.depthwise(y, hw, c, stride)
        y, hw = n.conv(y, hw, c, _width(c_out, alpha), 1, 1)
        c = _width(c_out, alpha)
    out = n.head(y, hw, c, classes)
    n.b.set_io([x], [out], signature)
    return n.b.finish()


def mobilenet_v2(alpha: float = 1.0, size: int = 224, signature: str | None = None) -> bytes:
    """MobileNetV2 (width ``alpha``, ``size`` x ``size`` x 3 input) as .tflite bytes;
    ``signature`` as for ``mobilenet_v1``."""
    n = _Net(f"mobilenet_v2_{alpha}_{size}")
    x = n.act((1, size, size, 3))
    c = _width(32, alpha)
    y, hw = n.conv(x, size, 3, c, 3, 2)
    for t, c_stage, repeats, s in _V2:
        c_out = _width(c_stage, alpha)
        for k in range(repeats):
            stride = s if k == 0 else 1
            h, h_hw = n.conv(y, hw, c, c * t, 1, 1) if t != 1 else (y, hw)
            h, h_hw = n.depthwise(h, h_hw, c * t, stride)
            h, h_hw = n.conv(h, h_hw, c * t, c_out, 1, 1, relu=False)
            if stride == 1 and c == c_out:
                s_out = n.act((1, h_hw, h_hw, c_out))
                n.b.add_operator("ADD", [y, h], [s_out])
                h = s_out
            y, hw, c = h, h_hw, c_out
    last = _width(1280, max(alpha, 1.0))
    y, hw = n.conv(y, hw, c, last, 1, 1)
    out = n.head(y, hw, last)
    n.b.set_io([x], [out], signature)
    return n.b.finish()
