"""The minimalloc CSV format: one buffer a row, half-open lifetimes.

Header ``id,lower,upper,size`` with optional ``alignment`` and ``offset``
(a fixed offset on input, the solution on output). A buffer lives over the
half-open steps ``[lower, upper)``; in our ``Buffer`` that is the inclusive
``[lower, upper - 1]``. Sizes, offsets and alignments are bytes.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from arenaplan.allocation import _csvread, _csvwrite
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.packing import Columns, remember_columns
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.errors import AllocationError
from arenaplan.inputs import read_text_input

REQUIRED = ("id", "lower", "upper", "size")
OPTIONAL = ("alignment", "offset")
# Every value, and the sum of all sizes plus the largest offset and alignment,
# stays below 2**62 so that no height or sum overflows the search's int64.
LIMIT = 1 << 62
NATIVE_OK, NATIVE_BAD_ROW = 0, 1  # what _csvread.read_rows returns first


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


def _header(row: list[str]) -> dict[str, int]:
    """Each column's index in a row; errors name row 1."""
    header = [h.strip() for h in row]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise AllocationError(
            f"row 1: missing column(s) {', '.join(missing)} (need {','.join(REQUIRED)})"
        )
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if unknown:
        raise AllocationError(f"row 1: unknown column(s) {', '.join(unknown)}")
    return {name: k for k, name in enumerate(header)}


def _parse(text: str, capacity: int | None, deadline: Deadline | None) -> Problem:
    """The native reader when the text is plain (``_csvread.c``), else row by row."""
    problem = _parse_native(text, capacity) if text.isascii() and '"' not in text else None
    if problem is None:
        problem = _parse_rows(text, capacity, deadline)
    if deadline is not None:
        deadline.expired("reading")
    return problem


def _parse_native(text: str, capacity: int | None) -> Problem | None:
    """A plain file read in C, or None when the C reader leaves it to Python (it
    then reads the whole file). A row the C reader does not take is read here
    alone, so that its error is the one the row-by-row reader gives."""
    head, _, _ = text.partition("\n")
    cols = _header(next(csv.reader([head]), []))
    data = text.encode("ascii")
    where = tuple(cols.get(k, -1) for k in (*REQUIRED, *OPTIONAL))
    got = _csvread.read_rows(data, min(len(head) + 1, len(data)), where, len(cols), Buffer)
    if got[0] == NATIVE_BAD_ROW:
        _, row, begin, end = got
        line = data[begin:end].decode("ascii")
        _buffer(_padded(next(csv.reader([line])), len(cols), row), cols, row)
        return None  # the C reader is stricter than Python on this row
    if got[0] != NATIVE_OK:
        return None
    buffers, unique = got[1], got[7]
    first, last, size, align, fixed = (np.frombuffer(b, dtype=np.int64) for b in got[2:7])
    if not unique:
        _check_ids(buffers)
    _check_total_columns(size, align, fixed)
    problem = Problem(buffers, capacity)
    remember_columns(problem, first, last, size, align, fixed)
    return problem


def _padded(row: list[str], width: int, line: int) -> list[str]:
    if len(row) > width:
        raise AllocationError(f"row {line}: more fields than columns")
    return row + [""] * (width - len(row))


def _check_ids(buffers: tuple[Buffer, ...]) -> None:
    """Name the second of the first repeated pair of ids (row k + 2), if any (the C
    reader has said there is one)."""
    seen: set[str] = set()
    for k, b in enumerate(buffers):
        if b.id in seen:
            raise AllocationError(f"row {k + 2}: duplicate id {b.id!r}")
        seen.add(b.id)


def _check_total_columns(size: np.ndarray, align: np.ndarray, fixed: np.ndarray) -> None:
    """As ``_check_total``, on columns (Python ints: the sum may pass int64)."""
    if not len(size):
        return
    small = int(np.abs(size).max()) < LIMIT // len(size)  # so their int64 sum cannot overflow
    sizes = int(size.sum()) if small else sum(size.tolist())
    total = sizes + max(int(fixed.max()), 0) + int(align.max())
    if total >= LIMIT:
        raise AllocationError(
            f"the sizes add up to {total:,} bytes, beyond what the solver handles (2**62)"
        )


def _parse_rows(text: str, capacity: int | None, deadline: Deadline | None) -> Problem:
    reader = csv.reader(io.StringIO(text))
    cols = _header(next(reader, []))
    width = len(cols)
    buffers = []
    seen: set[str] = set()
    line = 1  # records, as numbered in messages: the header is row 1, blank lines skipped
    for row in reader:
        if not row:
            continue
        line += 1
        b = _buffer(_padded(row, width, line), cols, line)
        if b.id in seen:
            raise AllocationError(f"row {line}: duplicate id {b.id!r}")
        seen.add(b.id)
        buffers.append(b)
        if deadline is not None and line % 65536 == 0:
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


def format_cost(problem: Problem, sample: int = 10_000) -> float:
    """CPU seconds ``solution_bytes`` will take on ``problem``: timed on its first
    ``sample`` rows (sizes standing in for the offsets), scaled to all of them."""
    n = len(problem.buffers)
    if n == 0:
        return 0.0
    k = min(sample, n)
    cols = Columns.of(problem)
    head = (problem.buffers[:k], cols.first[:k], cols.last[:k], cols.size[:k], cols.align[:k])
    cpu = time.process_time()
    _rows(*head, cols.size[:k].tolist())
    return (time.process_time() - cpu) * n / k


def format_solution(problem: Problem, offsets: Sequence[int]) -> str:
    """The problem's rows with an ``offset`` column (alignment kept where not 1),
    as the csv module writes them."""
    return solution_bytes(problem, offsets).decode()


def solution_bytes(problem: Problem, offsets: Sequence[int]) -> bytes:
    """``format_solution`` as UTF-8."""
    cols = Columns.of(problem)
    return _rows(problem.buffers, cols.first, cols.last, cols.size, cols.align, offsets)


def _rows(
    buffers: Sequence[Buffer],
    first: np.ndarray,
    last: np.ndarray,
    size: np.ndarray,
    align: np.ndarray,
    offsets: Sequence[int],
) -> bytes:
    """The header and a row a buffer: in C (``_csvwrite.c``) unless an id needs
    quotes, then by the csv module."""
    with_align = bool((align != 1).any())
    names = [*REQUIRED, *(["alignment"] if with_align else []), "offset"]
    head = (",".join(names) + "\n").encode()
    at = np.asarray(offsets, dtype=np.int64)
    written = _csvwrite.write_rows(
        head, tuple(buffers), first, last, size, align if with_align else None, at
    )
    if written is not None:
        return written
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    for b, off in zip(buffers, offsets, strict=True):
        align_field = [b.alignment] if with_align else []
        writer.writerow([b.id, b.first, b.last + 1, b.size, *align_field, off])
    return out.getvalue().encode()
