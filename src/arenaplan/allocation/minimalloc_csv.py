"""The minimalloc CSV format: one buffer a row, half-open lifetimes.

Header ``id,lower,upper,size`` with optional ``alignment`` and ``offset``
(a fixed offset on input, the solution on output). A buffer lives over the
half-open steps ``[lower, upper)``; in our ``Buffer`` that is the inclusive
``[lower, upper - 1]``. Sizes, offsets and alignments are bytes.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.errors import AllocationError
from arenaplan.inputs import read_text_input

REQUIRED = ("id", "lower", "upper", "size")
OPTIONAL = ("alignment", "offset")
# Every value, and the sum of all sizes plus the largest offset and alignment,
# stays below 2**62 so that no height or sum overflows the search's int64.
LIMIT = 1 << 62


def _int(text: str, key: str, line: int) -> int:
    text = text.strip()
    try:
        value = int(text)
    except ValueError:
        raise AllocationError(f"row {line}: {key} {text!r} is not an integer") from None
    if abs(value) >= LIMIT:
        raise AllocationError(f"row {line}: {key} {value} is out of range (limit 2**62)")
    return value


def _buffer(row: list[str], cols: dict[str, int], line: int) -> Buffer:
    """One row; ``cols`` maps each column present to its index in the row."""
    ident = row[cols["id"]].strip()
    if not ident:
        raise AllocationError(f"row {line}: empty id")
    lower, upper, size = (_int(row[cols[k]], k, line) for k in ("lower", "upper", "size"))
    if upper <= lower:
        raise AllocationError(f"row {line} ({ident}): upper {upper} must be above lower {lower}")
    if size < 0:
        raise AllocationError(f"row {line} ({ident}): negative size {size}")
    align_text = row[cols["alignment"]].strip() if "alignment" in cols else ""
    alignment = _int(align_text, "alignment", line) if align_text else 1
    if alignment < 1 or alignment & (alignment - 1):
        raise AllocationError(
            f"row {line} ({ident}): alignment {alignment} must be a power of two (1, 2, 4, ...)"
        )
    offset_text = row[cols["offset"]].strip() if "offset" in cols else ""
    offset = _int(offset_text, "offset", line) if offset_text else None
    if offset is not None and offset < 0:
        raise AllocationError(f"row {line} ({ident}): fixed offset {offset} is negative")
    if offset is not None and offset % alignment:
        raise AllocationError(
            f"row {line} ({ident}): fixed offset {offset} is not a multiple of "
            f"its alignment {alignment}"
        )
    return Buffer(ident, lower, upper - 1, size, alignment, offset)


def parse_problem(
    text: str, capacity: int | None = None, deadline: Deadline | None = None
) -> Problem:
    """Parse CSV text; every error names its row (the header is row 1).

    Reading cannot stop half-way (the problem must be whole): past ``deadline``
    it goes on, and records "reading" as the phase the time limit ended."""
    try:
        return _parse(text.removeprefix("\ufeff"), capacity, deadline)
    except csv.Error as exc:
        raise AllocationError(f"not a readable CSV file: {exc}") from None


def _parse(text: str, capacity: int | None, deadline: Deadline | None) -> Problem:
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise AllocationError(
            f"row 1: missing column(s) {', '.join(missing)} (need {','.join(REQUIRED)})"
        )
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if unknown:
        raise AllocationError(f"row 1: unknown column(s) {', '.join(unknown)}")
    cols = {name: k for k, name in enumerate(header)}
    width = len(header)
    buffers = []
    seen: set[str] = set()
    line = 1  # records, as numbered in messages: the header is row 1, blank lines skipped
    for row in reader:
        if not row:
            continue
        line += 1
        if len(row) > width:
            raise AllocationError(f"row {line}: more fields than columns")
        if len(row) < width:
            row = row + [""] * (width - len(row))
        b = _buffer(row, cols, line)
        if b.id in seen:
            raise AllocationError(f"row {line}: duplicate id {b.id!r}")
        seen.add(b.id)
        buffers.append(b)
        if deadline is not None and line % 65536 == 0:
            deadline.expired("reading")
    if deadline is not None:
        deadline.expired("reading")
    _check_total(buffers)
    return Problem(tuple(buffers), capacity)


def _check_total(buffers: list[Buffer]) -> None:
    total = sum(b.size for b in buffers)
    total += max((b.offset or 0 for b in buffers), default=0)
    total += max((b.alignment for b in buffers), default=1)
    if total >= LIMIT:
        raise AllocationError(
            f"the sizes add up to {total:,} bytes, beyond what the solver handles (2**62)"
        )


def read_problem(
    path: Path, capacity: int | None = None, deadline: Deadline | None = None
) -> Problem:
    text = read_text_input(path, "CSV", AllocationError)
    try:
        return parse_problem(text, capacity, deadline)
    except AllocationError as exc:
        raise AllocationError(f"{path}: {exc}") from None


def format_solution(problem: Problem, offsets: Sequence[int]) -> str:
    """The problem's rows with an ``offset`` column (alignment kept where not 1)."""
    with_align = any(b.alignment != 1 for b in problem.buffers)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*REQUIRED, *(["alignment"] if with_align else []), "offset"])
    for b, off in zip(problem.buffers, offsets, strict=True):
        align = [b.alignment] if with_align else []
        writer.writerow([b.id, b.first, b.last + 1, b.size, *align, off])
    return out.getvalue()
