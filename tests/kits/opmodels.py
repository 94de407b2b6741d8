"""Small models that exercise each tail rule, written with the project's own writer.

Each factory returns ``.tflite`` bytes; ``OP_MODELS`` names them by the rule and
dtype path they exercise. Weights are random with a fixed seed; quantisation
follows what TFLM's reference kernels accept (int16 activations symmetric,
int64 biases on the int16x8 paths, the fixed output scales of SOFTMAX,
LOGISTIC, TANH and LOG_SOFTMAX). ``SHAPED`` holds three models shaped like the
user reports: a MobileNetV2-like block with PAD operators, an int16x8 network and
a Keras-like residual CNN with separate RELU operators.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from flatbuffers import flexbuffers

from arenaplan.builder import ModelBuilder
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization

I8, I16, I32, I64, F32, BOOL = (
    DType.INT8,
    DType.INT16,
    DType.INT32,
    DType.INT64,
    DType.FLOAT32,
    DType.BOOL,
)
_NP = {I8: np.int8, I16: np.int16, I32: np.int32, I64: np.int64, F32: np.float32}


def q(scale: float, zero: int = 0) -> Quantization:
    return Quantization((scale,), (zero,))


class Net:
    """A ModelBuilder with short helpers for activations, weights and operators."""

    def __init__(self, name: str, seed: int = 0) -> None:
        self.b = ModelBuilder(name)
        self.rng = np.random.default_rng(seed)
        self.n = 0

    def _name(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def act(self, shape: tuple[int, ...], dtype: DType = I8, scale: float = 0.05, zero: int = 0):
        """An activation; quantised unless float, bool or int32."""
        quant = q(scale, zero) if dtype in (I8, I16) else None
        return self.b.add_tensor(self._name("t"), shape, dtype, quantization=quant)

    def const(self, values, dtype: DType, quant: Quantization | None = None) -> int:
        data = np.asarray(values, dtype=_NP.get(dtype, np.int8))
        return self.b.add_tensor(self._name("c"), data.shape, dtype, data=data, quantization=quant)

    def weights(self, shape: tuple[int, ...], axis: int | None = 0, dtype: DType = I8) -> int:
        """Symmetric weights, per channel along ``axis`` (per tensor when None)."""
        if dtype is F32:
            return self.const(self.rng.normal(0, 0.3, shape), F32)
        data = self.rng.integers(-100, 100, shape).astype(np.int8)
        n = 1 if axis is None else shape[axis]
        scales = tuple(float(s) for s in self.rng.uniform(0.002, 0.01, n))
        quant = Quantization(scales, (0,) * n, axis or 0)
        return self.b.add_tensor(self._name("w"), shape, dtype, data=data, quantization=quant)

    def bias(self, n: int, dtype: DType = I32, per_channel: int = 1) -> int:
        if dtype is F32:
            return self.const(np.zeros(n), F32)
        quant = Quantization((1e-4,) * per_channel, (0,) * per_channel)
        return self.const(np.zeros(n), dtype, quant)

    def op(self, opcode: str, ins: list[int], outs: list[int], **options) -> None:
        self.b.add_operator(opcode, ins, outs, options)

    def custom(self, code: str, ins: list[int], outs: list[int], **options) -> None:
        self.b.add_operator(f"custom:{code}", ins, outs, custom_options=flexbuffers.Dumps(options))

    def done(self, ins: list[int], outs: list[int], signature: str | None = None) -> bytes:
        self.b.set_io(ins, outs, signature)
        return self.b.finish()


# ---- convolutions and fully connected --------------------------------------------


def conv(dtype: DType = I8, per_channel: bool = True, depthwise: bool = False) -> bytes:
    n = Net("conv")
    act16 = dtype is I16
    x = n.act((1, 8, 8, 4), dtype)
    c_out = 4 if depthwise else 6
    if depthwise:
        w = n.weights((1, 3, 3, 4), 3 if per_channel else None, F32 if dtype is F32 else I8)
    else:
        w = n.weights((6, 3, 3, 4), 0 if per_channel else None, F32 if dtype is F32 else I8)
    k = c_out if per_channel else 1
    bias = n.bias(c_out, F32 if dtype is F32 else (I64 if act16 else I32), k)
    y = n.act((1, 8, 8, c_out), dtype)
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    if depthwise:
        n.op("DEPTHWISE_CONV_2D", [x, w, bias], [y], depth_multiplier=1, **opts)
    else:
        n.op("CONV_2D", [x, w, bias], [y], **opts)
    return n.done([x], [y])


def fully_connected(dtype: DType = I8, per_channel: bool = False, copies: int = 3) -> bytes:
    n = Net("fc")
    x = n.act((1, 16), dtype)
    first = x
    for _ in range(copies):
        wdt = F32 if dtype is F32 else I8
        w = n.weights((16, 16), 0 if per_channel else None, wdt)
        k = 16 if per_channel else 1
        bias = n.bias(16, F32 if dtype is F32 else (I64 if dtype is I16 else I32), k)
        y = n.act((1, 16), dtype)
        n.op("FULLY_CONNECTED", [x, w, bias], [y])
        x = y
    return n.done([first], [x])


def transpose_conv(dtype: DType = I8) -> bytes:
    n = Net("tconv")
    x = n.act((1, 4, 4, 3), dtype)
    w = n.weights((5, 3, 3, 3), 0, F32 if dtype is F32 else I8)
    shape = n.const([1, 8, 8, 5], I32)
    y = n.act((1, 8, 8, 5), dtype)
    n.op("TRANSPOSE_CONV", [shape, w, x, -1], [y], padding="SAME", stride_w=2, stride_h=2)
    return n.done([x], [y])


def batch_matmul(dtype: DType = I8, adj_x: bool = False, adj_y: bool = False) -> bytes:
    n = Net("bmm")
    zero = 0
    a = n.act((1, 2, 3, 4) if not adj_x else (1, 2, 4, 3), dtype, zero=zero)
    b = n.act((1, 2, 4, 5) if not adj_y else (1, 2, 5, 4), dtype, zero=zero)
    y = n.act((1, 2, 3, 5), dtype, scale=0.2)
    n.op("BATCH_MATMUL", [a, b], [y], adj_x=adj_x, adj_y=adj_y)
    return n.done([a, b], [y])


# ---- element-wise and activations ---------------------------------------------------


def unary(opcode: str, dtype: DType = I8, copies: int = 3, out: dict | None = None, **opts):
    """``copies`` chained operators of one kind; ``out``: the output's quantisation."""
    n = Net(opcode.lower())
    x = n.act((1, 4, 4, 8), dtype)
    first = x
    for _ in range(copies):
        y = n.act((1, 4, 4, 8), dtype, **(out or {}))
        n.op(opcode, [x], [y], **opts)
        x = y
    return n.done([first], [x])


