"""Sweep a problem into time sections and independent parts.

A *section* is a maximal run of steps over which the set of live buffers does
not change; each buffer spans a contiguous range of sections ``[lo, hi)``. Where
no buffer is live across a section boundary, the problem splits into *parts*
that can be packed independently (the height is the largest of theirs).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from arenaplan.allocation.packing import Columns
from arenaplan.allocation.problem import Problem


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
    first: array  # int64: each buffer's inclusive [first, last] steps
    last: array

    @property
    def n_sections(self) -> int:
        return len(self.loads)


def split_parts(problem: Problem, members: list[int]) -> list[list[int]]:
    """Group buffer indices into parts: a cut where no buffer is live across.

    By first step (then index), a part ends before the buffer that starts after
    every earlier one has ended (O(n log n), numpy); each part sorted."""
    if not members:
        return []
    cols = Columns.of(problem)
    idx = np.asarray(members, dtype=np.int64)
    first, last = cols.first[idx], cols.last[idx]
    order = np.lexsort((idx, first))
    reach = np.maximum.accumulate(last[order])  # last step of all so far (inclusive)
    cuts = np.flatnonzero(first[order][1:] > reach[:-1]) + 1
    return [np.sort(part).tolist() for part in np.split(idx[order], cuts)]


def table_entries(problem: Problem, members: list[int]) -> int:
    """Entries of the tables ``make_part`` would build for ``members``: ordered
    time-neighbour pairs plus (buffer, section) memberships. O(n log n), so a
    part too large for the search is turned away before anything is built."""
    if not members:
        return 0
    first = np.array([problem.buffers[i].first for i in members], dtype=np.int64)
    last = np.array([problem.buffers[i].last for i in members], dtype=np.int64)
    ends, starts = np.sort(last), np.sort(first)
    # neighbours of k: all, less those ending before it starts or starting after it ends
    before = np.searchsorted(ends, first, side="left")
    after = len(members) - np.searchsorted(starts, last, side="right")
    pairs = int((len(members) - before - after - 1).sum())
    bounds = np.unique(np.concatenate((first, last + 1)))
    spans = np.searchsorted(bounds, last + 1) - np.searchsorted(bounds, first)
    return pairs + int(spans.sum())


def _ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, value) for every integer of every ``[lo[k], hi[k])``, owner-major."""
    span = hi - lo
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), span)
    start_of = np.repeat(np.cumsum(span) - span, span)
    return owner, np.repeat(lo, span) + (np.arange(int(span.sum()), dtype=np.int64) - start_of)


def _csr(groups: np.ndarray, items: np.ndarray, n_groups: int) -> tuple[array, array]:
    """CSR lists of ``items`` by ``groups`` (both sorted by group, then item)."""
    start = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(groups, minlength=n_groups), out=start[1:])
    return array("i", start.astype(np.int32).tobytes()), array(
        "i", items.astype(np.int32).tobytes()
    )


def make_part(problem: Problem, members: list[int]) -> Part:
    """The tables of the C search for ``members`` (numpy; cost and memory are
    linear in ``table_entries``)."""
    bufs = [problem.buffers[i] for i in members]
    m = len(bufs)
    first = np.array([b.first for b in bufs], dtype=np.int64)
    last = np.array([b.last for b in bufs], dtype=np.int64)
    size = np.array([b.size for b in bufs], dtype=np.int64)
    bounds = np.unique(np.concatenate((first, last + 1)))
    n_sec = len(bounds) - 1
    lo = np.searchsorted(bounds, first).astype(np.int64)
    hi = np.searchsorted(bounds, last + 1).astype(np.int64)
    delta = np.zeros(n_sec + 1, dtype=np.int64)
    np.add.at(delta, lo, size)
    np.add.at(delta, hi, -size)
    loads = np.cumsum(delta[:-1])
    owner, section = _ranges(lo, hi)  # every (buffer, section) where it is live
    by_section = np.lexsort((owner, section))
    sb_start, sb = _csr(section[by_section], owner[by_section], n_sec)
    # time-neighbours: j with lo[j] < hi[k] and hi[j] > lo[k], j != k, ascending
    by_lo = np.argsort(lo, kind="stable")
    lo_sorted = lo[by_lo]
    ov_start, chunks = array("i", [0]), []
    for k in range(m):
        cand = by_lo[: np.searchsorted(lo_sorted, hi[k], side="left")]
        near = np.sort(cand[(hi[cand] > lo[k]) & (cand != k)])
        chunks.append(near.astype(np.int32))
        ov_start.append(ov_start[-1] + len(near))
    ov = array("i", np.concatenate(chunks).tobytes() if chunks else b"")
    return Part(
        buffers=tuple(members),
        size=array("q", size.tobytes()),
        align=array("q", [b.alignment for b in bufs]),
        fixed=array("q", [-1 if b.offset is None else b.offset for b in bufs]),
        sec_lo=array("i", lo.astype(np.int32).tobytes()),
        sec_hi=array("i", hi.astype(np.int32).tobytes()),
        ov_start=ov_start,
        ov=ov,
        sb_start=sb_start,
        sb=sb,
        loads=tuple(loads.tolist()),
        starts=tuple(bounds[:-1].tolist()),
        first=array("q", first.tobytes()),
        last=array("q", last.tobytes()),
    )


