"""What TFLM's int8 and int16 kernels compute in Prepare, computed offline bit for bit.

Sources: tensorflow/lite/kernels/internal/quantization_util.cc (QuantizeMultiplier,
QuantizeMultiplierSmallerThanOneExp), tensorflow/lite/kernels/kernel_util.cc
(PopulateConvolutionQuantizationParams, CalculateActivationRangeQuantized, Quantize),
tensorflow/lite/micro/kernels/add_common.cc (the int8 ADD's parameters), and the
int8 RELU, RELU6 (activations_common.cc), LEAKY_RELU (leaky_relu_common.cc), MUL
(mul_common.cc), SUB (sub_common.cc) and MEAN (reduce_common.cc, with the rescaling
by the element count of reference_ops::QuantizedMeanOrSum), each in float or double
where TFLM uses it. The int16 paths compute the same multipliers; what differs is the
clamp's range (``bits``: 8 or 16, the activations' width) and ADD's and SUB's left
shift (15).

Scales are the float32 values of the file held as Python floats (exact); TFLM's
double arithmetic is IEEE double in every build, so Python's gives the same bits;
where TFLM computes in float (the activation range) numpy's float32 does too.
``TfLiteRound`` is ``std::round``: halves away from zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
INT16_MIN, INT16_MAX = -32768, 32767
QUANT_RANGES = {8: (INT8_MIN, INT8_MAX), 16: (INT16_MIN, INT16_MAX)}  # bits -> [min, max]
ADD_LEFT_SHIFT_INT8 = 20  # add_common.cc, sub_common.cc: 20 for int8 outputs
ADD_LEFT_SHIFT_INT16 = 15  # and 15 for int16 outputs
ADD_LEFT_SHIFTS = {8: ADD_LEFT_SHIFT_INT8, 16: ADD_LEFT_SHIFT_INT16}


def round_away(x: float) -> float:
    """``std::round``: to the nearest integer, halves away from zero."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


def quantize_multiplier(m: float) -> tuple[int, int]:
    """(multiplier, shift) with m ~ multiplier * 2^(shift - 31); multiplier in
    [2^30, 2^31) or 0 (m == 0, or so small that every bit would be shifted out)."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    fixed = int(round_away(q * (1 << 31)))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def quantize_multiplier_below_one(m: float) -> tuple[int, int]:
    """``QuantizeMultiplierSmallerThanOneExp``: for 0 < m < 1 (shift <= 0)."""
    if not 0.0 < m < 1.0:
        raise ValueError(f"multiplier {m} is not in (0, 1)")
    return quantize_multiplier(m)


def conv_multipliers(
    input_scale: float, filter_scales: tuple[float, ...], output_scale: float, channels: int
) -> tuple[list[int], list[int]]:
    """Per output channel (multiplier, shift) of a CONV_2D or DEPTHWISE_CONV_2D; a
    single filter scale is broadcast over the channels."""
    mults, shifts = [], []
    for c in range(channels):
        scale = filter_scales[c] if len(filter_scales) > 1 else filter_scales[0]
        mult, shift = quantize_multiplier(input_scale * scale / output_scale)
        mults.append(mult)
        shifts.append(shift)
    return mults, shifts


def _quantize(scale: float, zero_point: int, f: float) -> int:
    """kernel_util.cc's Quantize: zero_point + round(f / scale), in float32."""
    value = np.float32(f) / np.float32(scale)
    return zero_point + int(round_away(float(value)))


def activation_range(
    activation: str, scale: float, zero_point: int, bits: int = 8
) -> tuple[int, int]:
    """The clamp of a fused activation (``NONE``, ``RELU``, ``RELU6``,
    ``RELU_N1_TO_1``) on an output of ``scale`` and ``zero_point`` of ``bits`` (8, 16)
    bits: CalculateActivationRangeQuantized."""
    lo, hi = QUANT_RANGES[bits]
    if activation in ("RELU", "RELU6"):
        lo = max(lo, _quantize(scale, zero_point, 0.0))
    if activation == "RELU6":
        hi = min(hi, _quantize(scale, zero_point, 6.0))
    if activation == "RELU_N1_TO_1":
        lo = max(lo, _quantize(scale, zero_point, -1.0))
        hi = min(hi, _quantize(scale, zero_point, 1.0))
    if activation not in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"):
        raise ValueError(f"fused activation {activation} has no quantised range here")
    return lo, hi


@dataclass(frozen=True, slots=True)
class AddParams:
    """The int8 ADD's OpData fields (offsets are minus the inputs' zero points)."""

    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int


