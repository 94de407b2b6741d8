"""What each TFLM operator adds to the tail: one ``OpRule`` per operator kind.

An operator allocates persistent memory at three moments, in this order over the
whole model (all operators' options, then all Inits, then all Prepares):

1. ``options``: the struct its builtin parser allocates
   (``flatbuffer_conversions.cc Parse*``), at that struct's alignment;
2. ``init``: the OpData its kernel's Init allocates (16-aligned), then
   ``init_extra`` (more Init allocations, 16-aligned each);
3. ``prepare``: what its Prepare allocates (16-aligned each): per-channel
   multipliers and shifts, lookup tables, writable output dims, state buffers.

Struct sizes per build profile are in ``tail_structs``. Every builtin the op
resolver of the TFLM source registers (``micro_mutable_op_resolver.h``) has a rule,
as have the Signal library's custom kernels and the two other custom kernels
TFLM ships (CIRCULAR_BUFFER, TFLite_Detection_PostProcess). Operators without a
rule are reported as unmodelled by ``persistent.tail_estimate``; a rule raises
``Unmodelled`` for a case it cannot predict. These are the reference kernels; the
CMSIS-NN kernels' rules are in ``cmsis_nn`` (other optimised kernels, such as
Xtensa's or ESP-NN's, are not modelled).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from arenaplan.ir.custom import custom_options, int_option
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Operator, Subgraph, Tensor


class Unmodelled(Exception):
    """A rule cannot predict this operator's allocations (the message says why)."""


@dataclass(frozen=True, slots=True)
class OpView:
    """What a rule reads: the operator in its subgraph, the tensors' byte sizes,
    the profile's kernel-state sizes and pointer width, and ``variables``, the
    resource variables given a buffer so far (shared over one simulation)."""

    sg: Subgraph
    op: Operator
    sizes: tuple[int, ...]  # bytes of each tensor of ``sg`` after Prepare
    state: Mapping[str, int]  # kernel state struct -> bytes
    pointer: int  # bytes
    variables: set[str] = field(default_factory=set)

    def input(self, k: int) -> Tensor | None:
        """The k-th input (None if absent or omitted)."""
        return self.sg.operand(self.op, k)

    def output(self, k: int = 0) -> Tensor | None:
        return self.sg.operand(self.op, k, output=True)

    def dtype(self, k: int) -> DType | None:
        t = self.input(k)
        return t.dtype if t is not None else None

    def custom(self) -> dict:
        return custom_options(self.op)

    def int_option(self, key: str, default: int = 0) -> int:
        """An integer custom option (a value of another kind is a corrupt model)."""
        return int_option(self.op, key, default)


Allocations = Callable[[OpView], list[int]]  # bytes of each 16-aligned allocation


@dataclass(frozen=True, slots=True)
class OpRule:
    """``options``: name in ``tail_structs.OPTIONS``; ``init``: name in
    ``tail_structs.STATE``; ``init_extra``/``prepare``: further allocations."""

    options: str | None = None
    init: str | None = None
    init_extra: Allocations | None = None
    prepare: Allocations | None = None


def _dims(t: Tensor | None) -> int:
    """Bytes of a TfLiteIntArray holding ``t``'s dims: 4 + 4 per dim."""
    return 4 + 4 * (len(t.shape) if t is not None else 0)


def _channels(axis: int) -> Allocations:
    """ConvPrepare / DepthwiseConvPrepare / TransposeConvPrepare: per-channel output
    multiplier and shift, ``4 * filter.dims[axis]`` each, for every dtype."""

    def rule(v: OpView) -> list[int]:
        f = v.input(1)
        if f is None or len(f.shape) <= axis:
            raise Unmodelled("no 4-d filter")
        return [4 * f.shape[axis]] * 2

    return rule


def _fully_connected(v: OpView) -> list[int]:
    """CalculateOpDataFullyConnected: per-channel arrays when the input is not float
    and the filter has more than one scale."""
    f = v.input(1)
    q = f.quantization if f is not None else None
    if v.dtype(0) is DType.FLOAT32 or q is None or len(q.scales) <= 1:
        return []
    return [4 * len(q.scales)] * 2