def preorder(part: Part, heuristic: str) -> array:
    """Part-local buffer indices sorted by ``heuristic``, one letter a key, largest first.

    W width (steps), A area (bytes x steps), T the largest load of its sections,
    Z size, C sections spanned, L first step, U last step, O time-neighbours.
    Ties: by index. Keys as numpy columns (a stable sort on each, the last
    letter first); areas past int64 are compared as Python integers.
    """
    n = len(part.buffers)
    first = np.frombuffer(part.first, dtype=np.int64)
    last = np.frombuffer(part.last, dtype=np.int64)
    size = np.frombuffer(part.size, dtype=np.int64)
    lo = np.frombuffer(part.sec_lo, dtype=np.int32)
    hi = np.frombuffer(part.sec_hi, dtype=np.int32)
    ov = np.frombuffer(part.ov_start, dtype=np.int32)
    width = last - first + 1
    columns = {
        "W": lambda: width,
        "A": lambda: _areas(width, size),
        "Z": lambda: size,
        "C": lambda: (hi - lo).astype(np.int64),
        "T": lambda: _range_max(np.asarray(part.loads, dtype=np.int64), lo, hi),
        "L": lambda: first,
        "U": lambda: last,
        "O": lambda: (ov[1:] - ov[:-1]).astype(np.int64),
    }
    order = np.arange(n)
    for c in reversed(heuristic):  # the first letter sorts last: it leads
        order = _descending(columns[c](), order)
    return array("i", order.astype(np.int32).tobytes())


def _descending(key: np.ndarray | list[int], order: np.ndarray) -> np.ndarray:
    """``order`` stably sorted by ``key`` (of each index), largest first."""
    if isinstance(key, list):  # Python integers (areas past int64)
        return np.array(sorted(order.tolist(), key=lambda i: -key[i]), dtype=np.int64)
    return order[np.argsort(~key[order], kind="stable")]  # ~x = -x - 1: no overflow


def _areas(width: np.ndarray, size: np.ndarray) -> np.ndarray | list[int]:
    """width x size a buffer (bytes x steps), int64 when every product fits."""
    if not len(size) or int(width.max()) * int(size.max()) < 1 << 63:
        return width * size
    return [w * z for w, z in zip(width.tolist(), size.tolist(), strict=True)]


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo[k]:hi[k]]) for each k (0 for an empty range), by a sparse
    table: level j holds the maxima of runs of 2**j values."""
    out = np.zeros(len(lo), dtype=np.int64)
    span = (hi - lo).astype(np.int64)
    some = span > 0
    if not some.any():
        return out
    levels = [values]
    while 1 << len(levels) <= int(span.max()):
        prev, half = levels[-1], 1 << (len(levels) - 1)
        levels.append(np.maximum(prev[:-half], prev[half:]))
    j = np.zeros(len(lo), dtype=np.int64)
    j[some] = np.floor(np.log2(span[some])).astype(np.int64)
    for level in np.unique(j[some]):
        k = np.flatnonzero(some & (j == level))
        table = levels[level]
        out[k] = np.maximum(table[lo[k]], table[hi[k] - (1 << int(level))])
    return out
