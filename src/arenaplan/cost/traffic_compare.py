"""Predicted against measured traffic: per operator and key, the largest relative
error over loads, stores, their bytes and the accesses by width (the estimates of
``cost.traffic`` against counts of ``arenaplan.tflm.verify.traffic_measure``). Errors are
fractions (0.1: 10%), 0 when both are zero, inf when only the prediction is."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from arenaplan.cost.traffic_counts import Key, Traffic, Widths

FIGURES = ("loads", "stores", "load_bytes", "store_bytes")


@dataclass(frozen=True, slots=True)
class Difference:
    """Predicted against measured for one operator and key. ``error`` is the largest
    relative error over loads, stores, their bytes and the accesses by width (the
    share of accesses counted at a wrong width), 0 when both are zero, inf when
    only the prediction is."""

    subgraph: int
    op: int
    key: Key
    predicted: Traffic
    measured: Traffic
    error: float


def _rel(p: int, m: int) -> float:
    if m == 0:
        return 0.0 if p == 0 else math.inf
    return abs(p - m) / m


def _width_error(p: Widths, m: Widths) -> float:
    n = sum(c for _, c in m)
    if n == 0:
        return 0.0 if not p else math.inf
    pd, md = dict(p), dict(m)
    return sum(abs(pd.get(w, 0) - md.get(w, 0)) for w in set(pd) | set(md)) / (2 * n)


def difference(subgraph: int, op: int, key: Key, p: Traffic, m: Traffic) -> Difference:
    errors = [_rel(getattr(p, f), getattr(m, f)) for f in FIGURES]
    errors.append(_width_error(p.load_widths, m.load_widths))
    errors.append(_width_error(p.store_widths, m.store_widths))
    return Difference(subgraph, op, key, p, m, max(errors))


def compare(
    predicted: dict[tuple[int, int], dict[Key, Traffic]],
    measured: dict[tuple[int, int], dict[Key, Traffic]],
    ignore: Iterable[Key] = (("other",),),
) -> list[Difference]:
    """One :class:`Difference` per operator and key present in either, ``ignore``d keys
    (by default the stack and other process memory) left out."""
    skip = set(ignore)
    out = []
    for where in sorted(set(predicted) | set(measured)):
        p, m = predicted.get(where, {}), measured.get(where, {})
        for key in sorted(set(p) | set(m), key=repr):
            if key in skip:
                continue
            out.append(difference(*where, key, p.get(key, Traffic()), m.get(key, Traffic())))
    return out