def _softmax(v: OpView) -> list[int]:
    """InitializeLutForInt16: two 513-entry int16 tables for an int16 input."""
    return [2 * 513] * 2 if v.dtype(0) is DType.INT16 else []


def _writable_output_dims(v: OpView) -> list[int]:
    """CreateWritableTensorDimsWithCopy on the output (GATHER, GATHER_ND,
    SPACE_TO_DEPTH, DEPTH_TO_SPACE, L2_POOL_2D)."""
    return [_dims(v.output())]


def _reshape(v: OpView) -> list[int]:
    """ReshapeOutput: writable dims only when the stored output shape has a -1."""
    out = v.output()
    return [_dims(out)] if out is not None and -1 in out.shape else []


def _embedding_lookup(v: OpView) -> list[int]:
    """EmbeddingLookUpPrepare: writable output dims, then its OpData."""
    return [_dims(v.output()), v.state["embedding_lookup:OpData"]]


def _if_int8(state: str) -> Allocations:
    """An OpData that Prepare allocates only on the int8 path (ADD_N, CUMSUM,
    LOG_SOFTMAX)."""

    def rule(v: OpView) -> list[int]:
        out = v.output()
        return [v.state[state]] if out is not None and out.dtype is DType.INT8 else []

    return rule


def _batch_matmul(v: OpView) -> list[int]:
    """BatchMatMulPrepare: quantization data (int8/int16), then its copies."""
    lhs = v.input(0)
    quantized = lhs is not None and lhs.dtype in (DType.INT8, DType.INT16)
    quant = [v.state["QuantizationOpDataBatchMatmul"]] if quantized else []
    return quant + batch_matmul_copies(v)


def batch_matmul_copies(v: OpView) -> list[int]:
    """What a BATCH_MATMUL Prepare allocates besides quantization data (the reference
    and the CMSIS-NN kernels alike): a transposed copy of the LHS when adj_x and of
    the RHS unless adj_y (eval tensor, dims, data), then writable output dims."""
    lhs, rhs = v.input(0), v.input(1)
    if lhs is None or rhs is None:
        raise Unmodelled("missing operand")
    out: list[int] = []
    for t, copied in (
        (lhs, v.op.options.get("adj_x", False)),
        (rhs, not v.op.options.get("adj_y", False)),
    ):
        if copied:
            out += [v.state["TfLiteEvalTensor"], _dims(t), v.sizes[t.index]]
    return [*out, _dims(v.output())]


def _assign_variable(v: OpView) -> list[int]:
    """Prepare: MicroResourceVariables::Allocate gives the variable a buffer of the
    value's bytes, once per variable, when the resource id comes from a VAR_HANDLE
    prepared earlier in the same subgraph (else TFLM allocates nothing here)."""
    rid, value = v.input(0), v.input(1)
    if rid is None or value is None:
        return []
    for op in v.sg.operators[: v.op.index]:
        if op.opcode == "VAR_HANDLE" and rid.index in op.outputs:
            name = str(op.options.get("shared_name", ""))
            if name in v.variables:
                return []
            v.variables.add(name)
            return [v.sizes[value.index]]
    return []


# ---- Signal library (signal/micro/kernels) ---------------------------------------


