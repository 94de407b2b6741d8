"""The ARENAPLAN_CASCADE kernel (src/arenaplan/firmware, docs/cascade.md) in TFLM
built from source: bit-identical to the operators it replaces, and refusing bad
chains in Prepare.

Two sources of cascaded models: chains written here by hand (the plain operators and
the one custom operator, from the same constants and TFLM's Prepare arithmetic
redone in Python), which test the kernel alone; and networks rewritten by the
``cascade`` pass, which test the kernel and the pass together. Each case skips,
naming the build command, when its TFLM variant is not built.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from flatbuffers import flexbuffers
from kits.elementwise_net import ELEMENTWISE_OPS, elementwise_net
from kits.keras_like import bn_classifier, clamp_net
from kits.opmodels import int16x8_network
from testkit import MODELS_DIR, SHARED_ABSENT, kernel_set

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1, mobilenet_v2
from arenaplan.builder.unet import unet_denoiser
from arenaplan.builder.writer import ModelBuilder
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.cascade_format import is_pointwise
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization
from arenaplan.passes import make_pass, run_passes
from arenaplan.passes.cascade import apply as apply_chains
from arenaplan.passes.cascade import longest_chains
from arenaplan.passes.cascade_chain import Steps, chain_of
from arenaplan.passes.cascade_choice import Chooser
from arenaplan.placement import PlanOptions, plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.scratch import scratch_requests
from arenaplan.tflm.sizes import tensor_bytes
from arenaplan.tflm.tail import NATIVE_PROFILES
from arenaplan.tflm.verify.compare import compare_models
from arenaplan.tflm.verify.inputs import random_inputs
from arenaplan.tflm.verify.native import NativeRunner, native_available
from arenaplan.tflm.verify.prove import prove
from arenaplan.tflm.verify.runner import GENEROUS_ARENA

CUSTOM = "ARENAPLAN_CASCADE"
KINDS = {
    "CONV_2D": 1,
    "DEPTHWISE_CONV_2D": 2,
    "AVERAGE_POOL_2D": 3,
    "MAX_POOL_2D": 4,
    "ADD": 5,
    "PAD": 6,
    "MEAN_ROWS": 7,
    "RELU": 8,
    "RELU6": 9,
    "LEAKY_RELU": 10,
    "MUL": 11,
    "SUB": 12,
    "MINIMUM": 13,
    "MAXIMUM": 14,
    "MEAN": 15,
    "TRANSPOSE_CONV": 20,
    "CONCATENATION": 21,
    "QUANTIZE": 22,
}
# row y reads row y (of both sources for two inputs)
ELEMENTWISE = (
    "ADD", "RELU", "RELU6", "LEAKY_RELU", "MUL", "SUB", "MINIMUM", "MAXIMUM", "CONCATENATION",
    "QUANTIZE",
)  # fmt: skip
TWO_INPUTS = ("ADD", "MUL", "SUB", "MINIMUM", "MAXIMUM", "CONCATENATION")
WHOLE_INPUT = ("MEAN_ROWS", "MEAN")  # one output row from every input row
HEADER_WORDS, STAGE_WORDS = 4, 48
ADD_LEFT_SHIFT = {DType.INT8: 20, DType.INT16: 15}  # TFLM's add_common.cc, sub_common.cc
RANGE = {DType.INT8: (-128, 127), DType.INT16: (-32768, 32767)}
ELEMENT_TYPE = {DType.INT8: 0, DType.INT16: 1}  # word 45
ELEMENT_BYTES = {DType.INT8: 1, DType.INT16: 2}
_NP = {DType.INT8: np.int8, DType.INT16: np.int16, DType.INT32: np.int32, DType.INT64: np.int64}
SCHEMA_INT32 = 2  # TensorType INT32: Conv2DOptions.quantized_bias_type


def _runner(variant: str) -> NativeRunner:
    why = native_available(variant)
    if why is not None:
        pytest.skip(why)
    return NativeRunner(variant)


# --- TFLM's Prepare arithmetic (kernel_util.cc, quantization_util.cc) -----------------


def _round_away(x: float) -> int:
    """TfLiteRound (std::round): halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _quantize_multiplier(m: float) -> tuple[int, int]:
    """QuantizeMultiplier: m ~ multiplier * 2^(shift - 31)."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    fixed = _round_away(q * (1 << 31))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def _f32(x: float) -> float:
    """A scale as the file holds it (float32), as a Python float (exact)."""
    return float(np.float32(x))


def _act_range(
    activation: str, scale: float, zero_point: int, dtype: DType = DType.INT8
) -> tuple[int, int]:
    """CalculateActivationRangeQuantized for int8 or int16 (x / scale in float32)."""
    lo, hi = RANGE[dtype]

    def quantize(x: float) -> int:
        return zero_point + _round_away(float(np.float32(x) / np.float32(scale)))

    if activation == "RELU":
        return max(lo, quantize(0.0)), hi
    if activation == "RELU6":
        return max(lo, quantize(0.0)), min(hi, quantize(6.0))
    return lo, hi


def _quantize_below_one(m: float) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp (0 < m < 1)."""
    assert 0.0 < m < 1.0
    return _quantize_multiplier(m)


def _float_ratio(a: float, b: float) -> float:
    """a / b as TFLM computes it from two float scales in float, widened to double."""
    return float(np.float32(a) / np.float32(b))


def _padding(size: int, filter_size: int, stride: int, dilation: int, same: bool):
    """TFLM's output size and leading padding (ComputePaddingHeightWidth)."""
    effective = (filter_size - 1) * dilation + 1
    out = (size + stride - 1) // stride if same else (size - effective + stride) // stride
    total = max((out - 1) * stride + effective - size, 0)
    return out, total // 2


# --- Chains written by hand ------------------------------------------------------------


@dataclass
class Const:
    """A constant operand: int8 values of the shape the operator reads, and their
    (scale, zero point)."""

    data: np.ndarray
    quant: tuple[float, int] = (0.01, 3)


def _const_strides(c: Const, out: tuple[int, int, int]) -> tuple[int, int, int]:
    """Element strides of ``c`` per output row, column, channel: numpy's broadcast of
    the constant to [1, H, W, C] (0 where it broadcasts)."""
    view = np.broadcast_to(c.data.reshape((1,) * (4 - c.data.ndim) + c.data.shape), (1, *out))
    return view.strides[1], view.strides[2], view.strides[3]  # int8: bytes = elements


def _spreads(st: _Stage) -> bool:
    """The kernel spreads the constant's row into the scratch: it does not lie as an
    output row (channel stride 1, column stride out_c, where those are above 1)."""
    if st.const is None:
        return False
    _, w, c = st.shape
    return not ((c == 1 or st.words[43] == 1) and (w == 1 or st.words[42] == c))


@dataclass
class _Stage:
    kind: str
    src0: int
    src1: int = -1
    shape: tuple[int, int, int] = (0, 0, 0)  # out_h, out_w, out_c
    words: dict[int, int] = field(default_factory=dict)
    consts: list[tuple[np.ndarray, DType]] = field(default_factory=list)  # filter, bias, quant
    builtin: tuple[str, list, dict] | None = None  # the plain operator: opcode, inputs, options
    quant: tuple[float, int] = (0.0, 0)  # the output's scale and zero point
    const: Const | None = None  # a constant operand (words 40-44)
    tensor_shape: tuple[int, ...] | None = None  # the output tensor's, when not [1, h, w, c]
    folded: np.ndarray | None = None  # conv_path 2: the bias the cascade reads instead


