"""DS-CNN keyword spotters (sizes "M" and "L") as int8 models written with the
project's own writer.

The shapes are those of the DS-CNN models of Zhang et al. 2017, "Hello Edge: Keyword
Spotting on Microcontrollers" (Arm ML-KWS): a 49 x 10 x 1 MFCC input, then

    M: CONV 10x4 /2x2 (172) -> 4 x [DW 3x3 -> CONV 1x1 (172)]  (25 x 5 x 172)
    L: CONV 10x4 /2x1 (276) -> 5 x [DW 3x3 -> CONV 1x1 (276)]  (25 x 10 x 276)

-> AVERAGE_POOL over the whole map -> RESHAPE -> FULLY_CONNECTED (12 classes), no
softmax. Every convolution is SAME-padded with a fused ReLU (batch norm folded away);
the separable blocks keep stride 1. Weights are random (fixed seed), per-channel
symmetric int8, biases int32: right for planning and for running in TFLM, not for
accuracy.
"""

from __future__ import annotations

import numpy as np

from arenaplan.builder.int8_net import Int8Net
from arenaplan.errors import UsageError
from arenaplan.ir.dtypes import DType

INPUT_SHAPE = (1, 49, 10, 1)  # MFCC: 49 frames x 10 coefficients
CLASSES = 12
# size: (channels, first convolution's (stride h, stride w), separable blocks)
SIZES = {"M": (172, (2, 2), 4), "L": (276, (2, 1), 5)}


class _Net(Int8Net):
    def conv(
        self,
        x: int,
        hw: tuple[int, int],
        c_in: int,
        c_out: int,
        kernel: tuple[int, int],
        stride: tuple[int, int],
    ) -> tuple[int, tuple[int, int]]:
        """A SAME-padded CONV_2D with a fused ReLU; (output, its (height, width))."""
        out = (-(-hw[0] // stride[0]), -(-hw[1] // stride[1]))
        y = self.act((1, *out, c_out))
        w, b = self.weights((c_out, *kernel, c_in), 0), self.bias(c_out)
        opts = {"padding": "SAME", "stride_h": stride[0], "stride_w": stride[1],
                "fused_activation_function": "RELU"}  # fmt: skip
        self.b.add_operator("CONV_2D", [x, w, b], [y], opts)
        return y, out

    def depthwise(self, x: int, hw: tuple[int, int], c: int) -> int:
        """A 3x3 SAME-padded, stride-1 DEPTHWISE_CONV_2D with a fused ReLU."""
        y = self.act((1, *hw, c))
        w, b = self.weights((1, 3, 3, c), 3), self.bias(c)
        opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1,
                "fused_activation_function": "RELU"}  # fmt: skip
        self.b.add_operator("DEPTHWISE_CONV_2D", [x, w, b], [y], opts)
        return y


def ds_cnn(size: str = "M", signature: str | None = None) -> bytes:
    """DS-CNN ``size`` ("M" or "L") as .tflite bytes (the same bytes every call);
    ``signature``: the key of a signature def over its input and output, as
    TensorFlow's converter writes (None: none)."""
    if size not in SIZES:
        raise UsageError(f"unknown DS-CNN size {size!r} (known: {', '.join(SIZES)})")
    c, stride, blocks = SIZES[size]
    n = _Net(f"ds_cnn_{size}")
    x = n.act(INPUT_SHAPE)
    y, hw = n.conv(x, INPUT_SHAPE[1:3], INPUT_SHAPE[3], c, (10, 4), stride)
    for _ in range(blocks):
        y = n.depthwise(y, hw, c)
        y, hw = n.conv(y, hw, c, c, (1, 1), (1, 1))
    p = n.act((1, 1, 1, c))
    pool = {"padding": "VALID", "stride_h": hw[0], "stride_w": hw[1], "filter_height": hw[0],
            "filter_width": hw[1]}  # fmt: skip
    n.b.add_operator("AVERAGE_POOL_2D", [y], [p], pool)
    shape = n.b.add_tensor("flatten/shape", (2,), DType.INT32, data=np.array([1, c], np.int32))
    r = n.act((1, c))
    n.b.add_operator("RESHAPE", [p, shape], [r], {"new_shape": (1, c)})
    out = n.act((1, CLASSES))
    n.b.add_operator("FULLY_CONNECTED", [r, n.weights((CLASSES, c), 0), n.bias(CLASSES)], [out])
    n.b.set_io([x], [out], signature)
    return n.b.finish()
