"""A small model with weights of every grouped kind, for the weights tests."""

from __future__ import annotations

from kits.opmodels import I32, Net


def chain() -> bytes:
    """conv 3x3 (8 -> 40 channels) -> depthwise 3x3 (40) -> fully connected (40*6*6 -> 20)."""
    n = Net("weights_t", seed=5)
    x = n.act((1, 8, 8, 8))
    w1, b1 = n.weights((40, 3, 3, 8), 0), n.bias(40, I32, 40)
    y1 = n.act((1, 6, 6, 40))
    n.op("CONV_2D", [x, w1, b1], [y1], padding="VALID", stride_h=1, stride_w=1)
    w2, b2 = n.weights((1, 3, 3, 40), 3), n.bias(40, I32, 40)
    y2 = n.act((1, 6, 6, 40))
    n.op("DEPTHWISE_CONV_2D", [y1, w2, b2], [y2], padding="SAME", stride_h=1, stride_w=1,
         depth_multiplier=1)  # fmt: skip
    r = n.act((1, 1440))
    n.op("RESHAPE", [y2], [r])
    w3, b3 = n.weights((20, 1440), 0), n.bias(20, I32, 20)
    y3 = n.act((1, 20))
    n.op("FULLY_CONNECTED", [r, w3, b3], [y3])
    return n.done([x], [y3])
