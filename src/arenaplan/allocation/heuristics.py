"""Greedy heuristics: first-fit packing under several buffer orders, best kept.

Every order is a sort of the problem's columns (numpy, O(n log n)); each order
sorts by its keys, then by buffer index.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.packing import DONE, Columns, first_fit, first_packing, start_order
from arenaplan.allocation.problem import Problem

ColumnOrder = Callable[[Columns], np.ndarray]
Order = Callable[[Problem], list[int]]
INT64_MAX = (1 << 63) - 1


def conflict_weight(cols: Columns) -> np.ndarray:
    """Sum of sizes (bytes) of the buffers each buffer overlaps in time, itself
    included: the total, less those that end before it starts, less those that
    start after it ends (sorted ends and starts with prefix sums)."""
    by_last = np.argsort(cols.last, kind="stable")
    by_first = np.argsort(cols.first, kind="stable")
    ends, starts = cols.last[by_last], cols.first[by_first]
    size_by_last = np.concatenate(([0], np.cumsum(cols.size[by_last])))
    size_by_first = np.concatenate(([0], np.cumsum(cols.size[by_first])))
    total = size_by_first[-1]
    ended = size_by_last[np.searchsorted(ends, cols.first, side="left")]  # last < first
    later = total - size_by_first[np.searchsorted(starts, cols.last, side="right")]  # first > last
    return total - ended - later


def _area_order(cols: Columns) -> np.ndarray:
    width = cols.last - cols.first + 1
    if len(width) and int(cols.size.max()) * int(width.max()) > INT64_MAX:
        area = [int(s) * int(w) for s, w in zip(cols.size, width, strict=True)]
        return np.array(sorted(range(len(area)), key=lambda i: (-area[i], i)), dtype=np.int64)
    return np.argsort(-cols.size * width, kind="stable")


# np.lexsort sorts by the last key first; it is stable, so ties keep index order.
COLUMN_ORDERS: dict[str, ColumnOrder] = {
    "size": lambda c: np.lexsort((c.first, -c.size)),
    "start": lambda c: start_order(c.first, c.size),
    "length": lambda c: np.lexsort((-c.size, c.first - c.last)),
    "area": _area_order,
    "conflicts": lambda c: np.lexsort((-c.size, -conflict_weight(c))),
}


def _on_problem(order: ColumnOrder) -> Order:
    return lambda p: order(Columns.of(p)).tolist()


ORDERS: dict[str, Order] = {name: _on_problem(o) for name, o in COLUMN_ORDERS.items()}


def best_greedy(
    problem: Problem,
    capacity: int | None = None,
    deadline: Deadline | None = None,
    cols: Columns | None = None,
    first: tuple[str, list[int] | None] | None = None,
) -> tuple[str, list[int]] | None:
    """The lowest packing over all orders, bottom-up; ties go to the earlier order.

    The first packing (``packing.first_packing``: the sweep by first step, O(n
    log n)) is made before anything else and whatever ``deadline`` says, so
    every problem gets it; it is the "start" order's packing when no buffer is
    fixed, else "sweep". The other orders are tried until ``deadline``: the
    best of those finished is returned (None only when none fits ``capacity``
    or the time ran out before any other fitted). ``first``: (order name,
    offsets or None) of the first packing when the caller has made it."""
    cols = cols if cols is not None else Columns.of(problem)
    found: dict[str, list[int]] = {}
    if first is None:
        name = "sweep" if (cols.fixed >= 0).any() else "start"
        status, offsets = first_packing(cols, capacity)
        first = (name, offsets) if status == DONE and offsets is not None else (name, None)
    if first[1] is not None:
        found[first[0]] = first[1]
    for name, order in COLUMN_ORDERS.items():
        phase = f"greedy:{name}"
        if name in found:
            continue
        if deadline is not None and deadline.expired(phase):
            break
        status, offsets = first_fit(cols, order(cols), capacity, deadline)
        if status == DONE and offsets is not None:
            found[name] = offsets
        elif deadline is not None and deadline.expired(phase):
            break
    best: tuple[int, str, list[int]] | None = None
    for name in (first[0], *COLUMN_ORDERS):  # ties go to the earlier order
        if name in found:
            height = cols.height(found[name])
            if best is None or height < best[0]:
                best = (height, name, found[name])
    return None if best is None else (best[1], best[2])
