"""Memory traffic of TFLM's reference kernels: one formula per kernel.

For every operator, the loads and stores its kernel's Eval makes to every tensor and
persistent block it touches, from the operator's shapes and options alone: a
convolution reads each input element once per filter tap that covers it and per
output channel, its weights once per output pixel, its bias and per-channel
multipliers once per output element; a pooling reads each window; a softmax reads
its row three times; a copy moves words. The formulas follow the loops of TFLM's
reference kernels (``tensorflow/lite/kernels/internal/reference``, the commit of
``../shared/third_party``) and are checked against every load and store of the real
kernels counted under valgrind (``arenaplan.tflm.verify.traffic_measure``,
``benchmarks/traffic.py``). Units and keys as in ``cost.traffic``: accesses and
bytes of one invoke, per key; every count is an estimate of what the build does.

Kernels modelled (reference kernels; the path each operator takes is its ``kernel``):
CONV_2D and DEPTHWISE_CONV_2D (int8, int16, float), FULLY_CONNECTED (per tensor and
per channel, int8, int16, float), AVERAGE_POOL_2D and MAX_POOL_2D, SOFTMAX (int8,
int16, float), the element-wise unary (RELU, RELU6, LEAKY_RELU, LOGISTIC, TANH,
HARD_SWISH, ELU, the float math functions, LOGICAL_NOT) and binary kernels (ADD,
SUB, MUL, DIV, MINIMUM, MAXIMUM, SQUARED_DIFFERENCE, comparisons, logical; same
shapes and TFLM's broadcast loops), QUANTIZE, DEQUANTIZE, CAST, RESHAPE, SQUEEZE,
EXPAND_DIMS, CONCATENATION, STRIDED_SLICE, PAD, PADV2, MEAN and SUM (int8, int16;
float MEAN over H and W), SVDF (int8), UNIDIRECTIONAL_SEQUENCE_LSTM (int8), and the
Signal library's Window, FftAutoScale, Rfft (int16), Energy, FilterBank,
FilterBankSquareRoot, FilterBankSpectralSubtraction, PCAN and FilterBankLog. Where the
data decides a count (PCAN reads one table entry, not three, for an estimate of at
most 2; spectral subtraction with clamping stores more), the formula takes the
common case.

These are the data terms: they follow the kernels' loops and hold for any compiler
that does not vectorise them. One table among them is measured, not read from the
loops: the op data loads per element of the kernels that pass their parameters by
reference (:func:`per_element_table`, the package's ``data/traffic_per_element.json``,
written by ``python scripts/gen_traffic_per_element.py``) and the per-frame loads and
stores of the int16 RFFT's butterflies and split (:func:`rfft_table`,
``data/traffic_rfft.json``, written by ``python scripts/gen_traffic_rfft.py``), both
measured on :data:`~arenaplan.cost.traffic_counts.HOST_REFERENCE`. The fixed
per-invoke terms are ``cost.traffic_fixed``'s.
"""

from __future__ import annotations

import functools
import json
import math
from importlib import resources

from arenaplan.cost.traffic_counts import Key, items_traffic, memcpy_traffic
from arenaplan.cost.traffic_kernel import Kernel, KernelCounts, alignment, kernel_path, tap_count
from arenaplan.ir.constants import constant_ints, constant_values
from arenaplan.ir.custom import custom_options
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Tensor


@functools.cache
def per_element_table() -> dict[tuple[str, str], dict[int, int]]:
    """(opcode, element type) -> width in bytes -> op data loads per element, of the
    element-wise kernels that read their parameters once per element. Measured on
    HOST_REFERENCE: the package's data/traffic_per_element.json (written by
    scripts/gen_traffic_per_element.py), read once."""
    data = resources.files("arenaplan.cost") / "data" / "traffic_per_element.json"
    table = json.loads(data.read_text())["kernels"]
    out = {}
    for name, widths in table.items():
        opcode, dtype = name.split("/")
        out[(opcode, dtype)] = {int(w): n for w, n in widths.items()}
    return out


def _size(t: Tensor) -> int:
    return t.dtype.itemsize


def _dims(t: Tensor, rank: int) -> tuple[int, ...]:
    """The tensor's shape extended with leading 1s to ``rank``."""
    s = tuple(max(d, 0) for d in t.shape)
    return (1,) * (rank - len(s)) + s


