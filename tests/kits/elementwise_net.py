"""A small int8 network with standalone element-wise operators (RELU, RELU6,
LEAKY_RELU, MUL, SUB, ADD) between convolutions, for the cascade pass's tests.

Built with the project's ``Int8Net`` (deterministic data); each activation gets its
own scale and zero point so that every element-wise operator requantises (RELU6's
input and output share theirs, as converters write it).
"""

from __future__ import annotations

from arenaplan.builder.int8_net import Int8Net
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization

ELEMENTWISE_OPS = ("RELU", "RELU6", "LEAKY_RELU", "MUL", "SUB")


class _Net(Int8Net):
    def act_q(self, shape: tuple[int, ...], scale: float, zp: int) -> int:
        self.n += 1
        q = Quantization((scale,), (zp,))
        return self.b.add_tensor(f"a{self.n}", shape, DType.INT8, quantization=q)

    def conv(self, x: int, c_in: int, c_out: int, hw: int, scale: float, zp: int) -> int:
        w = self.weights((c_out, 3, 3, c_in), 0)
        b = self.bias(c_out)
        y = self.act_q((1, hw, hw, c_out), scale, zp)
        opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
        self.b.add_operator("CONV_2D", [x, w, b], [y], opts)
        return y

    def depthwise(self, x: int, c: int, hw: int, scale: float, zp: int) -> int:
        w = self.weights((1, 3, 3, c), 3)
        b = self.bias(c)
        y = self.act_q((1, hw, hw, c), scale, zp)
        opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1}
        self.b.add_operator("DEPTHWISE_CONV_2D", [x, w, b], [y], opts)
        return y

    def unary(self, opcode: str, x: int, shape, scale: float, zp: int, **opts) -> int:
        y = self.act_q(shape, scale, zp)
        self.b.add_operator(opcode, [x], [y], opts)
        return y

    def binary(self, opcode: str, a: int, b: int, shape, scale: float, zp: int, act="NONE") -> int:
        y = self.act_q(shape, scale, zp)
        self.b.add_operator(opcode, [a, b], [y], {"fused_activation_function": act})
        return y


def elementwise_net(hw: int = 24, c: int = 8) -> bytes:
    """conv -> RELU -> depthwise -> LEAKY_RELU -> conv -> MUL(., RELU's) -> SUB(input
    of the block, .) -> RELU6 -> conv -> ADD -> LEAKY_RELU (alpha < 0) -> conv."""
    n = _Net("elementwise_net")
    shape = (1, hw, hw, c)
    x = n.act_q(shape, 0.05, -10)
    a = n.conv(x, c, c, hw, 0.08, 3)
    r = n.unary("RELU", a, shape, 0.04, -128)
    d = n.depthwise(r, c, hw, 0.06, -5)
    lr = n.unary("LEAKY_RELU", d, shape, 0.03, 10, alpha=0.1)
    e = n.conv(lr, c, c, hw, 0.07, -2)
    m = n.binary("MUL", e, r, shape, 0.09, 4)
    s = n.binary("SUB", a, m, shape, 0.1, -3, act="RELU")
    r6 = n.unary("RELU6", s, shape, 0.1, -3)
    f = n.conv(r6, c, c, hw, 0.05, 0)
    g = n.binary("ADD", f, r6, shape, 0.08, 1)
    h = n.unary("LEAKY_RELU", g, shape, 0.05, -20, alpha=-0.25)
    y = n.conv(h, c, 4, hw, 0.1, 2)
    n.b.set_io([x], [y])
    return n.b.finish()
