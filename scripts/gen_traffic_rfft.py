#!/usr/bin/env python3
"""Write the per-frame counts of the Signal library's int16 RFFT, measured.

    python scripts/gen_traffic_rfft.py [--variant host-reference] [--out FILE]

SignalRfft (int16) runs kiss_fftr on each frame: the complex FFT of half the length
in the operator data's buffer, by radix-4 and radix-2 butterflies, then the split
into the output's half spectrum. How many loads and stores of the operator data a
butterfly makes, and how many stores the split makes, is the compiled code's, not
the source's: the script builds a one-frame model at each of ``LENGTHS``, runs it
once in TFLM under the arenatraffic valgrind tool and solves, per key and access
width, the count as ``a*b4 + b*b2 + c*n + d`` (``b4``/``b2`` the radix-4/radix-2
butterflies, ``n`` half the length) in whole numbers that give every length's count.
It stops, naming the key and the width, when no such numbers exist. The table goes to
``src/arenaplan/cost/data/traffic_rfft.json``, which ``arenaplan.cost.traffic_tflm``
reads (``rfft_table``).

The header records the TFLM bundle (``arenaplan.tflm.verify.native.bundle_key``), the
variant, the compiler that built it, valgrind's version and this command. Needs:
``python scripts/build_tflm.py --variants host-reference && python
scripts/build_traffic.py``. A few seconds. Exit status 0, 1 when the counts do not
give a table, 2 when the build is absent.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("scripts", "src", "tests")]
from kits.opmodels import I16, Net  # noqa: E402
from traffic_table import REPO, TableError, table_main  # noqa: E402

from arenaplan.cost.traffic_counts import role_text  # noqa: E402
from arenaplan.cost.traffic_tflm import kiss_butterflies  # noqa: E402
from arenaplan.tflm.verify.traffic_measure import measure_traffic  # noqa: E402

OUT = REPO / "src" / "arenaplan" / "cost" / "data" / "traffic_rfft.json"
ABOUT = (
    "SignalRfft (int16), per frame: the loads (and stores, after '/') of the operator data "
    "(op_data: kiss_fftr's buffer, twiddles and state) and the stores of the output "
    "(output: the split into the half spectrum). Each item is 'width:count' (width in "
    "bytes, count in accesses); a count may use b4 and b2 (kiss_fft's radix-4 and radix-2 "
    "butterflies) and n (half the FFT length). Read by arenaplan.cost.traffic_tflm "
    "(rfft_table). Measured under valgrind on the variant below."
)
LENGTHS = (32, 64, 128, 256, 512, 1024)  # FFT lengths (powers of two)
VARIABLES = ("b4", "b2", "n")  # the columns of a count, then a constant
KEYS = {"op_data": ("persistent", "op_data", 0, 0), "output": (0, 1)}


def one_frame(length: int) -> bytes:
    """A model of one SignalRfft of ``length`` on one frame of 3/4 of it."""
    n = Net("rfft")
    x = n.act((1, length * 3 // 4), I16)
    y = n.act((1, 2 * (length // 2 + 1)), I16)
    n.custom("SignalRfft", [x], [y], T=I16.code, fft_length=length)
    return n.done([x], [y])


def variables(length: int) -> dict[str, int]:
    n = length // 2
    b4, b2 = kiss_butterflies(n)
    return {"b4": b4, "b2": b2, "n": n}


def fit(rows: list[tuple[dict[str, int], int]]) -> str:
    """The count as whole multiples of ``VARIABLES`` and a constant that give every
    row's count (terms of 0 left out); raises ValueError when none do."""
    a = np.array([[v[name] for name in VARIABLES] + [1] for v, _ in rows])
    b = np.array([count for _, count in rows])
    if np.linalg.matrix_rank(a) < a.shape[1]:
        raise ValueError("the lengths do not determine the count")
    x = np.rint(np.linalg.lstsq(a, b, rcond=None)[0]).astype(int)
    if not np.array_equal(a @ x, b):
        raise ValueError(f"no whole numbers give every length's count: {b.tolist()}")
    pairs = zip(x[:-1], VARIABLES, strict=True)
    terms = [name if k == 1 else f"{k}*{name}" for k, name in pairs if k]
    if x[-1] or not terms:
        terms.append(str(int(x[-1])))
    return "+".join(terms)


def table(variant: str) -> dict[str, str]:
    """Key -> its per-frame items, fitted over ``LENGTHS``."""
    counts: dict[str, dict[tuple[str, int], dict[int, int]]] = {name: {} for name in KEYS}
    for length in LENGTHS:
        measured = measure_traffic(one_frame(length), variant)[(0, 0)].traffic
        for name, key in KEYS.items():
            t = measured.get(key)
            if t is None:
                continue
            for kind, widths in (("L", t.load_widths), ("S", t.store_widths)):
                for width, count in widths:
                    counts[name].setdefault((kind, width), {})[length] = count
    out = {}
    for name, items in counts.items():
        fitted = {}
        for item, found in sorted(items.items()):
            rows = [(variables(length), found.get(length, 0)) for length in LENGTHS]
            try:
                fitted[item] = fit(rows)
            except ValueError as exc:
                raise TableError(f"{name} {item[0]}{item[1]}: {exc}") from exc
        out[name] = role_text(fitted)
    return out


def _measure(variant: str) -> tuple[dict[str, object], str]:
    return {"lengths": list(LENGTHS), "per_frame": table(variant)}, ""


def main(argv: list[str] | None = None) -> int:
    description = __doc__.splitlines()[0]
    return table_main("gen_traffic_rfft", description, OUT, ABOUT, _measure, argv)


if __name__ == "__main__":
    sys.exit(main())