class HandChain:
    """A chain of int8 (or int16x8: ``dtype`` INT16, zero points 0) operators, written
    both as plain TFLM operators and as one ARENAPLAN_CASCADE operator with the same
    constants."""

    def __init__(
        self,
        shape: tuple[int, int, int],
        scale: float = 0.04,
        zp: int = -3,
        seed=0,
        dtype: DType = DType.INT8,
    ):
        self.rng = np.random.default_rng(seed)
        self.stages: list[_Stage] = []
        self.dtype = dtype
        # the operator's activation inputs: (shape, quant); source -1 - k is input k
        self.inputs: list[tuple[tuple[int, int, int], tuple[float, int]]] = [(shape, (scale, zp))]

    def input(self, shape: tuple[int, int, int], scale: float = 0.04, zp: int = 0) -> int:
        """Another activation entering the chain whole; its source word."""
        self.inputs.append((shape, (scale, zp)))
        return -len(self.inputs)

    # Shapes and quantisation of a source (-1: the chain's input) or a constant.
    def _shape(self, src: int) -> tuple[int, int, int]:
        return self.inputs[-1 - src][0] if src < 0 else self.stages[src].shape

    def _quant(self, src) -> tuple[float, int]:
        if isinstance(src, Const):
            return src.quant
        return self.inputs[-1 - src][1] if src < 0 else self.stages[src].quant

    def _two(self, kind: str, a, b, quant) -> _Stage:
        """The record of a two-operand stage: two sources, or a source and a constant
        (first or second: words 40-44; src1 -1); offsets in the operator's order."""
        const = a if isinstance(a, Const) else b if isinstance(b, Const) else None
        act = b if const is a else a
        src1 = -1 if const is not None else b
        st = self._base(kind, act, self._shape(act), quant, src1=src1)
        st.words[21] = -self._quant(a)[1]
        st.words[28] = -self._quant(b)[1]
        if const is not None:
            st.const = const
            st.words.update(zip((41, 42, 43), _const_strides(const, st.shape), strict=True))
            st.words[44] = 1 if const is a else 0
        return st

    def _base(self, kind: str, src0: int, out: tuple[int, int, int], quant, src1=-1) -> _Stage:
        in_h, in_w, in_c = self._shape(src0)
        words = dict.fromkeys(range(STAGE_WORDS), 0)
        words.update({0: KINDS[kind], 1: src0, 2: src1, 3: in_h, 4: in_w, 5: in_c})
        words.update({6: out[0], 7: out[1], 8: out[2], 9: 1, 10: 1, 11: 1, 12: 1, 13: 1, 14: 1})
        words.update({17: 1, 18: -1, 19: -1, 20: -1, 27: -1, 40: -1})
        words[21] = -self._quant(src0)[1]
        words[22] = quant[1]
        words[23], words[24] = RANGE[self.dtype]
        words[45] = ELEMENT_TYPE[self.dtype]
        return _Stage(kind, src0, src1, out, words, quant=quant)

    def conv(
        self,
        src,
        out_c,
        k,
        stride=1,
        same=True,
        dilation=1,
        depthwise=False,
        multiplier=1,
        activation="NONE",
        scale=0.07,
        zp=5,
        bias=True,
        int32_sum=False,
        path=0,
    ) -> int:
        """``k``, ``stride``, ``dilation``: one number, or (rows, columns); ``bias``:
        int8 stages an int32 one; int16 ones int64, or int32 with ``int32_sum``
        (TFLM's int16 CONV_2D then sums in int32, as it does without a bias whose
        options say quantized_bias_type INT32); ``path``: word 38 (1: arm_convolve_s8
        in CMSIS-NN builds; 2: the pointwise loop over the folded bias, bias +
        input_offset * the channel's filter sum)."""
        in_h, in_w, in_c = self._shape(src)
        kh, kw = _pair(k)
        (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
        out_h, pad_top = _padding(in_h, kh, sh, dh, same)
        out_w, pad_left = _padding(in_w, kw, sw, dw, same)
        if depthwise:
            out_c = in_c * multiplier
        kind = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
        st = self._base(kind, src, (out_h, out_w, out_c), (scale, zp))
        st.words.update({9: kh, 10: kw, 11: sh, 12: sw, 13: dh, 14: dw})
        st.words.update({15: pad_top, 16: pad_left, 17: multiplier if depthwise else 1})
        st.words[23], st.words[24] = _act_range(activation, _f32(scale), zp, self.dtype)
        fshape = (1, kh, kw, out_c) if depthwise else (out_c, kh, kw, in_c)
        filt = self.rng.integers(-127, 128, fshape).astype(np.int8)
        fscales = [_f32(s) for s in self.rng.uniform(0.002, 0.02, out_c)]
        wide = self.dtype is DType.INT16 and not int32_sum
        bias_type = DType.INT64 if wide else DType.INT32
        top = 3000 if self.dtype is DType.INT8 else 3_000_000
        b = self.rng.integers(-top, top, out_c).astype(_NP[bias_type]) if bias else None
        in_scale = _f32(self._quant(src)[0])
        pairs = [_quantize_multiplier(in_scale * s / _f32(scale)) for s in fscales]
        quant = np.array([m for m, _ in pairs] + [s for _, s in pairs], np.int32)
        st.consts = [(filt, DType.INT8), (b, bias_type), (quant, DType.INT32)]
        st.words[46] = int(self.dtype is DType.INT16 and int32_sum)
        st.words[38] = path
        if path == 2:
            sums = filt.reshape(out_c, -1).astype(np.int64).sum(axis=1)
            base = b.astype(np.int64) if b is not None else np.zeros(out_c, np.int64)
            st.folded = (base + st.words[21] * sums).astype(np.int32)
        axis = 3 if depthwise else 0
        st.filter_quant = Quantization(tuple(fscales), (0,) * out_c, axis)
        st.bias_quant = Quantization(tuple(in_scale * s for s in fscales), (0,) * out_c)
        options = {
            "padding": "SAME" if same else "VALID",
            "stride_h": sh,
            "stride_w": sw,
            "dilation_h_factor": dh,
            "dilation_w_factor": dw,
            "fused_activation_function": activation,
        }
        if depthwise:
            options["depth_multiplier"] = multiplier
        if int32_sum and not bias:
            options["quantized_bias_type"] = SCHEMA_INT32
        st.builtin = (kind, [src], options)
        return self._push(st)

    def transpose_conv(self, src, out_c, k, stride, same=True, scale=0.004, zp=0, bias=True):
        """int16x8 TRANSPOSE_CONV (inputs: output shape, filter, input, int64 bias);
        ``k``, ``stride``: one number or (rows, columns); its output SAME in * stride,
        VALID (in - 1) * stride + k; padding as TFLM computes it from the output's size."""
        in_h, in_w, in_c = self._shape(src)
        ks, strides = _pair(k), _pair(stride)
        dims = zip((in_h, in_w), ks, strides, strict=True)
        out_hw = [n * s if same else (n - 1) * s + kk for n, kk, s in dims]
        dims = zip(out_hw, ks, strides, strict=True)
        pads = [_padding(n, kk, s, 1, True)[1] if same else 0 for n, kk, s in dims]
        st = self._base("TRANSPOSE_CONV", src, (*out_hw, out_c), (scale, zp))
        st.words.update({9: ks[0], 10: ks[1], 11: strides[0], 12: strides[1]})
        st.words.update({15: pads[0], 16: pads[1]})
        filt = self.rng.integers(-127, 128, (out_c, *ks, in_c)).astype(np.int8)
        fscales = [_f32(s) for s in self.rng.uniform(0.002, 0.02, out_c)]
        b = self.rng.integers(-3_000_000, 3_000_000, out_c).astype(np.int64) if bias else None
        in_scale = _f32(self._quant(src)[0])
        pairs = [_quantize_multiplier(in_scale * s / _f32(scale)) for s in fscales]
        quant = np.array([m for m, _ in pairs] + [s for _, s in pairs], np.int32)
        st.consts = [(filt, DType.INT8), (b, DType.INT64), (quant, DType.INT32)]
        st.filter_quant = Quantization(tuple(fscales), (0,) * out_c, 0)
        st.bias_quant = Quantization(tuple(in_scale * s for s in fscales), (0,) * out_c)
        options = {"padding": "SAME" if same else "VALID", "stride_h": strides[0]}
        options["stride_w"] = strides[1]
        st.builtin = ("TRANSPOSE_CONV", [src], options)
        return self._push(st)

    def concat(self, a, b) -> int:
        """CONCATENATION along the channels (the values copied, quantised as ``a``)."""
        (h, w, ca), cb = self._shape(a), self._shape(b)[2]
        st = self._base("CONCATENATION", a, (h, w, ca + cb), self._quant(a), src1=b)
        st.builtin = ("CONCATENATION", [a, b], {"axis": 3})
        return self._push(st)

    def pool(self, src, k, stride, same=True, average=True, activation="NONE") -> int:
        """``k``, ``stride``: one number or (rows, columns)."""
        in_h, in_w, in_c = self._shape(src)
        (kh, kw), (sh, sw) = _pair(k), _pair(stride)
        out_h, pad_top = _padding(in_h, kh, sh, 1, same)
        out_w, pad_left = _padding(in_w, kw, sw, 1, same)
        kind = "AVERAGE_POOL_2D" if average else "MAX_POOL_2D"
        quant = self._quant(src)
        st = self._base(kind, src, (out_h, out_w, in_c), quant)
        st.words.update({9: kh, 10: kw, 11: sh, 12: sw, 15: pad_top, 16: pad_left})
        st.words[23], st.words[24] = _act_range(activation, _f32(quant[0]), quant[1], self.dtype)
        options = {
            "padding": "SAME" if same else "VALID",
            "stride_h": sh,
            "stride_w": sw,
            "filter_height": kh,
            "filter_width": kw,
            "fused_activation_function": activation,
        }
        st.builtin = (kind, [src], options)
        return self._push(st)

    def mean(self, src) -> int:
        """MEAN_ROWS: the plain operator is AVERAGE_POOL_2D over the whole input."""
        in_h, in_w, in_c = self._shape(src)
        st = self._base("MEAN_ROWS", src, (1, 1, in_c), self._quant(src))
        st.words.update({9: in_h, 10: in_w})
        options = {
            "padding": "VALID",
            "stride_h": 1,
            "stride_w": 1,
            "filter_height": in_h,
            "filter_width": in_w,
        }
        st.builtin = ("AVERAGE_POOL_2D", [src], options)
        return self._push(st)

    def add(self, a, b, scale=0.09, zp=-7, activation="NONE") -> int:
        st = self._two("ADD", a, b, (scale, zp))
        s1, s2, so = (_f32(self._quant(a)[0]), _f32(self._quant(b)[0]), _f32(scale))
        twice = 2 * max(s1, s2)
        left = ADD_LEFT_SHIFT[self.dtype]
        m1, m2 = _quantize_multiplier(s1 / twice), _quantize_multiplier(s2 / twice)
        mo = _quantize_multiplier(twice / ((1 << left) * so))
        st.words.update({28: -self._quant(b)[1], 29: left, 30: m1[0], 31: m1[1]})
        st.words.update({32: m2[0], 33: m2[1], 34: mo[0], 35: mo[1]})
        st.words[23], st.words[24] = _act_range(activation, so, zp, self.dtype)
        st.builtin = ("ADD", [a, b], {"fused_activation_function": activation})
        return self._push(st)

    def sub(self, a, b, scale=0.09, zp=-7, activation="NONE") -> int:
        """SUB: sub_common.cc computes ADD's multipliers in float."""
        st = self._two("SUB", a, b, (scale, zp))
        s1, s2, so = (np.float32(self._quant(a)[0]), np.float32(self._quant(b)[0]), scale)
        twice = np.float32(2) * max(s1, s2)
        left = ADD_LEFT_SHIFT[self.dtype]
        m1, m2 = _quantize_below_one(float(s1 / twice)), _quantize_below_one(float(s2 / twice))
        mo = _quantize_below_one(float(twice / (np.float32(1 << left) * np.float32(so))))
        st.words.update({28: -self._quant(b)[1], 29: left, 30: m1[0], 31: m1[1]})
        st.words.update({32: m2[0], 33: m2[1], 34: mo[0], 35: mo[1]})
        st.words[23], st.words[24] = _act_range(activation, _f32(scale), zp, self.dtype)
        st.builtin = ("SUB", [a, b], {"fused_activation_function": activation})
        return self._push(st)

    def mul(self, a, b, scale=0.11, zp=6, activation="NONE") -> int:
        """MUL: mul_common.cc, in1 * in2 / out scale in double."""
        st = self._two("MUL", a, b, (scale, zp))
        s1, s2, so = (_f32(self._quant(a)[0]), _f32(self._quant(b)[0]), _f32(scale))
        mo = _quantize_multiplier(s1 * s2 / so)
        st.words.update({28: -self._quant(b)[1], 34: mo[0], 35: mo[1]})
        st.words[23], st.words[24] = _act_range(activation, so, zp, self.dtype)
        st.builtin = ("MUL", [a, b], {"fused_activation_function": activation})
        return self._push(st)

    def min_max(self, a, b, maximum: bool) -> int:
        """MINIMUM, MAXIMUM: the raw values compared; the output quantised as the
        activation operand (TFLM reads no quantisation)."""
        kind = "MAXIMUM" if maximum else "MINIMUM"
        act = b if isinstance(a, Const) else a
        st = self._two(kind, a, b, self._quant(act))
        st.words[21] = st.words[28] = st.words[22] = 0
        st.builtin = (kind, [a, b], {})
        return self._push(st)

    def reduce_mean(self, src, keep_dims=False, scale=0.013, zp=4) -> int:
        """MEAN over rows and columns: QuantizedMeanOrSum's multiplier, in/out scale in
        double by QuantizeMultiplier, rescaled by the count n: shift' = min(floor(log2
        n), 32, 31 + shift), multiplier * 2^shift' // n, shift - shift'."""
        in_h, in_w, in_c = self._shape(src)
        st = self._base("MEAN", src, (1, 1, in_c), (scale, zp))
        n = in_h * in_w
        mult, shift = _quantize_multiplier(_f32(self._quant(src)[0]) / _f32(scale))
        extra = min(n.bit_length() - 1, 32, 31 + shift)
        st.words.update({9: in_h, 10: in_w, 34: (mult << extra) // n, 35: shift - extra})
        st.tensor_shape = (1, 1, 1, in_c) if keep_dims else (1, in_c)
        st.axes = np.array([1, 2], np.int32)
        st.builtin = ("MEAN", [src], {"keep_dims": keep_dims})
        return self._push(st)

    def relu(self, src, scale=0.03, zp=-20) -> int:
        """RELU: CalculateReluOpData, the input over the output scale in float."""
        st = self._base("RELU", src, self._shape(src), (scale, zp))
        mo = _quantize_multiplier(_float_ratio(self._quant(src)[0], scale))
        lo, hi = RANGE[self.dtype]
        st.words.update({34: mo[0], 35: mo[1], 23: max(lo, zp), 24: hi})
        st.builtin = ("RELU", [src], {})
        return self._push(st)

    def relu6(self, src) -> int:
        """RELU6: the raw input clamped to its zero point and its quantised 6.0
        (Relu6Prepare); the output quantised as the input."""
        quant = self._quant(src)
        st = self._base("RELU6", src, self._shape(src), quant)
        six = quant[1] + _round_away(float(np.float32(6.0) / np.float32(quant[0])))
        lo, hi = RANGE[self.dtype]
        st.words.update({23: quant[1], 24: min(hi, max(lo, six))})
        st.builtin = ("RELU6", [src], {})
        return self._push(st)

    def leaky_relu(self, src, alpha=0.2, scale=0.02, zp=5) -> int:
        """LEAKY_RELU: CalculateOpDataLeakyRelu, both ratios in float (alpha float32)."""
        st = self._base("LEAKY_RELU", src, self._shape(src), (scale, zp))
        s_in = np.float32(self._quant(src)[0])
        identity = _quantize_multiplier(float(s_in / np.float32(scale)))
        scaled = _quantize_multiplier(float(s_in * np.float32(alpha) / np.float32(scale)))
        st.words.update({34: identity[0], 35: identity[1], 32: scaled[0], 33: scaled[1]})
        st.builtin = ("LEAKY_RELU", [src], {"alpha": alpha})
        return self._push(st)

    def quantize(self, src, scale, zp=0) -> int:
        """QUANTIZE within a type: quantize_common.cc's multiplier, input over output
        scale in double; the clamp the type's range."""
        st = self._base("QUANTIZE", src, self._shape(src), (scale, zp))
        mo = _quantize_multiplier(_f32(self._quant(src)[0]) / _f32(scale))
        st.words.update({34: mo[0], 35: mo[1]})
        st.builtin = ("QUANTIZE", [src], {})
        return self._push(st)

    def pad(self, src, top, bottom, left, right) -> int:
        in_h, in_w, in_c = self._shape(src)
        quant = self._quant(src)
        st = self._base("PAD", src, (in_h + top + bottom, in_w + left + right, in_c), quant)
        # pad.cc: int8 pads with the zero point, int16 with 0
        st.words.update({15: top, 16: left, 36: quant[1] if self.dtype is DType.INT8 else 0})
        st.paddings = np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32)
        st.builtin = ("PAD", [src], {})
        return self._push(st)

    def _push(self, st: _Stage) -> int:
        self.stages.append(st)
        return len(self.stages) - 1

    # --- The two models -----------------------------------------------------------

    def _act(self, b: ModelBuilder, name: str, shape, quant, tensor_shape=None) -> int:
        q = Quantization((quant[0],), (quant[1],))
        return b.add_tensor(name, tensor_shape or (1, *shape), self.dtype, quantization=q)

    def _const(self, b: ModelBuilder, name: str, c: Const) -> int:
        q = Quantization((c.quant[0],), (c.quant[1],))
        return b.add_tensor(name, c.data.shape, DType.INT8, data=c.data, quantization=q)

    def _source(self, b: ModelBuilder, i: int, src, xs: list[int], made: list[int]) -> int:
        """The tensor of stage i's source ``src``: a constant, an input or a stage's."""
        if isinstance(src, Const):
            return self._const(b, f"k{i}", src)
        return xs[-1 - src] if src < 0 else made[src]

    def _inputs(self, b: ModelBuilder) -> list[int]:
        return [
            self._act(b, f"input{k}", *shape_quant) for k, shape_quant in enumerate(self.inputs)
        ]

    def original(self) -> bytes:
        b = ModelBuilder("hand chain")
        xs = self._inputs(b)
        made: list[int] = []
        for i, st in enumerate(self.stages):
            opcode, srcs, options = st.builtin
            ins = [self._source(b, i, s, xs, made) for s in srcs]
            if st.kind in ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV"):
                (filt, _), (bias, bias_type), _ = st.consts
                ins.append(
                    b.add_tensor(
                        f"w{i}", filt.shape, DType.INT8, data=filt, quantization=st.filter_quant
                    )
                )
                ins.append(
                    -1
                    if bias is None
                    else b.add_tensor(
                        f"b{i}", bias.shape, bias_type, data=bias, quantization=st.bias_quant
                    )
                )
            if st.kind == "TRANSPOSE_CONV":  # output shape, filter, input, bias
                shape = np.array((1, *st.shape), np.int32)
                ins = [b.add_tensor(f"s{i}", (4,), DType.INT32, data=shape), ins[1], ins[0], ins[2]]
            if st.kind == "PAD":
                ins.append(b.add_tensor(f"p{i}", (4, 2), DType.INT32, data=st.paddings))
            if st.kind == "MEAN":
                ins.append(b.add_tensor(f"m{i}", (2,), DType.INT32, data=st.axes))
            name = "output" if i == len(self.stages) - 1 else f"a{i}"
            made.append(self._act(b, name, st.shape, st.quant, st.tensor_shape))
            b.add_operator(opcode, ins, [made[-1]], options)
        b.set_io(xs, [made[-1]])
        return b.finish()

    def blob(
        self,
        full_rings: bool = False,
        words: dict | None = None,
        steps: int | list[int] = 0,
        columns: bool = False,
    ) -> bytes:
        """The chain blob: rings sized by the row order (or whole tensors); ``steps``:
        the block_rows of every stage but MEAN_ROWS and MEAN (at most its rows), or of
        each; ``columns``: along the columns of one-row tensors (word 47)."""
        stages = [_along_columns(st) for st in self.stages] if columns else self.stages
        each = steps if isinstance(steps, list) else [steps] * len(stages)
        blocks = [
            0 if st.kind in WHOLE_INPUT else min(b, st.shape[0])
            for st, b in zip(stages, each, strict=True)
        ]
        rings = _ring_rows(stages, blocks) if not full_rings else [s.shape[0] for s in stages]
        rings = [-(-r // max(b, 1)) * max(b, 1) for r, b in zip(rings, blocks, strict=True)]
        rings[-1] = 0
        records, offset = [], 0
        for s, st in enumerate(stages):
            w = dict(st.words)
            w[37] = blocks[s]
            w[25] = rings[s]
            w[26] = offset if rings[s] else 0
            offset += _align4(rings[s] * st.shape[1] * st.shape[2] * ELEMENT_BYTES[self.dtype])
            records.append(w)
        for s, st in enumerate(stages):
            if st.kind in WHOLE_INPUT:
                records[s][27] = offset
                offset += 4 * st.shape[2]
        spread = [s for s, st in enumerate(stages) if _spreads(st)]
        for s in spread:  # one row shared by every stage that spreads its constant
            records[s][27] = offset
        offset += _align4(max((stages[s].shape[1] * stages[s].shape[2] for s in spread),
                              default=0))  # fmt: skip
        header = [2, len(stages), offset, STAGE_WORDS]
        for (s, f), v in (words or {}).items():
            if s == "header":
                header[f] = v
            else:
                records[s][f] = v
        flat = header + [r[f] for r in records for f in range(STAGE_WORDS)]
        return np.array(flat, "<i4").tobytes()

    def cascaded(
        self,
        full_rings: bool = False,
        words: dict | None = None,
        options: bytes | None = None,
        steps: int | list[int] = 0,
        columns: bool = False,
    ) -> bytes:
        """The one-operator model; ``words``: {(stage or "header", word): value} to
        break; ``options``: custom options to use instead of the right ones;
        ``columns``: run along the columns of its one-row tensors."""
        b = ModelBuilder("hand chain, cascaded")
        xs = self._inputs(b)
        inputs = list(xs)
        extra: dict[tuple[int, int], int] = {}
        for s, st in enumerate(self.stages):
            consts = list(st.consts)
            if st.folded is not None:
                consts[1] = (st.folded, DType.INT32)
            for field_index, (data, dtype) in zip((18, 19, 20), consts, strict=False):
                if data is None:
                    continue
                inputs.append(b.add_tensor(f"c{s}_{field_index}", data.shape, dtype, data=data))
                extra[(s, field_index)] = len(inputs) - 1
            if st.const is not None:
                inputs.append(self._const(b, f"k{s}", st.const))
                extra[(s, 40)] = len(inputs) - 1
        for (s, f), index in extra.items():
            self.stages[s].words[f] = index
        blob = self.blob(full_rings, words, steps, columns)
        custom = (
            options if options is not None else flexbuffers.Dumps({"version": 2, "chain": blob})
        )
        last = self.stages[-1]
        y = self._act(b, "output", last.shape, last.quant, last.tensor_shape)
        b.add_operator(f"custom:{CUSTOM}", inputs, [y], custom_options=custom)
        b.set_io(xs, [y])
        return b.finish()


# word pairs of a stage's rows and columns: in_h/in_w, out_h/out_w, filter, stride,
# dilation, padding
# in_h/in_w, out_h/out_w, filter, stride, dilation, padding, constant strides h/w
_ROWS_COLUMNS = ((3, 4), (6, 7), (9, 10), (11, 12), (13, 14), (15, 16), (41, 42))


def _along_columns(st: _Stage) -> _Stage:
    """A one-row stage as the kernel runs it along columns: rows and columns swapped
    (a [1, 1, W, C] tensor's bytes are [1, W, 1, C]'s), word 47 set."""
    words = dict(st.words)
    for a, b in _ROWS_COLUMNS:
        words[a], words[b] = st.words[b], st.words[a]
    words[47] = 1
    h, w, c = st.shape
    return dataclasses.replace(st, shape=(w, h, c), words=words)


def _pair(v) -> tuple[int, int]:
    """A (rows, columns) pair from one number or a pair."""
    return tuple(v) if isinstance(v, tuple) else (v, v)


def _align4(n: int) -> int:
    return (n + 3) // 4 * 4


def _needs(st: _Stage, y: int) -> tuple[int, int]:
    """docs/cascade.md's needs(s, y): first and last row of src0 (hi < lo: none)."""
    w = st.words
    in_h = w[3]
    if st.kind in ELEMENTWISE:
        return y, y
    if st.kind == "PAD":
        r = y - w[15]
        return (r, r) if 0 <= r < in_h else (0, -1)
    if st.kind == "TRANSPOSE_CONV":  # input rows r with y + pad - r*stride a filter row
        rows = [r for r in range(in_h) if 0 <= y + w[15] - r * w[11] < w[9]]
        return (rows[0], rows[-1]) if rows else (0, -1)
    rows = [y * w[11] - w[15] + k * w[13] for k in range(w[9])]
    inside = [r for r in rows if 0 <= r < in_h]
    return (inside[0], inside[-1]) if inside else (0, -1)


def _ring_rows(stages: list[_Stage], blocks: list[int] | None = None) -> list[int]:
    """The row order of docs/cascade.md on row numbers: the largest next[s] - r at a
    read of row r of stage s; ``blocks``: each stage's block_rows (0: one)."""
    nxt, ring = [0] * len(stages), [0] * len(stages)
    steps = [max(b, 1) for b in blocks] if blocks else [1] * len(stages)

    def step(s: int, y: int) -> int:
        return min(steps[s], stages[s].shape[0] - y)

    def read(s: int, lo: int, hi: int) -> None:
        if s >= 0 and hi >= lo:
            ring[s] = max(ring[s], nxt[s] - lo)

    def make(s: int, r: int) -> None:
        while s >= 0 and nxt[s] <= r:
            y = nxt[s]
            compute(s, y)
            nxt[s] += step(s, y)

    def compute(s: int, y: int) -> None:
        st = stages[s]
        if st.kind in WHOLE_INPUT:
            for r in range(st.words[3]):
                make(st.src0, r)
                read(st.src0, r, r)
            return
        n = step(s, y)
        spans = [_needs(st, k) for k in range(y, y + n)]
        spans = [(lo, hi) for lo, hi in spans if hi >= lo]
        lo, hi = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else (0, -1)
        if spans:
            make(st.src0, hi)
        if st.kind in TWO_INPUTS:
            make(st.src1, y + n - 1)
            read(st.src1, y, y + n - 1)
        if spans:
            read(st.src0, lo, hi)

    last = len(stages) - 1
    y = 0
    while y < stages[last].shape[0]:
        compute(last, y)
        y += step(last, y)
    return ring


# The hand chains: every kind, strides, dilation, depth multiplier, odd sizes,
# residual ADDs (a source read by two stages), PAD, pools with padding, MEAN_ROWS.
def _chain_block() -> HandChain:
    c = HandChain((11, 9, 5))
    a = c.conv(-1, 8, 3, stride=2, activation="RELU6")
    b = c.conv(a, 0, 3, depthwise=True, activation="RELU")
    p = c.conv(b, 8, 1, scale=0.05, zp=-2)
    s = c.add(a, p)
    d = c.conv(s, 0, 3, depthwise=True, multiplier=2, dilation=2)
    m = c.pool(d, 3, 2, average=False)
    q = c.pad(m, 1, 2, 0, 1)
    v = c.pool(q, 2, 1, same=True)
    c.mean(v)
    return c


def _chain_strided_tall() -> HandChain:
    c = HandChain((17, 6, 3), scale=0.02, zp=10, seed=1)
    a = c.conv(-1, 6, (5, 3), stride=1, same=False, bias=False)
    b = c.pool(a, 3, 3, same=True, average=True, activation="RELU")
    e = c.conv(b, 4, (3, 1), stride=2, dilation=1)
    f = c.add(e, e, scale=0.03, zp=0)
    c.conv(f, 0, 3, depthwise=True, stride=2)
    return c


def _chain_input_add() -> HandChain:
    """ADD of the chain's input and a stage: both sources whole and ringed."""
    c = HandChain((6, 7, 4), seed=2)
    a = c.conv(-1, 4, 3, scale=0.04, zp=-3)
    c.add(-1, a)
    return c


def _chain_single() -> HandChain:
    """One stage: no ring, no scratch."""
    c = HandChain((5, 5, 3), seed=3)
    c.conv(-1, 0, 3, depthwise=True)
    return c


def _chain_mean_middle() -> HandChain:
    """MEAN_ROWS before the last stage (its ring holds its one row)."""
    c = HandChain((7, 5, 6), seed=4)
    a = c.conv(-1, 6, 3, stride=2)
    m = c.mean(a)
    c.conv(m, 5, 1)
    return c


def _chain_elementwise() -> HandChain:
    """RELU and LEAKY_RELU in the middle, MUL of two stages, SUB of the input and a
    stage, RELU6 at the end (its input's quantisation reaches 6.0 inside int8)."""
    c = HandChain((9, 7, 4), seed=5)
    a = c.conv(-1, 6, 3, scale=0.05, zp=-4)
    r = c.relu(a, scale=0.03, zp=-20)
    lr = c.leaky_relu(r, alpha=0.15, scale=0.02, zp=5)
    m = c.mul(a, lr, scale=0.07, zp=3, activation="RELU")
    d = c.conv(m, 4, 3, scale=0.06, zp=-1)
    s = c.sub(-1, d, scale=0.1, zp=-3)
    c.relu6(s)
    return c


def _chain_mul_end() -> HandChain:
    """RELU6 in the middle, MUL of the input and a stage at the end."""
    c = HandChain((8, 5, 3), scale=0.03, zp=7, seed=6)
    a = c.conv(-1, 3, 3, stride=1, scale=0.08, zp=-9)
    r6 = c.relu6(a)
    c.mul(-1, r6, scale=0.05, zp=-2, activation="RELU6")
    return c


def _chain_sub_end() -> HandChain:
    """LEAKY_RELU with alpha < 0 (a negative multiplier), SUB of two stages at the end."""
    c = HandChain((7, 6, 5), seed=7)
    a = c.conv(-1, 5, 3, scale=0.06, zp=2)
    lr = c.leaky_relu(a, alpha=-0.3, scale=0.05, zp=-6)
    c.sub(lr, a, scale=0.07, zp=1, activation="RELU")
    return c


def _chain_relu_end() -> HandChain:
    """MUL of a stage by itself, RELU at the end."""
    c = HandChain((6, 8, 4), seed=8)
    a = c.conv(-1, 4, 3, stride=2, scale=0.04, zp=-1)
    m = c.mul(a, a, scale=0.02, zp=-30)
    c.relu(m, scale=0.015, zp=-100)
    return c


def _chain_leaky_end() -> HandChain:
    """MUL of the input by itself (the input as both sources), SUB of the input and
    a stage, a pool, LEAKY_RELU at the end."""
    c = HandChain((9, 5, 3), scale=0.02, zp=0, seed=9)
    m = c.mul(-1, -1, scale=0.004, zp=-60)
    a = c.conv(m, 3, 3, scale=0.05, zp=4)
    s = c.sub(-1, a, scale=0.06, zp=-2)
    p = c.pool(s, 3, 1)
    c.leaky_relu(p, alpha=0.5, scale=0.04, zp=-5)
    return c


def _values(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


def _chain_batch_norm() -> HandChain:
    """Batch norm the converter did not fold, as Keras exports it: MUL by a
    per-channel [C] constant, ADD of a [1, 1, 1, C] one (RELU); then SUB with a scalar
    [] constant first (c - x), MUL by a [1] scalar first, MEAN (keep_dims false) at
    the end."""
    c = HandChain((9, 7, 3), seed=10)
    rng = np.random.default_rng(10)
    a = c.conv(-1, 6, 3, stride=2, scale=0.05, zp=3)
    m = c.mul(a, Const(_values(rng, (6,)), (0.004, -128)), scale=0.04, zp=-2)
    b = c.add(m, Const(_values(rng, (1, 1, 1, 6)), (0.02, 5)), scale=0.05, zp=1,
              activation="RELU")  # fmt: skip
    d = c.conv(b, 5, 3, scale=0.06, zp=-4)
    e = c.sub(Const(_values(rng, ()), (0.05, -7)), d, scale=0.08, zp=2)
    f = c.mul(Const(_values(rng, (1,)), (0.003, 9)), e, scale=0.02, zp=-11)
    c.reduce_mean(f, keep_dims=False, scale=0.013, zp=4)
    return c


def _chain_broadcasts() -> HandChain:
    """A constant of every broadcast shape: whole [1, H, W, C] and [1, 1, W, C] (read
    in place), per row [1, H, 1, 1] and [H, 1, C], per column [W, 1], [1, 1, 1, 1];
    MAXIMUM and MINIMUM by constants, first and second; MEAN (keep_dims) at the end."""
    c = HandChain((6, 5, 4), scale=0.03, zp=-5, seed=11)
    rng = np.random.default_rng(11)
    a = c.conv(-1, 4, 3, scale=0.05, zp=-1)
    b = c.add(Const(_values(rng, (1, 6, 5, 4)), (0.03, -2)), a, scale=0.06, zp=4)
    d = c.mul(b, Const(_values(rng, (1, 6, 1, 1)), (0.01, 0)), scale=0.03, zp=-9)
    e = c.sub(d, Const(_values(rng, (5, 1)), (0.02, 12)), scale=0.07, zp=0)
    f = c.add(e, Const(_values(rng, (1, 1, 5, 4)), (0.05, -1)), scale=0.08, zp=-3)
    g = c.sub(Const(_values(rng, (6, 1, 4)), (0.04, 1)), f, scale=0.09, zp=7)
    h = c.min_max(g, Const(_values(rng, (1, 1, 1, 4))), maximum=True)
    k = c.min_max(Const(_values(rng, (1, 1, 1, 1))), h, maximum=False)
    m = c.mul(k, Const(_values(rng, (1, 1, 1, 1)), (0.02, -4)), scale=0.5, zp=2)
    c.reduce_mean(m, keep_dims=True, scale=0.15, zp=-6)
    return c


def _chain_min_max() -> HandChain:
    """MAXIMUM of two stages, MINIMUM of the input and a stage, a pool after them."""
    c = HandChain((7, 6, 3), seed=12)
    a = c.conv(-1, 3, 3, scale=0.04, zp=-3)
    b = c.conv(a, 0, 3, depthwise=True, scale=0.04, zp=-3)
    m = c.min_max(a, b, maximum=True)
    n = c.min_max(-1, m, maximum=False)
    c.pool(n, 2, 1)
    return c


def _chain_dilated_rows() -> HandChain:
    """A 2x2 CONV with dilation 2 (SAME: padding 1): output row 0 reads row 1, row 1
    reads rows 0 and 2, so a step's first row does not read the step's first source
    row (steps3: the CMSIS-NN builds' window must start at the least of them)."""
    c = HandChain((12, 7, 3), seed=21)
    a = c.conv(-1, 4, 3)
    b = c.conv(a, 4, 2, dilation=2)
    c.conv(b, 3, 3)
    return c


def _int16_chain_convs() -> HandChain:
    """int16x8 convolutions: SAME stride 1 with an int64 bias and a fused RELU6, VALID
    stride 2 with an int32 bias (an int32 sum), a depthwise with multiplier 2 and
    dilation 2, a dilated 2x3 without a bias summing in int32 (quantized_bias_type
    INT32), a 1x1 without a bias (an int64 sum)."""
    c = HandChain((13, 9, 3), scale=0.0005, zp=0, seed=11, dtype=DType.INT16)
    a = c.conv(-1, 8, 3, scale=0.001, zp=0, activation="RELU6")
    b = c.conv(a, 6, 3, stride=2, same=False, scale=0.005, zp=0, int32_sum=True)
    d = c.conv(b, 0, 3, depthwise=True, multiplier=2, dilation=2, scale=0.05, zp=0)
    e = c.conv(d, 5, (2, 3), dilation=2, bias=False, int32_sum=True, scale=0.3, zp=0)
    c.conv(e, 4, 1, bias=False, scale=0.5, zp=0, activation="RELU")
    return c


def _int16_chain_block() -> HandChain:
    """int16x8: a strided CONV, a depthwise, a 1x1 CONV, the residual ADD of two
    stages, a max pool, PAD, an average pool with padding, MEAN_ROWS."""
    c = HandChain((11, 9, 5), scale=0.001, zp=0, seed=12, dtype=DType.INT16)
    a = c.conv(-1, 8, 3, stride=2, scale=0.01, zp=0, activation="RELU")
    b = c.conv(a, 0, 3, depthwise=True, scale=0.02, zp=0)
    p = c.conv(b, 8, 1, scale=0.05, zp=0)
    s = c.add(a, p, scale=0.05, zp=0)
    m = c.pool(s, 3, 2, average=False)
    q = c.pad(m, 1, 2, 0, 1)
    v = c.pool(q, 2, 1, same=True)
    c.mean(v)
    return c


def _chain_const_concat() -> HandChain:
    """int8: a MUL by a per-channel constant, then its CONCATENATION with a second
    activation entering whole (quantised as the MUL's output: int8 CONCATENATION
    copies values)."""
    c = HandChain((4, 5, 3), scale=0.04, zp=-3, seed=24)
    rng = np.random.default_rng(24)
    skip = c.input((4, 5, 2), scale=0.05, zp=-3)
    a = c.mul(-1, Const(_values(rng, (3,)), (0.02, -3)), scale=0.05, zp=-3)
    c.concat(a, skip)
    return c


def _int16_chain_elementwise() -> HandChain:
    """int16x8 element-wise kinds: RELU6, LEAKY_RELU, RELU, MUL of two stages with a
    fused RELU, SUB of the input and a stage at the end."""
    c = HandChain((9, 7, 4), scale=0.0004, zp=0, seed=13, dtype=DType.INT16)
    a = c.conv(-1, 6, 3, scale=0.003, zp=0)
    r6 = c.relu6(a)
    lr = c.leaky_relu(a, alpha=0.15, scale=0.0015, zp=0)
    r = c.relu(lr, scale=0.002, zp=0)
    m = c.mul(r6, r, scale=0.08, zp=0, activation="RELU")
    d = c.conv(m, 4, 3, scale=0.3, zp=0)
    c.sub(-1, d, scale=0.4, zp=0)
    return c


def _int16_chain_unet() -> HandChain:
    """A U-Net decoder, int16x8: three activations enter (the bottleneck, the skip
    tensors); TRANSPOSE_CONV /2 SAME, CONCATENATION with a skip (a stage and an input),
    a CONV, TRANSPOSE_CONV /2 again, CONCATENATION with the other skip first, a CONV."""
    c = HandChain((4, 3, 6), scale=0.0004, zp=0, seed=14, dtype=DType.INT16)
    skip = c.input((8, 6, 4), scale=0.003)
    top = c.input((16, 12, 1), scale=0.0002)
    t1 = c.transpose_conv(-1, 4, 3, 2, scale=0.004)
    v1 = c.conv(c.concat(t1, skip), 4, 3, scale=0.006, zp=0, activation="RELU")
    t2 = c.transpose_conv(v1, 2, 3, 2, scale=0.02)
    c.conv(c.concat(top, t2), 1, 3, scale=0.02, zp=0)
    return c


def _chain_requantized_concat() -> HandChain:
    """int8 QUANTIZE before a CONCATENATION, as converters write it: a stage's output
    requantised to the scale and zero point of the other input, then concatenated."""
    c = HandChain((7, 6, 3), scale=0.3, zp=4, seed=17)
    a = c.conv(-1, 5, 3, scale=0.6, zp=-6)
    q = c.quantize(a, scale=0.3, zp=4)
    c.conv(c.concat(q, -1), 4, 3, scale=1.5, zp=1)
    return c


def _int16_chain_requantized_concat() -> HandChain:
    """The same in int16 (zero points 0), a TRANSPOSE_CONV's output requantised."""
    c = HandChain((4, 3, 5), scale=0.0004, zp=0, seed=18, dtype=DType.INT16)
    skip = c.input((8, 6, 3), scale=0.002)
    t = c.transpose_conv(-1, 3, 3, 2, scale=0.004)
    q = c.quantize(t, scale=0.002)
    c.conv(c.concat(q, skip), 2, 3, scale=0.01, zp=0)
    return c


def _int16_chain_transpose() -> HandChain:
    """int16x8 TRANSPOSE_CONVs of other shapes: VALID with a 4x4 filter and stride 2,
    SAME with stride 1, SAME stride 3 with a 2x2 filter (rows no input reaches)."""
    c = HandChain((5, 4, 3), scale=0.0005, zp=0, seed=15, dtype=DType.INT16)
    a = c.transpose_conv(-1, 4, 4, 2, same=False, scale=0.004)
    b = c.transpose_conv(a, 3, 3, 1, scale=0.01)
    c.transpose_conv(b, 2, 2, 3, scale=0.02)
    return c


def _int16_chain_transpose_no_bias() -> HandChain:
    """int16x8 TRANSPOSE_CONVs without a bias, as TensorFlow's converter writes them."""
    c = HandChain((5, 4, 3), scale=0.0005, zp=0, seed=19, dtype=DType.INT16)
    a = c.transpose_conv(-1, 4, 3, 2, scale=0.004, bias=False)
    c.transpose_conv(a, 2, 3, 1, scale=0.01, bias=False)
    return c


def _int16_chain_one_row() -> HandChain:
    """One row, int16x8, as a 1-D denoiser's layers are: a 1x3 CONV of stride 2 along
    the columns, a 1x3 depthwise of dilation 2, a 1x2 max pool, PAD of columns, a 1x3
    TRANSPOSE_CONV of stride 2, QUANTIZE, CONCATENATION with a second input, a 1x3
    CONV, MEAN_ROWS (of the one row)."""
    c = HandChain((1, 24, 2), scale=0.0005, zp=0, seed=20, dtype=DType.INT16)
    skip = c.input((1, 18, 3), scale=0.003)
    a = c.conv(-1, 4, (1, 3), stride=(1, 2), scale=0.002, zp=0, activation="RELU")
    d = c.conv(a, 0, (1, 3), depthwise=True, dilation=(1, 2), scale=0.006, zp=0)
    m = c.pool(d, (1, 2), (1, 2), average=False)
    p = c.pad(m, 0, 0, 1, 2)
    t = c.transpose_conv(p, 3, (1, 3), (1, 2), scale=0.015)
    q = c.quantize(t, scale=0.01)
    v = c.conv(c.concat(skip, q), 4, (1, 3), scale=0.02, zp=0)
    c.mean(v)
    return c


def _chain_one_row() -> HandChain:
    """One row, int8: a 1x3 CONV of stride 2 along the columns, RELU, a 1x3 average
    pool, the ADD of two stages."""
    c = HandChain((1, 21, 3), scale=0.05, zp=2, seed=22)
    a = c.conv(-1, 4, (1, 3), stride=(1, 2), scale=0.3, zp=-3)
    r = c.relu(a, scale=0.2, zp=-50)
    p = c.pool(r, (1, 3), 1)
    c.add(a, p, scale=0.4, zp=1)
    return c


def _chain_one_row_consts() -> HandChain:
    """One row, int8, constant operands: whole [1, 1, W, C] (in place), per column
    [W, 1] (per row along columns), per channel first (SUB c - x); MEAN at the end."""
    c = HandChain((1, 9, 4), scale=0.03, zp=-5, seed=23)
    rng = np.random.default_rng(23)
    a = c.add(-1, Const(_values(rng, (1, 1, 9, 4)), (0.05, -1)), scale=0.06, zp=4)
    b = c.mul(a, Const(_values(rng, (9, 1)), (0.01, 0)), scale=0.03, zp=-9)
    d = c.sub(Const(_values(rng, (1, 1, 1, 4)), (0.04, 1)), b, scale=0.09, zp=7)
    c.reduce_mean(d, keep_dims=True, scale=0.15, zp=-6)
    return c


# chains of one-row tensors, written along their columns too (word 47)
ONE_ROW = {
    "int16_one_row": _int16_chain_one_row,
    "one_row": _chain_one_row,
    "one_row_consts": _chain_one_row_consts,
}


def _chain_paths() -> HandChain:
    """Word 38: arm_convolve_s8 itself (path 1) for a 3x3 and a strided 1x1
    convolution, the pointwise loop over a folded bias (path 2) with odd pixels and
    channels, with and without a bias, reading the input and rings."""
    c = HandChain((9, 7, 6), zp=11)
    a = c.conv(-1, 7, 3, activation="RELU", path=1)
    b = c.conv(a, 5, 1, path=2, zp=-9)
    d = c.conv(b, 0, 3, depthwise=True)
    e = c.conv(d, 9, 1, bias=False, path=2)
    f = c.conv(e, 6, 1, stride=2, path=1)
    c.conv(f, 3, 1, path=2)
    return c


def _chain_pointwise_input() -> HandChain:
    """A pointwise path reading the operator's input, and one writing its output."""
    c = HandChain((6, 5, 4), zp=-30)
    a = c.conv(-1, 6, 1, path=2, activation="RELU6")
    c.conv(a, 5, 1, path=2)
    return c


HAND_CHAINS = {
    "paths": _chain_paths,
    "pointwise_input": _chain_pointwise_input,
    "block": _chain_block,
    "strided_tall": _chain_strided_tall,
    "input_add": _chain_input_add,
    "single": _chain_single,
    "mean_middle": _chain_mean_middle,
    "elementwise": _chain_elementwise,
    "mul_end": _chain_mul_end,
    "sub_end": _chain_sub_end,
    "relu_end": _chain_relu_end,
    "leaky_end": _chain_leaky_end,
    "batch_norm": _chain_batch_norm,
    "broadcasts": _chain_broadcasts,
    "min_max": _chain_min_max,
    "dilated_rows": _chain_dilated_rows,
    "const_concat": _chain_const_concat,
    "int16_convs": _int16_chain_convs,
    "int16_block": _int16_chain_block,
    "int16_elementwise": _int16_chain_elementwise,
    "int16_unet": _int16_chain_unet,
    "int16_transpose": _int16_chain_transpose,
    "int16_transpose_no_bias": _int16_chain_transpose_no_bias,
    "requantized_concat": _chain_requantized_concat,
    "int16_requantized_concat": _int16_chain_requantized_concat,
    **ONE_ROW,
}


def _outputs(runner: NativeRunner, model: bytes, inputs) -> list[bytes]:
    result = runner.run(model, GENEROUS_ARENA, inputs, 1)
    assert result.ok, result.error
    return [trial[0].tobytes() for trial in result.outputs]


# Every build: the CMSIS-NN ones run convolutions by CMSIS-NN on windows of rows.
VARIANTS = ["host-reference", "arm32-reference", "host-cmsis_nn", "arm32-cmsis_nn", "m55-cmsis_nn"]
# each CMSIS-NN build's kernel set (tflm.kernel_sets)
CMSIS_KERNELS = {
    "host-cmsis_nn": "cmsis_nn",
    "arm32-cmsis_nn": "cmsis_nn+dsp",
    "m55-cmsis_nn": "cmsis_nn+mve",
}
# rings sized by the row order, one row per step; whole tensors; steps of 3 rows
LAYOUTS = {"rings": (False, 0), "whole": (True, 0), "steps3": (False, 3)}
# originals TFLM's CMSIS-NN builds cannot run: its TRANSPOSE_CONV's Prepare reads the
# type of an int16x8 bias the operator does not have (cmsis_nn/transpose_conv.cc)
CMSIS_NN_CRASHES = {"int16_transpose_no_bias": "an int16x8 TRANSPOSE_CONV without a bias"}
# built networks TFLM's CMSIS-NN kernels refuse (their FULLY_CONNECTED: int16 inputs
# with weights of a scale per channel)
CMSIS_NN_REFUSES = {"int16x8_network": "int16 FULLY_CONNECTED weights quantised per channel"}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", list(HAND_CHAINS))
@pytest.mark.parametrize("variant", VARIANTS)
def test_hand_chain_is_bit_identical(variant: str, name: str, layout: str) -> None:
    runner = _runner(variant)
    if variant in CMSIS_KERNELS and name in CMSIS_NN_CRASHES:
        pytest.skip(f"TFLM's CMSIS-NN kernels crash on {CMSIS_NN_CRASHES[name]}")
    chain = HAND_CHAINS[name]()
    original = chain.original()
    full_rings, steps = LAYOUTS[layout]
    cascaded = chain.cascaded(full_rings=full_rings, steps=steps)
    inputs = random_inputs(read_model_bytes(original), 3, seed=7)
    assert _outputs(runner, cascaded, inputs) == _outputs(runner, original, inputs)


@pytest.mark.parametrize("steps", [0, 3])
@pytest.mark.parametrize("name", list(ONE_ROW))
@pytest.mark.parametrize("variant", VARIANTS)
def test_one_row_chains_run_along_columns(variant: str, name: str, steps: int) -> None:
    """A chain of one-row tensors written along its columns (rows of one column, the
    same bytes; rings of a few columns) gives the original's outputs; in CMSIS-NN
    builds an int8 convolution along columns is refused, in one line (CMSIS-NN's s8
    wrappers choose their path from the shapes)."""
    runner = _runner(variant)
    chain = ONE_ROW[name]()
    original = chain.original()
    cascaded = chain.cascaded(steps=steps, columns=True)
    convolves = any(st.kind in ("CONV_2D", "DEPTHWISE_CONV_2D") for st in chain.stages)
    if variant in CMSIS_KERNELS and chain.dtype is DType.INT8 and convolves:
        result = runner.run_native(cascaded, GENEROUS_ARENA, [], 1)
        assert result.report.get("status") == "allocate", result.report
        assert "along columns" in result.result.log
        return
    inputs = random_inputs(read_model_bytes(original), 3, seed=7)
    assert _outputs(runner, cascaded, inputs) == _outputs(runner, original, inputs)


def _wrapping_pointwise() -> tuple[HandChain, list[int]]:
    """A pointwise stage of 2-row steps reading a ring of 3 rows (a depthwise
    convolution reads it too): some of its windows wrap around the ring's end."""
    c = HandChain((10, 3, 4), zp=7)
    a = c.conv(-1, 6, 3)
    d = c.conv(a, 0, 3, depthwise=True)
    b = c.conv(a, 6, 1, path=2)
    c.add(d, b)
    return c, [1, 1, 2, 1]


@pytest.mark.parametrize("variant", VARIANTS)
def test_pointwise_path_reads_a_wrapping_window_in_two_pieces(variant: str) -> None:
    runner = _runner(variant)
    chain, blocks = _wrapping_pointwise()
    rings = _ring_rows(chain.stages, blocks)
    assert rings[0] % 2 == 1, rings  # so steps of 2 rows at even rows wrap
    original = chain.original()
    inputs = random_inputs(read_model_bytes(original), 3, seed=3)
    cascaded = chain.cascaded(steps=blocks)
    assert _outputs(runner, cascaded, inputs) == _outputs(runner, original, inputs)


# Broken chains: Prepare refuses each with one line (the runner reports "allocate").
BROKEN = {
    "version": {("header", 0): 1},
    "record_words": {("header", 3): 41},
    "no_stages": {("header", 1): 0},
    "kind": {(1, 0): 16},  # the first code after the kinds
    "later_source": {(1, 1): 2},
    "ring_of_a_middle_stage": {(1, 25): 0},
    "ring_of_the_last_stage": {(8, 25): 1},
    "ring_outside_scratch": {(2, 26): 1 << 20},
    "unaligned_ring": {(2, 26): 2},
    "acc_outside_scratch": {(8, 27): 1 << 20},
    "input_shape": {(0, 3): 12},
    "source_shape": {(2, 5): 7},
    "out_channels": {(2, 8): 9},
    "filter_index": {(0, 18): 99},
    "bias_is_the_filter": {(0, 19): 1},
    "quant_is_the_bias": {(0, 20): 2},
    "clamp": {(0, 23): 5, (0, 24): 4},
    "reserved": {(3, 39): 1},
    "conv_path_of_a_pool": {(5, 38): 1},
    "conv_path_unknown": {(0, 38): 3},
    "pointwise_path_of_a_3x3": {(0, 38): 2},
    "pointwise_path_of_a_depthwise": {(1, 38): 2},
    "reserved_last": {(3, 47): 1},
    "constant_operand": {(3, 40): 1},
    "element_type": {(3, 45): 1},
    "add_second_source": {(3, 2): 5},
    "pool_window_in_padding": {(5, 15): 3},
    "pad_shape": {(6, 6): 2},
    "mean_output": {(8, 6): 2},
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_prepare_refuses_a_broken_chain(case: str) -> None:
    runner = _runner("host-reference")
    model = _chain_block().cascaded(words=BROKEN[case])
    result = runner.run_native(model, GENEROUS_ARENA, [], 1)
    assert result.report.get("status") == "allocate", result.report
    assert "ARENAPLAN_CASCADE" in result.result.log


# Element-wise stages' bad parameters, in _chain_elementwise (stage 1 RELU, 2
# LEAKY_RELU, 3 MUL, 5 SUB, 6 RELU6): each refused in Prepare with one line.
BROKEN_ELEMENTWISE = {
    "relu_negative_multiplier": {(1, 34): -5},
    "relu_shift": {(1, 35): 31},
    "relu_shape": {(1, 8): 5},
    "leaky_alpha_multiplier": {(2, 32): -(1 << 31)},
    "leaky_alpha_shift": {(2, 33): -32},
    "leaky_identity_multiplier": {(2, 34): -1},
    "mul_input2_offset": {(3, 28): 200},
    "mul_shift": {(3, 35): 31},
    "mul_no_second_source": {(3, 2): 3},
    "sub_left_shift": {(5, 29): 31},
    "sub_shift_above_zero": {(5, 31): 1},
    "sub_negative_multiplier": {(5, 34): -7},
    "relu6_second_source": {(6, 2): 0},
    "relu6_clamp": {(6, 23): 100, (6, 24): 99},
}


@pytest.mark.parametrize("case", list(BROKEN_ELEMENTWISE))
def test_prepare_refuses_bad_elementwise_parameters(case: str) -> None:
    runner = _runner("host-reference")
    model = _chain_elementwise().cascaded(words=BROKEN_ELEMENTWISE[case])
    result = runner.run_native(model, GENEROUS_ARENA, [], 1)
    assert result.report.get("status") == "allocate", result.report
    lines = [ln for ln in result.result.log.splitlines() if ln.startswith("ARENAPLAN_CASCADE:")]
    assert len(lines) == 1, result.result.log


# Constant operands, MINIMUM, MAXIMUM and MEAN, in _chain_broadcasts (stage 0 CONV_2D,
# 1 ADD of a whole constant first (in place), 2 MUL per row, 3 SUB per column (both
# spread), 4 ADD [1, 1, W, C] (in place), 5 SUB per row and channel first, 6 MAXIMUM,
# 7 MINIMUM, 8 MUL by scalars, 9 MEAN): each bad word refused with one line.
BROKEN_CONSTANTS = {
    "const_index_out_of_range": {(2, 40): 99},
    "const_is_the_filter": {(2, 40): 1},  # int8, but quantised per channel
    "const_is_int32": {(2, 40): 3},  # the quantisation data
    "const_negative_stride": {(3, 42): -1},
    "const_stride_past_its_end": {(4, 41): 1},  # 20 elements, the last read at 24
    "const_first_not_a_flag": {(5, 44): 2},
    "const_beside_a_second_source": {(2, 2): 0},
    "const_zero_point_not_its_offset": {(2, 28): 5},
    "const_row_outside_scratch": {(3, 27): 1 << 20},
    "const_row_missing": {(3, 27): -1},
    "const_in_place_with_a_row": {(1, 27): 0},
    "strides_without_a_constant": {(0, 41): 1},
    "first_without_a_constant": {(0, 44): 1},
    "const_of_a_convolution": {(0, 40): 4},
    "max_output_shape": {(6, 8): 3},
    "min_second_source_later": dict.fromkeys([(7, 41), (7, 42), (7, 43), (7, 44)], 0)
    | {(7, 2): 8, (7, 40): -1, (7, 27): -1},
    "mean_shift": {(9, 35): 31},
    "mean_negative_multiplier": {(9, 34): -3},
    "mean_output_rows": {(9, 6): 2},
    "mean_steps": {(9, 37): 2},
    "mean_sums_outside_scratch": {(9, 27): 1 << 20},
}
# in _chain_const_concat: stage 0 MUL by constant input 2, 1 CONCATENATION of stage 0
# and input 1 (an int8 activation quantised as the constant: only its being one differs)
BROKEN_CONST_CONCAT = {
    "const_is_an_activation": {(0, 40): 1},
    "const_of_a_concatenation": {(1, 40): 2, (1, 2): -1},
}


@pytest.mark.parametrize(
    "case", [*BROKEN_CONSTANTS, *(f"concat/{name}" for name in BROKEN_CONST_CONCAT)]
)
def test_prepare_refuses_bad_constant_operands(case: str) -> None:
    runner = _runner("host-reference")
    if case.startswith("concat/"):
        model = _chain_const_concat().cascaded(words=BROKEN_CONST_CONCAT[case[7:]])
    else:
        model = _chain_broadcasts().cascaded(words=BROKEN_CONSTANTS[case])
    result = runner.run_native(model, GENEROUS_ARENA, [], 1)
    assert result.report.get("status") == "allocate", result.report
    lines = [ln for ln in result.result.log.splitlines() if ln.startswith("ARENAPLAN_CASCADE:")]
    assert len(lines) == 1, result.result.log


# int16 stages' bad words, each refused in Prepare with one line: in _int16_chain_convs
# (stage 0 CONV int64 bias, 1 CONV int32 bias, 2 DW, 3 CONV no bias summing in int32),
# _int16_chain_block (3 ADD, 6 AVERAGE_POOL_2D) and _int16_chain_unet (0 TRANSPOSE_CONV,
# 1 CONCATENATION of stage 0 and input 1, 4 CONCATENATION of input 2 and stage 3).
BROKEN_INT16 = {
    "element_type_unknown": ("convs", {(0, 45): 2}),
    "element_type_of_its_source": ("convs", {(2, 45): 0, (2, 23): -128, (2, 24): 127}),
    "acc32_on_a_depthwise": ("convs", {(2, 46): 1}),
    "acc32_with_an_int64_bias": ("convs", {(0, 46): 1}),
    "int64_sum_of_an_int32_bias": ("convs", {(1, 46): 0}),
    "acc32_above_1": ("convs", {(3, 46): 2}),
    "input_offset": ("convs", {(1, 21): 3}),
    "output_offset": ("convs", {(2, 22): -1}),
    "clamp_beyond_int16": ("convs", {(3, 24): 40000}),
    "reserved_47": ("convs", {(3, 47): 1}),
    "add_left_shift_above_15": ("block", {(3, 29): 16}),
    "add_input2_offset": ("block", {(3, 28): 1}),
    "pool_of_more_than_65536": ("block", {(6, 9): 300, (6, 10): 300}),
    "transpose_conv_dilation": ("unet", {(0, 13): 2}),
    "transpose_conv_as_int8": ("unet", {(0, 45): 0, (0, 23): -128, (0, 24): 127}),
    "concatenation_channels": ("unet", {(1, 8): 4}),
    "source_input_missing": ("unet", {(1, 2): -40}),
    "source_input_shape": ("unet", {(1, 2): -3}),
    "second_source_channels": ("unet", {(4, 8): 4}),
    "columns_above_1": ("convs", {(0, 47): 2}),
    "columns_of_one_stage": ("convs", {(2, 47): 1}),
}
INT16_CHAINS = {"convs": _int16_chain_convs, "block": _int16_chain_block, "unet": _int16_chain_unet}


@pytest.mark.parametrize("case", list(BROKEN_INT16))
def test_prepare_refuses_bad_int16_words(case: str) -> None:
    runner = _runner("host-reference")
    chain, words = BROKEN_INT16[case]
    model = INT16_CHAINS[chain]().cascaded(words=words)
    result = runner.run_native(model, GENEROUS_ARENA, [], 1)
    assert result.report.get("status") == "allocate", result.report
    lines = [ln for ln in result.result.log.splitlines() if ln.startswith("ARENAPLAN_CASCADE:")]
    assert len(lines) == 1, result.result.log


def test_a_mean_output_of_another_shape_is_refused() -> None:
    """MEAN's output tensor is [1, C] or [1, 1, 1, C]; [1, C, 1] is refused."""
    runner = _runner("host-reference")
    chain = _chain_batch_norm()
    chain.stages[-1].tensor_shape = (1, chain.stages[-1].shape[2], 1)
    result = runner.run_native(chain.cascaded(), GENEROUS_ARENA, [], 1)
    assert result.report.get("status") == "allocate", result.report
    assert "output tensor" in result.result.log


@pytest.mark.parametrize("name", list(HAND_CHAINS))
def test_the_pass_writes_the_hand_chains_words(name: str) -> None:
    """The pass, reading each hand chain's plain operators, writes the words written
    here by hand from TFLM's Prepare (the constants' input indices, rings and steps
    aside): two restatements of TFLM that share no code agree."""
    chain = HAND_CHAINS[name]()
    model = read_model_bytes(chain.original())
    sg = model.subgraphs[0]
    written = chain_of(sg, list(range(len(sg.operators))), model.buffers).records
    chain_filled = {18, 19, 20, 25, 26, 27, 37, 38}  # 37, 38: the steps, chosen
    stages = [_along_columns(st) for st in chain.stages] if name in ONE_ROW else chain.stages
    for s, (st, words) in enumerate(zip(stages, written, strict=True)):
        mine = [v for k, v in sorted(st.words.items()) if k not in chain_filled]
        theirs = [v for k, v in enumerate(words) if k not in chain_filled]
        assert mine == theirs, f"stage {s} {st.kind}"


def _wide_int16_chain() -> HandChain:
    """An int16 CONV_2D of 3x3x64 = 576 columns (above CMSIS-NN's 512) with an int64
    bias and rows of 5 pixels, then a 1x1 CONV."""
    c = HandChain((7, 5, 64), scale=0.0002, zp=0, seed=16, dtype=DType.INT16)
    a = c.conv(-1, 6, 3, scale=0.01, zp=0)
    c.conv(a, 4, 1, scale=0.004, zp=0)
    return c


@pytest.mark.parametrize("variant", list(CMSIS_KERNELS))
def test_cmsis_nn_sees_the_pixels_of_wide_int16_convolutions_in_pairs(variant: str) -> None:
    """CMSIS-NN's int16 CONV_2D with an int64 bias sums a lone pixel otherwise than a
    pair above 512 columns (plain C and DSP): steps of an odd number of pixels are
    refused there, in one line; steps of two rows (10 pixels) give the original's
    bytes in every CMSIS-NN build, and with MVE so do steps of one row."""
    runner = _runner(variant)
    chain = _wide_int16_chain()
    original = chain.original()
    inputs = random_inputs(read_model_bytes(original), 3, seed=7)
    want = _outputs(runner, original, inputs)
    assert _outputs(runner, chain.cascaded(steps=2), inputs) == want
    one_row = chain.cascaded()
    if variant == "m55-cmsis_nn":
        assert _outputs(runner, one_row, inputs) == want
        return
    result = runner.run_native(one_row, GENEROUS_ARENA, [], 1)
    assert result.report.get("status") == "allocate", result.report
    assert "pixels" in result.result.log


@pytest.mark.parametrize(
    "options",
    [
        b"",
        flexbuffers.Dumps({"version": 2, "chain": b"\0" * 16}),
        flexbuffers.Dumps({"version": 2}),
        flexbuffers.Dumps({"version": 2, "chain": b"\2\0\0\0"}),
        flexbuffers.Dumps([1, 2]),
    ],
    ids=["none", "version", "no_chain", "short_chain", "not_a_map"],
)
def test_prepare_refuses_bad_options(options: bytes) -> None:
    runner = _runner("host-reference")
    model = _chain_block().cascaded(options=options)
    result = runner.run_native(model, GENEROUS_ARENA, [], 1)
    assert result.report.get("status") == "allocate", result.report
    assert "ARENAPLAN_CASCADE" in result.result.log


def test_a_ring_too_small_fails_in_eval() -> None:
    """A ring one row short: the kernel notices the overwritten row and fails."""
    runner = _runner("host-reference")
    chain = _chain_block()
    rings = _ring_rows(chain.stages)
    model = chain.cascaded(words={(0, 25): rings[0] - 1})
    inputs = random_inputs(read_model_bytes(model), 1, seed=0)
    result = runner.run(model, GENEROUS_ARENA, inputs, 1)
    assert not result.ok
    assert "ring" in result.log


# --- Networks rewritten by the cascade pass -------------------------------------------

BUILT = {
    "mobilenet_v1": lambda: mobilenet_v1(0.25, 96, 1, 2),
    "mobilenet_v2": lambda: mobilenet_v2(0.35, 64),
    "ds_cnn_M": lambda: ds_cnn("M"),
    "elementwise_net": elementwise_net,  # standalone RELU, RELU6, LEAKY_RELU, MUL, SUB
    # as Keras exports: MUL, ADD by constants; MINIMUM, MAXIMUM, SUB (constant first), MEAN
    "bn_classifier": bn_classifier,
    "clamp_net": clamp_net,
    "int16x8_network": int16x8_network,  # CONV, LEAKY_RELU, PAD, DW, ADD, MUL, TRANSPOSE_CONV
    # TRANSPOSE_CONV, QUANTIZE, CONCATENATION with the skips; as TFLM's CMSIS-NN kernels
    # run it (TRANSPOSE_CONVs with a bias, FULLY_CONNECTED weights with one scale)
    "unet_int16x8": lambda: unet_denoiser(transpose_bias=True, dense_per_channel=False),
    # one row (a 1-D denoiser's layers): its chains run along the columns; its
    # TRANSPOSE_CONV shapes computed by SHAPE, STRIDED_SLICE, PACK (folded)
    "unet_1d_int16x8": lambda: unet_denoiser(
        frames=1,
        bins=64,
        channels=4,
        transpose_bias=True,
        dense_per_channel=False,
        shape_ops=True,
    ),
}
REAL = [
    "mlcommons-tiny__vww_96_int8",
    "arm-ml-examples__ds_cnn_s_quantized",
    "mlcommons-tiny__kws_ref_model",
    "mlcommons-tiny__pretrainedResnet_quant",
    "mlcommons-tiny__str_ww_ref_model",
    "arm-ml-examples__cnn_s_quantized",
    "tflite-micro__test_conv_model",
]


def _cmsis_nn_runs(variant: str, name: str) -> None:
    """Skip, saying why, a built network TFLM's CMSIS-NN kernels refuse."""
    if variant in CMSIS_KERNELS and name in CMSIS_NN_REFUSES:
        pytest.skip(f"TFLM's CMSIS-NN kernels refuse {CMSIS_NN_REFUSES[name]}")


def _model(name: str) -> bytes:
    if name in BUILT:
        return BUILT[name]()
    path = MODELS_DIR / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(SHARED_ABSENT)
    return path.read_bytes()


def _cascaded(data: bytes, kernels: str = "reference") -> bytes:
    model, _ = run_passes(
        read_model_bytes(data), [make_pass("cascade", {"kernels": kernel_set(kernels)})]
    )
    ops = [op.opcode for op in model.subgraphs[0].operators]
    assert CUSTOM in ops, "the pass made no cascade"
    return write_model(model)


@pytest.mark.parametrize(("variant", "name"), [(v, n) for v in VARIANTS for n in [*BUILT, *REAL]])
def test_cascade_pass_model_is_bit_identical(variant: str, name: str) -> None:
    """The pass's output for the build's kernels (CMSIS-NN builds: steps of several
    rows for CONV_2D) gives the original model's outputs in that build."""
    runner = _runner(variant)
    _cmsis_nn_runs(variant, name)
    data = _model(name)
    cascaded = _cascaded(data, CMSIS_KERNELS.get(variant, "reference"))
    report = compare_models(data, cascaded, 2, 0, runner=runner, figures=False)
    assert report.refused is None and report.failed is None, report.refused or report.failed
    assert report.identical, report.mismatch


@pytest.mark.parametrize("variant", VARIANTS)
def test_elementwise_operators_run_inside_a_cascade(variant: str) -> None:
    """The pass takes the standalone element-wise operators into its cascades, and
    the cascaded model gives the original's outputs (CMSIS-NN builds: TFLM's
    CMSIS-NN MUL and ADD in the original, the kernel's reference arithmetic in the
    cascade)."""
    runner = _runner(variant)
    data = elementwise_net()
    cascaded = _cascaded(data, CMSIS_KERNELS.get(variant, "reference"))
    left = {op.opcode for op in read_model_bytes(cascaded).subgraphs[0].operators}
    assert not left & set(ELEMENTWISE_OPS), left
    report = compare_models(data, cascaded, 3, 0, runner=runner, figures=False)
    assert report.refused is None and report.failed is None, report.refused or report.failed
    assert report.identical, report.mismatch


@pytest.mark.parametrize("name", list(BUILT))
@pytest.mark.parametrize("variant", list(CMSIS_KERNELS))
def test_cascade_plan_is_proven_in_the_cmsis_nn_build(variant: str, name: str) -> None:
    """The plan of the pass's output for a CMSIS-NN kernel set, proven in its build:
    the original's outputs, and TFLM's measured head the plan's (the kernel's second
    request, its work buffer, predicted: tflm.cmsis_nn.cascade)."""
    _runner(variant)
    _cmsis_nn_runs(variant, name)
    kernels = CMSIS_KERNELS[variant]
    data = _model(name)
    cascaded = _cascaded(data, kernels)
    pointer = NATIVE_PROFILES["host" if variant.startswith("host") else "arm32"].pointer
    model = read_model_bytes(cascaded)
    requests = scratch_requests(model, tensor_bytes(model), pointer, kernels)
    ops = {op.index for op in model.subgraphs[0].operators if op.opcode == CUSTOM}
    assert [r for r in requests if r.op in ops], "no request of the cascade predicted"
    plan = plan_model(model, PlanOptions(kernels=kernel_set(kernels), pointer_size=pointer))
    planned = with_offline_plan(cascaded, plan.tensor_offsets)
    proof = prove(data, planned, plan.arena, kernels, own=True)
    assert proof.proven, proof.reason
    assert variant in proof.runtime


# Steps and word 38's paths the pass may write, forced on every stage that can take
# them: (rows per step, 0 for all; path of every pointwise CONV_2D)
FORCED = {"rows1_path1": (1, 1), "rows2_path2": (2, 2), "rows3_path0": (3, 0), "all_path1": (0, 1)}


def _forced(data: bytes, kernels: str, rows: int, path: int) -> bytes:
    """Every chain of the pass's kind with every windowed stage ``rows`` rows a step
    (0: all) and every pointwise CONV_2D by ``path``."""
    model = read_model_bytes(data)
    sg = model.subgraphs[0]
    chains = []
    for ops in longest_chains(sg, model.buffers):
        chooser = Chooser(sg, ops, model.buffers, kernel_set(kernels))
        blocks = [
            b[-1] if rows == 0 else min(rows, b[-1]) for b in map(chooser.blocks, range(len(ops)))
        ]
        paths = [path if path in chooser.paths[s] and is_pointwise(chooser.records[s]) else 0
                 for s in range(len(ops))]  # fmt: skip
        option = chooser.option(Steps(tuple(blocks), tuple(paths)))
        assert option is not None
        chains.append(option.chain)
    return write_model(apply_chains(model, chains)[0])


@pytest.mark.parametrize("case", list(FORCED))
@pytest.mark.parametrize("name", ["ds_cnn_M", "mobilenet_v2"])
@pytest.mark.parametrize("variant", [*CMSIS_KERNELS, "host-reference"])
def test_every_step_and_path_is_bit_identical(variant: str, name: str, case: str) -> None:
    """CMSIS-NN's wrapper, its im2col convolution and the kernel's pointwise loop over a
    folded bias, at steps of one, two, three rows and whole tensors: the original's
    outputs in each CMSIS-NN build (and the reference arithmetic's, the folded bias
    included, in host-reference)."""
    runner = _runner(variant)
    data = _model(name)
    cascaded = _forced(data, CMSIS_KERNELS.get(variant, "cmsis_nn"), *FORCED[case])
    report = compare_models(data, cascaded, 2, 0, runner=runner, figures=False)
    assert report.refused is None and report.failed is None, report.refused or report.failed
    assert report.identical, report.mismatch
