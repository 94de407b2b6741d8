"""Sweep a problem into time sections and independent parts.

A *section* is a maximal run of steps over which the set of live buffers does
not change; each buffer spans a contiguous range of sections ``[lo, hi)``. Where
no buffer is live across a section boundary, the problem splits into *parts*
that can be packed independently (the height is the largest of theirs).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass

from arenaplan.allocation.problem import Buffer, Problem


@dataclass(frozen=True, slots=True)
class Part:
    """An independent sub-problem: ``buffers`` are indices into the whole problem.

    Arrays are local to the part (buffer k of the part is ``buffers[k]``), laid
    out as the C search wants them: int64 sizes, alignments, fixed offsets
    (-1 = free); int32 section ranges and CSR lists of time-neighbours and of
    the buffers live in each section. ``loads`` are the bytes live per section.
    """

    buffers: tuple[int, ...]
    size: array
    align: array
    fixed: array
    sec_lo: array
    sec_hi: array
    ov_start: array
    ov: array
    sb_start: array
    sb: array
    loads: tuple[int, ...]
    starts: tuple[int, ...]  # first step of each section (for messages)
    steps: tuple[tuple[int, int], ...]  # each buffer's inclusive [first, last]
    first: array  # int64 copies of the steps, for the C search
    last: array

    @property
    def n_sections(self) -> int:
        return len(self.loads)


def _boundaries(bufs: list[Buffer]) -> list[int]:
    return sorted({b.first for b in bufs} | {b.last + 1 for b in bufs})


def split_parts(problem: Problem, members: list[int]) -> list[list[int]]:
    """Group buffer indices into parts: a cut where no buffer is live across."""
    order = sorted(members, key=lambda i: (problem.buffers[i].first, i))
    parts: list[list[int]] = []
    reach = None  # last step of the current part (inclusive)
    for i in order:
        b = problem.buffers[i]
        if reach is None or b.first > reach:
            parts.append([])
            reach = b.last
        parts[-1].append(i)
        reach = max(reach, b.last)
    return [sorted(p) for p in parts]


def make_part(problem: Problem, members: list[int]) -> Part:
    bufs = [problem.buffers[i] for i in members]
    bounds = _boundaries(bufs)
    n_sec = len(bounds) - 1
    lo = [bisect_left(bounds, b.first) for b in bufs]
    hi = [bisect_left(bounds, b.last + 1) for b in bufs]
    loads = [0] * n_sec
    in_section: list[list[int]] = [[] for _ in range(n_sec)]
    for k, b in enumerate(bufs):
        for t in range(lo[k], hi[k]):
            loads[t] += b.size
            in_section[t].append(k)
    neighbours: list[set[int]] = [set() for _ in bufs]
    for members_t in in_section:
        for k in members_t:
            neighbours[k].update(members_t)
    ov_start, ov = array("i", [0]), array("i")
    for k in range(len(bufs)):
        ov.extend(sorted(neighbours[k] - {k}))
        ov_start.append(len(ov))
    sb_start, sb = array("i", [0]), array("i")
    for members_t in in_section:
        sb.extend(members_t)
        sb_start.append(len(sb))
    return Part(
        buffers=tuple(members),
        size=array("q", [b.size for b in bufs]),
        align=array("q", [b.alignment for b in bufs]),
        fixed=array("q", [-1 if b.offset is None else b.offset for b in bufs]),
        sec_lo=array("i", lo),
        sec_hi=array("i", hi),
        ov_start=ov_start,
        ov=ov,
        sb_start=sb_start,
        sb=sb,
        loads=tuple(loads),
        starts=tuple(bounds[:-1]),
        steps=tuple((b.first, b.last) for b in bufs),
        first=array("q", [b.first for b in bufs]),
        last=array("q", [b.last for b in bufs]),
    )


def preorder(part: Part, heuristic: str) -> array:
    """Part-local buffer indices sorted by ``heuristic``, one letter a key, largest first.

    W width (steps), A area (bytes x steps), T the largest load of its sections,
    Z size, C sections spanned, L first step, U last step, O time-neighbours.
    """
    n = len(part.buffers)
    keys = []
    for k in range(n):
        lo, hi = part.sec_lo[k], part.sec_hi[k]
        first, last = part.steps[k]
        width = last - first + 1
        data = {
            "W": width,
            "A": width * part.size[k],
            "Z": part.size[k],
            "C": hi - lo,
            "T": max(part.loads[lo:hi], default=0),
            "L": first,
            "U": last,
            "O": part.ov_start[k + 1] - part.ov_start[k],
        }
        keys.append((*(-data[c] for c in heuristic), k))
    return array("i", sorted(range(n), key=lambda k: keys[k]))
