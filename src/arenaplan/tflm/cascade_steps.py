"""What an ARENAPLAN_CASCADE's steps cost in a CMSIS-NN build: instructions, estimated.

A cascade computes each element once, as the operators it replaces; in a CMSIS-NN
build its convolutions call CMSIS-NN (or the kernel's pointwise loop, word 38) once
per step of ``block_rows`` rows, where TFLM's kernels call it once per operator. What
that changes is counted, for the chain as the kernel runs it (``chain_counts``) and
for the operators it replaced as TFLM's CMSIS-NN kernels run them
(``original_counts``); the multiply-accumulates themselves are the same both ways
and are not counted, so the estimate is of the difference (``extra_instructions``)
and of what differs between two ways to run a chain (``cascade_instructions``):

- per call of a convolution, by the function the CMSIS-NN wrapper calls for the step's
  window (``family``: ``conv_1x1`` CMSIS-NN's 1x1 product, ``conv`` its im2col
  convolution, ``dw_3x3``, ``dw_opt`` and ``dw`` the depthwise ones): ``.calls``;
  ``conv_1x1.sums``, the filter elements its C and DSP product adds up again on every
  call (what one output pixel costs); ``.left``, the multiply-accumulates of pixels
  left over when a call's pixels do not fill the product's groups (2; 4 with MVE);
- word 38's paths, as differences from the wrapper's 1x1 product: ``pointwise.*``
  (path 2, the kernel's own loop: ``.macs`` and ``.outputs`` per multiply-accumulate
  and output element, may be below 0; ``.calls``; ``.left`` an odd pixel's) and
  ``im2col.*`` (path 1 for a 1x1 convolution: arm_convolve_s8; the same for a larger
  filter is what the wrapper calls, so counted as ``conv``);
- ``steps``: steps of every stage (the kernel's own work per step: the pull order,
  the record read, CMSIS-NN's description of the window); ``copies`` and
  ``copy_bytes``: windows copied because they wrap around their ring;
- ``add.calls``, ``mul.calls``, ``pool.calls``: CMSIS-NN's element-wise ADD and MUL
  and its pools (a step per call in the cascade, one call per operator in TFLM);
  ``mean_rows.elements``: MEAN_ROWS's sums row by row, less CMSIS-NN's average pool
  over the whole input, per element;
- ``cascades``, ``operators``: one cascade operator, and each TFLM operator it
  replaced (the interpreter's and each kernel's fixed work).

The time model (``cost.timing``, ``cost.roofline``) charges that difference as a
convolution's work (``extra_work``: over ``mac_instructions``, the instructions per
multiply-accumulate of CMSIS-NN's 1x1 product measured with the coefficients) at the
target's convolution rate; the cascade pass compares ways to run a chain by
``cascade_instructions`` (``passes.cascade_choice``).

Instructions are linear in the counts (``instructions(counts, kernels)``), with
coefficients measured per kernel set (callgrind on host-cmsis_nn; qemu counting on
arm32-cmsis_nn and m55-cmsis_nn): the least-squares fit, relative to the original
model's instructions, of cascades of small synthetic chains against their plain
operators, in ``data/cascade_steps.json``, written by ``python
scripts/gen_cascade_steps.py`` (its header names the builds, the counters and the
fit). Every figure is an estimate; a count the table has no coefficient for costs
nothing. Not modelled: 1x1 strided convolutions and 1xN ones (counted as ``conv``),
steps wholly in the padding (the reference path), MEAN (the reference arithmetic
both ways), SUB, PAD and the activations (the same arithmetic both ways: only their
steps count), int16 stages (CMSIS-NN's s16 functions: only their steps count).
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from importlib import resources

from arenaplan.ir import cascade_format as f
from arenaplan.ir.row_range import RowRange
from arenaplan.tflm.cmsis_nn.buffer_sizes import (
    DW_ONE_IN_CH_THRESHOLD,
    PIXEL_GROUP,
    Dims,
    Window,
    is_1x1,
)
from arenaplan.tflm.kernel_sets import cmsis_features

FAMILIES = ("conv_1x1", "conv", "dw_3x3", "dw_opt", "dw")
PATH_COUNTS = tuple(
    f"{way}.{t}" for way in ("pointwise", "im2col") for t in ("macs", "outputs", "calls", "left")
)
FAMILY_COUNTS = (*(f"{fam}.calls" for fam in FAMILIES), "conv_1x1.sums", "conv_1x1.left",
                 "conv.left")  # fmt: skip
KERNEL_COUNTS = ("steps", "copies", "copy_bytes", "cascades", "operators")
OTHER_COUNTS = ("add.calls", "mul.calls", "pool.calls", "mean_rows.elements")
COUNTS = (*FAMILY_COUNTS, *PATH_COUNTS, *KERNEL_COUNTS, *OTHER_COUNTS)
# counts whose coefficient is a difference between two ways (may be below 0)
DIFFERENCES = (*PATH_COUNTS, "mean_rows.elements")
CONVS = (f.KINDS["CONV_2D"], f.KINDS["DEPTHWISE_CONV_2D"])
POOLS = (f.KINDS["AVERAGE_POOL_2D"], f.KINDS["MAX_POOL_2D"])


@functools.cache
def step_table() -> dict[str, dict]:
    """Kernel set -> its entry of data/cascade_steps.json (``coefficients``: count ->
    instructions; ``variant``, ``counter``, ``fit``), read once."""
    data = resources.files("arenaplan.tflm") / "data" / "cascade_steps.json"
    return json.loads(data.read_text())["kernels"]


def coefficients(kernels: str) -> dict[str, float]:
    """Instructions per count for ``kernels`` (empty for a set the table lacks)."""
    entry = step_table().get(kernels)
    return dict(entry["coefficients"]) if entry else {}


def mac_instructions(kernels: str) -> float | None:
    """Instructions per multiply-accumulate of CMSIS-NN's 1x1 product as TFLM calls it
    in the build of ``kernels`` (measured with the coefficients), None without one."""
    entry = step_table().get(kernels)
    return float(entry["mac_instructions"]) if entry else None


def instructions(counts: Counter[str], kernels: str) -> float:
    """The instructions ``counts`` cost in the build of ``kernels`` (an estimate)."""
    theta = coefficients(kernels)
    return sum(theta.get(name, 0.0) * n for name, n in counts.items())


def family(features: str, r: Sequence[int], pad_top: int, rows: int) -> str:
    """The function the CMSIS-NN wrapper calls (``arm_convolve_wrapper_s8``,
    ``arm_depthwise_conv_wrapper_s8``) for a step of convolution record ``r`` in a
    build of CMSIS-NN ``features``, whose window is ``rows`` input rows below
    ``pad_top`` rows of padding."""
    p = Window(r[f.STRIDE_H], r[f.STRIDE_W], pad_top, r[f.PAD_LEFT], r[f.DIL_H], r[f.DIL_W])
    x = Dims(1, rows, r[f.IN_W], r[f.IN_C])
    if r[f.KIND] == f.KINDS["CONV_2D"]:
        filt = Dims(r[f.OUT_C], r[f.FILTER_H], r[f.FILTER_W], r[f.IN_C])
        return "conv_1x1" if is_1x1(p, x, filt) else "conv"
    if features == "mve" and r[f.IN_C] == 1 and r[f.OUT_C] > DW_ONE_IN_CH_THRESHOLD:
        return "conv"  # run as a convolution
    if r[f.DEPTH_MULT] != 1 or (r[f.DIL_H], r[f.DIL_W]) != (1, 1):
        return "dw"
    small_pad = pad_top <= 1 and r[f.PAD_LEFT] <= 1
    if features != "mve" and (r[f.FILTER_H], r[f.FILTER_W]) == (3, 3) and small_pad:
        return "dw_3x3"
    return "dw_opt"


def _steps(r: Sequence[int], block: int) -> Iterator[tuple[int, int, RowRange]]:
    """Each step of ``block`` rows: its first row, rows, and source rows (empty: none)."""
    return f.row_geometry([*r[: f.BLOCK_ROWS], block, *r[f.BLOCK_ROWS + 1 :]]).steps()


def _conv_counts(features: str, r: Sequence[int], block: int, out: Counter[str]) -> None:
    """A convolution's calls, ``block`` rows each (its out_h: TFLM's one call)."""
    taps = r[f.FILTER_H] * r[f.FILTER_W] * (r[f.IN_C] if r[f.KIND] == CONVS[0] else 1)
    for y, n, span in _steps(r, block):
        if span.empty:
            continue  # wholly in the padding: the reference path (not modelled)
        fam = family(features, r, span.first - (y * r[f.STRIDE_H] - r[f.PAD_TOP]), span.rows)
        path = r[f.CONV_PATH]
        way = {f.PATH_POINTWISE: "pointwise", f.PATH_IM2COL: "im2col"}.get(path, fam)
        if way == "im2col" and fam != "conv_1x1":
            way = fam  # arm_convolve_s8: what the wrapper calls for this filter
        pixels = n * r[f.OUT_W]
        group = 2 if way == "pointwise" else PIXEL_GROUP[features]
        out[f"{way}.calls"] += 1
        if way in ("conv_1x1", "conv", "pointwise", "im2col"):
            out[f"{way}.left"] += (pixels % group) * r[f.OUT_C] * taps
        if way in ("pointwise", "im2col"):
            out[f"{way}.macs"] += pixels * r[f.OUT_C] * taps
            out[f"{way}.outputs"] += pixels * r[f.OUT_C]
        elif way == "conv_1x1":
            out[f"{way}.sums"] += r[f.OUT_C] * taps


def _copies(records: Sequence[Sequence[int]], r: Sequence[int], out: Counter[str]) -> None:
    """Windows the kernel copies: a convolution (not the pointwise path, which reads
    a wrapping window in two pieces) or a pool reading a ring of fewer rows than its
    input, whose window of more than one row wraps around the ring's end."""
    src = r[f.SRC0]
    if not 0 <= src < len(records) or r[f.CONV_PATH] == f.PATH_POINTWISE:
        return  # the operator's input (whole), a stage not given, or read in pieces
    ring = records[src][f.RING_ROWS]
    if ring >= r[f.IN_H]:
        return
    row_bytes = r[f.IN_W] * r[f.IN_C]
    for _, _, span in _steps(r, max(r[f.BLOCK_ROWS], 1)):
        if span.rows <= 1:
            continue
        if span.first % ring + span.rows > ring:
            out["copies"] += 1
            out["copy_bytes"] += span.rows * row_bytes


