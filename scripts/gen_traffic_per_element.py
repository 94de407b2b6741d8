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

The header records the TFLM bundle (``arenaplan.tflm.verify.native.bundle_key``), the
variant, the compiler that built it, valgrind's version and this command. Needs:
``python scripts/build_tflm.py --variants host-reference && python
scripts/build_traffic.py``. A few seconds. Exit status 0, 1 when the loads do not
give a table, 2 when the build is absent.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("scripts", "src", "tests")]
from kits.opmodels import I8, I16, Net  # noqa: E402
from traffic_table import REPO, TableError, table_main  # noqa: E402

from arenaplan.ir.dtypes import DType  # noqa: E402
from arenaplan.tflm.verify.traffic_measure import measure_traffic  # noqa: E402

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


def _measure(variant: str) -> tuple[dict[str, object], str]:
    table = {}
    for opcode, dtype, inputs in KERNELS:
        name = f"{opcode}/{dtype.name.lower()}"
        table[name] = per_element(name, measure(opcode, dtype, inputs, variant))
    return {"kernels": table}, f": {len(table)} kernels"


def main(argv: list[str] | None = None) -> int:
    description = __doc__.splitlines()[0]
    return table_main("gen_traffic_per_element", description, OUT, ABOUT, _measure, argv)


if __name__ == "__main__":
    sys.exit(main())
