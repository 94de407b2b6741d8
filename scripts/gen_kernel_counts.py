#!/usr/bin/env python3
"""Write the instructions, by class, that each CMSIS-NN kernel path executes.

    python scripts/gen_kernel_counts.py [--builds B1,B2,...] [--out FILE]

For each TFLM build (``BUILDS``: the Cortex-M4 DSP build under qemu-arm, the same
with every kernel compiled for size, -Os, and the Cortex-M55 MVE build on
qemu-system-arm's AN547 board), the script writes one
small int8 model per case of ``cases()`` (one operator each: convolutions 1x1, 1xN
and im2col, depthwise of each wrapper path, fully connected, pools, ADD, MUL,
SOFTMAX, RESHAPE, QUANTIZE over a grid of shapes) and counts one invoke of each by
instruction class (``native/qemu_insn_classes.c`` through
``arenaplan.tflm.verify.instructions.invoke_classes``). Each case gives, per
class, one equation: count = coefficients . features (``tflm.cmsis_nn.paths``); a
path's coefficients are the non-negative least-squares fit of its cases, weighted
by the inverse of their instructions (relative errors), rounded to 4 significant
digits. The fit's largest relative residual of the total goes beside them.

The table goes to ``src/arenaplan/tflm/data/kernel_counts.json`` with every case's
measured counts (``tests/cost/test_kernel_counts.py`` re-counts some and refits).
The cases are not the networks the time model is judged on
(``python benchmarks/latency_boards.py``). Needs the builds (``python
scripts/build_tflm.py --variants arm32-cmsis_nn,m55-cmsis_nn,arm32-cmsis_nn-os``),
gcc and qemu; a
few minutes. Exit status 0 written, 2 a build is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("src", "tests")]
from kits.opmodels import I8, Net  # noqa: E402

from arenaplan.reader import read_model_bytes  # noqa: E402
from arenaplan.tflm.cmsis_nn.paths import FEATURES, kernel_call  # noqa: E402
from arenaplan.tflm.verify.instructions import instructions_available, invoke_classes  # noqa: E402
from arenaplan.tflm.verify.native import VARIANTS, bundle_key  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "arenaplan" / "tflm" / "data" / "kernel_counts.json"
BUILDS = {"arm32-cmsis_nn": "dsp", "m55-cmsis_nn": "mve", "arm32-cmsis_nn-os": "dsp"}
SIGNIFICANT = 4
ABOUT = (
    "Instructions of one invoke of one operator, by class, per CMSIS-NN kernel path and "
    "TFLM build: the non-negative least-squares fit (relative) of counts measured under "
    "QEMU (native/qemu_insn_classes.c) on one-operator int8 models, over the features of "
    "arenaplan.tflm.cmsis_nn.paths. Measured counts; the coefficients are a fit of them."
)


def _conv(h: int, w: int, cin: int, cout: int, k: tuple[int, int], stride: int, pad: str):
    n = Net("conv")
    x = n.act((1, h, w, cin), I8, zero=-128)
    wt, b = n.weights((cout, *k, cin), 0), n.bias(cout, per_channel=cout)
    oh = -(-h // stride) if pad == "SAME" else (h - k[0]) // stride + 1
    ow = -(-w // stride) if pad == "SAME" else (w - k[1]) // stride + 1
    y = n.act((1, oh, ow, cout), I8, zero=-128)
    n.op("CONV_2D", [x, wt, b], [y], padding=pad, stride_h=stride, stride_w=stride,
         fused_activation_function="RELU")  # fmt: skip
    return n.done([x], [y])


def _depthwise(h: int, c: int, k: int, stride: int, mult: int = 1):
    n = Net("dw")
    x = n.act((1, h, h, c), I8, zero=-128)
    wt, b = n.weights((1, k, k, c * mult), 3), n.bias(c * mult, per_channel=c * mult)
    o = -(-h // stride)
    y = n.act((1, o, o, c * mult), I8, zero=-128)
    n.op("DEPTHWISE_CONV_2D", [x, wt, b], [y], padding="SAME", stride_h=stride,
         stride_w=stride, depth_multiplier=mult, fused_activation_function="RELU6")  # fmt: skip
    return n.done([x], [y])


def _fc(depth: int, units: int):
    n = Net("fc")
    x = n.act((1, depth), I8, zero=-128)
    wt, b = n.weights((units, depth), None), n.bias(units)
    y = n.act((1, units), I8, zero=-128)
    n.op("FULLY_CONNECTED", [x, wt, b], [y], fused_activation_function="RELU")
    return n.done([x], [y])


def _pool(opcode: str, h: int, c: int, k: int, stride: int):
    n = Net("pool")
    x = n.act((1, h, h, c), I8, zero=-128)
    o = (h - k) // stride + 1
    y = n.act((1, o, o, c), I8, zero=-128)
    n.op(opcode, [x], [y], padding="VALID", stride_h=stride, stride_w=stride,
         filter_height=k, filter_width=k)  # fmt: skip
    return n.done([x], [y])


def _binary(opcode: str, shape: tuple[int, ...]):
    n = Net("binary")
    a, b = n.act(shape, I8, zero=-128), n.act(shape, I8, 0.07, 3)
    y = n.act(shape, I8, 0.1, -128)
    n.op(opcode, [a, b], [y])
    return n.done([a, b], [y])


def _unary(opcode: str, shape: tuple[int, ...]):
    n = Net("unary")
    x = n.act(shape, I8, 0.1, 0)
    if opcode == "SOFTMAX":
        y = n.act(shape, I8, 1 / 256, -128)
        n.op("SOFTMAX", [x], [y], beta=1.0)
    elif opcode == "RESHAPE":
        y = n.act((shape[0], int(np.prod(shape[1:]))), I8, 0.1, 0)
        n.op("RESHAPE", [x], [y])
    else:
        y = n.act(shape, I8, 0.2, 5)
        n.op(opcode, [x], [y])
    return n.done([x], [y])


def cases() -> Iterator[tuple[str, bytes]]:
    """(name, model) of every one-operator case, in a fixed order."""
    for cin, cout, h in [(8, 8, 8), (16, 32, 8), (32, 64, 6), (64, 64, 12), (24, 48, 5),
                         (128, 128, 4), (64, 128, 3), (3, 16, 10), (16, 16, 16)]:  # fmt: skip
        for stride in (1, 2):
            yield (
                f"conv1x1 {h}x{h}x{cin}->{cout} s{stride}",
                _conv(h, h, cin, cout, (1, 1), stride, "VALID"),
            )
    for cin, cout, h, k in [(3, 8, 16, 3), (3, 16, 24, 3), (8, 16, 12, 3), (16, 16, 10, 3),
                            (16, 32, 8, 3), (32, 32, 6, 3), (1, 16, 20, 5), (12, 24, 7, 5),
                            (64, 64, 4, 3)]:  # fmt: skip
        for stride in (1, 2):
            yield (
                f"conv {h}x{h}x{cin}->{cout} k{k} s{stride}",
                _conv(h, h, cin, cout, (k, k), stride, "SAME"),
            )
    for h, w, cout, k in [(25, 5, 16, (5, 2)), (20, 6, 24, (4, 3)), (49, 10, 8, (10, 4))]:
        yield f"conv {h}x{w}x1->{cout} k{k}", _conv(h, w, 1, cout, k, 2, "SAME")
    for c, h in [(8, 16), (16, 12), (32, 8), (64, 6), (128, 4), (24, 10), (48, 5), (256, 3)]:
        for stride in (1, 2):
            yield f"dw3x3 {h}x{h}x{c} s{stride}", _depthwise(h, c, 3, stride)
        yield f"dw5x5 {h}x{h}x{c}", _depthwise(h, c, 5, 1)
    for c, h, mult in [(4, 8, 2), (8, 6, 4), (1, 12, 8)]:
        yield f"dw {h}x{h}x{c} x{mult}", _depthwise(h, c, 3, 1, mult)
    for depth, units in [(16, 8), (64, 32), (256, 64), (640, 128), (128, 128), (1000, 10),
                         (96, 200), (33, 17), (512, 256)]:  # fmt: skip
        yield f"fc {depth}->{units}", _fc(depth, units)
    for opcode in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        for h, c, k, s in [(8, 16, 2, 2), (16, 8, 3, 2), (6, 64, 6, 1), (12, 32, 2, 2),
                           (4, 128, 4, 1), (10, 24, 3, 1)]:  # fmt: skip
            yield f"{opcode} {h}x{h}x{c} k{k} s{s}", _pool(opcode, h, c, k, s)
    shapes = [(1, 8, 8, 16), (1, 16, 16, 32), (1, 4, 4, 8), (1, 12, 12, 64), (1, 3, 3, 7)]
    for opcode in ("ADD", "MUL"):
        for shape in shapes:
            yield f"{opcode} {shape}", _binary(opcode, shape)
    for shape in [(1, 10), (1, 100), (1, 1000), (4, 64), (1, 12)]:
        yield f"SOFTMAX {shape}", _unary("SOFTMAX", shape)
    for shape in shapes:
        yield f"RESHAPE {shape}", _unary("RESHAPE", shape)
        yield f"QUANTIZE {shape}", _unary("QUANTIZE", shape)


def measure(variant: str) -> list[dict]:
    """Every case's path, features and counted classes on ``variant``."""
    rows = []
    for name, data in cases():
        model = read_model_bytes(data)
        sg = model.subgraphs[0]
        call = kernel_call(sg, sg.operators[0], BUILDS[variant])
        counts = invoke_classes(data, 0, variant)
        rows.append({"case": name, "path": call.path, "features": list(call.vector()),
                     "counts": counts})  # fmt: skip
        print(f"  {variant} {name}: {call.path} {counts['insns']}", file=sys.stderr)
    return rows