def binary(opcode: str, dtype: DType = I8, copies: int = 3, out_dtype: DType | None = None):
    n = Net(opcode.lower())
    a = n.act((1, 4, 4, 8), dtype)
    b = n.act((1, 4, 4, 8), dtype)
    x = a
    outs = []
    for _ in range(copies):
        y = n.act((1, 4, 4, 8), out_dtype or dtype)
        n.op(opcode, [x, b], [y])
        outs.append(y)
        if out_dtype is None:
            x = y
    return n.done([a, b], outs[-1:] if out_dtype is None else outs)


def add_n(dtype: DType = I8) -> bytes:
    n = Net("add_n")
    xs = [n.act((1, 4, 8), dtype) for _ in range(3)]
    y = n.act((1, 4, 8), dtype)
    n.op("ADD_N", xs, [y])
    return n.done(xs, [y])


def softmax(dtype: DType = I8) -> bytes:
    n = Net("softmax")
    x = n.act((1, 10), dtype, scale=0.1)
    out = {I8: (1 / 256, -128), I16: (1 / 32768, 0), F32: (1.0, 0)}[dtype]
    y = n.act((1, 10), dtype, *out)
    n.op("SOFTMAX", [x], [y], beta=1.0)
    return n.done([x], [y])


def log_softmax(dtype: DType = I8) -> bytes:
    n = Net("log_softmax")
    x = n.act((1, 10), dtype, scale=0.1)
    y = n.act((1, 10), dtype, 16 / 256, 127)
    n.op("LOG_SOFTMAX", [x], [y])
    return n.done([x], [y])


def quantize_dequantize() -> bytes:
    n = Net("qdq")
    x = n.act((1, 16), F32)
    a = n.act((1, 16), I8, 0.02, 3)
    b = n.act((1, 16), I8, 0.04, -5)
    c = n.act((1, 16), I16, 0.001)
    y = n.act((1, 16), F32)
    n.op("QUANTIZE", [x], [a])
    n.op("QUANTIZE", [a], [b])
    n.op("QUANTIZE", [b], [c])
    n.op("DEQUANTIZE", [c], [y])
    return n.done([x], [y])


def comparisons(dtype: DType = I8) -> bytes:
    n = Net("cmp")
    a, b = n.act((1, 4, 8), dtype), n.act((1, 4, 8), dtype)
    outs = []
    for opcode in ("EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"):
        y = n.act((1, 4, 8), BOOL)
        n.op(opcode, [a, b], [y])
        outs.append(y)
    return n.done([a, b], outs)


def select_v2() -> bytes:
    n = Net("select")
    c = n.act((1, 4, 8), BOOL)
    a, b = n.act((1, 4, 8), F32), n.act((1, 4, 8), F32)
    y = n.act((1, 4, 8), F32)
    n.op("SELECT_V2", [c, a, b], [y])
    return n.done([c, a, b], [y])


