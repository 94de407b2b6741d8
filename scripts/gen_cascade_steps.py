#!/usr/bin/env python3
"""Write what a cascade's steps cost in each CMSIS-NN build, measured and fitted.

    python scripts/gen_cascade_steps.py [--kernels cmsis_nn,cmsis_nn+dsp,cmsis_nn+mve] [--out FILE]

For each kernel set (``KERNEL_VARIANTS``: the TFLM build that runs it), the script
builds small synthetic chains (``CASES``: pointwise, 3x3 and strided convolutions,
depthwise ones of three CMSIS-NN paths, windows that wrap around a ring, a residual
ADD and a MUL, MEAN_ROWS and windowed pools), each as the plain operators and as
cascades of several steps and word-38 paths, and counts the instructions of one
invoke of every model (``arenaplan.tflm.verify.instructions``: callgrind on the host
build, qemu's instruction count on the ARM ones). Each model gives one equation:
its instructions = the coefficients . its counts (``arenaplan.tflm.cascade_steps``:
``chain_counts`` for a cascade, ``original_counts`` for the plain operators). The
coefficients are the non-negative least-squares fit of every equation of a kernel
set, each weighted by the inverse of its instructions (relative errors), rounded to
3 significant digits; the fit's largest and root-mean-square relative residuals go
beside them. The table goes to ``src/arenaplan/tflm/data/cascade_steps.json``, which
``arenaplan.tflm.cascade_steps`` reads. The chains of the fit are not the networks
the estimate is judged on (``python benchmarks/cascade.py --steps``).

The header records the TFLM bundle and this command; each kernel set its variant,
compiler and counter. Needs the builds (``python scripts/build_tflm.py --variants
host-cmsis_nn,arm32-cmsis_nn,m55-cmsis_nn``), valgrind for the host and qemu for the
ARM ones; a few minutes on the host, tens under qemu. Exit status 0 written, 1 the
fit failed, 2 a build is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import lsq_linear

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("src", "tests")]
from kits.opmodels import I8, Net  # noqa: E402

from arenaplan.export.tflite_writer import write_model  # noqa: E402
from arenaplan.ir.cascade_format import (  # noqa: E402
    IN_C,
    KIND,
    KINDS,
    OUT_C,
    OUT_H,
    OUT_W,
    PATH_POINTWISE,
    decode,
    is_pointwise,
)
from arenaplan.passes.cascade import apply  # noqa: E402
from arenaplan.passes.cascade_chain import Steps, chain_of  # noqa: E402
from arenaplan.reader import read_model_bytes  # noqa: E402
from arenaplan.runtime.registry import parse_kernels  # noqa: E402
from arenaplan.tflm.cascade_steps import COUNTS, DIFFERENCES, chain_counts, original_counts  # noqa: E402
from arenaplan.tflm.verify.instructions import instructions_available, invoke_instructions  # noqa: E402
from arenaplan.tflm.verify.native import VARIANTS, bundle_key, variant_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "arenaplan" / "cost" / "data" / "cascade_steps.json"
KERNEL_VARIANTS = {"cmsis_nn": "host-cmsis_nn", "cmsis_nn+dsp": "arm32-cmsis_nn",
                   "cmsis_nn+mve": "m55-cmsis_nn"}  # fmt: skip
ABOUT = (
    "Instructions of one invoke per count of arenaplan.tflm.cascade_steps (a cascade's "
    "steps: per CMSIS-NN convolution family its MACs, outputs, calls, filter sums per "
    "call and left-over MACs; the kernel's steps and window copies; element-wise calls "
    "and elements; MEAN_ROWS and pools; one cascade, one TFLM operator), per CMSIS-NN "
    "kernel set: the non-negative least-squares fit, relative, to the instructions of "
    "small synthetic chains counted in that set's TFLM build. Estimates."
)
SIGNIFICANT = 3  # digits kept of each coefficient
NOISE = 1e-6  # a fitted coefficient below this (instructions per count) is round-off


class FitError(Exception):
    """The measurements do not give a table (one line)."""


# ---- the synthetic chains --------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A chain of plain operators (``build``) and the cascades measured of it: each
    a (rows per step of every stage, whether pointwise stages take word 38's path 2,
    whether the other convolutions take path 1)."""

    name: str
    build: Callable[[], bytes]
    cascades: tuple[tuple[int, bool, bool], ...]


Shape = tuple[int, int, int]  # rows, columns, channels


