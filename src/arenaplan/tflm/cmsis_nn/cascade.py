"""ARENAPLAN_CASCADE in a CMSIS-NN build: arenaplan's own kernel
(src/arenaplan/firmware/arenaplan_cascade.cc, docs/cascade.md) runs its CONV_2D and
DEPTHWISE_CONV_2D steps by the CMSIS-NN functions TFLM's
tensorflow/lite/micro/kernels/cmsis_nn/conv.cc and
tensorflow/lite/micro/kernels/cmsis_nn/depthwise_conv.cc call (int8: the s8 wrappers;
int16: ``arm_convolve_wrapper_s16`` and ``arm_depthwise_conv_s16``), and its int8
AVERAGE_POOL_2D and MAX_POOL_2D steps by those of pooling.cc (``arm_avgpool_s8``,
``arm_max_pool_s8``), on windows of rows; word 38 may name another way for an int8
CONV_2D (1: ``arm_convolve_s8`` itself; 2: the kernel's own pointwise loop). Not a
kernel of ``kernels/cmsis_nn/`` (no ``KERNELS`` here): what the kernel asks for
besides the reference facts (``tflm.kernels.cascade``).

- scratch (Prepare): the chain's scratch (as the reference kernel), then a work
  buffer when above 0: ``window + buffer``, the window rounded up to 16 when
  ``buffer`` is above 0, where
  - ``window``: over the convolutions (not word 38's path 2, which reads a wrapping
    window in two pieces) and int8 pools reading a ring of fewer rows than their
    ``in_h``, the largest ``min((block_rows-1)*stride_h + (filter_h-1)*dilation_h
    + 1, in_h) * in_w * in_c`` elements above one row, in bytes (a window that wraps
    around the ring is copied there);
  - ``buffer``: the largest ``arm_convolve_wrapper_s8_get_buffer_size`` /
    ``arm_depthwise_conv_wrapper_s8_get_buffer_size`` over every int8 step's window
    (``buffer_sizes``): an input of the window's rows, padding above it the rows
    before its first, an output of the step's rows (word 38's path 1:
    ``arm_convolve_s8_get_buffer_size``; path 2: none); int16 CONV_2D
    ``arm_convolve_wrapper_s16_get_buffer_size`` (the window does not change it),
    int16 DEPTHWISE_CONV_2D none (TFLM passes ``arm_depthwise_conv_s16`` no buffer);
    an int8 average pool ``arm_avgpool_s8_get_buffer_size`` (the same every step),
    a max pool none;
- tail, refusals, in place: as the reference facts (OpData stays 4 bytes).
"""

from __future__ import annotations

from arenaplan.ir.cascade_format import (
    BLOCK_ROWS,
    CONV_PATH,
    DIL_H,
    DIL_W,
    FILTER_H,
    FILTER_W,
    IN_C,
    IN_H,
    IN_W,
    KIND,
    KINDS,
    OUT_C,
    OUT_W,
    PAD_LEFT,
    PAD_TOP,
    PATH_IM2COL,
    PATH_POINTWISE,
    RING_ROWS,
    SRC0,
    STRIDE_H,
    STRIDE_W,
    ChainBlob,
    decode,
    element_bytes,
    row_geometry,
)
from arenaplan.ir.model import Operator
from arenaplan.tflm.cmsis_nn.buffer_sizes import (
    DW_ONE_IN_CH_THRESHOLD,
    Dims,
    Window,
    avgpool_buffer,
    convolve_s8_buffer,
    convolve_wrapper_s8_buffer,
    convolve_wrapper_s16_buffer,
    depthwise_wrapper_s8_buffer,
)

CONV, DEPTHWISE = KINDS["CONV_2D"], KINDS["DEPTHWISE_CONV_2D"]
AVG_POOL, MAX_POOL = KINDS["AVERAGE_POOL_2D"], KINDS["MAX_POOL_2D"]


def windowed(r: tuple[int, ...]) -> bool:
    """Record ``r``'s steps run by CMSIS-NN on a window of rows: a convolution, or an
    int8 pool (an int16 one keeps the reference arithmetic)."""
    pool = r[KIND] in (AVG_POOL, MAX_POOL) and element_bytes(r) == 1
    return r[KIND] in (CONV, DEPTHWISE) or pool


