"""TFLM's CMSIS-NN kernels (``kernels/cmsis_nn/``): their scratch requests and tail.

A TFLM build with ``OPTIMIZED_KERNEL_DIR=cmsis_nn`` runs these kernels for CONV_2D,
DEPTHWISE_CONV_2D, FULLY_CONNECTED, SVDF, UNIDIRECTIONAL_SEQUENCE_LSTM, SOFTMAX,
TRANSPOSE_CONV, ADD, MUL, BATCH_MATMUL, AVERAGE/MAX_POOL_2D, PAD, MAXIMUM, MINIMUM
and TRANSPOSE, and the reference kernels for everything else (``tools/make/specialize_files.py``:
a file of ``kernels/cmsis_nn/`` replaces the ``kernels/`` file of its name). MUL, PAD, MAXIMUM,
MINIMUM and TRANSPOSE allocate what the reference ones do; the others are here.

**Scratch** (``scratch_rule``): each kernel's Prepare asks CMSIS-NN's
``*_get_buffer_size`` functions (CMSIS-NN ``Source/*/*_get_buffer_sizes_*.c``) and
requests the answer when it is above 0 (TRANSPOSE_CONV int8 requests both of its
buffers always). Those functions are mirrored below, one Python function each, for
the three feature levels of ``tflm.kernel_sets`` ("c", "dsp", "mve") as GCC compiles
them (arm-none-eabi-gcc, or the host's gcc for "c"). Arm Compiler 6 differs in two
places that are not modelled: a 1x1 stride-1 convolution with DSP asks for
``4 * C_in`` bytes (GCC: 0), and MVE turns a depthwise convolution of one input
channel into a convolution above 8 output channels (GCC: above 1).

**Tail** (``tail_rule``): the kernels' own OpData structs (``tail_structs``, names
``cmsis_nn:*``), and what their Prepare allocates: per-channel multipliers and shifts
of CONV_2D and DEPTHWISE_CONV_2D only for int8/int16 inputs (the reference kernels
allocate them for float too), the LSTM's eight precomputed kernel sums, and with MVE
the kernel sums FULLY_CONNECTED and SVDF keep instead of a scratch buffer. TFLM's
Makefile builds with ``KERNELS_OPTIMIZED_FOR_SPEED`` (its default); a build with
``KERNELS_OPTIMIZED_FOR_SIZE`` is not modelled.

**In place** (``INPLACE_READ``): for ADD, MUL and SOFTMAX, the CMSIS-NN loops read at each
feature level to let them write their output over an input (``aliases.INPLACE_RULES``).

Everything is from the sources at TFLM commit 90b983c2b and the CMSIS-NN its
Makefile downloads (``tools/make/downloads/cmsis_nn``, commit 4ab83cc3). Sizes in bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Tensor
from arenaplan.tflm.sizes import tensor_bytes
from arenaplan.tflm.tail_rules import (
    BUILTIN,
    OpRule,
    OpView,
    Unmodelled,
    batch_matmul_copies,
)

CH_IN_BLOCK_MVE = 124  # arm_nnsupportfunctions.h: channels per block, MVE depthwise
REVERSE_TCOL_EFFICIENT_THRESHOLD = 16  # input channels above which transpose conv reverses
DW_ONE_IN_CH_THRESHOLD = 1  # CONVERT_DW_CONV_WITH_ONE_INPUT_CH_AND_OUTPUT_CH_ABOVE_THRESHOLD (GCC)


# ---- CMSIS-NN's buffer-size functions ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Dims:
    """``cmsis_nn_dims``: batch (or filter count), height, width, channels."""

    n: int
    h: int
    w: int
    c: int


@dataclass(frozen=True, slots=True)
class Window:
    """What the size functions read of ``cmsis_nn_conv_params`` (and dw_conv_params):
    strides, padding before the first row/column (TFLM's ``padding.height/width``),
    dilations."""

    stride_h: int = 1
    stride_w: int = 1
    pad_h: int = 0
    pad_w: int = 0
    dilation_h: int = 1
    dilation_w: int = 1


def _is_1x1(p: Window, x: Dims, f: Dims) -> bool:
    """arm_nn_is_convolve_1x1."""
    return (
        p.pad_w == 0 and p.pad_h == 0 and f.w == 1 and f.h == 1
        and p.dilation_w == 1 and p.dilation_h == 1 and x.c == f.c
    )  # fmt: skip


def _is_1_x_n(p: Window, x: Dims, f: Dims) -> bool:
    """arm_nn_is_convolve_1_x_n."""
    return (
        x.h == 1 and p.dilation_w == 1 and f.h == 1
        and (p.stride_w * x.c) % 4 == 0 and x.c == f.c
    )  # fmt: skip


def convolve_s8_buffer(features: str, x: Dims, f: Dims) -> int:
    """arm_convolve_s8_get_buffer_size: the im2col columns (two int16 rows of them,
    4-aligned; with MVE four int8 rows in 16-lane blocks)."""
    cols = x.c * f.w * f.h
    if features == "mve":
        return 4 * -(-cols // 16) * 16
    return 2 * (-(-cols // 4) * 4) * 2


def _convolve_1_x_n_s8_mve(p: Window, x: Dims, f: Dims, y: Dims) -> int:
    """arm_convolve_1_x_n_s8_get_buffer_size_mve."""
    total_pad = (y.w - 1) * p.stride_w + f.w - x.w
    asym = total_pad % 2 if total_pad >= 0 else -(-total_pad % 2)  # C's remainder
    right = max(1, (p.pad_w + asym + p.stride_w - 1) // p.stride_w) if p.pad_w + asym else 0
    left = max(1, (p.pad_w + p.stride_w - 1) // p.stride_w) if p.pad_w else 0
    middle = max(y.w - (right + left), 0)
    if right + middle + left != y.w:
        return convolve_s8_buffer("mve", x, f)
    pad_left = p.pad_w * x.c
    pad_right = right * x.c if asym else pad_left
    elems_left = f.w * x.c
    return max(elems_left + pad_left, elems_left - x.c + pad_right)


def convolve_wrapper_s8_buffer(features: str, p: Window, x: Dims, f: Dims, y: Dims) -> int:
    """arm_convolve_wrapper_s8_get_buffer_size (also TFLM's size for int4 filters).

    1x1 convolutions need none (GCC); 1xN ones the generic size, or with MVE their
    own; the rest the generic im2col size. DSP and plain C agree under GCC."""
    if _is_1x1(p, x, f):
        return 0
    if _is_1_x_n(p, x, f) and features == "mve":
        return _convolve_1_x_n_s8_mve(p, x, f, y)
    return convolve_s8_buffer(features, x, f)


def convolve_wrapper_s16_buffer(features: str, x: Dims, f: Dims) -> int:
    """arm_convolve_wrapper_s16_get_buffer_size: two int16 im2col rows; with MVE four,
    in 8-lane blocks."""
    cols = x.c * f.w * f.h
    if features == "mve":
        return 4 * -(-cols // 8) * 8 * 2
    return 2 * cols * 2


def _dw_opt_s8(features: str, x: Dims, f: Dims) -> int:
    """arm_depthwise_conv_s8_opt_get_buffer_size."""
    if features == "mve":
        return 4 * CH_IN_BLOCK_MVE * f.w * f.h
    if features == "dsp":
        return x.c * f.w * f.h * 2
    return 0


def depthwise_wrapper_s8_buffer(features: str, p: Window, x: Dims, f: Dims, y: Dims) -> int:
    """arm_depthwise_conv_wrapper_s8_get_buffer_size. ``f.c`` is the output depth.

    With MVE, one input channel and more than one output channel, the kernel runs
    as a convolution and asks for its im2col size plus the reordered filter. TFLM's
    Prepare leaves the stride of the parameters it passes unset, which that size
    reads only for a single-row input with a single-row filter (a 1xN convolution);
    the generic MVE size is taken there."""
    if features == "mve" and x.c == 1 and y.c > DW_ONE_IN_CH_THRESHOLD:
        as_conv = Dims(y.c, f.h, f.w, f.n)  # the filter seen as a convolution's
        size = 0 if _is_1x1(p, x, as_conv) else convolve_s8_buffer("mve", x, as_conv)
        return size + y.c * f.h * f.w * f.n
    if x.c == y.c and x.n == 1 and p.dilation_w == 1 and p.dilation_h == 1:
        if features != "mve" and f.w == 3 and f.h == 3 and p.pad_h <= 1 and p.pad_w <= 1:
            return 0  # arm_depthwise_conv_3x3_s8 needs none
        return _dw_opt_s8(features, x, f)
    return 0


def depthwise_wrapper_s4_buffer(features: str, p: Window, x: Dims, f: Dims, y: Dims) -> int:
    """arm_depthwise_conv_wrapper_s4_get_buffer_size: the optimised kernel's size
    (the DSP one also in plain C) whenever it applies, with no 3x3 exception."""
    if x.c == y.c and x.n == 1 and p.dilation_w == 1 and p.dilation_h == 1:
        return _dw_opt_s8("mve" if features == "mve" else "dsp", x, f)
    return 0


def fully_connected_s8_buffer(features: str, output_depth: int) -> int:
    """arm_fully_connected_s8_get_buffer_size: with MVE, an int32 kernel sum per
    output channel; else none."""
    return 4 * output_depth if features == "mve" else 0


def avgpool_buffer(features: str, channels: int) -> int:
    """arm_avgpool_s8/s16_get_buffer_size: an int32 accumulator per channel with DSP
    (not with MVE, not in plain C)."""
    return 4 * channels if features == "dsp" else 0


def svdf_s8_buffer(features: str, num_filters: int) -> int:
    """arm_svdf_s8_get_buffer_size: with MVE an int32 kernel sum per filter."""
    return 4 * num_filters if features == "mve" else 0


def _reverse_conv(stride_h: int, stride_w: int, x: Dims) -> bool:
    return stride_w <= 2 and stride_h <= 2 and x.c > REVERSE_TCOL_EFFICIENT_THRESHOLD


def transpose_conv_s8_buffer(
    features: str, stride_h: int, stride_w: int, x: Dims, f: Dims, y: Dims
) -> int:
    """arm_transpose_conv_s8_get_buffer_size. Strides up to 2 and more than 16 input
    channels: the im2col size of the stride-upsampled input; else int32 rows of the
    output (CMSIS-NN takes ``max(filter width, stride height)`` here, as written)."""
    if _reverse_conv(stride_h, stride_w, x):
        return convolve_s8_buffer(features, Dims(x.n, x.h * stride_h, x.w * stride_w, x.c), f)
    row = ((x.w - 1) * stride_w + max(f.w, stride_h)) * y.c
    return row * max(f.h, stride_h) * 4


def transpose_conv_reverse_buffer(stride_h: int, stride_w: int, x: Dims, f: Dims) -> int:
    """arm_transpose_conv_s8_get_reverse_conv_buffer_size: the reversed filter."""
    return x.c * f.w * f.h * f.n if _reverse_conv(stride_h, stride_w, x) else 0


# ---- what TFLM's CMSIS-NN kernels pass to them ----------------------------------


def _padding(size: int, filt: int, stride: int, dilation: int, padding: str) -> int:
    """TFLM's ComputePaddingHeightWidth: the padding before, from the output size
    it computes itself (SAME or VALID)."""
    effective = (filt - 1) * dilation + 1
    if padding == "SAME":
        out = (size + stride - 1) // stride
    elif padding == "VALID":
        out = int((size + stride - effective) / stride)  # C++ truncation
    else:
        raise Unmodelled(f"padding {padding!r}")
    return max((out - 1) * stride + effective - size, 0) // 2


def _nhwc(t: Tensor | None) -> Dims:
    if t is None or len(t.shape) != 4:
        raise Unmodelled("not a 4-d tensor")
    return Dims(*t.shape)


def _window(v: OpView, x: Dims, fh: int, fw: int, dilated: bool = True) -> Window:
    o = v.op.options
    sh, sw = int(o.get("stride_h", 1) or 1), int(o.get("stride_w", 1) or 1)
    dh = int(o.get("dilation_h_factor", 1) or 1) if dilated else 1
    dw = int(o.get("dilation_w_factor", 1) or 1) if dilated else 1
    padding = str(o.get("padding", "SAME"))
    return Window(
        sh, sw, _padding(x.h, fh, sh, dh, padding), _padding(x.w, fw, sw, dw, padding), dh, dw
    )


def _conv(features: str, v: OpView) -> list[int]:
    """cmsis_nn/conv.cc Prepare: int8 (int8 or int4 filter) and int16 inputs. The
    kernel means to skip int16 with an int32 bias, but it reads the bias with
    ``AllocateTempOutputTensor`` (an output index the node does not have), gets none
    and so always asks (measured: an int32 bias gets the buffer too)."""
    x, w, y = _nhwc(v.input(0)), _nhwc(v.input(1)), _nhwc(v.output())
    dtype = v.dtype(0)
    f = Dims(1, w.h, w.w, w.c)
    if dtype is DType.INT8:
        size = convolve_wrapper_s8_buffer(features, _window(v, x, f.h, f.w), x, f, y)
    elif dtype is DType.INT16:
        size = convolve_wrapper_s16_buffer(features, x, f)
    else:
        size = 0
    return [size] if size > 0 else []


def _depthwise(features: str, v: OpView) -> list[int]:
    """cmsis_nn/depthwise_conv.cc Prepare: int8 inputs only."""
    if v.dtype(0) is not DType.INT8:
        return []
    x, w, y = _nhwc(v.input(0)), _nhwc(v.input(1)), _nhwc(v.output())
    f = Dims(1, w.h, w.w, y.c)
    p = _window(v, x, f.h, f.w)
    if v.dtype(1) is DType.INT4:
        size = depthwise_wrapper_s4_buffer(features, p, x, f, y)
    else:
        size = depthwise_wrapper_s8_buffer(features, p, x, f, y)
    return [size] if size > 0 else []


def _per_channel(v: OpView) -> bool:
    """CalculateOpDataFullyConnected's is_per_channel: a quantised input and more
    than one filter scale."""
    f = v.input(1)
    q = f.quantization if f is not None else None
    return v.dtype(0) is not DType.FLOAT32 and q is not None and len(q.scales) > 1


def _fc_shape(v: OpView) -> tuple[int, int, int]:
    """(output rank, accum_depth, output_depth) as the FC Prepare computes them."""
    w, y = v.input(1), v.output()
    if w is None or y is None or not w.shape or not y.shape:
        raise Unmodelled("filter or output without dims")
    return len(y.shape), w.shape[-1], y.shape[-1]


def _fc_conv_1x1(v: OpView) -> bool:
    """An int8 FC with int8 weights runs as a 1x1 convolution when its output has
    more than two dims and accum_depth is a multiple of 4."""
    rank, accum, _ = _fc_shape(v)
    return rank > 2 and accum % 4 == 0


def _fc_kernel_sums(features: str, v: OpView) -> bool:
    """With KERNELS_OPTIMIZED_FOR_SPEED an int8 FC keeps its MVE kernel sums in the
    tail (not a scratch buffer) when the weights and bias are constant."""
    bias = v.input(2)
    return (
        fully_connected_s8_buffer(features, _fc_shape(v)[2]) > 0
        and v.input(1) is not None and v.input(1).is_constant
        and (bias is None or bias.is_constant)
    )  # fmt: skip


def _fully_connected(features: str, v: OpView) -> list[int]:
    """cmsis_nn/fully_connected.cc Prepare, int8 input with int8 weights: as a 1x1
    convolution, per-tensor quantisation fakes per-channel arrays in a scratch
    buffer; else, with MVE, the kernel sums (tail when constant)."""
    if v.dtype(0) is not DType.INT8 or v.dtype(1) is DType.INT4:
        return []
    _, _, depth = _fc_shape(v)
    if _fc_conv_1x1(v):
        return [] if _per_channel(v) else [2 * 4 * depth]  # 1x1 fast size: 0 (GCC)
    if _fc_kernel_sums(features, v):
        return []
    size = fully_connected_s8_buffer(features, depth)
    return [size] if size > 0 else []


def svdf_scratch(x: Tensor, wf: Tensor, op: Operator) -> list[int]:
    """SVDF's scratch requests (bytes), the reference kernel's and CMSIS-NN's alike
    (cmsis_nn/svdf.cc asks for the reference buffers): two int32 buffers for int8,
    one for float."""
    batch, filters = x.shape[0], wf.shape[0]
    if x.dtype is DType.INT8:
        rank = int(op.options.get("rank", 1) or 1)
        return [4 * batch * filters, 4 * batch * (filters // rank)]
    if x.dtype is DType.FLOAT32:
        return [4 * batch * filters]
    return []


def _svdf(features: str, v: OpView) -> list[int]:
    """cmsis_nn/svdf.cc: the reference kernel's two (int8) or one (float) buffers;
    the MVE kernel sums go to the tail (KERNELS_OPTIMIZED_FOR_SPEED)."""
    x, wf = v.input(0), v.input(1)
    if x is None or wf is None:
        raise Unmodelled("missing operand")
    return svdf_scratch(x, wf, v.op)


def _lstm_quantized(v: OpView) -> bool:
    """The CMSIS-NN LSTM path: int8 or int16 activations with an int16 cell state."""
    cell = v.input(19)
    return (
        v.dtype(0) in (DType.INT8, DType.INT16) and cell is not None and cell.dtype is DType.INT16
    )


def _lstm(features: str, v: OpView) -> list[int]:
    """cmsis_nn/unidirectional_sequence_lstm.cc: three buffers on the CMSIS-NN path,
    four (as the reference) for float; each batch * state * cell-state type."""
    x, state, cell = v.input(0), v.input(18), v.input(19)
    if x is None or state is None or cell is None:
        raise Unmodelled("missing operand")
    batch = x.shape[1] if v.op.options.get("time_major") else x.shape[0]
    size = batch * state.shape[1] * cell.dtype.itemsize
    return [size] * (3 if _lstm_quantized(v) else 4)


def _transpose_conv(features: str, v: OpView) -> list[int]:
    """cmsis_nn/transpose_conv.cc Prepare: int8 requests its buffer and the reversed
    filter's (both even when 0); int16 as the reference kernel."""
    x, bias, y = v.input(2), v.input(3), v.output()
    if x is None or y is None:
        raise Unmodelled("missing operand")
    if x.dtype is DType.INT16:
        extra = [8 * bias.elements] if bias is not None and bias.dtype is DType.INT16 else []
        return [8 * v.sizes[y.index] // y.dtype.itemsize, *extra]
    if x.dtype is not DType.INT8:
        return []
    xi, w, yo = _nhwc(x), _nhwc(v.input(1)), _nhwc(y)
    o = v.op.options
    sh, sw = int(o.get("stride_h", 1) or 1), int(o.get("stride_w", 1) or 1)
    f = Dims(yo.c, w.h, w.w, xi.c)
    return [
        transpose_conv_s8_buffer(features, sh, sw, xi, f, yo),
        transpose_conv_reverse_buffer(sh, sw, xi, f),
    ]


def _average_pool(features: str, v: OpView) -> list[int]:
    """cmsis_nn/pooling.cc AveragePrepare: int8 and int16 (MAX_POOL asks for none)."""
    if v.dtype(0) not in (DType.INT8, DType.INT16):
        return []
    size = avgpool_buffer(features, _nhwc(v.output()).c)
    return [size] if size > 0 else []


def _batch_matmul(features: str, v: OpView) -> list[int]:
    """cmsis_nn/batch_matmul.cc Prepare: int8 asks for the FC size of its output's
    last dim."""
    y = v.output()
    if v.dtype(0) is not DType.INT8 or y is None or not y.shape:
        return []
    size = fully_connected_s8_buffer(features, y.shape[-1])
    return [size] if size > 0 else []


ScratchRule = Callable[[str, OpView], list[int]]  # (features, operator) -> bytes each

SCRATCH: dict[str, ScratchRule] = {
    "CONV_2D": _conv,
    "DEPTHWISE_CONV_2D": _depthwise,
    "FULLY_CONNECTED": _fully_connected,
    "SVDF": _svdf,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _lstm,
    "TRANSPOSE_CONV": _transpose_conv,
    "AVERAGE_POOL_2D": _average_pool,
    "BATCH_MATMUL": _batch_matmul,
}
# CMSIS-NN kernels that request no scratch (the reference ones request none either).
NO_SCRATCH = ("SOFTMAX", "ADD", "MUL", "MAX_POOL_2D", "PAD", "PADV2", "MAXIMUM", "MINIMUM")


def scratch_rule(features: str, opcode: str) -> Callable[[OpView], list[int]] | None:
    """The CMSIS-NN kernel's scratch rule for a builtin ``opcode``; None when the
    kernel is the reference one (or requests nothing, like it)."""
    rule = SCRATCH.get(opcode)
    return None if rule is None else lambda v: rule(features, v)


def is_cmsis_kernel(opcode: str) -> bool:
    """Whether a CMSIS-NN build runs its own kernel for builtin ``opcode``."""
    return opcode in SCRATCH or opcode in NO_SCRATCH or opcode == "TRANSPOSE"


def model_refusals(model: Model) -> tuple[str, ...]:
    """``refusals`` of every operator of ``model``, each as "operator N OPCODE: why"."""
    sizes = tensor_bytes(model)
    found = []
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.is_custom:
                continue
            for why in refusals(OpView(sg, op, sizes[sg.index], {}, 8)):
                where = f"subgraph {sg.index} " if len(model.subgraphs) > 1 else ""
                found.append(f"{where}operator {op.index} {op.opcode}: {why}")
    return tuple(found)


def refusals(v: OpView) -> list[str]:
    """Why TFLM's CMSIS-NN kernel for this operator will fail where the reference one
    would not (empty: no known reason): FULLY_CONNECTED with per-channel weights
    only for int8 inputs with int8 weights; TRANSPOSE_CONV int16 reads its bias's
    type in Prepare (``CalculateOpData``) without checking it is there: on a host or
    under qemu-arm the null read crashes the process; on a Cortex-M, where address 0
    is memory, it reads on, GCC having dropped the later ``bias != nullptr`` check,
    and ``DeallocateTempTfLiteTensor(nullptr)`` halts TFLM (TFLITE_DCHECK)."""
    opcode = v.op.opcode
    int8 = v.dtype(0) is DType.INT8 and v.dtype(1) is not DType.INT4
    if opcode == "FULLY_CONNECTED" and _per_channel(v) and not int8:
        return ["per-channel FULLY_CONNECTED needs int8 input and int8 weights"]
    if opcode == "TRANSPOSE_CONV" and v.dtype(2) is DType.INT16 and v.input(3) is None:
        return ["int16 TRANSPOSE_CONV without a bias: CMSIS-NN's Prepare reads a null tensor"]
    return []


# ---- the tail ------------------------------------------------------------------------


def _quantized_channels(axis: int) -> Callable[[OpView], list[int]]:
    """cmsis_nn/conv.cc, depthwise_conv.cc Prepare: per-channel multiplier and shift,
    ``4 * filter.dims[axis]`` each, for int8 and int16 inputs only."""

    def rule(v: OpView) -> list[int]:
        if v.dtype(0) not in (DType.INT8, DType.INT16):
            return []
        f = v.input(1)
        if f is None or len(f.shape) <= axis:
            raise Unmodelled("no 4-d filter")
        return [4 * f.shape[axis]] * 2

    return rule


def _fc_tail(features: str) -> Callable[[OpView], list[int]]:
    """The reference per-channel arrays (CalculateOpDataFullyConnected), then with
    MVE the int8 kernel sums when they are kept (``_fc_kernel_sums``)."""
    reference = BUILTIN["FULLY_CONNECTED"].prepare

    def rule(v: OpView) -> list[int]:
        out = reference(v) if reference is not None else []
        int8 = v.dtype(0) is DType.INT8 and v.dtype(1) is not DType.INT4
        if int8 and not _fc_conv_1x1(v) and _fc_kernel_sums(features, v):
            out.append(fully_connected_s8_buffer(features, _fc_shape(v)[2]))
        return out

    return rule


def _svdf_tail(features: str) -> Callable[[OpView], list[int]]:
    """With MVE, an int8 SVDF keeps its kernel sums (4 B per filter) in the tail."""

    def rule(v: OpView) -> list[int]:
        wf = v.input(1)
        if v.dtype(0) is not DType.INT8 or wf is None:
            return []
        size = svdf_s8_buffer(features, wf.shape[0])
        return [size] if size > 0 else []

    return rule


def _lstm_tail(v: OpView) -> list[int]:
    """CMSIS_NN_PortOpData: eight kernel sums of ``state`` entries, int32 for int8
    activations, int64 for int16, on the CMSIS-NN path."""
    if not _lstm_quantized(v):
        return []
    state = v.input(18)
    if state is None or len(state.shape) < 2:
        raise Unmodelled("output state without 2 dims")
    width = 4 if v.dtype(0) is DType.INT8 else 8
    return [width * state.shape[1]] * 8


def _batch_matmul_tail(v: OpView) -> list[int]:
    """cmsis_nn/batch_matmul.cc Prepare: the reference kernel's copies
    (``batch_matmul_copies``), then, quantised, the quantisation data (the
    reference kernel allocates that first)."""
    out = batch_matmul_copies(v)
    lhs = v.input(0)
    if lhs is not None and lhs.dtype is not DType.FLOAT32:
        out.append(v.state["QuantizationOpDataBatchMatmul"])
    return out


def tail_rules(features: str) -> dict[str, OpRule]:
    """The CMSIS-NN kernels' tail rules, by builtin name, for a feature level."""
    return {
        "CONV_2D": OpRule(
            "TfLiteConvParams", "cmsis_nn:conv:OpData", prepare=_quantized_channels(0)
        ),
        "DEPTHWISE_CONV_2D": OpRule(
            "TfLiteDepthwiseConvParams",
            "cmsis_nn:depthwise_conv:OpData",
            prepare=_quantized_channels(3),
        ),
        "FULLY_CONNECTED": OpRule(
            "TfLiteFullyConnectedParams",
            "cmsis_nn:fully_connected:OpData",
            prepare=_fc_tail(features),
        ),
        "SVDF": OpRule("TfLiteSVDFParams", "CmsisNnOpDataSvdf", prepare=_svdf_tail(features)),
        "UNIDIRECTIONAL_SEQUENCE_LSTM": OpRule(
            "TfLiteUnidirectionalSequenceLSTMParams",
            "cmsis_nn:lstm:OpData",
            prepare=_lstm_tail,
        ),
        "SOFTMAX": replace(BUILTIN["SOFTMAX"], init="CMSISNNSoftmaxParams"),
        "TRANSPOSE_CONV": replace(BUILTIN["TRANSPOSE_CONV"], init="cmsis_nn:transpose_conv:OpData"),
        "ADD": replace(BUILTIN["ADD"], init="cmsis_nn:add:OpData"),
        "AVERAGE_POOL_2D": replace(BUILTIN["AVERAGE_POOL_2D"], init="cmsis_nn:pooling:OpData"),
        "MAX_POOL_2D": replace(BUILTIN["MAX_POOL_2D"], init="cmsis_nn:pooling:OpData"),
        "BATCH_MATMUL": OpRule(
            "TfLiteBatchMatMulParams",
            "cmsis_nn:batch_matmul:OpData",
            prepare=_batch_matmul_tail,
        ),
    }


_TAIL = {level: tail_rules(level) for level in ("c", "dsp", "mve")}


def tail_rule(features: str, opcode: str) -> OpRule | None:
    """The CMSIS-NN kernel's tail rule for a builtin ``opcode``; None when the build
    runs the reference kernel (or one that allocates the same)."""
    return _TAIL[features].get(opcode)


# ---- in place ------------------------------------------------------------------------

# What was read of the CMSIS-NN kernels TFLM runs for operators on the reference
# in-place list (``aliases.INPLACE_KERNELS``), per feature level: opcode -> level ->
# file and loop (docs/inplace.md, "CMSIS-NN"). Each writes output byte b only after it
# has read the input bytes b covers, and later reads stay above what it wrote, so each
# is safe with output memory == input memory under the reference rule's conditions
# (its input positions; the input written over has the output's shape). Those hold
# here too: the wrappers call CMSIS-NN only when no operand broadcasts
# (``MatchingElementsSize``) and run the reference loops otherwise, and for float32
# and int32. No function here takes ``restrict`` pointers (CMSIS-NN's
# ``OPTIONAL_RESTRICT_KEYWORD`` is used by its convolutions only), so the C reading
# holds whatever the compiler does. An operator CMSIS-NN replaces that is not here
# gets no in-place rule in a CMSIS-NN plan (``aliases.INPLACE_RULES``).
_ADD = "cmsis_nn/add.cc EvalAddQuantizedInt8/Int16 (broadcast, float32, int32: reference)"
_MUL = "cmsis_nn/mul.cc EvalQuantized (broadcast: reference; float32, int32: mul_common.cc)"
_SOFTMAX = "cmsis_nn/softmax.cc SoftmaxEval (float32: reference/softmax.h Softmax)"
_SOFTMAX_S16 = (
    "arm_softmax_s16 (no feature paths): max loop; loop 2 reads input[col], then writes "
    "cached_exp_results[col] (the output row); loop 3 reads and writes the output row"
)
INPLACE_READ: dict[str, dict[str, str]] = {
    "ADD": {
        "c": f"{_ADD} -> arm_elementwise_add_s8: scalar loop *in1++, *in2++, then *output++; "
        "arm_elementwise_add_s16: arm_nn_read_q15x2_ia of each input, then "
        "arm_nn_write_q15x2_ia of the same 4 bytes",
        "dsp": f"{_ADD} -> arm_elementwise_add_s8 ARM_MATH_DSP: read_and_pad_reordered 4 s8 "
        "of each input, then arm_nn_write_s8x4_ia of the same 4 bytes, scalar tail; "
        "arm_elementwise_add_s16 as without DSP",
        "mve": f"{_ADD} -> arm_elementwise_add_s8/_s16 ARM_MATH_MVEI: vldrbq_z_s32/"
        "vldrhq_z_s32 of 4 lanes of each input, then vstrbq_p_s32/vstrhq_p_s32 of the "
        "same 4 lanes (vctp32q predicates the tail)",
    },
    "MUL": {
        "c": f"{_MUL} -> arm_elementwise_mul_s8: scalar loop *in1++, *in2++, then *output++; "
        "arm_elementwise_mul_s16: arm_nn_read_q15x2_ia of each input, then "
        "arm_nn_write_q15x2_ia of the same 4 bytes",
        "dsp": f"{_MUL} -> arm_elementwise_mul_s8 ARM_MATH_DSP: read_and_pad_reordered 4 s8 "
        "of each input, then arm_nn_write_s8x4_ia of the same 4 bytes, scalar tail; "
        "arm_elementwise_mul_s16: as without DSP (SMULBB/SMULTT)",
        "mve": f"{_MUL} -> arm_elementwise_mul_s8/_s16 ARM_MATH_MVEI: vldrbq_z_s32/"
        "vldrhq_z_s32 of 4 lanes of each input, then vstrbq_p_s32/vstrhq_p_s32 of the "
        "same 4 lanes (vctp32q predicates the tail)",
    },
    "SOFTMAX": {
        "c": f"{_SOFTMAX} -> arm_softmax_s8 -> arm_nn_softmax_common_s8: per row a max loop "
        "and a sum loop read the row, then loop 3 reads input[col], then writes "
        f"output_s8[col]; {_SOFTMAX_S16}",
        "dsp": f"{_SOFTMAX} -> arm_softmax_s8 -> arm_nn_softmax_common_s8 (no DSP path): "
        f"as without DSP; {_SOFTMAX_S16}",
        "mve": f"{_SOFTMAX} -> arm_softmax_s8 ARM_MATH_MVEI: per row the max (vldrbq_z_s8, "
        "16 lanes) and sum (vldrbq_s32) passes only read; then vldrbq_s32(&input[idx]), "
        "then vstrbq_s32(&output[idx]), 4 lanes, idx += 4, scalar tail (GCC 12.2: the "
        f"plain C path); {_SOFTMAX_S16}",
    },
}
