"""Local search over first-fit orders ("squeaky wheel"): for problems too large
for the exact search, or before it on large ones.

Start from the order that gave the best packing so far (a greedy order), or
else from the buffers by offset (first-fit in that order places each one no
higher than it was). Each round packs
the buffers by first-fit in priority order, then blames the buffers whose top
lies above the lower bound: their priority rises by their share of the excess
(a buffer ending at the top rises most), so the next round places them earlier,
lower. The best packing over the rounds is kept. Each round costs one first-fit (O(n log n)
with ``packing.first_fit``).

Deterministic: the rounds and the packings depend only on the problem; the
deadline can only stop the rounds early. (Random noise added to the priorities
made every measured family worse: ``benchmarks/solver_scale.py``.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.packing import DONE, Columns, first_fit

ROUNDS = 1000  # first-fit rounds at most (fewer when the deadline passes first)
BLAME = 0.02  # priority added to a buffer at the top, as a share of n


@dataclass(frozen=True, slots=True)
class Improved:
    """The best packing found: its offsets and height (bytes), the rounds run."""

    offsets: list[int]
    height: int
    rounds: int


def squeaky_wheel(
    cols: Columns,
    offsets: list[int],
    lower: int,
    deadline: Deadline,
    order: np.ndarray | None = None,
    rounds: int = ROUNDS,
) -> Improved:
    """The lowest packing found from ``offsets`` (a valid packing of ``cols``,
    made by first-fit in ``order`` if given) in ``rounds`` first-fit rounds or
    until ``deadline``; ``lower``: a proven lower bound on the height (bytes),
    where the search stops."""
    n = len(cols.size)
    best = np.asarray(offsets, dtype=np.int64)
    height = int((best + cols.size).max(initial=0))
    start = Improved(list(offsets), height, 0)
    if n == 0 or height <= lower:
        return start
    priority = np.empty(n)
    start_order = np.lexsort((-cols.size, best)) if order is None else np.asarray(order)
    priority[start_order] = np.arange(n, 0, -1, dtype=float)  # first placed: highest
    done = 0
    for done in range(1, rounds + 1):
        if deadline.expired("improve"):
            done -= 1
            break
        order = np.argsort(-priority, kind="stable")
        status, placed = first_fit(cols, order, None, deadline)
        if status != DONE or placed is None:
            deadline.stop("improve")  # the deadline passed inside the round
            break
        tops = np.asarray(placed, dtype=np.int64) + cols.size
        top = int(tops.max())
        if top < height:
            best, height = tops - cols.size, top
            if height <= lower:
                break
        over = tops > lower
        priority[over] += n * BLAME * (tops[over] - lower) / max(top - lower, 1)
    return Improved(best.tolist(), height, done)
