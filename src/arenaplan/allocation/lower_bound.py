"""Lower bounds beyond the max-load bound, each with a certificate to check.

Three facts make a bound (all heights and capacities in bytes unless noted):

1. **Relaxation.** Dropping buffers, or cutting a buffer's lifetime down to the
   steps of a window, only removes constraints: the optimum of a relaxation is a
   lower bound on the optimum of the problem. Alignments and fixed offsets are
   dropped too (a relaxation again), so the bounds hold for any alignment.

2. **Canonical packings** (the argument of MiniMalloc's search, proved here). Take
   any packing, list its buffers by (offset, index) and re-place each in that
   order at the top of the highest earlier buffer that shares a step with it (0
   if none). By induction no buffer moves up: the earlier buffers that share a
   step with it lay below it and do not rise. Repeat while an offset drops; the
   sum of offsets falls each round, so this ends, at a packing where, listed by
   (offset, index), each buffer sits on the top of the highest earlier buffer it
   shares a step with. So a capacity is feasible iff a *canonical sequence*
   exists: buffers placed one by one, each at ``rest`` = the highest top of the
   placed buffers sharing a step with it, with (offset, index) increasing along
   the sequence. Offsets are then sums of sizes, so sizes may be divided by their
   greatest common divisor ``unit``: refuting ``c`` units refutes every height
   below ``(c + 1) * unit`` bytes.

3. **Exhaustive refutation.** A depth-first search over canonical sequences,
   with two cuts that only drop nodes with no complete sequence below them:

   - *step*: at an elementary step ``t``, every unplaced buffer live at ``t``
     will lie above ``max(floor(t), last)`` (``floor``: the highest top of the
     placed buffers live at ``t``; ``last``: the offset placed last), and they
     are disjoint there, so their sizes must fit between that and the capacity;
   - *buffer*: an unplaced buffer whose rest plus size exceeds the capacity can
     never be placed (rests only grow).

   The search records its whole tree (``Refutation.tree``); ``lower_bound_check``
   replays it with code of its own.

Picture of a canonical packing (each buffer rests on 0 or on one below)::

    addr ^   +---b4---+
         |   |        |  +-b3-+
         | +-+--b2----+  |    |
         | |   b1    |   |    |
         +-+---------+---+----+--> time (steps)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Buffer, Problem

# A node of the search tree, in depth-first preorder. ``move`` is the placement
# that leads to the node: (buffer index in the problem, offset in units); the
# root has (-1, -1). ``cut`` says why the node has no children:
#   ("step", t)     the unplaced buffers live at step t (of the problem) do not fit,
#   ("buffer", i)   unplaced buffer i rests too high to fit,
#   ("none", -1)    the node was expanded: its ``children`` nodes follow it.
Node = tuple[tuple[int, int], tuple[str, int], int]


@dataclass(frozen=True, slots=True)
class Compact:
    """The problem on elementary steps, sizes in units of their common divisor.

    Elementary step ``k`` is the half-open time range between the k-th and the
    (k+1)-th distinct interval end; buffer ``i`` lives over the inclusive
    elementary steps ``[start[i], end[i]]`` and is ``size[i] * unit`` bytes.
    Buffers of size 0 are left out (``index`` maps back to the problem).
    """

    start: tuple[int, ...]
    end: tuple[int, ...]
    size: tuple[int, ...]  # units
    unit: int  # bytes a unit
    steps: int  # elementary steps
    time: tuple[int, ...]  # the problem's first step of each elementary step
    index: tuple[int, ...]  # position of each buffer in the problem


@dataclass(frozen=True, slots=True)
class Refutation:
    """Proof that ``problem`` has no packing within ``capacity`` bytes.

    ``units`` is the capacity in units of ``unit`` bytes actually refuted
    (``capacity // unit``); ``tree`` the search tree (see ``Node``)."""

    problem: Problem
    capacity: int
    unit: int
    units: int
    tree: tuple[Node, ...]

    @property
    def bound(self) -> int:
        """No packing of ``problem`` (nor of anything containing it) is lower."""
        return (self.units + 1) * self.unit


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the search reached at one capacity: a packing (``offsets`` in bytes,
    problem order), a refutation, or neither (``nodes`` ran out)."""

    capacity: int
    offsets: tuple[int, ...] | None
    refutation: Refutation | None
    nodes: int


def relax(problem: Problem) -> Problem:
    """The problem without alignments, fixed offsets or a capacity: a relaxation."""
    return Problem(tuple(Buffer(b.id, b.first, b.last, b.size) for b in problem.buffers))


def window(problem: Problem, first: int, last: int) -> Problem:
    """Buffers live in the steps ``[first, last]`` (inclusive), lifetimes cut to
    them; a relaxation of ``relax(problem)``."""
    kept = [
        Buffer(b.id, max(b.first, first), min(b.last, last), b.size)
        for b in problem.buffers
        if b.first <= last and first <= b.last
    ]
    return Problem(tuple(kept))


def compact(problem: Problem) -> Compact:
    """Renumber steps to elementary steps and divide sizes by their gcd."""
    kept = [i for i, b in enumerate(problem.buffers) if b.size > 0]
    bufs = [problem.buffers[i] for i in kept]
    ends = sorted({b.first for b in bufs} | {b.last + 1 for b in bufs})
    rank = {t: k for k, t in enumerate(ends)}
    unit = math.gcd(*(b.size for b in bufs)) if bufs else 1
    return Compact(
        start=tuple(rank[b.first] for b in bufs),
        end=tuple(rank[b.last + 1] - 1 for b in bufs),
        size=tuple(b.size // unit for b in bufs),
        unit=unit,
        steps=max(len(ends) - 1, 0),
        time=tuple(ends[:-1]),
        index=tuple(kept),
    )


class _Search:
    """Depth-first search over canonical sequences of a ``Compact`` at ``cap`` units.

    Invariants: ``floor[t]`` is the highest top (units) of the placed buffers live
    at elementary step t; ``load[t]`` the total size of the unplaced ones live at
    t; ``seq`` the placements made, in order, as (compact index, offset)."""

    def __init__(self, c: Compact, cap: int, node_limit: int) -> None:
        self.c, self.cap, self.node_limit = c, cap, node_limit
        n = len(c.size)
        self.placed = [False] * n
        self.offset = [0] * n
        self.floor = [0] * c.steps
        self.load = [0] * c.steps
        for i in range(n):
            for t in range(c.start[i], c.end[i] + 1):
                self.load[t] += c.size[i]
        self.seq: list[tuple[int, int]] = []
        self.tree: list[Node] = []
        self.found: list[int] | None = None

    def rest(self, i: int) -> int:
        return max(self.floor[t] for t in range(self.c.start[i], self.c.end[i] + 1))

    def last(self) -> tuple[int, int]:
        """(offset, index) of the last placement; (-1, -1) before any."""
        if not self.seq:
            return (-1, -1)
        i, off = self.seq[-1]
        return (off, i)

    def cut(self) -> tuple[str, int]:
        """Why no canonical sequence completes from here, or ("none", -1)."""
        low = max(self.last()[0], 0)
        for t in range(self.c.steps):
            if self.load[t] and max(self.floor[t], low) + self.load[t] > self.cap:
                return ("step", self.c.time[t])
        for i, done in enumerate(self.placed):
            if not done and self.rest(i) + self.c.size[i] > self.cap:
                return ("buffer", i)
        return ("none", -1)

    def moves(self) -> list[tuple[int, int]]:
        """Legal next placements (compact index, offset), by (offset, index)."""
        last = self.last()
        out = []
        for i, done in enumerate(self.placed):
            if done:
                continue
            r = self.rest(i)
            if (r, i) > last and r + self.c.size[i] <= self.cap:
                out.append((r, i))
        return [(i, r) for r, i in sorted(out)]

    def place(self, i: int, off: int) -> list[int]:
        """Place buffer i at ``off``; returns the old floors of its steps."""
        c = self.c
        old = self.floor[c.start[i] : c.end[i] + 1]
        for t in range(c.start[i], c.end[i] + 1):
            self.floor[t] = max(self.floor[t], off + c.size[i])
            self.load[t] -= c.size[i]
        self.placed[i], self.offset[i] = True, off
        self.seq.append((i, off))
        return old

    def unplace(self, i: int, old: list[int]) -> None:
        c = self.c
        self.floor[c.start[i] : c.end[i] + 1] = old
        for t in range(c.start[i], c.end[i] + 1):
            self.load[t] += c.size[i]
        self.placed[i] = False
        self.seq.pop()

    def run(self, move: tuple[int, int]) -> bool:
        """Search below the current node; False when the node limit is reached.

        Iterative (an explicit stack) so deep problems do not hit Python's
        recursion limit; each stack entry is (move, old floors, children left)."""
        stack: list[tuple[tuple[int, int], list[int], list[tuple[int, int]]]] = []
        pending = [move]
        while True:
            if pending:
                mv = pending.pop()
                old = self.place(*mv) if mv[0] >= 0 else []
                if len(self.tree) >= self.node_limit:
                    return False
                if all(self.placed):
                    self.found = list(self.offset)
                    return True
                why = self.cut()
                kids = [] if why[0] != "none" else self.moves()
                self.tree.append((self._public(mv), why, len(kids)))
                stack.append((mv, old, list(reversed(kids))))
            mv, old, kids = stack[-1]
            if kids:
                pending.append(kids.pop())
                continue
            stack.pop()
            if mv[0] >= 0:
                self.unplace(mv[0], old)
            if not stack:
                return True

    def _public(self, mv: tuple[int, int]) -> tuple[int, int]:
        """A move with the buffer as its index in the problem."""
        return (self.c.index[mv[0]], mv[1]) if mv[0] >= 0 else (-1, -1)


def refute(problem: Problem, capacity: int, node_limit: int = 1_000_000) -> Outcome:
    """Decide exactly whether ``relax(problem)`` packs within ``capacity`` bytes.

    Returns a packing (canonical, offsets in bytes), a ``Refutation`` of the
    capacity, or neither when the search tree grows beyond ``node_limit`` nodes.
    """
    relaxed = relax(problem)
    c = compact(relaxed)
    units = capacity // c.unit
    search = _Search(c, units, node_limit)
    done = search.run((-1, -1))
    nodes = len(search.tree)
    if search.found is not None:
        offsets = [0] * len(problem.buffers)
        for k, i in enumerate(c.index):
            offsets[i] = search.found[k] * c.unit
        return Outcome(capacity, tuple(offsets), None, nodes)
    if not done:
        return Outcome(capacity, None, None, nodes)
    proof = Refutation(relaxed, capacity, c.unit, units, tuple(search.tree))
    return Outcome(capacity, None, proof, nodes)


@dataclass(frozen=True, slots=True)
class Bound:
    """The best bound reached on a problem: ``bound`` bytes, proven by
    ``refutation`` (None when it is the max-load bound); ``optimal`` when a packing
    of the relaxation at ``bound`` was found (then no relaxation of this kind can
    prove more)."""

    bound: int
    max_load: int
    refutation: Refutation | None
    optimal: bool
    nodes: int


def search_bound(problem: Problem, ceiling: int | None = None, node_limit: int = 200_000) -> Bound:
    """The highest bound the exhaustive search proves on ``problem`` (a relaxation
    of it, so of anything containing it): a try at the max-load bound, then
    bisection up to ``ceiling`` (a known height; default: the sum of sizes).

    Each try gets ``node_limit`` nodes; a try that runs out proves nothing and
    ends the bisection, so the bound is only ever raised by a refutation.
    """
    relaxed = relax(problem)
    c = compact(relaxed)
    load = live_bytes_bound(relaxed)
    lo = -(-load // c.unit)  # units: every capacity below lo is refuted by the load
    hi = (ceiling if ceiling is not None else sum(c.size) * c.unit) // c.unit
    best: Refutation | None = None
    packed = hi + 1  # lowest capacity (units) where a packing was found
    nodes = 0
    first = True
    while lo <= hi:
        # The max-load bound itself first: it is often the optimum.
        mid, first = (lo if first else (lo + hi) // 2), False
        out = refute(relaxed, mid * c.unit, node_limit)
        nodes += out.nodes
        if out.refutation is not None:
            best, lo = out.refutation, mid + 1
            continue
        if out.offsets is None:
            break  # out of nodes: a higher capacity is no easier to refute
        packed, hi = min(packed, mid), mid - 1
    bound = max(load, best.bound if best else 0)
    return Bound(bound, load, best, packed * c.unit == bound, nodes)


def time_windows(problem: Problem, width: int) -> list[tuple[int, int]]:
    """Windows of ``width`` elementary steps centred on each step of peak load,
    as (first, last) inclusive steps of the problem; the peak is where a
    relaxation can beat the max-load bound."""
    bufs = [b for b in problem.buffers if b.size > 0]
    if not bufs:
        return []
    ends = sorted({b.first for b in bufs} | {b.last + 1 for b in bufs})
    load = [0] * (len(ends) - 1)
    rank = {t: k for k, t in enumerate(ends)}
    for b in bufs:
        for k in range(rank[b.first], rank[b.last + 1]):
            load[k] += b.size
    peak = max(load)
    out = []
    for k, value in enumerate(load):
        if value != peak:
            continue
        lo, hi = max(k - width // 2, 0), min(k + width // 2, len(load) - 1)
        pair = (ends[lo], ends[hi + 1] - 1)
        if pair not in out:
            out.append(pair)
    return out


def subset(problem: Problem, indices: Sequence[int]) -> Problem:
    """The buffers at ``indices`` alone: a relaxation (fewer constraints)."""
    return relax(Problem(tuple(problem.buffers[i] for i in indices)))
