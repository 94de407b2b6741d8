#!/usr/bin/env python3
"""Write the op data loads per element of TFLM's element-wise kernels, measured.

    python scripts/gen_traffic_per_element.py [--variant host-reference] [--out FILE]

Some element-wise kernels pass their parameters into the loop by reference and read
them from the operator data once per element (``KERNELS``). For each, the script
builds a model of that one operator at ``SIZES`` output elements, runs it once in
TFLM under the arenatraffic valgrind tool and takes, per access width, the growth of
the operator data's loads with the elements: ``(loads(n) - loads(n0)) / (n - n0)``.
It stops, naming the kernel and the width, when that is not a whole number or not the
same between every pair of sizes (the loads do not grow linearly). The table goes to
``src/arenaplan/cost/data/traffic_per_element.json``, which
``arenaplan.cost.traffic_tflm`` reads (``per_element_table``); the fixed part of the
same loads is ``gen_traffic_fixed.py``'s.

The header records the TFLM bundle (``arenaplan.verify.native.bundle_key``), the
variant, the compiler that built it, valgrind's version and this command. Needs:
``python scripts/build_tflm.py --variants host-reference && python
scripts/build_traffic.py``. A few seconds. Exit status 0, 1 when the loads do not
give a table, 2 when the build is absent.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from kits.opmodels import I8, I16, Net  # noqa: E402

from arenaplan.ir.dtypes import DType  # noqa: E402
from arenaplan.verify.native import bundle_key, variant_dir  # noqa: E402
from arenaplan.verify.traffic_measure import measure_traffic, traffic_available  # noqa: E402

OUT = REPO / "src" / "arenaplan" / "cost" / "data" / "traffic_per_element.json"
ABOUT = (
    "Per element-wise TFLM kernel ('OPCODE/element type') that reads its parameters from "
    "the operator data once per element (they are passed by reference into the loop): "
    "width in bytes -> loads of the operator data per output element, for one invoke. "
    "ELU/int8's load is of its 256-entry lookup table. Read by arenaplan.cost.traffic_tflm "
    "(per_element_table). Measured under valgrind on the variant below."
)
# (opcode, element type, inputs): the kernels whose op data is read per element
KERNELS: tuple[tuple[str, DType, int], ...] = (
    ("RELU", I8, 1),
    ("RELU", I16, 1),
    ("ABS", I8, 1),
    ("HARD_SWISH", I8, 1),
    ("ELU", I8, 1),
    ("SQUARED_DIFFERENCE", I8, 2),
)
SIZES = ((1, 4, 4, 8), (1, 12, 12, 8), (1, 5, 7, 3))  # output shapes: 128, 1152, 105 elements


class TableError(Exception):
    pass


def one_op(opcode: str, dtype: DType, inputs: int, shape: tuple[int, ...]) -> bytes:
    """A model of the one operator ``opcode`` on ``shape``."""
    n = Net(opcode.lower())
    xs = [n.act(shape, dtype) for _ in range(inputs)]
    y = n.act(shape, dtype)
    n.op(opcode, xs, [y])
    return n.done(xs, [y])


def measure(opcode: str, dtype: DType, inputs: int, variant: str) -> list[tuple[int, dict]]:
    """(output elements, width -> loads of the operator data) at every size."""
    out = []
    for shape in SIZES:
        measured = measure_traffic(one_op(opcode, dtype, inputs, shape), variant)
        t = measured[(0, 0)].traffic.get(("persistent", "op_data", 0, 0))
        elements = 1
        for d in shape:
            elements *= d
        out.append((elements, dict(t.load_widths) if t is not None else {}))
    return out


def per_element(name: str, rows: list[tuple[int, dict[int, int]]]) -> dict[str, int]:
    """Width -> loads per element, the same between every pair of sizes."""
    (n0, first), *rest = rows
    widths = sorted({w for _, loads in rows for w in loads})
    out = {}
    for w in widths:
        slopes = set()
        for n, loads in rest:
            growth = loads.get(w, 0) - first.get(w, 0)
            if growth % (n - n0):
                raise TableError(f"{name} width {w}: {growth} loads over {n - n0} elements")
            slopes.add(growth // (n - n0))
        if len(slopes) > 1:
            raise TableError(f"{name} width {w}: the loads do not grow linearly ({rows})")
        if slopes != {0}:
            out[str(w)] = slopes.pop()
    return out


def header(variant: str) -> dict:
    build = json.loads((variant_dir(variant) / "build.json").read_text())
    valgrind = subprocess.run(["valgrind", "--version"], capture_output=True, text=True)
    command = "python scripts/gen_traffic_per_element.py"
    return {
        "about": ABOUT,
        "generated_by": command + ("" if variant == "host-reference" else f" --variant {variant}"),
        "tflm_bundle": bundle_key(),
        "variant": variant,
        "compiler": build.get("compiler", "unknown"),
        "valgrind": valgrind.stdout.strip(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="host-reference", help="a host variant of build_tflm")
    ap.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT.relative_to(REPO)}")
    args = ap.parse_args(argv)
    why = traffic_available(args.variant)
    if why is not None:
        print(f"gen_traffic_per_element: {why}", file=sys.stderr)
        return 2
    table = {}
    try:
        for opcode, dtype, inputs in KERNELS:
            name = f"{opcode}/{dtype.name.lower()}"
            table[name] = per_element(name, measure(opcode, dtype, inputs, args.variant))
    except TableError as exc:
        print(f"gen_traffic_per_element: {exc}", file=sys.stderr)
        return 1
    doc = {**header(args.variant), "kernels": table}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}: {len(table)} kernels", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
