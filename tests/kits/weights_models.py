"""Models for the weights tests: weights of every grouped kind (``chain``), one
weighted operator per weight type (``one_weighted``) and an int16x8 denoiser."""

from __future__ import annotations

from kits.opmodels import F32, I8, I16, I32, I64, Net

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization


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


# ---- one operator per weight type, with biases that are not zero ------------------

KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED")


def _bias(n: Net, channels: int, dtype: DType, per_channel: bool, scale: float = 1e-4) -> int:
    """A bias of random non-zero values (a copy that misses bytes changes outputs);
    ``scale``: its quantisation scale (TFLM checks a per-tensor one against the input
    scale times the filter scale)."""
    if dtype is F32:
        return n.const(n.rng.normal(0, 0.5, channels), F32)
    k = channels if per_channel else 1
    big = 3000 if dtype is not I16 else 300
    values = n.rng.integers(-big, big, channels)
    return n.const(values, dtype, Quantization((scale,) * k, (0,) * k))


def one_weighted(opcode: str, act: DType, bias: DType | None, per_channel: bool = True) -> bytes:
    """One ``opcode`` of ``act`` activations (int8 weights, float32 with float32), its
    weights per channel or per tensor, a ``bias`` of that type (None: no bias)."""
    n = Net(f"{opcode.lower()}_{act.name.lower()}", seed=11)
    wdt = F32 if act is F32 else I8
    c_in, c_out = 4, 6
    axis = (3 if opcode == "DEPTHWISE_CONV_2D" else 0) if per_channel else None
    x = n.act((1, 6, 6, c_in) if opcode != "FULLY_CONNECTED" else (1, 24), act, 0.01)
    same = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    if opcode == "CONV_2D":
        w, y = n.weights((c_out, 3, 3, c_in), axis, wdt), n.act((1, 6, 6, c_out), act, 0.02)
    elif opcode == "DEPTHWISE_CONV_2D":
        c_out = c_in
        w, y = n.weights((1, 3, 3, c_in), axis, wdt), n.act((1, 6, 6, c_in), act, 0.02)
        same["depth_multiplier"] = 1
    elif opcode == "TRANSPOSE_CONV":
        w, y = n.weights((c_out, 3, 3, c_in), axis, wdt), n.act((1, 12, 12, c_out), act, 0.02)
        same.update(stride_w=2, stride_h=2)
    else:
        w, y = n.weights((c_out, 24), axis, wdt), n.act((1, c_out), act, 0.02)
        same = {}
    scale = 0.01 * n.b.tensors[w].quantization.scales[0] if act is not F32 else 1.0
    b = _bias(n, c_out, bias, per_channel, scale) if bias is not None else -1
    if opcode == "TRANSPOSE_CONV":
        n.op(opcode, [n.const([1, 12, 12, c_out], I32), w, x, b], [y], **same)
    else:
        n.op(opcode, [x, w, b], [y], **same)
    return n.done([x], [y])


def denoiser(dw_bias: DType = I32, bias: DType = I64) -> bytes:
    """An int16x8 audio denoiser in small: CONV -> DEPTHWISE -> CONV /2 ->
    TRANSPOSE_CONV x2 -> CONCATENATION -> CONV 1x1, and a FULLY_CONNECTED head: two
    outputs. The depthwise bias of type ``dw_bias`` (int32: as the converter makes
    it when asked, and TFLM reads it as int64), the others of type ``bias``."""
    n = Net("denoiser", seed=3)
    same = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    x = n.act((1, 8, 8, 4), I16, 0.001)
    c = n.act((1, 8, 8, 8), I16, 0.002)
    n.op("CONV_2D", [x, n.weights((8, 3, 3, 4), 0), _bias(n, 8, bias, True)], [c], **same)
    d = n.act((1, 8, 8, 8), I16, 0.002)
    dw = [c, n.weights((1, 3, 3, 8), 3), _bias(n, 8, dw_bias, True)]
    n.op("DEPTHWISE_CONV_2D", dw, [d], depth_multiplier=1, **same)
    down = n.act((1, 4, 4, 8), I16, 0.002)
    half = {"padding": "SAME", "stride_w": 2, "stride_h": 2}
    n.op("CONV_2D", [d, n.weights((8, 3, 3, 8), 0), _bias(n, 8, bias, True)], [down], **half)
    ups = []
    for _ in range(2):
        up = n.act((1, 8, 8, 4), I16, 0.002)
        shape = n.const([1, 8, 8, 4], I32)
        ins = [shape, n.weights((4, 3, 3, 8), 0), down, _bias(n, 4, bias, True)]
        n.op("TRANSPOSE_CONV", ins, [up], **half)
        ups.append(up)
    cat = n.act((1, 8, 8, 16), I16, 0.002)
    n.op("CONCATENATION", [*ups, d], [cat], axis=3)
    mask = n.act((1, 8, 8, 4), I16, 0.002)
    n.op("CONV_2D", [cat, n.weights((4, 1, 1, 16), 0), _bias(n, 4, bias, True)], [mask], **same)
    flat = n.act((1, 256), I16, 0.002)
    n.op("RESHAPE", [mask], [flat])
    gain = n.act((1, 8), I16, 0.004)
    w = n.weights((8, 256), None)  # per tensor: CMSIS-NN refuses a per-channel int16x8 one
    b = _bias(n, 8, bias, False, 0.002 * n.b.tensors[w].quantization.scales[0])
    n.op("FULLY_CONNECTED", [flat, w, b], [gain])
    return n.done([x], [mask, gain])