def chain_counts(records: Sequence[Sequence[int]], kernels: str) -> Counter[str]:
    """The counts of a cascade of ``records`` as the kernel runs it in the build of
    CMSIS-NN ``kernels`` (empty for the reference kernels)."""
    features = cmsis_features(kernels)
    out: Counter[str] = Counter()
    if features is None:
        return out
    out["cascades"] += 1
    for r in records:
        kind = f.KIND_NAMES[r[f.KIND]]
        block = max(r[f.BLOCK_ROWS], 1)
        steps = -(-r[f.OUT_H] // block)
        if kind in f.WHOLE_INPUT:
            steps = r[f.IN_H] + 1  # a row added at a time, then the output
            if kind == f.MEAN_ROWS:
                out["mean_rows.elements"] += r[f.IN_H] * r[f.IN_W] * r[f.IN_C]
        out["steps"] += steps
        if r[f.ELEMENT_TYPE] != f.ELEMENT_TYPES["INT8"]:
            continue  # CMSIS-NN's s16 functions: not in the model (only the steps)
        if r[f.KIND] in CONVS:
            _conv_counts(features, r, block, out)
        elif kind in ("ADD", "MUL"):
            out[f"{kind.lower()}.calls"] += steps
        elif r[f.KIND] in POOLS:
            out["pool.calls"] += steps
        if r[f.KIND] in (*CONVS, *POOLS):
            _copies(records, r, out)
    return out


def original_counts(records: Sequence[Sequence[int]], kernels: str) -> Counter[str]:
    """The counts of the operators ``records`` stand for, as TFLM's CMSIS-NN kernels
    run them: a convolution in one call of its wrapper, ADD, MUL and a pool in one
    call (MEAN_ROWS by CMSIS-NN's average pool: the cascade's count holds the
    difference)."""
    features = cmsis_features(kernels)
    out: Counter[str] = Counter()
    if features is None:
        return out
    for r in records:
        kind = f.KIND_NAMES[r[f.KIND]]
        out["operators"] += 1
        if r[f.ELEMENT_TYPE] != f.ELEMENT_TYPES["INT8"]:
            continue
        if r[f.KIND] in CONVS:
            whole = [*r]
            whole[f.CONV_PATH] = f.PATH_WRAPPER
            _conv_counts(features, whole, r[f.OUT_H], out)
        elif kind in ("ADD", "MUL"):
            out[f"{kind.lower()}.calls"] += 1
        elif r[f.KIND] in POOLS:
            out["pool.calls"] += 1
    return out


def cascade_instructions(records: Sequence[Sequence[int]], kernels: str) -> float:
    """Estimated instructions of one invoke of a cascade of ``records``."""
    return instructions(chain_counts(records, kernels), kernels)


def extra_instructions(records: Sequence[Sequence[int]], kernels: str) -> float:
    """Estimated instructions the cascade runs beyond the operators it replaced (below
    0: fewer), in the build of ``kernels``; 0 for the reference kernels."""
    if cmsis_features(kernels) is None:
        return 0.0
    cascade = chain_counts(records, kernels)
    original = original_counts(records, kernels)
    return instructions(cascade, kernels) - instructions(original, kernels)


def extra_work(records: Sequence[Sequence[int]], kernels: str) -> int:
    """``extra_instructions`` as multiply-accumulates of a convolution (over
    ``mac_instructions``): the work the time model charges at a target's convolution
    rate for a cascade's steps (0 for the reference kernels or an unmeasured set)."""
    per_mac = mac_instructions(kernels) if cmsis_features(kernels) is not None else None
    if not per_mac:
        return 0
    return round(extra_instructions(records, kernels) / per_mac)