def prelu(dtype: DType = I8) -> bytes:
    n = Net("prelu")
    x = n.act((1, 4, 4, 8), dtype)
    alpha = n.const(np.full(8, 0.1), F32) if dtype is F32 else n.const(np.full(8, 25), I8, q(0.004))
    y = n.act((1, 4, 4, 8), dtype)
    n.op("PRELU", [x, alpha], [y])
    return n.done([x], [y])


def l2_normalization(dtype: DType = F32) -> bytes:
    out = {"scale": 1 / 128, "zero": 0} if dtype is I8 else None
    return unary("L2_NORMALIZATION", dtype, copies=2, out=out)


# ---- shapes, slicing, reductions ---------------------------------------------------


def reduce(opcode: str, dtype: DType = I8, keep_dims: bool = True) -> bytes:
    n = Net(opcode.lower())
    x = n.act((1, 4, 4, 8), dtype)
    axis = n.const([1, 2], I32)
    y = n.act((1, 1, 1, 8) if keep_dims else (1, 8), dtype)
    n.op(opcode, [x, axis], [y], keep_dims=keep_dims)
    return n.done([x], [y])


def pad(opcode: str = "PAD", dtype: DType = I8, copies: int = 3) -> bytes:
    n = Net(opcode.lower())
    x = n.act((1, 4, 4, 2), dtype)
    first, h = x, 4
    for _ in range(copies):
        pads = n.const([[0, 0], [1, 1], [1, 1], [0, 0]], I32)
        h += 2
        y = n.act((1, h, h, 2), dtype)
        ins = [x, pads]
        if opcode == "PADV2":
            ins.append(n.const([0], dtype, q(0.05)) if dtype is not F32 else n.const([0.0], F32))
        opts = {"mode": "REFLECT"} if opcode == "MIRROR_PAD" else {}
        n.op(opcode, ins, [y], **opts)
        x = y
    return n.done([first], [x])


def reshape(minus_one: bool = True) -> bytes:
    n = Net("reshape")
    x = n.act((1, 4, 4, 8))
    shape = n.const([1, -1] if minus_one else [1, 128], I32)
    y = n.act((1, -1) if minus_one else (1, 128))
    n.op("RESHAPE", [x, shape], [y], new_shape=(1, -1) if minus_one else (1, 128))
    z = n.act((1, 128))
    n.op("RELU", [y], [z])
    return n.done([x], [z])


def strided_slice() -> bytes:
    n = Net("strided_slice")
    x = n.act((1, 8, 8, 4))
    outs = []
    for _ in range(2):
        begin, end, strides = (n.const(v, I32) for v in ([0, 0, 0, 0], [1, 8, 8, 4], [1, 2, 2, 1]))
        y = n.act((1, 4, 4, 4))
        n.op("STRIDED_SLICE", [x, begin, end, strides], [y])
        outs.append(y)
    return n.done([x], outs)


def concatenation(dtype: DType = I8) -> bytes:
    n = Net("concat")
    a, b = n.act((1, 4, 4, 3), dtype), n.act((1, 4, 4, 5), dtype)
    y = n.act((1, 4, 4, 8), dtype)
    n.op("CONCATENATION", [a, b], [y], axis=3)
    return n.done([a, b], [y])


def writable_dims(opcode: str) -> bytes:
    """Kernels that rewrite their output dims in Prepare."""
    n = Net(opcode.lower())
    if opcode == "GATHER":
        x, idx = n.act((4, 6), F32), n.const([2, 0, 1], I32)
        y = n.act((3, 6), F32)
        n.op("GATHER", [x, idx], [y], axis=0)
    elif opcode == "GATHER_ND":
        x, idx = n.act((4, 6), F32), n.const([[1], [3]], I32)
        y = n.act((2, 6), F32)
        n.op("GATHER_ND", [x, idx], [y])
    elif opcode == "SPACE_TO_DEPTH":
        x, y = n.act((1, 4, 4, 2)), n.act((1, 2, 2, 8))
        n.op("SPACE_TO_DEPTH", [x], [y], block_size=2)
    elif opcode == "DEPTH_TO_SPACE":
        x, y = n.act((1, 2, 2, 8)), n.act((1, 4, 4, 2))
        n.op("DEPTH_TO_SPACE", [x], [y], block_size=2)
    elif opcode == "L2_POOL_2D":
        x, y = n.act((1, 4, 4, 2), F32), n.act((1, 2, 2, 2), F32)
        opts = {"padding": "VALID", "stride_w": 2, "stride_h": 2}
        n.op("L2_POOL_2D", [x], [y], filter_width=2, filter_height=2, **opts)
    elif opcode == "EMBEDDING_LOOKUP":
        idx = n.act((3,), I32)
        table = n.const(np.ones((5, 4)), F32)
        y = n.act((3, 4), F32)
        n.op("EMBEDDING_LOOKUP", [idx, table], [y])
        x = idx
    return n.done([x], [y])


