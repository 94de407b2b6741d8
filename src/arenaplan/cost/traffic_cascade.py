"""Memory traffic of ``ARENAPLAN_CASCADE`` (src/arenaplan/firmware/arenaplan_cascade.cc),
estimated from its chain: the data terms of each stage's loops.

Each stage computes each element of its output once, with the arithmetic of the
stock kernel it stands for, so its data terms are that kernel's (``traffic_tflm``)
with three changes: an intermediate tensor is read from and written to the
operator's scratch buffer (its rings) instead of a tensor; the per-channel
multipliers and shifts are read from the stage's constant tensor (flash) instead
of the persistent arena; a constant operand that broadcasts is spread, a row at a
time, into a row of the scratch (a load from the constant and a store an element)
and read from there. Activations are int8 or int16 (``element_type``: a ring's element
is 1 or 2 bytes). Fixed per-invoke terms are not measured for this kernel, so every
figure is an estimate (``exact`` False).
"""

from __future__ import annotations

from arenaplan.cost.traffic_counts import Key
from arenaplan.cost.traffic_kernel import Kernel, KernelCounts, kernel_path, tap_count
from arenaplan.ir import cascade_format as f
from arenaplan.ir.model import Tensor


def _where(c: KernelCounts, src: int) -> Tensor | Key | None:
    """An operator input (src < 0) or its scratch buffer (a stage's ring)."""
    return c.i(f.source_input(src)) if src < 0 else c.scratch(0)


def _second(c: KernelCounts, w: tuple[int, ...]) -> Tensor | Key | None:
    """Where a two-operand stage reads its second operand: an activation (src1), or
    its constant (flash) row by row, or that row spread into the scratch."""
    if w[f.CONST_IN] < 0:
        return _where(c, w[f.SRC1])
    return c.i(w[f.CONST_IN]) if f.const_row_in_place(w) else c.scratch(0)


def _stage(c: KernelCounts, w: tuple[int, ...], last: bool) -> None:
    kind = f.KIND_NAMES[w[f.KIND]]
    out = c.o() if last else c.scratch(0)
    src = _where(c, w[f.SRC0])
    e = f.element_bytes(w)  # bytes of an activation element, in tensors and rings
    ih, iw, ic, oh, ow, oc = (w[k] for k in (f.IN_H, f.IN_W, f.IN_C, f.OUT_H, f.OUT_W, f.OUT_C))
    outputs = oh * ow * oc
    if kind in ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D"):
        taps = tap_count(oh, ih, w[f.FILTER_H], w[f.STRIDE_H], w[f.PAD_TOP], w[f.DIL_H])
        taps *= tap_count(ow, iw, w[f.FILTER_W], w[f.STRIDE_W], w[f.PAD_LEFT], w[f.DIL_W])
        per_tap = {"CONV_2D": ic * oc}.get(kind, oc)
        c.load(src, taps * per_tap, e)
        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            c.load(c.i(w[f.FILTER_IN]), taps * per_tap)
            c.load(c.i(w[f.BIAS_IN]) if w[f.BIAS_IN] >= 0 else None, outputs)
            c.load(c.i(w[f.QUANT_IN]), 2 * outputs, 4)
    elif kind == "TRANSPOSE_CONV":  # each input pixel's taps that land in the output
        taps = tap_count(ih, oh, w[f.FILTER_H], w[f.STRIDE_H], w[f.PAD_TOP])
        taps *= tap_count(iw, ow, w[f.FILTER_W], w[f.STRIDE_W], w[f.PAD_LEFT])
        c.load(src, taps * ic * oc, e)
        c.load(c.i(w[f.FILTER_IN]), taps * ic * oc)
        c.load(c.i(w[f.BIAS_IN]) if w[f.BIAS_IN] >= 0 else None, outputs)
        c.load(c.i(w[f.QUANT_IN]), 2 * outputs, 4)
    elif kind == "CONCATENATION":  # each element of both sources copied once
        c.load(src, oh * ow * ic, e)
        c.load(_where(c, w[f.SRC1]), oh * ow * (oc - ic), e)
    elif kind in f.ELEMENTWISE:  # each input element read once (both inputs': two)
        c.load(src, outputs, e)
        if kind in f.TWO_INPUTS:
            c.load(_second(c, w), outputs, e)
        if w[f.CONST_IN] >= 0 and not f.const_row_in_place(w):
            # the constant's row spread into the scratch, then read from there
            c.load(c.i(w[f.CONST_IN]), outputs)
            c.store(c.scratch(0), outputs)
    elif kind == "PAD":
        c.load(src, ih * iw * ic, e)
    else:  # MEAN_ROWS, MEAN: each input element added to its channel's sum
        c.load(src, ih * iw * ic, e)
        c.load(c.scratch(0), ih * iw * ic, 4)
        c.store(c.scratch(0), ih * iw * ic + oc, 4)
    c.store(out, outputs, e)


def _cascade(c: KernelCounts) -> None:
    chain = f.decode(c.op)
    last = len(chain.records) - 1
    for s, w in enumerate(chain.records):
        _stage(c, w, s == last)
    kernel_path(c, "int8" if f.element_bytes(chain.records[last]) == 1 else "int16")


KERNELS: dict[str, Kernel] = {f.OPCODE: _cascade}  # opcode -> its kernel model