def _round(x: float) -> float:
    return float(f"{x:.{SIGNIFICANT}g}")


def fit(rows: list[dict]) -> dict[str, dict]:
    """Per path: per class the coefficients over ``FEATURES``, and the fit's worst
    relative residual of the total."""
    out: dict[str, dict] = {}
    for path in sorted({r["path"] for r in rows}):
        mine = [r for r in rows if r["path"] == path]
        a = np.array([r["features"] for r in mine], dtype=float)
        weight = 1 / np.array([max(r["counts"]["insns"], 1) for r in mine], dtype=float)
        used = [j for j in range(a.shape[1]) if a[:, j].any()]  # a feature a path lacks
        classes = {}
        for c in mine[0]["counts"]:
            y = np.array([r["counts"][c] for r in mine], dtype=float)
            coef = np.zeros(a.shape[1])
            if y.any():
                solved, _ = nnls(a[:, used] * weight[:, None], y * weight)
                coef[used] = solved
            classes[c] = [_round(v) for v in coef]
        total = a @ np.array(classes["insns"])
        measured = np.array([r["counts"]["insns"] for r in mine], dtype=float)
        worst = float(np.max(np.abs(total - measured) / measured))
        out[path] = {"cases": len(mine), "worst": round(worst, 4), "classes": classes}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1].strip())
    ap.add_argument("--builds", default=",".join(BUILDS))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    doc: dict = {"about": ABOUT, "tflm_bundle": bundle_key(), "features": list(FEATURES),
                 "command": "python scripts/gen_kernel_counts.py", "builds": {}}  # fmt: skip
    for variant in args.builds.split(","):
        why = instructions_available(variant)
        if why is not None:
            print(f"gen_kernel_counts: {variant}: {why}", file=sys.stderr)
            return 2
        rows = measure(variant)
        doc["builds"][variant] = {
            "features": BUILDS[variant],
            "make_args": list(VARIANTS[variant].make_args),
            "counter": "QEMU plugin native/qemu_insn_classes.c",
            "paths": fit(rows),
            "samples": rows,
        }
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