def pooling(opcode: str, dtype: DType = I8) -> bytes:
    n = Net(opcode.lower())
    x = n.act((1, 8, 8, 4), dtype)
    y = n.act((1, 4, 4, 4), dtype)
    opts = {"padding": "VALID", "stride_w": 2, "stride_h": 2}
    n.op(opcode, [x], [y], filter_width=2, filter_height=2, **opts)
    return n.done([x], [y])


def shapes() -> bytes:
    """Operators with options and no kernel state: SQUEEZE, SPLIT, SPLIT_V, PACK,
    UNPACK, CAST, SHAPE, ARG_MAX, ARG_MIN, RESIZE_*, TRANSPOSE, EXPAND_DIMS."""
    n = Net("shapes")
    x = n.act((1, 4, 6, 2), F32)
    sq = n.act((4, 6, 2), F32)
    n.op("SQUEEZE", [x], [sq], squeeze_dims=(0,))
    axis = n.const(0, I32)
    halves = [n.act((2, 6, 2), F32) for _ in range(2)]
    n.op("SPLIT", [axis, sq], halves, num_splits=2)
    parts = [n.act((4, 2, 2), F32), n.act((4, 4, 2), F32)]
    n.op("SPLIT_V", [sq, n.const([2, 4], I32), n.const(1, I32)], parts, num_splits=2)
    packed = n.act((2, 2, 6, 2), F32)
    n.op("PACK", halves, [packed], values_count=2, axis=0)
    rows = [n.act((4, 2, 2), F32) for _ in range(1)]
    n.op("UNPACK", [n.act((1, 4, 2, 2), F32)], rows, num=1, axis=0)
    casted = n.act((4, 6, 2), I32)
    n.op("CAST", [sq], [casted], in_data_type="FLOAT32", out_data_type="INT32")
    shape = n.act((3,), I32)
    n.op("SHAPE", [sq], [shape], out_type="INT32")
    amax, amin = n.act((4, 6), I32), n.act((4, 6), I32)
    n.op("ARG_MAX", [sq, n.const(2, I32)], [amax], output_type="INT32")
    n.op("ARG_MIN", [sq, n.const(2, I32)], [amin], output_type="INT32")
    size = n.const([8, 12], I32)
    bil, near = n.act((1, 8, 12, 2), F32), n.act((1, 8, 12, 2), F32)
    n.op("RESIZE_BILINEAR", [x, size], [bil])
    n.op("RESIZE_NEAREST_NEIGHBOR", [x, size], [near])
    t = n.act((2, 6, 4), F32)
    n.op("TRANSPOSE", [sq, n.const([2, 1, 0], I32)], [t])
    e = n.act((4, 6, 2, 1), F32)
    n.op("EXPAND_DIMS", [sq, n.const(3, I32)], [e])
    unpack_in = n.b.ops[4].inputs[0]
    return n.done([x, unpack_in], [parts[0], parts[1], packed, rows[0], casted, shape,
                                   amax, amin, bil, near, t, e])  # fmt: skip


def stateless_math() -> bytes:
    """Registered kernels with no persistent state, in float."""
    n = Net("math")
    x = n.act((1, 4, 8), F32)
    outs = []
    for opcode in ("EXP", "FLOOR", "CEIL", "NEG", "SIN", "COS", "SQRT", "SQUARE", "ROUND", "LOG"):
        y = n.act((1, 4, 8), F32)
        n.op(opcode, [x], [y])
        outs.append(y)
    m = n.act((1, 4, 8), F32)
    n.op("MAXIMUM", [x, outs[0]], [m])
    return n.done([x], [*outs, m])


def stateless_more() -> bytes:
    """More registered kernels without persistent state."""
    n = Net("stateless_more")
    x = n.act((2, 4, 8), F32)
    outs = []
    sl = n.act((1, 2, 8), F32)
    n.op("SLICE", [x, n.const([0, 1, 0], I32), n.const([1, 2, 8], I32)], [sl])
    z = n.act((2, 4, 8), F32)
    n.op("ZEROS_LIKE", [x], [z])
    r = n.act((2, 4, 8), F32)
    n.op("REVERSE_V2", [x, n.const([1], I32)], [r])
    fd, fm = n.act((2, 4, 8), F32), n.act((2, 4, 8), F32)
    two = n.const(np.full((2, 4, 8), 2.0), F32)
    n.op("FLOOR_DIV", [x, two], [fd])
    n.op("FLOOR_MOD", [x, two], [fm])
    b = n.act((3, 2, 4, 8), F32)
    n.op("BROADCAST_TO", [x, n.const([3, 2, 4, 8], I32)], [b])
    f = n.act((2, 3), F32)
    n.op("FILL", [n.const([2, 3], I32), n.const(1.5, F32)], [f])
    p, q_ = n.act((2, 4, 8), BOOL), n.act((2, 4, 8), BOOL)
    n.op("LOGICAL_AND", [p, q_], [a := n.act((2, 4, 8), BOOL)])
    n.op("LOGICAL_OR", [p, q_], [o := n.act((2, 4, 8), BOOL)])
    n.op("LOGICAL_NOT", [p], [nt := n.act((2, 4, 8), BOOL)])
    outs = [sl, z, r, fd, fm, b, f, a, o, nt]
    return n.done([x, p, q_], outs)


