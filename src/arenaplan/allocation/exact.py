"""Feasibility at a fixed capacity, exactly: the C search over each independent part.

The answer is one of: a packing (``feasible``), a proof that none exists
(``infeasible``, with the reason), or ``unknown`` when the time ran out. The
search itself is complete; the preorder only changes how fast it gets there, so
several preorders take turns with a growing node budget (the first to finish
wins, and an "infeasible" from any of them is a proof).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from arenaplan.allocation import _search
from arenaplan.allocation.problem import Problem
from arenaplan.allocation.sweep import Part, make_part, preorder, split_parts
from arenaplan.allocation.validate import check_solution

FOUND, INFEASIBLE, NODE_LIMIT, DEADLINE, INTERRUPTED = range(5)


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Each heuristic of the search as a named switch (all on by default)."""

    canonical: bool = True
    section_inference: bool = True
    dominance: bool = True
    unplaced_floor: bool = True
    monotonic_floor: bool = True
    hatless_pruning: bool = True
    dynamic_ordering: bool = True
    dynamic_split: bool = True
    repreorder: bool = True
    split_parts: bool = True
    preorders: tuple[str, ...] = ("WAT", "TAW", "TWA")

    def flags(self) -> int:
        bits = (
            self.canonical,
            self.section_inference,
            self.dominance,
            self.unplaced_floor,
            self.monotonic_floor,
            self.hatless_pruning,
            self.dynamic_ordering,
            self.dynamic_split,
        )
        return sum(1 << k for k, on in enumerate(bits) if on)


@dataclass(frozen=True, slots=True)
class Feasibility:
    """``status``: "feasible", "infeasible" or "unknown". Offsets only when feasible."""

    status: str
    capacity: int
    offsets: tuple[int, ...] | None = None
    reason: str = ""
    nodes: int = 0
    seconds: float = 0.0


Progress = Callable[[dict], None]


@dataclass
class _Clock:
    deadline: float | None
    nodes: int = 0
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        if self.deadline is None:
            return 0.0  # the C search reads <= 0 as "no deadline"
        return max(self.deadline - time.monotonic(), 1e-6)

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


def _overload(part: Part, capacity: int) -> str | None:
    for t, load in enumerate(part.loads):
        if load > capacity:
            return (
                f"{load} bytes are live at step {part.starts[t]}, "
                f"more than the capacity of {capacity}"
            )
    return None


def _fixed_conflict(problem: Problem, capacity: int) -> str | None:
    """Why the fixed buffers alone rule ``capacity`` out: one ends above it (empty
    buffers too: an offset is a promise), or two overlap in time and bytes."""
    fixed = [b for b in problem.buffers if b.offset is not None]
    for b in fixed:
        if b.offset + b.size > capacity:
            return (
                f"buffer {b.id} is fixed at offset {b.offset} and ends at "
                f"{b.offset + b.size}, above the capacity of {capacity}"
            )
    fixed.sort(key=lambda b: (b.first, b.offset))
    for k, a in enumerate(fixed):
        for b in fixed[k + 1 :]:
            if b.first > a.last:
                break
            if a.size and b.size and a.offset < b.offset + b.size and b.offset < a.offset + a.size:
                return (
                    f"fixed buffers {a.id} and {b.id} overlap at step {b.first} "
                    f"(bytes {max(a.offset, b.offset)}..)"
                )
    return None


def _solve_part(
    part: Part, capacity: int, params: SearchParams, clock: _Clock, progress: Progress | None
) -> tuple[int, bytes | None]:
    limit = 2 * max(len(part.buffers), 1)
    orders = {h: preorder(part, h) for h in params.preorders}
    while True:
        for heuristic, order in orders.items():
            if clock.expired():
                return DEADLINE, None
            code, offsets, nodes = _search.search(
                part.size,
                part.align,
                part.fixed,
                part.sec_lo,
                part.sec_hi,
                part.ov_start,
                part.ov,
                part.sb_start,
                part.sb,
                order,
                part.first,
                part.last,
                heuristic if params.repreorder else "",
                part.n_sections,
                capacity,
                params.flags(),
                limit,
                clock.left(),
            )
            clock.nodes += nodes
            if progress is not None:
                progress(
                    {
                        "event": "attempt",
                        "capacity": capacity,
                        "preorder": heuristic,
                        "nodes": clock.nodes,
                        "code": code,
                        "seconds": time.monotonic() - clock.started,
                    }
                )
            if code in (FOUND, INFEASIBLE, DEADLINE):
                return code, offsets if code == FOUND else None
            if code == INTERRUPTED:
                raise KeyboardInterrupt
        limit *= 2


def check_capacity(
    problem: Problem,
    capacity: int,
    params: SearchParams = SearchParams(),
    seconds: float | None = None,
    progress: Progress | None = None,
) -> Feasibility:
    """Is there a packing of ``problem`` within ``capacity`` bytes?"""
    clock = _Clock(None if seconds is None else time.monotonic() + seconds)
    why = _fixed_conflict(problem, capacity)
    if why:
        return Feasibility("infeasible", capacity, reason=why)
    bufs = problem.buffers
    offsets = [b.offset if b.offset is not None else 0 for b in bufs]
    members = [i for i, b in enumerate(bufs) if b.size > 0]
    groups = split_parts(problem, members) if params.split_parts else [members]
    parts = [make_part(problem, g) for g in groups if g]
    for part in parts:  # cheap proofs first
        why = _overload(part, capacity)
        if why:
            return Feasibility(
                "infeasible", capacity, reason=why, seconds=time.monotonic() - clock.started
            )
    for part in sorted(parts, key=lambda p: -len(p.buffers)):
        code, found = _solve_part(part, capacity, params, clock, progress)
        elapsed = time.monotonic() - clock.started
        if code == INFEASIBLE:
            return Feasibility(
                "infeasible",
                capacity,
                reason="the search space is exhausted",
                nodes=clock.nodes,
                seconds=elapsed,
            )
        if code != FOUND or found is None:
            return Feasibility(
                "unknown", capacity, reason="time limit reached", nodes=clock.nodes, seconds=elapsed
            )
        local = memoryview(found).cast("q")
        for k, i in enumerate(part.buffers):
            offsets[i] = local[k]
    check_solution(Problem(bufs, capacity), offsets)  # never return an unchecked packing
    return Feasibility(
        "feasible",
        capacity,
        tuple(offsets),
        nodes=clock.nodes,
        seconds=time.monotonic() - clock.started,
    )