def add_params(
    in1: tuple[float, int], in2: tuple[float, int], out: tuple[float, int], bits: int = 8
) -> AddParams:
    """ADD's parameters from (scale, zero point) of its inputs and output of ``bits``
    bits (add_common.cc: the same for int8 and int16 but the left shift)."""
    twice_max = 2 * max(in1[0], in2[0])
    left = ADD_LEFT_SHIFTS[bits]
    m1 = quantize_multiplier_below_one(in1[0] / twice_max)
    m2 = quantize_multiplier_below_one(in2[0] / twice_max)
    mo = quantize_multiplier_below_one(twice_max / ((1 << left) * out[0]))
    return AddParams(-in1[1], -in2[1], out[1], left, *m1, *m2, *mo)


def _f32(x: float) -> np.float32:
    return np.float32(x)


def relu_params(
    inp: tuple[float, int], out: tuple[float, int], bits: int = 8
) -> tuple[int, int, int, int]:
    """RELU's (multiplier, shift, act_min, act_max): activations_common.cc's
    CalculateReluOpData<T> (input over output scale in float, then QuantizeMultiplier;
    the clamp from the output's zero point, roundf(0 / scale) being 0, to T's max)."""
    lo, hi = QUANT_RANGES[bits]
    mult, shift = quantize_multiplier(float(_f32(inp[0]) / _f32(out[0])))
    return mult, shift, max(lo, out[1]), hi


def relu6_range(inp: tuple[float, int], bits: int = 8) -> tuple[int, int]:
    """RELU6's clamp of the raw input values (Relu6Prepare: the input's zero point and
    FloatToQuantizedType<T>(6.0f, scale, zero point), clamped to T; no requantisation:
    the output's quantisation is not read)."""
    lo, hi = QUANT_RANGES[bits]
    six = inp[1] + int(round_away(float(_f32(6.0) / _f32(inp[0]))))
    if not -(2**31) <= six < 2**31:  # FloatToQuantizedType's int32 would overflow
        raise ValueError(f"6.0 quantised at scale {inp[0]} is beyond int32")
    return inp[1], min(max(six, lo), hi)


def requantize_params(inp: tuple[float, int], out: tuple[float, int]) -> tuple[int, int]:
    """QUANTIZE from int8 to int8 or int16 to int16 (quantize_common.cc's
    PrepareQuantizeReference): (multiplier, shift) of input over output scale in
    double; Requantize then adds the output's zero point and clamps to the type."""
    return quantize_multiplier(inp[0] / out[0])


def leaky_relu_params(
    inp: tuple[float, int], out: tuple[float, int], alpha: float
) -> tuple[int, int, int, int]:
    """The int8 LEAKY_RELU's (identity multiplier, shift, alpha multiplier, shift):
    leaky_relu_common.cc, input scale * alpha / output scale and input / output scale
    in float, then QuantizeMultiplier (the alpha multiplier is negative for alpha < 0)."""
    identity = quantize_multiplier(float(_f32(inp[0]) / _f32(out[0])))
    scaled = quantize_multiplier(float(_f32(inp[0]) * _f32(alpha) / _f32(out[0])))
    return (*identity, *scaled)


def mul_params(
    in1: tuple[float, int], in2: tuple[float, int], out: tuple[float, int]
) -> tuple[int, int]:
    """The int8 MUL's (output multiplier, shift): mul_common.cc, in1 * in2 / out scale
    in double."""
    return quantize_multiplier(in1[0] * in2[0] / out[0])


def sub_params(
    in1: tuple[float, int], in2: tuple[float, int], out: tuple[float, int], bits: int = 8
) -> AddParams:
    """SUB's parameters (sub_common.cc): ADD's, but the three real multipliers
    computed in float (twice the larger input scale, the ratios, 2^left_shift * output
    scale)."""
    twice_max = _f32(2) * max(_f32(in1[0]), _f32(in2[0]))
    left = ADD_LEFT_SHIFTS[bits]
    m1 = quantize_multiplier_below_one(float(_f32(in1[0]) / twice_max))
    m2 = quantize_multiplier_below_one(float(_f32(in2[0]) / twice_max))
    mo = quantize_multiplier_below_one(float(twice_max / (_f32(1 << left) * _f32(out[0]))))
    return AddParams(-in1[1], -in2[1], out[1], left, *m1, *m2, *mo)


def mean_params(in_scale: float, out_scale: float, count: int) -> tuple[int, int]:
    """The int8 MEAN's (multiplier, shift) over ``count`` elements an output: Prepare's
    QuantizeMultiplier(in / out scale, in double), then QuantizedMeanOrSum's rescaling
    (reduce.h): shift = min(floor(log2(count)), 32, 31 + shift), multiplier =
    (multiplier << shift) // count (int64, truncated), shift minus it."""
    if count < 1:
        raise ValueError(f"a mean over {count} elements")
    mult, shift = quantize_multiplier(in_scale / out_scale)
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return (mult << extra) // count, shift - extra