def slices_and_shapes() -> bytes:
    """DYNAMIC_UPDATE_SLICE and BROADCAST_ARGS (no state), REDUCE_ALL (OpDataReduce)."""
    n = Net("slices")
    x, upd = n.act((4, 6), F32), n.act((2, 3), F32)
    y = n.act((4, 6), F32)
    n.op("DYNAMIC_UPDATE_SLICE", [x, upd, n.const([1, 2], I32)], [y])
    shape = n.act((3,), I32)
    n.op("BROADCAST_ARGS", [n.const([2, 1, 6], I32), n.const([4, 1], I32)], [shape])
    flags, every = n.act((2, 3, 4), BOOL), n.act((2, 1, 1), BOOL)
    n.op("REDUCE_ALL", [flags, n.const([1, 2], I32)], [every], keep_dims=True)
    return n.done([x, upd, flags], [y, shape, every])


def circular_buffer() -> bytes:
    n = Net("circular_buffer")
    x = n.act((1, 1, 1, 8))
    y = n.act((1, 4, 1, 8))
    n.custom("CIRCULAR_BUFFER", [x], [y], cycles_max=1)
    return n.done([x], [y])


def cumsum(dtype: DType = I8) -> bytes:
    n = Net("cumsum")
    x = n.act((1, 4, 8), dtype)
    y = n.act((1, 4, 8), dtype, scale=0.5)
    n.op("CUMSUM", [x, n.const(2, I32)], [y])
    return n.done([x], [y])


def space_batch() -> bytes:
    n = Net("space_batch")
    x = n.act((1, 4, 4, 2), F32)
    shape, crops = n.const([2, 2], I32), n.const([[0, 0], [0, 0]], I32)
    y = n.act((4, 2, 2, 2), F32)
    n.op("SPACE_TO_BATCH_ND", [x, shape, crops], [y])
    z = n.act((1, 4, 4, 2), F32)
    n.op("BATCH_TO_SPACE_ND", [y, n.const([2, 2], I32), n.const([[0, 0], [0, 0]], I32)], [z])
    return n.done([x], [z])


def variables() -> bytes:
    """VAR_HANDLE, ASSIGN_VARIABLE, READ_VARIABLE on one resource variable."""
    n = Net("variables")
    x = n.act((1, 8), F32)
    rid = n.b.add_tensor("rid", (), DType.RESOURCE)
    n.op("VAR_HANDLE", [], [rid], container="", shared_name="state")
    n.op("ASSIGN_VARIABLE", [rid, x], [])
    y = n.act((1, 8), F32)
    n.op("READ_VARIABLE", [rid], [y])
    return n.done([x], [y])


# ---- Signal library ---------------------------------------------------------------


def signal_ops() -> bytes:
    """SignalFramer -> SignalWindow, SignalDelay, SignalStacker, SignalRfft (int16)."""
    n = Net("signal")
    x = n.act((160,), I16)
    frames, valid = n.act((1, 400), I16), n.act((), BOOL)
    n.custom("SignalFramer", [x], [frames, valid], frame_size=400, frame_step=160, prefill=False)
    weights = n.const(np.full(400, 16384), I16)
    win = n.act((1, 400), I16)
    n.custom("SignalWindow", [frames, weights], [win], shift=12)
    delayed = n.act((1, 400), I16)
    n.custom("SignalDelay", [win], [delayed], delay_length=3)
    stacked, svalid = n.act((40 * 3,), I16), n.act((), BOOL)
    n.custom("SignalStacker", [n.act((40,), I16)], [stacked, svalid], num_channels=40,
             stacker_left_context=1, stacker_right_context=1, stacker_step=1)  # fmt: skip
    spectrum = n.act((1, 2 * 257), I16)
    n.custom("SignalRfft", [delayed], [spectrum], T=DType.INT16.code, fft_length=512)
    stack_in = n.b.ops[3].inputs[0]
    return n.done([x, stack_in], [valid, delayed, stacked, svalid, spectrum])