def _buffer(features: str, r: tuple[int, ...]) -> int:
    """The largest buffer CMSIS-NN asks for a step of windowed record ``r``."""
    if r[KIND] == AVG_POOL:
        return avgpool_buffer(features, r[IN_C])
    if r[KIND] == MAX_POOL or r[CONV_PATH] == PATH_POINTWISE:
        return 0  # none, or the kernel's own loop
    if element_bytes(r) == 2:
        if r[KIND] != CONV:
            return 0
        return convolve_wrapper_s16_buffer(features, _whole(r), Dims(1, *_taps(r)))
    largest = 0
    for y, n, span in row_geometry(r).steps():
        if span.empty:
            continue  # wholly in the padding: the reference path
        p = Window(
            r[STRIDE_H],
            r[STRIDE_W],
            span.first - (y * r[STRIDE_H] - r[PAD_TOP]),
            r[PAD_LEFT],
            r[DIL_H],
            r[DIL_W],
        )
        x = Dims(1, span.rows, r[IN_W], r[IN_C])
        out = Dims(1, n, r[OUT_W], r[OUT_C])
        if r[CONV_PATH] == PATH_IM2COL:
            size = convolve_s8_buffer(features, x, Dims(1, r[FILTER_H], r[FILTER_W], r[IN_C]))
        elif r[KIND] == CONV:
            size = convolve_wrapper_s8_buffer(
                features, p, x, Dims(1, r[FILTER_H], r[FILTER_W], r[IN_C]), out
            )
        elif features == "mve" and x.c == 1 and out.c > DW_ONE_IN_CH_THRESHOLD:
            # arm_deptwise_conv_s8_one_in_ch_get_buffer_size_mve: a convolution's
            # size for these params (the stride is set here), plus the filter
            as_conv = Dims(out.c, r[FILTER_H], r[FILTER_W], 1)
            size = convolve_wrapper_s8_buffer("mve", p, x, as_conv, out)
            size += out.c * r[FILTER_H] * r[FILTER_W]
        else:
            f = Dims(1, r[FILTER_H], r[FILTER_W], r[OUT_C])
            size = depthwise_wrapper_s8_buffer(features, p, x, f, out)
        largest = max(largest, size)
    return largest


def _whole(r: tuple[int, ...]) -> Dims:
    """The source of convolution record ``r`` as CMSIS-NN sees it (heights aside)."""
    return Dims(1, r[IN_H], r[IN_W], r[IN_C])


def _taps(r: tuple[int, ...]) -> tuple[int, int, int]:
    """A CONV_2D's filter (h, w, in_c) as TFLM's CMSIS-NN kernel gives it."""
    return r[FILTER_H], r[FILTER_W], r[IN_C]


def _window(chain: ChainBlob, r: tuple[int, ...]) -> int:
    """Bytes of the largest window of record ``r`` that may wrap around its ring."""
    src = r[SRC0]
    if not windowed(r) or src < 0 or chain.records[src][RING_ROWS] >= r[IN_H]:
        return 0
    if r[CONV_PATH] == PATH_POINTWISE:
        return 0  # read in two pieces where it wraps
    block = max(r[BLOCK_ROWS], 1)
    rows = (block - 1) * r[STRIDE_H] + (r[FILTER_H] - 1) * r[DIL_H] + 1
    rows = min(rows, r[IN_H])
    return rows * r[IN_W] * r[IN_C] * element_bytes(r) if rows > 1 else 0


def work_bytes(features: str, op: Operator) -> int:
    """The work buffer the kernel requests in a CMSIS-NN build of ``features``."""
    return chain_work_bytes(features, decode(op))


def chain_work_bytes(features: str, chain: ChainBlob) -> int:
    """``work_bytes`` of a decoded chain."""
    steps = [r for r in chain.records if windowed(r)]
    window = max((_window(chain, r) for r in steps), default=0)
    buffer = max((_buffer(features, r) for r in steps), default=0)
    return (window + 15) // 16 * 16 + buffer if buffer > 0 else window


def scratch(features: str, op: Operator) -> list[int]:
    """Every request of the kernel's Prepare, in order: the chain's scratch, then the
    work buffer (each when above 0)."""
    sizes = [decode(op).scratch, work_bytes(features, op)]
    return [n for n in sizes if n > 0]