def _kiss_fftr_bytes(n: int, cpx: int, pointer: int) -> int:
    """kiss_fftr_alloc(n): the real-FFT state, a complex FFT of n/2 inside.

    kiss_fftr_state (3 pointers) + kiss_fft_state (nfft, inverse, 64 factor ints,
    one twiddle) + (n/2 - 1) more twiddles + 3/2 * n/2 complex values;
    ``cpx``: bytes of a complex sample (4 for int16, 8 for int32 and float)."""
    half = n // 2
    return 3 * pointer + (8 + 256 + cpx) + cpx * (half - 1) + cpx * (3 * half // 2)


def _fft_type(v: OpView) -> DType:
    """The kernel's sample type, from the custom option "T" (a TensorType code)."""
    code = v.custom().get("T")
    dtype = DType.from_code(code) if isinstance(code, int) else v.dtype(0)
    if dtype not in (DType.INT16, DType.INT32, DType.FLOAT32):
        raise Unmodelled(f"FFT type {dtype}")
    return dtype


def _rfft(v: OpView) -> list[int]:
    """RfftInit: the kissfft state for fft_length."""
    dtype = _fft_type(v)
    cpx = 4 if dtype is DType.INT16 else 8
    return [_kiss_fftr_bytes(v.int_option("fft_length", 0), cpx, v.pointer)]


def _irfft(v: OpView) -> list[int]:
    """IrfftInit: the inverse kissfft state; the float kernel puts an
    IrfftFloatState header in front."""
    dtype = _fft_type(v)
    cpx = 4 if dtype is DType.INT16 else 8
    state = _kiss_fftr_bytes(v.int_option("fft_length", 0), cpx, v.pointer)
    if dtype is DType.FLOAT32:
        state += v.state["IrfftFloatState"]
    return [state]


def _filter_bank(v: OpView) -> list[int]:
    """FilterBankInit: a uint64 work area of num_channels + 1 entries."""
    return [8 * (v.int_option("num_channels", 0) + 1)]


def _spectral_subtraction(v: OpView) -> list[int]:
    """FilterBankSpectralSubtractionInit: a uint32 noise estimate per channel."""
    return [4 * v.int_option("num_channels", 0)]


def _circular_state(v: OpView, capacity: int) -> int:
    """CircularBufferGetNeededMemory: header + 2 * capacity int16 samples."""
    return v.state["CircularBuffer"] + 2 * 2 * capacity


def _outer_and_inner(t: Tensor | None) -> tuple[int, int]:
    if t is None or not t.shape:
        raise Unmodelled("input without dims")
    inner = t.shape[-1]
    return t.elements // max(inner, 1), inner


def _stacker(v: OpView) -> list[int]:
    """StackerInit: one circular buffer of channels * (left + right + 1) samples."""
    size = v.int_option("num_channels") * (
        v.int_option("stacker_left_context") + v.int_option("stacker_right_context") + 1
    )
    return [_circular_state(v, size)]


def _delay(v: OpView) -> list[int]:
    """DelayPrepare: pointer arrays, then one circular buffer of frame + delay
    samples per outer element."""
    outer, inner = _outer_and_inner(v.input(0))
    capacity = inner + v.int_option("delay_length", 0)
    return [v.pointer * outer] * 2 + [_circular_state(v, capacity)] * outer


def _framer(v: OpView) -> list[int]:
    """FramerPrepare: pointer arrays, then per outer element a circular buffer of
    frame_size rounded up to a multiple of frame_step."""
    outer, _ = _outer_and_inner(v.input(0))
    size, step = v.int_option("frame_size", 0), v.int_option("frame_step", 1)
    capacity = -(-size // max(step, 1)) * step
    return [v.pointer * outer] * 2 + [_circular_state(v, capacity)] * outer


def _overlap_add(v: OpView) -> list[int]:
    """OverlapAddPrepare: a pointer array, then a frame of samples per outer element."""
    x = v.input(0)
    if x is None or len(x.shape) < 2:
        raise Unmodelled("input of rank < 2")
    frame, n_frames = x.shape[-1], x.shape[-2]
    outer = x.elements // max(frame * n_frames, 1)
    return [v.pointer * outer] + [frame * x.dtype.itemsize] * outer


_R = OpRule
_CONV = _channels(0)

# Builtin operators, by schema name. Comments name the TFLM functions.
BUILTIN: dict[str, OpRule] = {
    "CONV_2D": _R("TfLiteConvParams", "OpDataConv", prepare=_CONV),  # conv_common.cc
    "DEPTHWISE_CONV_2D": _R("TfLiteDepthwiseConvParams", "OpDataConv", prepare=_channels(3)),
    "TRANSPOSE_CONV": _R("TfLiteTransposeConvParams", "transpose_conv:OpData", prepare=_CONV),
    "FULLY_CONNECTED": _R(
        "TfLiteFullyConnectedParams", "OpDataFullyConnected", prepare=_fully_connected
    ),
    "BATCH_MATMUL": _R("TfLiteBatchMatMulParams", "OpDataBatchMatmul", prepare=_batch_matmul),
    "SVDF": _R("TfLiteSVDFParams", "OpDataSvdf"),  # state is a variable tensor
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _R("TfLiteUnidirectionalSequenceLSTMParams", "OpDataLSTM"),
    "SOFTMAX": _R("TfLiteSoftmaxParams", "SoftmaxParams", prepare=_softmax),
    "LOG_SOFTMAX": _R(prepare=_if_int8("LogSoftmaxOpData")),
    "AVERAGE_POOL_2D": _R("TfLitePoolParams", "OpDataPooling"),
    "MAX_POOL_2D": _R("TfLitePoolParams", "OpDataPooling"),
    "L2_POOL_2D": _R("TfLitePoolParams", prepare=_writable_output_dims),
    "ADD": _R("TfLiteAddParams", "OpDataAdd"),
    "SUB": _R("TfLiteSubParams", "OpDataSub"),
    "MUL": _R("TfLiteMulParams", "OpDataMul"),
    "DIV": _R("TfLiteDivParams", "OpDataDiv"),
    "ADD_N": _R(prepare=_if_int8("add_n:OpData")),
    "SQUARED_DIFFERENCE": _R(None, "squared_difference:OpData"),
    "CONCATENATION": _R("TfLiteConcatenationParams", "concatenation:OpData"),
    "STRIDED_SLICE": _R("TfLiteStridedSliceParams", "StridedSliceParams"),
    "MEAN": _R("TfLiteReducerParams", "OpDataReduce"),  # reduce.cc InitReduce
    "SUM": _R("TfLiteReducerParams", "OpDataReduce"),
    "REDUCE_MAX": _R("TfLiteReducerParams", "OpDataReduce"),
    "REDUCE_MIN": _R("TfLiteReducerParams", "OpDataReduce"),
    "REDUCE_ALL": _R("TfLiteReducerParams", "OpDataReduce"),
    "PAD": _R(None, "pad:OpData"),  # ParsePad allocates nothing
    "PADV2": _R(None, "pad:OpData"),
    "MIRROR_PAD": _R("TfLiteMirrorPaddingParams", "OpDataMirrorPad"),
    "RELU": _R(None, "ReluOpData"),  # activations.cc ReluInit
    "RELU6": _R(None, "Relu6OpData"),
    "LEAKY_RELU": _R("TfLiteLeakyReluParams", "LeakyReluOpData"),
    "HARD_SWISH": _R(None, "HardSwishParams"),
    "PRELU": _R(None, "PreluParams"),
    "ELU": _R(None, "elu:OpData"),
    "LOGISTIC": _R(None, "OpDataLogistic"),
    "TANH": _R(None, "tanh:OpData"),
    "QUANTIZE": _R(None, "OpDataQuantizeReference"),
    "DEQUANTIZE": _R(None, "DequantizeOpData"),
    "ABS": _R(None, "OpDataAbsRsqrt"),  # elementwise.cc ElementWiseAbsRsqrtInit
    "RSQRT": _R(None, "OpDataAbsRsqrt"),
    "EQUAL": _R(None, "comparisons:OpData"),  # comparisons.cc Init
    "NOT_EQUAL": _R(None, "comparisons:OpData"),
    "GREATER": _R(None, "comparisons:OpData"),
    "GREATER_EQUAL": _R(None, "comparisons:OpData"),
    "LESS": _R(None, "comparisons:OpData"),
    "LESS_EQUAL": _R(None, "comparisons:OpData"),
    "SELECT_V2": _R(None, "select:OpData"),
    "L2_NORMALIZATION": _R("TfLiteL2NormParams", "L2NormalizationParams"),
    "SPACE_TO_BATCH_ND": _R(None, "SpaceToBatchParams"),
    "RESHAPE": _R("TfLiteReshapeParams", prepare=_reshape),  # reshape_common.cc
    "SQUEEZE": _R("TfLiteSqueezeParams"),
    "GATHER": _R("TfLiteGatherParams", prepare=_writable_output_dims),
    "GATHER_ND": _R(prepare=_writable_output_dims),
    "SPACE_TO_DEPTH": _R("TfLiteSpaceToDepthParams", prepare=_writable_output_dims),
    "DEPTH_TO_SPACE": _R("TfLiteDepthToSpaceParams", prepare=_writable_output_dims),
    "EMBEDDING_LOOKUP": _R(prepare=_embedding_lookup),
    "CUMSUM": _R("TfLiteCumsumParams", prepare=_if_int8("cumsum:OpData")),
    "CAST": _R("TfLiteCastParams"),
    "SHAPE": _R("TfLiteShapeParams"),
    "SPLIT": _R("TfLiteSplitParams"),
    "SPLIT_V": _R("TfLiteSplitVParams"),
    "PACK": _R("TfLitePackParams"),
    "UNPACK": _R("TfLiteUnpackParams"),
    "ARG_MAX": _R("TfLiteArgMaxParams"),
    "ARG_MIN": _R("TfLiteArgMinParams"),
    "RESIZE_BILINEAR": _R("TfLiteResizeBilinearParams"),
    "RESIZE_NEAREST_NEIGHBOR": _R("TfLiteResizeNearestNeighborParams"),
    "CALL_ONCE": _R("TfLiteCallOnceParams", "call_once:OpData"),
    "IF": _R("TfLiteIfParams", "if:OpData"),
    "WHILE": _R("TfLiteWhileParams", "while:OpData"),
    "VAR_HANDLE": _R("TfLiteVarHandleParams", "var_handle:OpData"),
    "ASSIGN_VARIABLE": _R(None, "assign_variable:OpData", prepare=_assign_variable),
    "READ_VARIABLE": _R(),
}
# Registered operators whose parser, Init and Prepare allocate nothing persistent.
NOTHING = (
    "BATCH_TO_SPACE_ND", "BROADCAST_ARGS", "BROADCAST_TO", "CEIL", "COS",
    "DYNAMIC_UPDATE_SLICE", "EXP", "EXPAND_DIMS", "FILL", "FLOOR", "FLOOR_DIV",
    "FLOOR_MOD", "LOG", "LOGICAL_AND", "LOGICAL_NOT", "LOGICAL_OR", "MAXIMUM",
    "MINIMUM", "NEG", "REVERSE_V2", "ROUND", "SIN", "SLICE", "SQRT", "SQUARE",
    "TRANSPOSE", "ZEROS_LIKE",
)  # fmt: skip
BUILTIN.update({name: _R() for name in NOTHING})

# Custom kernels TFLM ships, by custom code (no options struct: custom options are
# read in Init).
CUSTOM: dict[str, OpRule] = {
    "SignalWindow": _R(None, "TFLMSignalWindowParams"),
    "SignalEnergy": _R(None, "TFLMSignalEnergyParams"),
    "SignalFilterBankLog": _R(None, "TFLMSignalLogParams"),
    "SignalPCAN": _R(None, "TfLitePcanParams"),
    "SignalFilterBank": _R(None, "TFLMSignalFilterBankParams", init_extra=_filter_bank),
    "SignalFilterBankSpectralSubtraction": _R(
        None, "TFLMSignalSpectralSubtractionParams", init_extra=_spectral_subtraction
    ),
    "SignalRfft": _R(None, "TfLiteAudioFrontendRfftParams", init_extra=_rfft),
    "SignalIrfft": _R(None, "TfLiteAudioFrontendIrfftParams", init_extra=_irfft),
    "SignalStacker": _R(None, "TFLMSignalStackerParams", init_extra=_stacker),
    "SignalDelay": _R(None, "TFLMSignalFrontendDelayParams", prepare=_delay),
    "SignalFramer": _R(None, "TFLMSignalFramerParams", prepare=_framer),
    "SignalOverlapAdd": _R(None, "TFLMSignalOverlapAddParams", prepare=_overlap_add),
    "SignalFftAutoScale": _R(),
    "SignalFilterBankSquareRoot": _R(),
    "CIRCULAR_BUFFER": _R(None, "OpDataCircularBuffer"),
    "TFLite_Detection_PostProcess": _R(None, "detection_postprocess:OpData"),
}


def rule_for(op: Operator) -> OpRule | None:
    """The rule of ``op``'s kind, or None when TFLM's behaviour is not modelled."""
    return (CUSTOM if op.is_custom else BUILTIN).get(op.opcode)
