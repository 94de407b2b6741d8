"""One operator of a cascade as a stage record (docs/cascade.md), or why it cannot be.

``stage_of`` reads an operator of a chain and returns its ``Stage``: the 40 int32
words of its record except those the chain fills in (sources, constant input
indices, ring), the constants it needs (filter, bias by tensor index; the
quantisation data TFLM's Prepare would compute, as values) and its row geometry.
Everything is NHWC, batch 1; a stage's activations are all int8 or all int16 (int16
with int8 weights, TFLM's int16x8 paths: zero points 0, int64 or int32 biases).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.ir.cascade_format import (
    ACC32,
    ACC_OFFSET,
    ACT_MAX,
    ACT_MIN,
    ADD_WORDS,
    ALPHA_MULT,
    ALPHA_SHIFT,
    BIAS_IN,
    CONST_FIRST,
    CONST_IN,
    CONST_STRIDE_C,
    CONST_STRIDE_H,
    CONST_STRIDE_W,
    DEPTH_MULT,
    DIL_H,
    DIL_W,
    ELEMENT_TYPE,
    ELEMENT_TYPES,
    FILTER_H,
    FILTER_IN,
    FILTER_W,
    IN2_OFFSET,
    IN_C,
    IN_H,
    IN_OFFSET,
    IN_W,
    KIND,
    KINDS,
    MEAN_ROWS,
    OUT_C,
    OUT_H,
    OUT_MULT,
    OUT_OFFSET,
    OUT_SHIFT,
    OUT_W,
    PAD_LEFT,
    PAD_TOP,
    PAD_VALUE,
    QUANT_IN,
    RECORD_WORDS,
    SRC0,
    SRC1,
    STRIDE_H,
    STRIDE_W,
    TWO_INPUTS,
)
from arenaplan.ir.constants import constant_values
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Operator, Subgraph, Tensor
from arenaplan.passes.cascade_quant import (
    QUANT_RANGES,
    AddParams,
    activation_range,
    add_params,
    conv_multipliers,
    leaky_relu_params,
    mean_params,
    mul_params,
    relu6_range,
    relu_params,
    requantize_params,
    sub_params,
)
from arenaplan.passes.rows import same_padding

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


MAX_ROWS = 65_535  # rows of a tensor in a cascade: the pass simulates every row's order
BITS = {DType.INT8: 8, DType.INT16: 16}  # activation element types a stage takes
# int16 average pools: positions a window may sum (32768 * 65536 = 2^31: no int32 sum
# overflows, so TFLM's reference sum and CMSIS-NN's saturating one agree)
INT16_POOL_POSITIONS = 65_536
QUANTIZED_BIAS_INT32 = 2  # the schema's TensorType INT32 (Conv2DOptions.quantized_bias_type)
# MultiplyByQuantizedMultiplier's shifts: int32 operands [-31, 30]; int64 ones [-31, 7]
SHIFTS_INT32, SHIFTS_INT64 = range(-31, 31), range(-31, 8)


class Uncascadable(Exception):
    """This operator cannot be a stage (the message says why, in a few words)."""


@dataclass(frozen=True, slots=True)
class Stage:
    """``words``: the record, chain-filled words at their defaults; ``sources``: the
    activation tensors it reads (1, or 2 for ADD, MUL, SUB, MINIMUM, MAXIMUM of two
    activations); ``output``: the tensor it writes; ``filter``/``bias``/``const``:
    tensor indices (-1 none; ``const``: a constant operand, its strides and order in
    the words); ``quant``: the int32 values of its quantisation tensor (empty: none)."""

    kind: str
    words: tuple[int, ...]
    sources: tuple[int, ...]
    output: int
    filter: int = -1
    bias: int = -1
    quant: tuple[int, ...] = ()
    const: int = -1


def _act(t: Tensor, what: str) -> Tensor:
    if t.dtype not in BITS or t.is_constant or t.is_variable:
        raise Uncascadable(f"{what} is not an int8 or int16 activation")
    if len(t.shape) != 4 or t.shape[0] != 1 or min(t.shape) <= 0:
        raise Uncascadable(f"{what} is not NHWC with batch 1")
    if t.shape[1] > MAX_ROWS:
        raise Uncascadable(f"{what} has {t.shape[1]:,} rows (a cascade takes {MAX_ROWS:,})")
    q = t.quantization
    if q is None or len(q.scales) != 1 or len(q.zero_points) != 1:
        raise Uncascadable(f"{what} is not quantised per tensor")
    return t


def _scale_zp(t: Tensor) -> tuple[float, int]:
    if t.quantization is None:  # _act admits only quantised activations
        raise Uncascadable(f"tensor {t.index} is not quantised")
    return t.quantization.scales[0], t.quantization.zero_points[0]


def _one_type(y: Tensor, *xs: Tensor) -> int:
    """The bits (8, 16) of the activations ``y`` and ``xs``, all of one type; int16
    ones have zero points 0 (TFLM's int16 kernels ignore or refuse others)."""
    if any(x.dtype is not y.dtype for x in xs):
        raise Uncascadable("its activations are not all of one type")
    bits = BITS[y.dtype]
    if bits == 16 and any(_scale_zp(t)[1] != 0 for t in (y, *xs)):
        raise Uncascadable("an int16 activation has a zero point other than 0")
    return bits


def _opt(op: Operator, name: str, default: int = 1) -> int:
    value = op.options.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise Uncascadable(f"option {name} is {value!r}")
    return value


def _activation(op: Operator, out: Tensor) -> tuple[int, int]:
    act = op.options.get("fused_activation_function", "NONE")
    if act not in ACTIVATIONS:
        raise Uncascadable(f"fused activation {act}")
    return activation_range(str(act), *_scale_zp(out), BITS[out.dtype])


def _padding(op: Operator, size: int, out: int, stride: int, eff: int, what: str) -> int:
    """Padding before (top or left) as TFLM computes it; the output size checked."""
    padding = op.options.get("padding", "SAME")
    if padding == "SAME":
        want = (size + stride - 1) // stride
        before = same_padding(size, out, stride, eff)[0]
    elif padding == "VALID":
        want = (size - eff + stride) // stride
        before = 0
    else:
        raise Uncascadable(f"padding {padding}")
    if want != out:
        raise Uncascadable(f"output {what} {out} is not {want}")
    return before


def _base(x: Tensor, y: Tensor, kind: str) -> list[int]:
    w = [0] * RECORD_WORDS
    w[KIND], w[SRC0], w[SRC1] = KINDS[kind], -1, -1
    w[IN_H], w[IN_W], w[IN_C] = x.shape[1:]
    w[OUT_H], w[OUT_W], w[OUT_C] = y.shape[1:] if len(y.shape) == 4 else (1, 1, y.shape[-1])
    for k in (FILTER_H, FILTER_W, STRIDE_H, STRIDE_W, DIL_H, DIL_W, DEPTH_MULT):
        w[k] = 1
    w[FILTER_IN] = w[BIAS_IN] = w[QUANT_IN] = w[ACC_OFFSET] = w[CONST_IN] = -1
    w[IN_OFFSET] = -_scale_zp(x)[1]
    w[OUT_OFFSET] = _scale_zp(y)[1]
    w[ELEMENT_TYPE] = ELEMENT_TYPES[y.dtype.name]
    w[ACT_MIN], w[ACT_MAX] = QUANT_RANGES[BITS[y.dtype]]
    return w


def _window(op: Operator, x: Tensor, y: Tensor, w: list[int], kh: int, kw: int) -> None:
    sh, sw = _opt(op, "stride_h"), _opt(op, "stride_w")
    dh, dw = _opt(op, "dilation_h_factor"), _opt(op, "dilation_w_factor")
    w[FILTER_H], w[FILTER_W], w[STRIDE_H], w[STRIDE_W], w[DIL_H], w[DIL_W] = kh, kw, sh, sw, dh, dw
    w[PAD_TOP] = _padding(op, x.shape[1], y.shape[1], sh, (kh - 1) * dh + 1, "height")
    w[PAD_LEFT] = _padding(op, x.shape[2], y.shape[2], sw, (kw - 1) * dw + 1, "width")
    w[ACT_MIN], w[ACT_MAX] = _activation(op, y)


def _accumulator(op: Operator, bias: Tensor | None, bits: int, depthwise: bool) -> int:
    """The record's ``acc32`` word: 1 when TFLM's reference int16 CONV_2D accumulates
    in int32 (an int32 bias, or none and ``quantized_bias_type`` INT32: conv.cc), else
    0 (int64; int8 stages: their int32, the word unused). The bias is checked."""
    if bias is not None and not bias.is_constant:
        raise Uncascadable("its bias is not constant")
    if bits == 8:
        if bias is not None and bias.dtype is not DType.INT32:
            raise Uncascadable("its bias is not int32")
        return 0
    if depthwise:  # depthwise_conv.cc reads an int16x8 bias as int64 whatever its type
        if bias is not None and bias.dtype is not DType.INT64:
            raise Uncascadable("its int16x8 bias is not int64 (TFLM reads it as int64)")
        return 0
    if bias is None:
        return int(op.options.get("quantized_bias_type", 0) == QUANTIZED_BIAS_INT32)
    if bias.dtype not in (DType.INT64, DType.INT32):
        raise Uncascadable("its bias is neither int64 nor int32")
    return int(bias.dtype is DType.INT32)


def _conv(sg: Subgraph, op: Operator, x: Tensor, y: Tensor) -> Stage:
    filt, bias = sg.operand(op, 1), sg.operand(op, 2)
    depthwise = op.opcode == "DEPTHWISE_CONV_2D"
    bits = _one_type(y, x)
    if filt is None or not filt.is_constant or filt.dtype is not DType.INT8:
        raise Uncascadable("its filter is not constant int8")
    if len(filt.shape) != 4 or filt.quantization is None:
        raise Uncascadable("its filter is not a quantised 4-D tensor")
    acc32 = _accumulator(op, bias, bits, depthwise)
    out_c, in_c = y.shape[3], x.shape[3]
    if depthwise:
        mult = _opt(op, "depth_multiplier")
        if filt.shape[0] != 1 or filt.shape[3] != out_c or in_c * mult != out_c:
            raise Uncascadable("its filter's shape does not match its channels")
    elif filt.shape[0] != out_c or filt.shape[3] != in_c:
        raise Uncascadable("a grouped convolution, or a filter of other channels")
    if bias is not None and bias.elements != out_c:
        raise Uncascadable("its bias is not one per output channel")
    scales = filt.quantization.scales
    if len(scales) not in (1, out_c):
        raise Uncascadable("its filter has neither one scale nor one per channel")
    w = _base(x, y, op.opcode)
    _window(op, x, y, w, filt.shape[1], filt.shape[2])
    if depthwise:
        w[DEPTH_MULT] = mult
    w[ACC32] = acc32
    mults, shifts = conv_multipliers(_scale_zp(x)[0], scales, _scale_zp(y)[0], out_c)
    wide = bits == 16 and not acc32  # MultiplyByQuantizedMultiplier on int64
    if any(s not in (SHIFTS_INT64 if wide else SHIFTS_INT32) for s in shifts):
        raise Uncascadable("a channel's multiplier shift is out of the kernel's range")
    return Stage(
        op.opcode,
        tuple(w),
        (x.index,),
        y.index,
        filt.index,
        bias.index if bias is not None else -1,
        tuple(mults + shifts),
    )


def _transpose_padding(op: Operator, size: int, stride: int, k: int) -> int:
    """TRANSPOSE_CONV's padding before: TFLM computes it as a convolution's from the
    output's size (transpose_conv.cc's CalculateOpData; no dilation)."""
    padding = op.options.get("padding", "SAME")
    if padding == "VALID":
        return 0
    if padding != "SAME":
        raise Uncascadable(f"padding {padding}")
    return same_padding(size, 0, stride, k)[0]


def _transpose_conv(sg: Subgraph, op: Operator, y: Tensor) -> Stage:
    """TRANSPOSE_CONV, int16x8 (TFLM's int16 kernel, reference in every build: an int64
    sum per output, no whole-output scratch here); inputs: shape, filter, input, bias."""
    if len(op.inputs) not in (3, 4) or op.inputs[2] < 0:
        raise Uncascadable("not a shape, a filter and an input")
    x = _act(sg.tensors[op.inputs[2]], "its input")
    if _one_type(y, x) != 16:
        raise Uncascadable("an int8 TRANSPOSE_CONV (only int16x8 ones are stages)")
    filt, bias = sg.operand(op, 1), sg.operand(op, 3)
    if filt is None or not filt.is_constant or filt.dtype is not DType.INT8:
        raise Uncascadable("its filter is not constant int8")
    if len(filt.shape) != 4 or filt.quantization is None:
        raise Uncascadable("its filter is not a quantised 4-D tensor")
    out_c, in_c = y.shape[3], x.shape[3]
    if filt.shape[0] != out_c or filt.shape[3] != in_c:
        raise Uncascadable("its filter's shape does not match its channels")
    if bias is not None and (not bias.is_constant or bias.dtype is not DType.INT64):
        raise Uncascadable("its bias is not constant int64")
    if bias is not None and bias.elements != out_c:
        raise Uncascadable("its bias is not one per output channel")
    scales = filt.quantization.scales
    if len(scales) not in (1, out_c):
        raise Uncascadable("its filter has neither one scale nor one per channel")
    kh, kw = filt.shape[1:3]
    w = _base(x, y, "TRANSPOSE_CONV")
    sh, sw = _opt(op, "stride_h"), _opt(op, "stride_w")
    w[FILTER_H], w[FILTER_W], w[STRIDE_H], w[STRIDE_W] = kh, kw, sh, sw
    w[PAD_TOP] = _transpose_padding(op, y.shape[1], sh, kh)
    w[PAD_LEFT] = _transpose_padding(op, y.shape[2], sw, kw)
    w[ACT_MIN], w[ACT_MAX] = _activation(op, y)
    mults, shifts = conv_multipliers(_scale_zp(x)[0], scales, _scale_zp(y)[0], out_c)
    if any(s not in SHIFTS_INT64 for s in shifts):
        raise Uncascadable("a channel's multiplier shift is out of the kernel's range")
    bias_index = bias.index if bias is not None else -1
    return Stage("TRANSPOSE_CONV", tuple(w), (x.index,), y.index, filt.index, bias_index,
                 tuple(mults + shifts))  # fmt: skip


def _pool(op: Operator, x: Tensor, y: Tensor) -> Stage:
    if x.quantization != y.quantization:
        raise Uncascadable("its input and output are quantised differently")
    bits = _one_type(y, x)
    kh, kw = _opt(op, "filter_height"), _opt(op, "filter_width")
    whole = (kh, kw) == tuple(x.shape[1:3]) and y.shape[1:3] == (1, 1)
    kind = MEAN_ROWS if op.opcode == "AVERAGE_POOL_2D" and whole else op.opcode
    if bits == 16 and op.opcode == "AVERAGE_POOL_2D" and kh * kw > INT16_POOL_POSITIONS:
        raise Uncascadable(f"an int16 average over more than {INT16_POOL_POSITIONS:,} positions")
    w = _base(x, y, kind)
    _window(op, x, y, w, kh, kw)
    return Stage(kind, tuple(w), (x.index,), y.index)


@dataclass(frozen=True, slots=True)
class _Operands:
    """The two operands of ADD, SUB, MUL, MINIMUM, MAXIMUM in the operator's order,
    ``first``/``second``, and which of them is a constant (None: neither)."""

    first: Tensor
    second: Tensor
    const: int | None  # 0 or 1: the operator's input index of the constant

    @property
    def activation(self) -> Tensor:
        return self.first if self.const != 0 else self.second

    @property
    def constant(self) -> int:
        """The constant's tensor index, -1 none."""
        if self.const is None:
            return -1
        return (self.first if self.const == 0 else self.second).index

    @property
    def sources(self) -> tuple[int, ...]:
        if self.const is None:
            return (self.first.index, self.second.index)
        return (self.activation.index,)


def _broadcast_strides(c: Tensor, y: Tensor) -> tuple[int, int, int]:
    """Element strides of constant ``c`` per row, column and channel of output ``y``
    ([1, H, W, C]); 0 where it broadcasts (numpy's rules, as TFLM's broadcast loop)."""
    if len(c.shape) > 4:
        raise Uncascadable("its constant has more than 4 dimensions")
    dims = (1,) * (4 - len(c.shape)) + tuple(c.shape)
    if dims[0] != 1 or any(d not in (1, o) for d, o in zip(dims[1:], y.shape[1:], strict=True)):
        raise Uncascadable("its constant does not broadcast to its output")
    _, h, w, ch = dims
    return (w * ch if h > 1 else 0, ch if w > 1 else 0, 1 if ch > 1 else 0)


def _constant(t: Tensor, buffers: Sequence[bytes], scaled: bool) -> Tensor:
    """An int8 constant operand whose bytes are in the model (``scaled``: quantised
    per tensor, its scale read by the arithmetic)."""
    if t.dtype is not DType.INT8 or constant_values(buffers, t) is None:  # shape's bytes
        raise Uncascadable("its constant is not int8 data in the model")
    q = t.quantization
    if scaled and (q is None or len(q.scales) != 1 or len(q.zero_points) != 1):
        raise Uncascadable("its constant is not quantised per tensor")
    return t


def _operands(
    sg: Subgraph, op: Operator, y: Tensor, buffers: Sequence[bytes], scaled: bool = True
) -> _Operands:
    """Two activations of the output's shape, or one and an int8 constant that
    broadcasts to it (either input)."""
    if len(op.inputs) != 2 or min(op.inputs) < 0:
        raise Uncascadable("not two inputs")
    tensors = [sg.tensors[i] for i in op.inputs]
    const = [k for k, t in enumerate(tensors) if t.is_constant]
    if len(const) == 2:
        raise Uncascadable("both inputs are constants")
    for k, t in enumerate(tensors):
        if k in const:
            _constant(t, buffers, scaled)
        elif _act(t, f"input {k}").shape != y.shape:
            raise Uncascadable(f"input {k} broadcasts (an activation of another shape)")
    return _Operands(tensors[0], tensors[1], const[0] if const else None)


def _operand_bits(ops: _Operands, y: Tensor) -> int:
    """The bits of the operands' activations (int8 or int16, one type); an int16 stage
    takes no constant operand (the kernel's constants are int8)."""
    acts = [ops.activation] if ops.const is not None else [ops.first, ops.second]
    bits = _one_type(y, *acts)
    if bits == 16 and ops.const is not None:
        raise Uncascadable("an int16 stage with a constant operand (int8 ones only)")
    return bits


def _const_words(w: list[int], ops: _Operands, y: Tensor) -> None:
    """The constant's words: strides per output row, column, channel and its order
    (const_in, the operator's input index, is the chain's to fill)."""
    if ops.const is None:
        return
    c = ops.second if ops.const == 1 else ops.first
    w[CONST_STRIDE_H], w[CONST_STRIDE_W], w[CONST_STRIDE_C] = _broadcast_strides(c, y)
    w[CONST_FIRST] = 1 if ops.const == 0 else 0


def _stage(kind: str, w: list[int], ops: _Operands, y: Tensor) -> Stage:
    _const_words(w, ops, y)
    return Stage(kind, tuple(w), ops.sources, y.index, const=ops.constant)


def _add(sg: Subgraph, op: Operator, y: Tensor, buffers: Sequence[bytes]) -> Stage:
    """ADD, or SUB (its parameters computed as sub_common.cc does, in float)."""
    ops = _operands(sg, op, y, buffers)
    bits = _operand_bits(ops, y)
    a, b = ops.first, ops.second
    w = _base(ops.activation, y, op.opcode)
    w[ACT_MIN], w[ACT_MAX] = _activation(op, y)
    p: AddParams
    if op.opcode == "ADD":
        p = add_params(_scale_zp(a), _scale_zp(b), _scale_zp(y), bits)
    else:
        try:
            p = sub_params(_scale_zp(a), _scale_zp(b), _scale_zp(y), bits)
        except ValueError as exc:  # TFLM's Prepare stops there too
            raise Uncascadable(f"a multiplier out of range ({exc})") from None
    w[IN_OFFSET] = p.input1_offset
    w[ADD_WORDS : ADD_WORDS + 8] = [
        p.input2_offset,
        p.left_shift,
        p.input1_multiplier,
        p.input1_shift,
        p.input2_multiplier,
        p.input2_shift,
        p.output_multiplier,
        p.output_shift,
    ]
    return _stage(op.opcode, w, ops, y)


def _mul(sg: Subgraph, op: Operator, y: Tensor, buffers: Sequence[bytes]) -> Stage:
    ops = _operands(sg, op, y, buffers)
    _operand_bits(ops, y)
    a, b = ops.first, ops.second
    w = _base(ops.activation, y, "MUL")
    w[ACT_MIN], w[ACT_MAX] = _activation(op, y)
    w[IN_OFFSET] = -_scale_zp(a)[1]
    w[IN2_OFFSET] = -_scale_zp(b)[1]
    w[OUT_MULT], w[OUT_SHIFT] = _shift_in_range(
        *mul_params(_scale_zp(a), _scale_zp(b), _scale_zp(y))
    )
    return _stage("MUL", w, ops, y)


def _min_max(sg: Subgraph, op: Operator, y: Tensor, buffers: Sequence[bytes]) -> Stage:
    """MINIMUM, MAXIMUM: the raw int8 values compared (maximum_minimum.cc has no
    Prepare and reads no quantisation); offsets and clamp at their neutral values."""
    ops = _operands(sg, op, y, buffers, scaled=False)
    if _operand_bits(ops, y) != 8:
        raise Uncascadable(f"an int16 {op.opcode} (the kernel compares int8 values)")
    w = _base(ops.activation, y, op.opcode)
    w[IN_OFFSET] = w[OUT_OFFSET] = 0
    w[ACT_MIN], w[ACT_MAX] = -128, 127
    return _stage(op.opcode, w, ops, y)


def _concat(sg: Subgraph, op: Operator, y: Tensor) -> Stage:
    """CONCATENATION of two activations along the channels: TFLM copies the values
    (int8: refused unless quantised as the output; int16: as they are, zero points 0)."""
    if len(op.inputs) != 2:
        raise Uncascadable("not two inputs")
    if op.options.get("axis") not in (3, -1):
        raise Uncascadable("it concatenates along another axis than the channels")
    if op.options.get("fused_activation_function", "NONE") != "NONE":
        raise Uncascadable("a fused activation (TFLM refuses one)")
    a = _act(sg.tensors[op.inputs[0]], "input 0")
    b = _act(sg.tensors[op.inputs[1]], "input 1")
    if a.shape[:3] != y.shape[:3] or b.shape[:3] != y.shape[:3]:
        raise Uncascadable("its inputs' shapes do not make its output's")
    if a.shape[3] + b.shape[3] != y.shape[3]:
        raise Uncascadable("its inputs' shapes do not make its output's")
    if _one_type(y, a, b) == 8 and not a.quantization == b.quantization == y.quantization:
        raise Uncascadable("its int8 inputs are not quantised as its output")
    w = _base(a, y, "CONCATENATION")
    return Stage("CONCATENATION", tuple(w), (a.index, b.index), y.index)


def _shift_in_range(mult: int, shift: int) -> tuple[int, int]:
    """MultiplyByQuantizedMultiplier's range (the kernel refuses others)."""
    if not -31 <= shift <= 30:
        raise Uncascadable(f"a multiplier's shift {shift} is out of range")
    return mult, shift


def _unary(op: Operator, x: Tensor, y: Tensor) -> Stage:
    """RELU, RELU6, LEAKY_RELU: the int8 or int16 kernels' arithmetic, element by
    element (the clamp: RELU's and RELU6's range, else the type's)."""
    if x.shape != y.shape:
        raise Uncascadable("its output's shape is not its input's")
    bits = _one_type(y, x)
    w = _base(x, y, op.opcode)
    if op.opcode == "RELU":
        mult, shift, w[ACT_MIN], w[ACT_MAX] = relu_params(_scale_zp(x), _scale_zp(y), bits)
        w[OUT_MULT], w[OUT_SHIFT] = _shift_in_range(mult, shift)
    elif op.opcode == "RELU6":
        try:
            w[ACT_MIN], w[ACT_MAX] = relu6_range(_scale_zp(x), bits)
        except ValueError as exc:
            raise Uncascadable(str(exc)) from None
    else:
        alpha = op.options.get("alpha", 0.0)  # the schema's default
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
            raise Uncascadable(f"option alpha is {alpha!r}")
        m1, s1, m2, s2 = leaky_relu_params(_scale_zp(x), _scale_zp(y), float(alpha))
        if m2 == -(1 << 31):
            raise Uncascadable("its alpha multiplier is -2^31")
        w[OUT_MULT], w[OUT_SHIFT] = _shift_in_range(m1, s1)
        w[ALPHA_MULT], w[ALPHA_SHIFT] = _shift_in_range(m2, s2)
    return Stage(op.opcode, tuple(w), (x.index,), y.index)


def _quantize(x: Tensor, y: Tensor) -> Stage:
    """QUANTIZE that requantises (int8 to int8, int16 to int16): Requantize, the
    RELU formula clamped to the type (quantize_common.cc)."""
    if x.shape != y.shape:
        raise Uncascadable("its output's shape is not its input's")
    _one_type(y, x)
    w = _base(x, y, "QUANTIZE")
    w[OUT_MULT], w[OUT_SHIFT] = _shift_in_range(*requantize_params(_scale_zp(x), _scale_zp(y)))
    return Stage("QUANTIZE", tuple(w), (x.index,), y.index)


def _pad(sg: Subgraph, op: Operator, x: Tensor, y: Tensor, buffers: Sequence[bytes]) -> Stage:
    paddings = sg.operand(op, 1)
    if len(op.inputs) != 2 or paddings is None or not paddings.is_constant:
        raise Uncascadable("its paddings are not constant")
    values = constant_values(buffers, paddings)  # the 32 bytes its shape says
    if paddings.dtype is not DType.INT32 or paddings.shape != (4, 2) or values is None:
        raise Uncascadable("its paddings are not int32 [4, 2]")
    (n0, n1), (top, _), (left, _), (c0, c1) = values.reshape(4, 2)
    if n0 or n1 or c0 or c1 or x.quantization != y.quantization:
        raise Uncascadable("it pads the batch or the channels, or requantises")
    _one_type(y, x)
    w = _base(x, y, "PAD")
    w[PAD_TOP], w[PAD_LEFT] = int(top), int(left)
    w[PAD_VALUE] = _scale_zp(y)[1]  # pad.cc: int8 the zero point, int16 0 (its zero point)
    return Stage("PAD", tuple(w), (x.index,), y.index)


def _mean_axes(sg: Subgraph, op: Operator, buffers: Sequence[bytes]) -> set[int]:
    axis = sg.operand(op, 1)
    if len(op.inputs) != 2 or axis is None or not axis.is_constant:
        raise Uncascadable("its axes are not constant")
    values = constant_values(buffers, axis) if axis.dtype is DType.INT32 else None
    if values is None:  # the bytes its shape says
        raise Uncascadable("its axes are not int32 data in the model")
    return {int(a) % 4 for a in values if -4 <= a < 4}


def _mean(sg: Subgraph, op: Operator, buffers: Sequence[bytes]) -> Stage:
    """MEAN over rows and columns (Keras' global average pooling): TFLM's int8
    QuantizedMeanOrSum, its multiplier rescaled by the element count offline."""
    x = _act(sg.tensors[op.inputs[0]], "its input")
    if _mean_axes(sg, op, buffers) != {1, 2} or len(sg.tensors[op.inputs[1]].shape) > 1:
        raise Uncascadable("it does not average over rows and columns alone")
    y = sg.tensors[op.outputs[0]]
    c = x.shape[3]
    if y.shape not in ((1, c), (1, 1, 1, c)) or y.dtype is not DType.INT8 or y.is_variable:
        raise Uncascadable("its output is not int8 [1, C] or [1, 1, 1, C]")
    q = y.quantization
    if q is None or len(q.scales) != 1 or len(q.zero_points) != 1:
        raise Uncascadable("its output is not quantised per tensor")
    w = _base(x, y, "MEAN")
    w[OUT_H], w[OUT_W], w[OUT_C] = 1, 1, c
    w[FILTER_H], w[FILTER_W] = x.shape[1], x.shape[2]
    w[ACT_MIN], w[ACT_MAX] = -128, 127
    w[OUT_MULT], w[OUT_SHIFT] = _shift_in_range(
        *mean_params(_scale_zp(x)[0], _scale_zp(y)[0], x.shape[1] * x.shape[2])
    )
    return Stage("MEAN", tuple(w), (x.index,), y.index)


def activation_inputs(sg: Subgraph, op: Operator) -> tuple[int, ...]:
    """The tensors ``op`` reads as activations if it is a stage (by position: ADD, MUL,
    SUB, MINIMUM, MAXIMUM, CONCATENATION two, less a constant operand; TRANSPOSE_CONV
    its third input; the rest their first)."""
    if op.opcode in TWO_INPUTS:
        return tuple(t for t in op.inputs[:2] if t >= 0 and not sg.tensors[t].is_constant)
    if op.opcode == "TRANSPOSE_CONV":
        return tuple(op.inputs[2:3])
    return tuple(op.inputs[:1])


def stage_of(sg: Subgraph, op: Operator, buffers: Sequence[bytes]) -> Stage:
    """The stage of ``op`` (``Uncascadable`` if it cannot be one)."""
    if op.opcode not in KINDS or op.is_custom:
        raise Uncascadable(f"{op.opcode} has no stage")
    if len(op.outputs) != 1 or not op.inputs or op.inputs[0] < 0:
        raise Uncascadable("not one output and an input")
    if op.opcode == "MEAN":
        return _mean(sg, op, buffers)
    y = _act(sg.tensors[op.outputs[0]], "its output")
    if op.opcode in ("ADD", "SUB"):
        return _add(sg, op, y, buffers)
    if op.opcode == "MUL":
        return _mul(sg, op, y, buffers)
    if op.opcode in ("MINIMUM", "MAXIMUM"):
        return _min_max(sg, op, y, buffers)
    if op.opcode == "TRANSPOSE_CONV":
        return _transpose_conv(sg, op, y)
    if op.opcode == "CONCATENATION":
        return _concat(sg, op, y)
    x = _act(sg.tensors[op.inputs[0]], "its input")
    if op.opcode in ("RELU", "RELU6", "LEAKY_RELU"):
        return _unary(op, x, y)
    if op.opcode == "QUANTIZE":
        return _quantize(x, y)
    if op.opcode == "PAD":
        return _pad(sg, op, x, y, buffers)
    if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        return _conv(sg, op, x, y)
    return _pool(op, x, y)
