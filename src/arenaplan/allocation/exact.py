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
from arenaplan.allocation.bounds import fixed_overlap, peak_load
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.problem import Problem
from arenaplan.allocation.sections import Part, make_part, preorder, split_parts, table_entries
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
    tiling: bool = True  # before the search: the packing rebuilt as a tiling (``tiling``)
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

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def fixed_conflict(problem: Problem, capacity: int) -> str | None:
    """Why the fixed buffers alone rule ``capacity`` out: one ends above it (empty
    buffers too: an offset is a promise), or two overlap in time and bytes."""
    fixed = [b for b in problem.buffers if b.offset is not None]
    for b in fixed:
        if b.offset + b.size > capacity:
            return (
                f"buffer {b.id} is fixed at offset {b.offset} and ends at "
                f"{b.offset + b.size}, above the capacity of {capacity}"
            )
    return fixed_overlap(problem)


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


# The search holds tables of time-neighbour pairs and (buffer, section) entries,
# and recurses once per placed buffer: parts beyond these limits are not
# searched (their answer is "unknown"), which keeps memory and stack bounded.
MAX_TABLE_ENTRIES = 12_000_000  # int32 entries, ~48 MB of tables
MAX_SEARCH_BUFFERS = 15_000  # C recursion depth (the 8 MB main-thread stack)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A problem cut into independent parts, ready for the search at any capacity.

    ``parts`` hold the tables of the parts small enough to search; ``too_large``
    says why the others are not searched ("" when all are)."""

    parts: tuple[Part, ...]
    too_large: str = ""


def prepare(
    problem: Problem, params: SearchParams = SearchParams(), deadline: Deadline | None = None
) -> Prepared | None:
    """The parts of ``problem`` (None when ``deadline`` passed before or while
    preparing: splitting a million buffers into parts is half a second)."""
    if deadline is not None and deadline.expired("preparation"):
        return None
    members = [i for i, b in enumerate(problem.buffers) if b.size > 0]
    groups = split_parts(problem, members) if params.split_parts else [members]
    parts, too_large = [], []
    for g in sorted((g for g in groups if g), key=len, reverse=True):
        if deadline is not None and deadline.expired("preparation"):
            return None
        entries = table_entries(problem, g)
        if len(g) > MAX_SEARCH_BUFFERS or entries > MAX_TABLE_ENTRIES:
            too_large.append(f"a part of {len(g):,} buffers ({entries:,} table entries)")
            continue
        parts.append(make_part(problem, g))
    why = ""
    if too_large:
        why = (
            f"{too_large[0]} is beyond the exact search's limits ({MAX_SEARCH_BUFFERS:,} "
            f"buffers, {MAX_TABLE_ENTRIES:,} entries)"
        )
    return Prepared(tuple(parts), why)


def check_capacity(
    problem: Problem,
    capacity: int,
    params: SearchParams = SearchParams(),
    seconds: float | None = None,
    progress: Progress | None = None,
    prepared: Prepared | None = None,
) -> Feasibility:
    """Is there a packing of ``problem`` within ``capacity`` bytes, by the exact
    search alone (``minimize.decide`` runs every phase of minimising first)?

    ``prepared``: the parts from ``prepare`` (made here when not given, within
    ``seconds``)."""
    clock = _Clock(None if seconds is None else time.monotonic() + seconds)
    why = fixed_conflict(problem, capacity)
    if why:
        return Feasibility("infeasible", capacity, reason=why)
    why = load_conflict(problem, capacity)
    if why:
        return Feasibility("infeasible", capacity, reason=why, seconds=clock.elapsed())
    if prepared is None:
        prepared = prepare(problem, params, Deadline(clock.deadline))
        if prepared is None:
            return Feasibility(
                "unknown",
                capacity,
                reason="time limit reached while preparing the search",
                seconds=clock.elapsed(),
            )
    if prepared.too_large:
        return Feasibility("unknown", capacity, reason=prepared.too_large, seconds=clock.elapsed())
    bufs = problem.buffers
    offsets = [b.offset if b.offset is not None else 0 for b in bufs]
    for part in prepared.parts:
        code, found = _solve_part(part, capacity, params, clock, progress)
        elapsed = clock.elapsed()
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
        "feasible", capacity, tuple(offsets), nodes=clock.nodes, seconds=clock.elapsed()
    )


def load_conflict(problem: Problem, capacity: int) -> str | None:
    """More bytes live at one step than ``capacity``: the cheapest proof."""
    load, step = peak_load(problem)
    if load <= capacity:
        return None
    return f"{load} bytes are live at step {step}, more than the capacity of {capacity}"