def _padding(padding: str, in_size: int, out_size: int, k: int, stride: int, dil: int) -> int:
    """TFLM's ComputePaddingHeightWidth: the leading padding of one axis."""
    if padding != "SAME":
        return 0
    effective = (k - 1) * dil + 1
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return total // 2


_PERIOD = 16  # a memcpy's cost depends on its offsets modulo 16 (``alignment``) alone


def _residues(count: int) -> list[tuple[int, int]]:
    """(r, how many j in [0, count) have j % 16 == r), for r < min(count, 16).

    A run of copies whose offsets are linear in j repeats its alignments every 16
    copies: the kernels below count one copy per class, times its size, so that a
    declared dimension of 2**31 - 1 rows costs 16 steps, not 2**31 - 1."""
    return [(r, (count - r + _PERIOD - 1) // _PERIOD) for r in range(min(count, _PERIOD))]


# opcode -> its kernel model: the reference kernels' (``cost.traffic`` adds the
# ARENAPLAN_CASCADE operator's from ``cost.traffic_cascade``)
KERNELS: dict[str, Kernel] = {}


def _kernel(*opcodes: str):
    def register(fn: Kernel) -> Kernel:
        for name in opcodes:
            KERNELS[name] = fn
        return fn

    return register


def _dt(t: Tensor | None) -> str:
    return t.dtype.name.lower() if t is not None else "none"


@_kernel("CONV_2D", "DEPTHWISE_CONV_2D")
def _conv(c: KernelCounts) -> None:
    x, w, b, y = c.i(0), c.i(1), c.i(2), c.o()
    n, ih, iw, _ = _dims(x, 4)
    _, oh, ow, cout = _dims(y, 4)
    _, kh, kw, _ = _dims(w, 4)
    sh, sw = c.opt("stride_h", 1), c.opt("stride_w", 1)
    dh, dw = c.opt("dilation_h_factor", 1), c.opt("dilation_w_factor", 1)
    pad = c.opt("padding", "SAME")
    ph, pw = _padding(pad, ih, oh, kh, sh, dh), _padding(pad, iw, ow, kw, sw, dw)
    taps = tap_count(oh, ih, kh, sh, ph, dh) * tap_count(ow, iw, kw, sw, pw, dw)
    outputs = n * oh * ow * cout
    # a convolution's tap reads the filter's input depth for each output channel
    per_tap = _dims(w, 4)[3] * cout if c.op.opcode == "CONV_2D" else cout
    c.load(x, n * taps * per_tap)
    c.load(w, n * taps * per_tap)
    c.load(b, outputs)
    c.store(y, outputs)
    per_channel = x.dtype in (DType.INT8, DType.INT16)
    if per_channel:
        c.load(c.op_data, 2 * outputs, 4)  # per-channel multiplier and shift
    kernel_path(c, _dt(x))


@_kernel("FULLY_CONNECTED")
def _fully_connected(c: KernelCounts) -> None:
    x, w, b, y = c.i(0), c.i(1), c.i(2), c.o()
    depth = _dims(w, 2)[-1]
    out_depth = y.shape[-1] if y.shape else 1
    batches = c.elements(y) // max(out_depth, 1)
    c.load(x, batches * out_depth * depth)
    c.load(w, batches * out_depth * depth)
    c.load(b, batches * out_depth)
    c.store(y, batches * out_depth)
    per_channel = w.quantization is not None and len(w.quantization.scales) > 1
    if per_channel and x.dtype in (DType.INT8, DType.INT16):
        c.load(c.op_data, 2 * batches * out_depth, 4)  # per-channel multiplier, shift
        kernel_path(c, _dt(x), "per_channel")
    else:
        kernel_path(c, _dt(x))


@_kernel("AVERAGE_POOL_2D", "MAX_POOL_2D")
def _pool(c: KernelCounts) -> None:
    x, y = c.i(0), c.o()
    n, ih, iw, ch = _dims(x, 4)
    _, oh, ow, _ = _dims(y, 4)
    kh, kw = c.opt("filter_height", 1), c.opt("filter_width", 1)
    sh, sw = c.opt("stride_h", 1), c.opt("stride_w", 1)
    pad = c.opt("padding", "SAME")
    ph, pw = _padding(pad, ih, oh, kh, sh, 1), _padding(pad, iw, ow, kw, sw, 1)
    taps = tap_count(oh, ih, kh, sh, ph) * tap_count(ow, iw, kw, sw, pw)
    c.load(x, n * taps * ch)
    c.store(y, n * oh * ow * ch)
    kernel_path(c, _dt(x))


@_kernel("SOFTMAX")
def _softmax(c: KernelCounts) -> None:
    """Per row: the maximum, then the exponentials (int8 in: their sum; float and
    int16: stored to the output and summed), then the output (float and int16: each
    exponential read back and scaled). int16 reads two entries of the exponential
    table per element and two of the reciprocal table per row."""
    x, y = c.i(0), c.o()
    n = c.elements(x)
    depth = x.shape[-1] if x.shape else 1
    rows = n // max(depth, 1)
    if x.dtype is DType.INT8:
        c.load(x, 3 * n)
        c.store(y, n)
    else:
        c.load(x, 2 * n)
        c.store(y, 2 * n)
        c.load(y, n)
        if x.dtype is DType.INT16:
            c.load(c.op_data, 2 * n + 2 * rows, 2)
    kernel_path(c, _dt(x), _dt(y))


@_kernel("RESHAPE", "SQUEEZE")
def _reshape(c: KernelCounts) -> None:
    """A memcpy of the data (TFLM plans input and output apart)."""
    x, y = c.i(0), c.o()
    c.copy(y, 0, x, 0, c.nbytes(y))
    kernel_path(c)


@_kernel("EXPAND_DIMS")
def _expand_dims(c: KernelCounts) -> None:
    """An element-by-element copy."""
    x, y = c.i(0), c.o()
    c.load(x, c.elements(y))
    c.store(y, c.elements(y))
    kernel_path(c)


@_kernel("QUANTIZE", "DEQUANTIZE", "CAST")
def _convert(c: KernelCounts) -> None:
    x, y = c.i(0), c.o()
    c.load(x, c.elements(x))
    c.store(y, c.elements(y))
    kernel_path(c, _dt(x), _dt(y))


def _broadcast_loads(a: Tensor, b: Tensor, y: Tensor) -> tuple[int, int]:
    """Loads of each input by TFLM's BroadcastBinaryOpSimple (loops fused, a stride-0
    operand of the innermost loop read once per run of it)."""
    rank = max(len(a.shape), len(b.shape), len(y.shape))
    if rank == 0:
        return 1, 1
    da, db, do = _dims(a, rank), _dims(b, rank), _dims(y, rank)
    loops: list[list[int]] = []  # [a_stride, b_stride, o_stride, extent], innermost first
    acc = [1, 1, 1]
    for i in range(rank - 1, -1, -1):
        sa = 0 if da[i] == 1 and do[i] != 1 else acc[0]
        sb = 0 if db[i] == 1 and do[i] != 1 else acc[1]
        so = acc[2]

        def fuse(stride: int, expected: int, nxt: int, od: int = do[i]) -> bool:
            if od == 1:
                return True
            return stride == 0 if nxt == 0 else stride == expected

        if loops and fuse(sa, acc[0], loops[-1][0]) and fuse(sb, acc[1], loops[-1][1]):
            if fuse(so, acc[2], loops[-1][2]):
                loops[-1][3] *= do[i]
            else:
                loops.append([sa, sb, so, do[i]])
        else:
            loops.append([sa, sb, so, do[i]])
        acc = [acc[0] * da[i], acc[1] * db[i], acc[2] * do[i]]
    inner = loops[0]
    runs = math.prod(lp[3] for lp in loops[1:])
    la = runs * (1 if inner[0] == 0 else inner[3])
    lb = runs * (1 if inner[1] == 0 else inner[3])
    return la, lb


@_kernel(
    "ADD",
    "SUB",
    "MUL",
    "DIV",
    "MINIMUM",
    "MAXIMUM",
    "SQUARED_DIFFERENCE",
    "FLOOR_DIV",
    "FLOOR_MOD",
    "EQUAL",
    "NOT_EQUAL",
    "GREATER",
    "GREATER_EQUAL",
    "LESS",
    "LESS_EQUAL",
    "LOGICAL_AND",
    "LOGICAL_OR",
)
def _binary(c: KernelCounts) -> None:
    a, b, y = c.i(0), c.i(1), c.o()
    if a.shape == b.shape:
        la = lb = c.elements(y)
    else:
        la, lb = _broadcast_loads(a, b, y)
    c.load(a, la)
    c.load(b, lb)
    c.store(y, c.elements(y))
    for width, k in per_element_table().get((c.op.opcode, _dt(a)), {}).items():
        c.load(c.op_data, k * c.elements(y), width)
    kernel_path(c, _dt(a), "broadcast" if a.shape != b.shape else "same")


def _const_ints(c: KernelCounts, t: Tensor | None) -> list[int] | None:
    """The values of an int32 or int64 constant (the bytes its shape says), or None."""
    return constant_ints(c.model.buffers, t)


def _slice_axis(size, begin, end, stride, bmask, emask, shrink, offset):
    """strided_slice_logic.h: the start and stop of one axis."""
    start = begin + size if begin < 0 else begin
    start = min(max(start, 0), size) if stride > 0 else min(max(start, -1), size - 1)
    if bmask:
        start = 0 if stride > 0 else size - 1
    if shrink:
        return start, (start if start >= size else start + 1)
    stop = end + start if offset else end
    stop = stop + size if stop < 0 else stop
    stop = min(max(stop, 0), size) if stride > 0 else min(max(stop, -1), size - 1)
    if emask:
        stop = size if stride > 0 else -1
    return start, stop


@_kernel("STRIDED_SLICE")
def _strided_slice(c: KernelCounts) -> None:
    """reference/strided_slice.h on five padded axes: with an innermost stride of 1,
    one memcpy per run of the innermost axis; otherwise one load and store per
    element."""
    x, y = c.i(0), c.o()
    begin, end, strides = (_const_ints(c, c.i(k)) for k in (1, 2, 3))
    if begin is None or end is None or strides is None:
        raise ValueError("non-constant slice bounds")
    if c.opt("ellipsis_mask", 0) or c.opt("new_axis_mask", 0):
        raise ValueError("ellipsis and new axes are not modelled")
    pad = 5 - len(begin)
    begin, end, strides = [0] * pad + begin, [1] * pad + end, [1] * pad + strides
    full = (1 << pad) - 1
    bmask = (c.opt("begin_mask", 0) << pad) | full
    emask = (c.opt("end_mask", 0) << pad) | full
    shrink = c.opt("shrink_axis_mask", 0) << pad
    shape = _dims(x, 5)
    axes = [
        _slice_axis(
            shape[a],
            begin[a],
            end[a],
            strides[a],
            bmask >> a & 1,
            emask >> a & 1,
            shrink >> a & 1,
            bool(c.opt("offset", False)),
        )
        for a in range(5)
    ]

    size = _size(x)
    counts = [len(range(*axes[a], strides[a])) for a in range(5)]  # positions per axis
    if strides[4] == 1:
        start, stop = axes[4]
        length = stop - start
        if length > 0:
            for (run, src), n in _slice_runs(axes, strides, shape, counts).items():
                c.copy(y, run * length * size, x, (start + src * shape[4]) * size, length * size, n)
    else:
        n = math.prod(counts)
        c.load(x, n)
        c.store(y, n)
    kernel_path(c, "memcpy" if strides[4] == 1 else "elements")


def _slice_runs(axes, strides, shape, counts) -> dict[tuple[int, int], int]:
    """The innermost runs of a strided slice by class: (run number, source index of
    the run in units of the innermost axis, both modulo 16) -> how many runs. Axis by
    axis over the four outer axes, each axis's positions taken by residue class
    (:func:`_residues`): at most 256 classes, whatever the dimensions."""
    classes = {(0, 0): 1}  # (run number % 16, source row % 16) -> runs
    for a in range(4):
        (start, _), st = axes[a], strides[a]
        nxt: dict[tuple[int, int], int] = {}
        for (run, src), n in classes.items():
            for r, k in _residues(counts[a]):
                key = ((run * counts[a] + r) % _PERIOD, (src * shape[a] + start + r * st) % _PERIOD)
                nxt[key] = nxt.get(key, 0) + n * k
        classes = nxt
    return classes


@_kernel("CONCATENATION")
def _concatenation(c: KernelCounts) -> None:
    y = c.o()
    rank = len(y.shape)
    axis = c.opt("axis", 0)
    axis = axis + rank if axis < 0 else axis
    outer = math.prod(_dims(y, rank)[:axis])
    inner = math.prod(_dims(y, rank)[axis + 1 :]) * _size(y)
    out_row = _dims(y, rank)[axis] * inner
    at = 0  # bytes of one output row before input k
    for k in range(len(c.op.inputs)):
        x = c.i(k)
        if x is None:
            continue
        n = _dims(x, rank)[axis] * inner
        for row, rows in _residues(outer):  # rows of the same alignment, copied alike
            c.copy(y, row * out_row + at, x, row * n, n, rows)
        at += n
    kernel_path(c, _dt(y))


@_kernel("SVDF")
def _svdf(c: KernelCounts) -> None:
    x, wf, wt, b, state, y = c.i(0), c.i(1), c.i(2), c.i(3), c.i(4), c.o()
    if x.dtype is not DType.INT8:
        raise ValueError("only the integer SVDF is modelled")
    rank = c.opt("rank", 1)
    n_batch, n_input = _dims(x, 2)
    n_filter = wf.shape[0]
    n_unit = n_filter // rank
    n_memory = wt.shape[1]
    ts = _size(state)
    # shift the state left by one element (a memmove, the source one element in)
    shifted = (n_batch * n_filter * n_memory - 1) * ts
    c.copy(state, 0, state, ts, shifted)
    # feature matmul: each filter row against the input, result into the state
    c.load(x, n_batch * n_filter * n_input)
    c.load(wf, n_batch * n_filter * n_input)
    c.store(state, n_batch * n_filter)
    c.load(c.op_data, n_batch * n_filter * 3, 4)  # input zero point, scale a and b
    c.load(c.op_data, n_batch * n_filter, 2)  # the state's zero point
    # time: weights_time against the state, accumulated in scratch 0
    c.load(wt, n_batch * n_filter * n_memory)
    c.load(state, n_batch * n_filter * n_memory)
    c.load(c.op_data, n_batch * n_filter * n_memory, 4)  # the state's zero point
    c.store(c.scratch(0), n_batch * n_filter * (1 + n_memory), 4)
    # bias into scratch 1, reduce over the rank, rescale into the output
    c.load(b, n_batch * n_unit)
    c.store(c.scratch(1), n_batch * n_unit * (1 + rank), 4)
    c.load(c.scratch(0), n_batch * n_unit * rank, 4)
    c.load(c.scratch(1), n_batch * n_unit * 2, 4)  # the sum stays in a register over the rank
    c.load(c.op_data, n_batch * n_unit * 3, 4)  # scale a and b, output zero point
    c.store(y, n_batch * n_unit)
    c.vars = {"B": n_batch, "U": n_unit}
    kernel_path(c, "int8", _dt(state))


@_kernel("UNIDIRECTIONAL_SEQUENCE_LSTM")
def _lstm(c: KernelCounts) -> None:
    """lstm_eval.h: per time step, four gates (an input and a recurrent fully
    connected, their sum, a sigmoid or tanh), the cell update (two products, a sum,
    the clip), the hidden state (tanh, a product) and a memcpy of it to the output.
    The four scratch buffers hold the gates; the op data holds every parameter, read
    once per element by the products."""
    x, y = c.i(0), c.o()
    hidden, cell = c.i(18), c.i(19)
    if x.dtype is not DType.INT8 or cell.dtype is not DType.INT16:
        raise ValueError("only the int8 LSTM (int16 cell) is modelled")
    time_major = bool(c.opt("time_major", False))
    d = _dims(x, 3)
    steps_t, batch = (d[0], d[1]) if time_major else (d[1], d[0])
    n_in = d[2]
    n_state = hidden.shape[-1]
    rows = batch if time_major else 1  # rows of one step
    loops = 1 if time_major else batch
    steps = steps_t * loops
    e = rows * n_state  # elements of one gate in one step
    clip = float(c.opt("cell_clip", 0.0) or 0.0) > 0
    for k in range(1, 5):  # input-to-gate weights and the gate biases
        c.load(c.i(k), steps * e * n_in)
        c.load(c.i(k + 11), steps * e)
    for k in range(5, 9):  # recurrent weights
        c.load(c.i(k), steps * e * n_state)
    c.load(x, steps * 4 * e * n_in)
    c.load(hidden, steps * 4 * e * n_state)
    c.store(hidden, steps * e)
    c.load(cell, steps * e * (4 if clip else 3))
    c.store(cell, steps * e * (3 if clip else 2))
    for k, (loads, stores) in enumerate(((4, 4), (7, 7), (3, 3), (4, 4))):
        c.load(c.scratch(k), steps * e * loads, 2)
        c.store(c.scratch(k), steps * e * stores, 2)
    # the hidden state copied to the output after each step (classes of alignment)
    for b, nb in _residues(loops):
        for t, nt in _residues(steps_t):
            out_at = (b * steps_t + t) * e
            c.copy(y, out_at, hidden, 0 if time_major else b * n_state, e, nb * nt)
    od = c.op_data
    c.load(od, steps * (3 * 7 * e + 8 * 7 + 19 + 8 + 3 + 2 + 1), 4)
    c.load(od, steps * (19 + 8 + 1), 1)
    c.load(od, steps, 8)
    if clip:
        c.load(od, steps * e, 2)
    if not time_major:
        c.load(od, 2 * batch, 4)
        c.load(od, batch, 1)
    c.vars = {"N": steps}
    kernel_path(c, "int8")


def _custom(c: KernelCounts) -> dict:
    return custom_options(c.op)


@_kernel("SignalWindow")
def _signal_window(c: KernelCounts) -> None:
    x, w, y = c.i(0), c.i(1), c.o()
    n, chunk = c.elements(x), c.elements(w)
    c.load(x, n)
    c.load(w, n)
    c.store(y, n)
    c.load(c.op_data, 1 + 2 * (n // max(chunk, 1)), 4)  # input size, shift per chunk
    kernel_path(c, "int16")


@_kernel("SignalFftAutoScale")
def _signal_fft_auto_scale(c: KernelCounts) -> None:
    x, y, scale = c.i(0), c.o(0), c.o(1)
    c.load(x, 2 * c.elements(x))  # the largest magnitude, then the scaling
    c.store(y, c.elements(y))
    c.store(scale, 1)
    kernel_path(c, "int16")


@_kernel("SignalEnergy")
def _signal_energy(c: KernelCounts) -> None:
    x, y = c.i(0), c.o()
    o = _custom(c)
    n = max(int(o.get("end_index", 0)) - int(o.get("start_index", 0)), 0)
    c.load(x, 2 * n)  # real and imaginary parts
    c.store(y, n)
    c.load(c.op_data, 2, 4)
    kernel_path(c, "int16")


@_kernel("SignalFilterBank")
def _signal_filter_bank(c: KernelCounts) -> None:
    """Accumulates each channel's weighted and unweighted bins into a work area in
    the op data (num_channels + 1 entries), then copies all but the first out."""
    x, weights, unweights, freq_starts, weight_starts, widths, y = (
        *(c.i(k) for k in range(6)),
        c.o(),
    )
    channels = c.elements(y)
    bins = 0
    values = constant_values(c.model.buffers, widths) if widths.dtype is DType.INT16 else None
    if values is not None:
        bins = int(values[: channels + 1].astype("int64").sum())
    for t in (x, weights, unweights):
        c.load(t, bins)
    for t in (freq_starts, weight_starts, widths):
        c.load(t, channels + 1)
    c.store(c.op_data, channels + 1, 8)
    c.load(c.op_data, 2 * (channels + 1), 8)  # the config's pointers, per channel
    c.copy(y, 0, c.op_data, 8, 8 * channels)
    kernel_path(c, "uint32")


@_kernel("SignalFilterBankSquareRoot")
def _signal_filter_bank_sqrt(c: KernelCounts) -> None:
    x, bits, y = c.i(0), c.i(1), c.o()
    c.load(x, c.elements(x))
    c.load(bits, 1)
    c.store(y, c.elements(y))
    kernel_path(c, "uint64")


@_kernel("SignalFilterBankSpectralSubtraction")
def _signal_spectral_subtraction(c: KernelCounts) -> None:
    x, y, noise = c.i(0), c.o(0), c.o(1)
    n = c.elements(x)
    c.load(x, 2 * n)
    c.store(y, n)
    c.load(c.op_data, 6 * n, 4)  # coefficients and the noise estimate, per channel
    c.store(c.op_data, n, 4)  # the noise estimate
    if _custom(c).get("clamping"):
        raise ValueError("clamping stores depend on the data")
    c.copy(noise, 0, c.op_data, 0, c.nbytes(noise))
    kernel_path(c, "uint32")


@_kernel("SignalPCAN")
def _signal_pcan(c: KernelCounts) -> None:
    """Copies the input to the output, then per channel reads the noise estimate,
    three gain table entries (one when the estimate is at most 2) and the output."""
    x, noise, lut, y = c.i(0), c.i(1), c.i(2), c.o()
    n = c.elements(x)
    c.copy(y, 0, x, 0, c.nbytes(y))
    c.load(noise, n)
    c.load(lut, 3 * n)
    c.load(y, n)
    c.store(y, n)
    c.load(c.op_data, 1, 4)
    kernel_path(c, "uint32")


@_kernel("SignalFilterBankLog")
def _signal_filter_bank_log(c: KernelCounts) -> None:
    x, y = c.i(0), c.o()
    c.load(x, c.elements(x))
    c.store(y, c.elements(y))
    c.load(c.op_data, 2, 4)
    kernel_path(c, "uint32")


def _kiss_stages(n: int) -> tuple[int, int]:
    """kiss_fft's radix-4 and radix-2 stages for a power of two ``n``."""
    fours = 0
    while n % 4 == 0 and n > 1:
        n //= 4
        fours += 1
    if n == 2:
        return fours, 1
    if n != 1:
        raise ValueError("only power-of-two FFT lengths are modelled")
    return fours, 0


def kiss_butterflies(n: int) -> tuple[int, int]:
    """kiss_fft's radix-4 and radix-2 butterflies for a complex FFT of ``n`` points."""
    fours, twos = _kiss_stages(n)
    return fours * n // 4, twos * n // 2


@functools.cache
def rfft_table() -> dict[str, str]:
    """SignalRfft (int16), per frame: "op_data" and "output" -> their loads and stores
    as items ("2:24*b4+3*n+2 / 2:18*b4"; see ``traffic_counts.role_items``), counts in
    b4 and b2 (radix-4 and radix-2 butterflies) and n (half the length). Measured on
    HOST_REFERENCE: the package's data/traffic_rfft.json (written by
    scripts/gen_traffic_rfft.py), read once."""
    data = resources.files("arenaplan.cost") / "data" / "traffic_rfft.json"
    return json.loads(data.read_text())["per_frame"]


@_kernel("SignalRfft")
def _signal_rfft(c: KernelCounts) -> None:
    """Per frame: the input copied into the scratch work area and zero padded to the
    FFT length, then kiss_fftr (int16): the complex FFT of half the length in the
    op data's buffer (radix-4 and radix-2 butterflies, the twiddles read there), and
    the split into the output's half spectrum. What the butterflies and the split
    load and store is measured per frame (:func:`rfft_table`)."""
    x, y = c.i(0), c.o()
    if x.dtype is not DType.INT16:
        raise ValueError("only the int16 RFFT is modelled")
    length = int(_custom(c).get("fft_length", 0))
    frame = x.shape[-1] if x.shape else 1
    frames = c.elements(x) // max(frame, 1)
    n = length // 2
    b4, b2 = kiss_butterflies(n)
    names = {"b4": b4, "b2": b2, "n": n}
    fft = items_traffic(rfft_table()["op_data"], names)
    split = items_traffic(rfft_table()["output"], names)
    od, work = c.op_data, c.scratch(0)
    for f, same in _residues(frames):  # frames of the same alignment, copied alike
        c.copy(work, 0, x, 2 * f * frame, 2 * frame, same)
    t_store = memcpy_traffic(2 * (length - frame), alignment(2 * frame), 16, c.build)[1]
    c.add(work, t_store.times(frames))  # the zero padding, every frame
    c.load(work, frames * n, 4)  # the input as n complex values, copied into the op data
    c.add(od, fft.times(frames))
    c.add(c.key(y), split.times(frames))
    kernel_path(c, "int16")


_UNARY = (
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RELU_0_TO_1",
    "LEAKY_RELU",
    "LOGISTIC",
    "TANH",
    "HARD_SWISH",
    "ELU",
    "ABS",
    "NEG",
    "EXP",
    "LOG",
    "SQRT",
    "RSQRT",
    "SQUARE",
    "SIN",
    "COS",
    "FLOOR",
    "CEIL",
    "ROUND",
    "LOGICAL_NOT",
)


@_kernel(*_UNARY)
def _unary(c: KernelCounts) -> None:
    """One load of the input and one store of the output per element."""
    x, y = c.i(0), c.o()
    n = c.elements(y)
    c.load(x, n)
    c.store(y, n)
    for width, k in per_element_table().get((c.op.opcode, _dt(x)), {}).items():
        c.load(c.op_data, k * n, width)
    kernel_path(c, _dt(x))


@_kernel("PAD", "PADV2")
def _pad(c: KernelCounts) -> None:
    """reference/pad.h: every output element stored once, every input element read
    once, the pad value read once (PADV2's third input, else the op data)."""
    x, y = c.i(0), c.o()
    c.load(x, c.elements(x))
    c.store(y, c.elements(y))
    value = c.i(2) if c.op.opcode == "PADV2" else None
    c.load(value, 1)
    kernel_path(c, _dt(x))


def _odometer_visits(dims: tuple[int, ...]) -> int:
    """Digits NextIndex touches while it counts through every index of ``dims``."""
    n, visits, inner = math.prod(dims), 0, 1
    for d in reversed(dims):
        visits += n // inner
        inner *= d
    return visits


def _memset(c: KernelCounts, key: Key, nbytes: int) -> None:
    c.add(key, memcpy_traffic(nbytes, 16, 16, c.build)[1])


@_kernel("MEAN", "SUM")
def _mean_sum(c: KernelCounts) -> None:
    """int8/int16: reference QuantizedMeanOrSum. The output and the int32 sums
    (scratch 0) zeroed; for every input element two ReducedOutputOffset calls (the
    index digits, scratch 1, and the dims), a scan of the resolved axes (scratch 2)
    and NextIndex; then each sum rescaled into the output. float MEAN over axes 1 and
    2 of a 4-D tensor (keep_dims): one read per input element."""
    x, axis_t, y = c.i(0), c.i(1), c.o()
    axes = _const_ints(c, axis_t)
    if axes is None:
        raise ValueError("non-constant axes")
    rank = len(x.shape)
    resolved: list[int] = []
    for a in axes:
        a = a + rank if a < 0 else a
        if a not in resolved:
            resolved.append(a)
    n, outputs = c.elements(x), c.elements(y)
    if x.dtype is DType.FLOAT32:
        keep = bool(c.opt("keep_dims", False))
        if c.op.opcode != "MEAN" or rank != 4 or sorted(resolved) != [1, 2] or not keep:
            raise ValueError("only float MEAN over axes 1 and 2 (keep_dims) is modelled")
        c.load(x, n)
        c.store(y, outputs)
        c.load(axis_t, len(axes))
        kernel_path(c, "float32")
        return
    if x.dtype not in (DType.INT8, DType.INT16):
        raise ValueError("not modelled")
    k = len(resolved)
    dims = _dims(x, rank)
    visits = _odometer_visits(dims)
    scan = sum(resolved.index(d) + 1 if d in resolved else k for d in range(rank))
    _memset(c, c.key(y), outputs * _size(y))
    c.store(y, outputs)
    c.load(x, n)
    c.load(axis_t, len(axes))
    total_sum = c.scratch(0)
    _memset(c, total_sum, 4 * outputs)
    c.load(total_sum, n + outputs, 4)
    c.store(total_sum, n, 4)
    index = c.scratch(1)
    _memset(c, index, 4 * rank)
    c.load(index, visits + n * (2 * rank - k), 4)
    c.store(index, visits, 4)
    axes_key = c.scratch(2)
    c.store(axes_key, k, 4)
    c.load(axes_key, n * scan + k * (k + 1) // 2, 4)
    c.load(("model",), n * (3 * rank - k) + visits, 4)  # the input's dims
    c.vars = {"k": k}
    kernel_path(c, _dt(x))