def _conv(
    n: Net, x: int, shape: Shape, out_c: int, k: int, stride: int = 1, dw: bool = False, mult=1
) -> tuple[int, Shape]:
    """A CONV_2D (``dw``: a DEPTHWISE_CONV_2D of multiplier ``mult``) with SAME padding
    after ``x`` of ``shape``; its output and the output's shape."""
    h, w, c = shape
    out = (-(-h // stride), -(-w // stride), c * mult if dw else out_c)
    filt = n.weights((1, k, k, out[2]), 3) if dw else n.weights((out_c, k, k, c), 0)
    bias = n.bias(out[2], per_channel=out[2])
    y = n.act((1, *out), I8, 0.06, -5)
    opts = {"padding": "SAME", "stride_h": stride, "stride_w": stride}
    if dw:
        n.op("DEPTHWISE_CONV_2D", [x, filt, bias], [y], depth_multiplier=mult, **opts)
    else:
        n.op("CONV_2D", [x, filt, bias], [y], **opts)
    return y, out


def single(
    shape: Shape, out_c: int, k: int, stride: int = 1, dw: bool = False, mult: int = 1
) -> Callable[[], bytes]:
    """One convolution (``_conv``'s arguments)."""

    def build() -> bytes:
        n = Net("step")
        x = n.act((1, *shape), I8, 0.05, 7)
        y, _ = _conv(n, x, shape, out_c, k, stride, dw, mult)
        return n.done([x], [y])

    return build


def wrapping(shape: Shape) -> bytes:
    """A 3x3 convolution, then a depthwise one reading its ring (windows wrap)."""
    n = Net("wrap")
    x = n.act((1, *shape), I8, 0.05, 7)
    a, s = _conv(n, x, shape, 16, 3)
    y, _ = _conv(n, a, s, 0, 3, dw=True)
    return n.done([x], [y])


def residual(opcode: str) -> Callable[[], bytes]:
    """Two pointwise branches of the input joined by ``opcode`` (ADD or MUL)."""

    def build() -> bytes:
        n = Net("residual")
        shape = (8, 6, 12)
        x = n.act((1, *shape), I8, 0.05, 7)
        a, s = _conv(n, x, shape, 16, 1)
        b, _ = _conv(n, x, shape, 16, 1)
        y = n.act((1, *s), I8, 0.08, 3)
        n.op(opcode, [a, b], [y], fused_activation_function="NONE")
        return n.done([x], [y])

    return build


def pooled(opcode: str, k: int, stride: int, whole: bool = False) -> Callable[[], bytes]:
    """A pointwise convolution, then a pool (``whole``: over the whole input)."""

    def build() -> bytes:
        n = Net("pool")
        shape = (10, 8, 8)
        x = n.act((1, *shape), I8, 0.05, 7)
        a, (h, w, c) = _conv(n, x, shape, 16, 1)
        fh, fw = (h, w) if whole else (k, k)
        out = (1, 1) if whole else (-(-h // stride), -(-w // stride))
        y = n.act((1, *out, c), I8, 0.06, -5)
        opts = {"padding": "VALID" if whole else "SAME", "stride_h": stride, "stride_w": stride}
        n.op(opcode, [a], [y], filter_height=fh, filter_width=fw, **opts)
        return n.done([x], [y])

    return build


ONE_TWO_ALL = ((1, False, False), (2, False, False), (0, False, False))
PATHS = (
    *((rows, True, False) for rows in (1, 2, 3, 0)),  # pointwise loop (path 2)
    *((rows, False, True) for rows in (1, 3)),  # CMSIS-NN's im2col (path 1)
)
ROW_ONE_ALL = ((1, False, False), (0, False, False))
LOOPED = ((1, True, False), (0, True, False))
CASES = (
    Case("pointwise 8x5 32->48", single((8, 5, 32), 48, 1), (*ONE_TWO_ALL, (4, 0, 0), *PATHS)),
    Case("pointwise 6x12 16->24", single((6, 12, 16), 24, 1), (*ONE_TWO_ALL, *PATHS)),
    Case("pointwise 4x3 96->64", single((4, 3, 96), 64, 1), (*ONE_TWO_ALL, *PATHS)),
    Case("pointwise 9x7 8->10", single((9, 7, 8), 10, 1), (*ONE_TWO_ALL, *PATHS)),
    Case("pointwise 3x5 160->144", single((3, 5, 160), 144, 1), (*ONE_TWO_ALL, *PATHS)),
    Case("conv3x3 10x8 8->16", single((10, 8, 8), 16, 3), ONE_TWO_ALL),
    Case("conv3x3/2 16x9 1->8", single((16, 9, 1), 8, 3, 2), (*ONE_TWO_ALL, (3, False, False))),
    Case("conv3x3 7x6 16->12", single((7, 6, 16), 12, 3), ONE_TWO_ALL),
    Case("pointwise/2 8x8 8->16", single((8, 8, 8), 16, 1, 2), ROW_ONE_ALL),
    Case("dw3x3 12x8x16", single((12, 8, 16), 0, 3, dw=True), ONE_TWO_ALL),
    Case("dw3x3/2 10x7x32", single((10, 7, 32), 0, 3, 2, dw=True), ONE_TWO_ALL),
    Case("dw5x5 10x8x16", single((10, 8, 16), 0, 5, dw=True), ONE_TWO_ALL),
    Case("dw3x3*2 8x6x8", single((8, 6, 8), 0, 3, dw=True, mult=2), ONE_TWO_ALL),
    Case("wrap 12x6x4", lambda: wrapping((12, 6, 4)), ONE_TWO_ALL[:2]),
    Case("add", residual("ADD"), (*LOOPED, (1, False, False))),
    Case("mul", residual("MUL"), LOOPED),
    Case("mean_rows", pooled("AVERAGE_POOL_2D", 0, 1, whole=True), (LOOPED[0], ROW_ONE_ALL[1])),
    Case("maxpool 2/2", pooled("MAX_POOL_2D", 2, 2), LOOPED[:1]),
    Case("avgpool 3/1", pooled("AVERAGE_POOL_2D", 3, 1), LOOPED[:1]),
)  # fmt: skip


def cascaded(data: bytes, kernels: str, rows: int, pointwise: bool, im2col: bool) -> bytes:
    """The model with its whole chain one cascade: every convolution (and pool,
    element-wise stage) ``rows`` rows a step (0: all of them), pointwise CONV_2Ds by
    word 38's path 2 when ``pointwise``, other CONV_2Ds by path 1 when ``im2col``."""
    model = read_model_bytes(data)
    sg = model.subgraphs[0]
    ops = [op.index for op in sg.operators]
    first = chain_of(sg, ops, model.buffers, parse_kernels(kernels), step_pixels=0)
    block, path = [], []
    for w in first.records:
        kind = w[KIND]
        whole = kind in (KINDS["MEAN_ROWS"], KINDS["MEAN"])
        block.append(0 if whole else (w[OUT_H] if rows == 0 else min(rows, w[OUT_H])))
        if kind == KINDS["CONV_2D"] and pointwise and is_pointwise(w):
            path.append(PATH_POINTWISE)
        elif kind == KINDS["CONV_2D"] and im2col and not (pointwise and is_pointwise(w)):
            path.append(1)
        else:
            path.append(0)
    steps = Steps(tuple(block), tuple(path))
    chain = chain_of(sg, ops, model.buffers, parse_kernels(kernels), steps=steps)
    return write_model(apply(model, [chain])[0])


# ---- measuring and fitting ----------------------------------------------------------


Row = tuple[str, Counter[str], int, int]  # what, counts, instructions, the original's


def equations(kernels: str, variant: str, products: list[tuple[int, int]]) -> Iterator[Row]:
    """(what, counts of the cascade less the original's, measured instructions of the
    cascade less the original's, the original's) of every cascade of every case; the
    (MACs, instructions) of each original that is one pointwise CONV_2D (CMSIS-NN's
    1x1 product) appended to ``products``."""
    for case in CASES:
        data = case.build()
        model = read_model_bytes(data)
        sg = model.subgraphs[0]
        ops = [op.index for op in sg.operators]
        whole = chain_of(sg, ops, model.buffers, parse_kernels(kernels), 0)
        base = original_counts(whole.records, kernels)
        before = invoke_instructions(data, 0, variant)
        if len(whole.records) == 1 and is_pointwise(whole.records[0]):
            products.append((_macs(whole.records[0]), before))
        for rows, pointwise, im2col in case.cascades:
            out = cascaded(data, kernels, rows, pointwise, im2col)
            op = read_model_bytes(out).subgraphs[0].operators[0]
            counts = chain_counts(decode(op).records, kernels)
            counts.subtract(base)
            ways = f"{', path 2' if pointwise else ''}{', path 1' if im2col else ''}"
            what = f"{case.name}, {rows or 'all'} rows{ways}"
            yield what, counts, invoke_instructions(out, 0, variant) - before, before


def fit(rows: list[Row]) -> tuple[dict[str, float], dict[str, object]]:
    """The coefficients (those of ``DIFFERENCES`` of any sign, the others >= 0) that
    minimise the residuals relative to each original's instructions; the report."""
    names = [c for c in COUNTS if any(counts.get(c) for _, counts, _, _ in rows)]
    a = np.array([[counts.get(c, 0) for c in names] for _, counts, _, _ in rows], dtype=float)
    b = np.array([n for _, _, n, _ in rows], dtype=float)
    weight = 1.0 / np.array([n for _, _, _, n in rows], dtype=float)
    low = np.array([-np.inf if c in DIFFERENCES else 0.0 for c in names])
    done = lsq_linear(a * weight[:, None], b * weight, bounds=(low, np.inf), method="bvls")
    if not done.success:
        raise FitError(f"the least-squares fit failed: {done.message}")
    theta = {c: _round(v) for c, v in zip(names, done.x, strict=True)}
    relative = (a @ np.array([theta[c] for c in names]) - b) * weight
    worst = int(np.argmax(np.abs(relative)))
    report = {
        "models": len(rows),
        "rms_residual_percent": _round(100 * float(np.sqrt(np.mean(relative**2)))),
        "largest_residual_percent": _round(100 * float(relative[worst])),
        "largest_residual_model": rows[worst][0],
    }
    return {c: v for c, v in theta.items() if v}, report


def _round(v: float) -> float:
    """``v`` to SIGNIFICANT digits; below NOISE in magnitude (the fit's round-off on a
    term the counts do not need, instructions) 0, so the term is left out."""
    return 0.0 if abs(v) < NOISE else float(f"{v:.{SIGNIFICANT}g}")


def _compiler(variant: str) -> str:
    build = json.loads((variant_dir(variant) / "build.json").read_text())
    return build.get("compiler", "unknown")


def _macs(w: tuple[int, ...]) -> int:
    """Multiply-accumulates of a pointwise CONV_2D record."""
    return w[OUT_H] * w[OUT_W] * w[OUT_C] * w[IN_C]


def mac_instructions(products: list[tuple[int, int]]) -> float:
    """Instructions per multiply-accumulate of CMSIS-NN's 1x1 product as TFLM calls it:
    the slope of the least-squares line of the originals' instructions on their MACs
    (the time model's rate to turn instructions into a convolution's work)."""
    macs = np.array([m for m, _ in products], dtype=float)
    a = np.stack([macs, np.ones_like(macs)], axis=1)
    slope = np.linalg.lstsq(a, np.array([n for _, n in products], dtype=float), rcond=None)[0][0]
    return _round(float(slope))


def measure(kernels: str) -> dict[str, object]:
    variant = KERNEL_VARIANTS[kernels]
    products: list[tuple[int, int]] = []
    rows = list(equations(kernels, variant, products))
    theta, report = fit(rows)
    counter = "QEMU plugin native/qemu_insn_classes.c" if VARIANTS[variant].arm32 else "callgrind"
    return {"variant": variant, "compiler": _compiler(variant), "counter": counter,
            "fit": report, "mac_instructions": mac_instructions(products),
            "coefficients": theta}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=",".join(KERNEL_VARIANTS), help="comma-separated")
    ap.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT.relative_to(REPO)}")
    args = ap.parse_args(argv)
    chosen = [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = [k for k in chosen if k not in KERNEL_VARIANTS]
    if unknown:
        print(f"gen_cascade_steps: unknown kernels {', '.join(unknown)}", file=sys.stderr)
        return 2
    for kernels in chosen:
        why = instructions_available(KERNEL_VARIANTS[kernels])
        if why is not None:
            print(f"gen_cascade_steps: {why}", file=sys.stderr)
            return 2
    table: dict[str, object] = {
        "about": ABOUT,
        "generated_by": "python scripts/gen_cascade_steps.py",
        "tflm_bundle": bundle_key(),
        "kernels": {},
    }
    try:
        for kernels in chosen:
            table["kernels"][kernels] = measure(kernels)  # type: ignore[index]
    except FitError as exc:
        print(f"gen_cascade_steps: {exc}", file=sys.stderr)
        return 1
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {args.out}: {', '.join(chosen)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