def signal_inverse(dtype: DType = F32) -> bytes:
    """SignalIrfft then SignalOverlapAdd."""
    n = Net("signal_inverse")
    x = n.act((2, 2 * 129), dtype)
    y = n.act((2, 256), dtype)
    n.custom("SignalIrfft", [x], [y], T=dtype.code, fft_length=256)
    z = n.act((64,), dtype)
    n.custom("SignalOverlapAdd", [y], [z], T=dtype.code, frame_step=64)
    return n.done([x], [z])


# ---- models shaped like the user reports -------------------------------------------


def mobilenet_v2_pad_block() -> bytes:
    """int8, explicit PAD before each stride-2 and 3x3 convolution, as MobileNetV2
    exports do: PAD -> CONV 3x3 /2 -> CONV 1x1 expand -> PAD -> DW 3x3 -> CONV 1x1
    project, twice, the second with a residual ADD; then PAD -> DW /2."""
    n = Net("mobilenet_v2_pad")
    relu6 = {"fused_activation_function": "RELU6"}

    def pad(x: int, shape: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        b, h, w, c = shape
        out = (b, h + 2, w + 2, c)
        y = n.act(out, scale=0.06, zero=-128)
        n.op("PAD", [x, n.const([[0, 0], [1, 1], [1, 1], [0, 0]], I32)], [y])
        return y, out

    def conv(x: int, shape, c_out: int, k: int, stride: int, act: dict) -> tuple[int, tuple]:
        b, h, w, c = shape
        out = (b, (h - k) // stride + 1, (w - k) // stride + 1, c_out)
        y = n.act(out, scale=0.06, zero=-128 if act else 0)
        ins = [x, n.weights((c_out, k, k, c), 0), n.bias(c_out, I32, c_out)]
        n.op("CONV_2D", ins, [y], padding="VALID", stride_w=stride, stride_h=stride, **act)
        return y, out

    def dw(x: int, shape, stride: int) -> tuple[int, tuple]:
        b, h, w, c = shape
        out = (b, (h - 3) // stride + 1, (w - 3) // stride + 1, c)
        y = n.act(out, scale=0.06, zero=-128)
        ins = [x, n.weights((1, 3, 3, c), 3), n.bias(c, I32, c)]
        opts = {"padding": "VALID", "stride_w": stride, "stride_h": stride}
        n.op("DEPTHWISE_CONV_2D", ins, [y], depth_multiplier=1, **opts, **relu6)
        return y, out

    x = n.act((1, 32, 32, 3), scale=1 / 128)
    shape = (1, 32, 32, 3)
    y, s = pad(x, shape)
    y, s = conv(y, s, 16, 3, 2, relu6)
    skip = None
    for block in range(2):
        e, es = conv(y, s, 32, 1, 1, relu6)
        p, ps = pad(e, es)
        d, ds = dw(p, ps, 1)
        out, s2 = conv(d, ds, 16, 1, 1, {})
        if block == 1 and skip is not None:
            added = n.act(s2, scale=0.08)
            n.op("ADD", [skip, out], [added])
            out = added
        skip, y, s = out, out, s2
    p, ps = pad(y, s)
    y, s = dw(p, ps, 2)
    return n.done([x], [y])


def int16x8_network() -> bytes:
    """int16 activations, int8 weights, int64 biases, a small denoising U-Net:
    CONV -> LEAKY_RELU -> PAD -> DW (VALID) -> ADD -> MUL -> LOGISTIC -> TANH ->
    STRIDED_SLICE /2 -> TRANSPOSE_CONV x2 -> CONCATENATION -> MEAN -> FC -> SOFTMAX."""
    n = Net("int16x8")
    same = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    x = n.act((1, 8, 8, 4), I16, 0.001)
    c = n.act((1, 8, 8, 8), I16, 0.002)
    n.op("CONV_2D", [x, n.weights((8, 3, 3, 4), 0), n.bias(8, I64, 8)], [c], **same)
    lr = n.act((1, 8, 8, 8), I16, 0.002)
    n.op("LEAKY_RELU", [c], [lr], alpha=0.1)
    p = n.act((1, 10, 10, 8), I16, 0.002)
    n.op("PAD", [lr, n.const([[0, 0], [1, 1], [1, 1], [0, 0]], I32)], [p])
    d = n.act((1, 8, 8, 8), I16, 0.002)
    dw_ins = [p, n.weights((1, 3, 3, 8), 3), n.bias(8, I64, 8)]
    valid = {"padding": "VALID", "stride_w": 1, "stride_h": 1}
    n.op("DEPTHWISE_CONV_2D", dw_ins, [d], depth_multiplier=1, **valid)
    a = n.act((1, 8, 8, 8), I16, 0.004)
    n.op("ADD", [lr, d], [a])
    m = n.act((1, 8, 8, 8), I16, 0.004)
    n.op("MUL", [a, d], [m])
    lg = n.act((1, 8, 8, 8), I16, 1 / 32768)
    n.op("LOGISTIC", [m], [lg])
    th = n.act((1, 8, 8, 8), I16, 1 / 32768)
    n.op("TANH", [lg], [th])
    down = n.act((1, 4, 4, 8), I16, 1 / 32768)
    ends = [n.const(v, I32) for v in ([0, 0, 0, 0], [1, 8, 8, 8], [1, 2, 2, 1])]
    n.op("STRIDED_SLICE", [th, *ends], [down])
    ups = []
    for _ in range(2):
        up = n.act((1, 8, 8, 4), I16, 0.002)
        ins = [n.const([1, 8, 8, 4], I32), n.weights((4, 3, 3, 8), 0), down, n.bias(4, I64, 4)]
        n.op("TRANSPOSE_CONV", ins, [up], padding="SAME", stride_w=2, stride_h=2)
        ups.append(up)
    cat = n.act((1, 8, 8, 16), I16, 0.002)  # 4 + 4 + 8 channels
    n.op("CONCATENATION", [*ups, lr], [cat], axis=3)
    mean = n.act((1, 16), I16, 0.002)
    n.op("MEAN", [cat, n.const([1, 2], I32)], [mean], keep_dims=False)
    fc = n.act((1, 10), I16, 0.001)
    n.op("FULLY_CONNECTED", [mean, n.weights((10, 16), 0), n.bias(10, I64, 10)], [fc])
    sm = n.act((1, 10), I16, 1 / 32768)
    n.op("SOFTMAX", [fc], [sm], beta=1.0)
    return n.done([x], [sm])


def keras_residual_cnn() -> bytes:
    """int8, Keras style: CONV (no fused activation) -> RELU op, twice, residual
    ADD -> RELU -> MEAN -> FULLY_CONNECTED -> SOFTMAX."""
    n = Net("keras_residual")
    same = {"padding": "SAME", "stride_w": 1, "stride_h": 1}

    def conv_relu(x: int, c_in: int) -> int:
        y = n.act((1, 12, 12, 8), scale=0.08)
        n.op("CONV_2D", [x, n.weights((8, 3, 3, c_in), 0), n.bias(8, I32, 8)], [y], **same)
        r = n.act((1, 12, 12, 8), scale=0.08)
        n.op("RELU", [y], [r])
        return r

    x = n.act((1, 12, 12, 3), scale=1 / 128)
    a = conv_relu(x, 3)
    b = conv_relu(a, 8)
    s = n.act((1, 12, 12, 8), scale=0.1)
    n.op("ADD", [a, b], [s])
    r = n.act((1, 12, 12, 8), scale=0.1)
    n.op("RELU", [s], [r])
    g = n.act((1, 8), scale=0.1)
    n.op("MEAN", [r, n.const([1, 2], I32)], [g], keep_dims=False)
    f = n.act((1, 5), scale=0.1)
    n.op("FULLY_CONNECTED", [g, n.weights((5, 8), None), n.bias(5)], [f])
    y = n.act((1, 5), scale=1 / 256, zero=-128)
    n.op("SOFTMAX", [f], [y], beta=1.0)
    return n.done([x], [y])


SHAPED: dict[str, Callable[[], bytes]] = {
    "mobilenet_v2_pad_int8": mobilenet_v2_pad_block,
    "int16x8_network": int16x8_network,
    "keras_residual_relu_int8": keras_residual_cnn,
}

_LOGISTIC_OUT = {I8: {"scale": 1 / 256, "zero": -128}, I16: {"scale": 1 / 32768}}
_TANH_OUT = {I8: {"scale": 1 / 128}, I16: {"scale": 1 / 32768}}

OP_MODELS: dict[str, Callable[[], bytes]] = {
    "conv_int8_per_channel": lambda: conv(I8),
    "conv_int8_per_tensor": lambda: conv(I8, per_channel=False),
    "conv_int16x8": lambda: conv(I16),
    "conv_float": lambda: conv(F32, per_channel=False),
    "depthwise_int8": lambda: conv(I8, depthwise=True),
    "depthwise_int16x8": lambda: conv(I16, depthwise=True),
    "depthwise_float": lambda: conv(F32, per_channel=False, depthwise=True),
    "fc_int8_per_tensor": lambda: fully_connected(I8),
    "fc_int8_per_channel": lambda: fully_connected(I8, per_channel=True),
    "fc_int16x8_per_channel": lambda: fully_connected(I16, per_channel=True),
    "fc_int16x8_per_tensor": lambda: fully_connected(I16),
    "fc_float": lambda: fully_connected(F32),
    "transpose_conv_int8": lambda: transpose_conv(I8),
    "transpose_conv_float": lambda: transpose_conv(F32),
    "transpose_conv_int16x8": lambda: transpose_conv(I16),
    "batch_matmul_int8": lambda: batch_matmul(I8),
    "batch_matmul_int8_adj_x": lambda: batch_matmul(I8, adj_x=True),
    "batch_matmul_float_adj_y": lambda: batch_matmul(F32, adj_y=True),
    "batch_matmul_int16": lambda: batch_matmul(I16),
    "softmax_int8": lambda: softmax(I8),
    "softmax_int16": lambda: softmax(I16),
    "softmax_float": lambda: softmax(F32),
    "log_softmax_int8": lambda: log_softmax(I8),
    "log_softmax_float": lambda: log_softmax(F32),
    "avg_pool_int8": lambda: pooling("AVERAGE_POOL_2D"),
    "max_pool_int16": lambda: pooling("MAX_POOL_2D", I16),
    "add_int8": lambda: binary("ADD"),
    "add_int16": lambda: binary("ADD", I16),
    "add_float": lambda: binary("ADD", F32),
    "sub_int8": lambda: binary("SUB"),
    "mul_int8": lambda: binary("MUL"),
    "mul_int16": lambda: binary("MUL", I16),
    "div_float": lambda: binary("DIV", F32),
    "squared_difference_int8": lambda: binary("SQUARED_DIFFERENCE"),
    "maximum_minimum_int8": lambda: binary("MINIMUM"),
    "comparisons_int8": lambda: comparisons(I8),
    "add_n_int8": lambda: add_n(I8),
    "add_n_float": lambda: add_n(F32),
    "relu_int8": lambda: unary("RELU"),
    "relu_float": lambda: unary("RELU", F32),
    "relu6_int8": lambda: unary("RELU6"),
    "leaky_relu_int8": lambda: unary("LEAKY_RELU", alpha=0.2),
    "leaky_relu_int16": lambda: unary("LEAKY_RELU", I16, alpha=0.2),
    "hard_swish_int8": lambda: unary("HARD_SWISH"),
    "elu_int8": lambda: unary("ELU"),
    "logistic_int8": lambda: unary("LOGISTIC", out=_LOGISTIC_OUT[I8]),
    "logistic_int16": lambda: unary("LOGISTIC", I16, out=_LOGISTIC_OUT[I16]),
    "tanh_int8": lambda: unary("TANH", out=_TANH_OUT[I8]),
    "tanh_int16": lambda: unary("TANH", I16, out=_TANH_OUT[I16]),
    "abs_int8": lambda: unary("ABS"),
    "rsqrt_float": lambda: unary("RSQRT", F32),
    "prelu_int8": lambda: prelu(I8),
    "prelu_float": lambda: prelu(F32),
    "l2_normalization_float": lambda: l2_normalization(F32),
    "l2_normalization_int8": lambda: l2_normalization(I8),
    "quantize_dequantize": quantize_dequantize,
    "select_v2_float": select_v2,
    "mean_int8": lambda: reduce("MEAN"),
    "mean_float": lambda: reduce("MEAN", F32),
    "sum_int16": lambda: reduce("SUM", I16, keep_dims=False),
    "reduce_max_int8": lambda: reduce("REDUCE_MAX"),
    "reduce_min_float": lambda: reduce("REDUCE_MIN", F32),
    "pad_int8": lambda: pad("PAD"),
    "pad_float": lambda: pad("PAD", F32),
    "padv2_int8": lambda: pad("PADV2"),
    "mirror_pad_int8": lambda: pad("MIRROR_PAD", copies=1),
    "reshape_minus_one": lambda: reshape(True),
    "reshape_static": lambda: reshape(False),
    "strided_slice_int8": strided_slice,
    "concatenation_int8": lambda: concatenation(I8),
    "concatenation_float": lambda: concatenation(F32),
    "gather_float": lambda: writable_dims("GATHER"),
    "gather_nd_float": lambda: writable_dims("GATHER_ND"),
    "space_to_depth_int8": lambda: writable_dims("SPACE_TO_DEPTH"),
    "depth_to_space_int8": lambda: writable_dims("DEPTH_TO_SPACE"),
    "l2_pool_float": lambda: writable_dims("L2_POOL_2D"),
    "embedding_lookup_float": lambda: writable_dims("EMBEDDING_LOOKUP"),
    "cumsum_int8": lambda: cumsum(I8),
    "cumsum_float": lambda: cumsum(F32),
    "space_to_batch_nd_float": space_batch,
    "shape_ops_float": shapes,
    "stateless_math_float": stateless_math,
    "stateless_more": stateless_more,
    "slices_shapes_reduce_all": slices_and_shapes,
    "circular_buffer_int8": circular_buffer,
    "resource_variables": variables,
    "signal_int16": signal_ops,
    "signal_inverse_float": lambda: signal_inverse(F32),
    "signal_inverse_int16": lambda: signal_inverse(I16),
}
