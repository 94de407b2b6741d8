"""The CSV reader and writer and the solution checker at native speed: the same
answers and the same one-line errors as the row-by-row Python code they stand in
front of."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arenaplan.allocation import Buffer, Problem, _check, _csvwrite, solution_problems
from arenaplan.allocation import minimalloc_csv as mcsv
from arenaplan.allocation.packing import Columns
from arenaplan.allocation.validate import _all_overlaps, _buffer_problems
from arenaplan.errors import AllocationError

SPACES = st.sampled_from(["", " ", "\t", "  "])


@st.composite
def csv_texts(draw) -> str:
    """Plain CSV files: optional columns in any order, padding, blank lines, CRLF."""
    cols = ["id", "lower", "upper", "size"]
    cols += [c for c in ("alignment", "offset") if draw(st.booleans())]
    cols = draw(st.permutations(cols))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [",".join(cols)]
    for i in range(draw(st.integers(0, 12))):
        lower = draw(st.integers(-5, 50))
        align = draw(st.sampled_from([1, 2, 8, 64]))
        values = {
            "id": f"b{i}",
            "lower": str(lower),
            "upper": str(lower + draw(st.integers(1, 9))),
            "size": str(draw(st.integers(0, 1000))),
            "alignment": draw(st.sampled_from(["", str(align)])),
            "offset": draw(st.sampled_from(["", str(align * draw(st.integers(0, 9)))])),
        }
        if values["alignment"] == "":
            values["offset"] = values["offset"] and str(int(values["offset"]))
        pad = draw(SPACES)
        lines.append(",".join(pad + values[c] + draw(SPACES) for c in cols))
        if draw(st.integers(0, 5)) == 0:
            lines.append("")
    return end.join(lines) + draw(st.sampled_from(["", end]))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(csv_texts())
def test_the_native_reader_gives_the_row_by_row_problem(text: str) -> None:
    native = mcsv._parse_native(text, None)
    assert native is not None
    assert native == mcsv._parse_rows(text, None, None)
    cols = Columns.of(native)  # the reader's columns, as built from the buffers
    b = native.buffers
    assert cols.first.tolist() == [x.first for x in b]
    assert cols.last.tolist() == [x.last for x in b]
    assert cols.size.tolist() == [x.size for x in b]
    assert cols.align.tolist() == [x.alignment for x in b]
    assert cols.fixed.tolist() == [-1 if x.offset is None else x.offset for x in b]


def _rows(n: int) -> list[str]:
    return [f"b{i},{i},{i + 3},{16 * (i % 7 + 1)}" for i in range(n)]


BAD_ROWS = [
    ("b,0,1,-4", "negative size -4"),
    ("b,3,3,4", "upper 3 must be above lower 3"),
    ("b,0,1,four", "size 'four' is not an integer"),
    ("b,0,1,4,5", "more fields than columns"),
    (" ,0,1,4", "empty id"),
    ("b,0,1", "size '' is not an integer"),
    ("b,0,1,4611686018427387904", "size 4611686018427387904 is out of range (limit 2**62)"),
    ("b,0,1,99999999999999999999999", "is out of range (limit 2**62)"),
    ("b,0x10,1,4", "lower '0x10' is not an integer"),
    ("b1,0,1,4", "duplicate id 'b1'"),
]


@pytest.mark.parametrize(("row", "message"), BAD_ROWS)
def test_a_bad_row_deep_in_a_file_gets_the_row_by_row_error(row: str, message: str) -> None:
    lines = ["id,lower,upper,size", *_rows(5000)]
    lines.insert(4001, row)  # record 4,002 (the header is row 1), after a blank line
    lines.insert(10, "")
    text = "\n".join(lines) + "\n"
    with pytest.raises(AllocationError) as native:
        mcsv.parse_problem(text)
    with pytest.raises(AllocationError) as rows:
        mcsv._parse_rows(text, None, None)
    assert str(native.value) == str(rows.value)
    assert message in str(native.value)
    want = "row 4002" if "duplicate" not in message else "row 4002: duplicate id 'b1'"
    assert str(native.value).startswith(want), str(native.value)


def test_bad_alignments_and_fixed_offsets_get_the_row_by_row_error() -> None:
    head = "id,lower,upper,size,alignment,offset\n"
    for row in ("a,0,1,4,3,", "a,0,1,4,0,", "a,0,1,4,4,6", "a,0,1,4,4,-8", "a,0,1,4,,-1"):
        text = head + "z,0,1,4,,\n" + row + "\n"
        with pytest.raises(AllocationError) as native:
            mcsv.parse_problem(text)
        with pytest.raises(AllocationError) as rows:
            mcsv._parse_rows(text, None, None)
        assert str(native.value) == str(rows.value)
        assert str(native.value).startswith("row 3 (a): ")


@pytest.mark.parametrize(
    "text",
    [
        'id,lower,upper,size\n"a,b",0,1,4\nc,1,2,8\n',  # quoted id with a comma
        "id,lower,upper,size\na,1_000,1_001,4\n",  # what int() takes and C does not
        "id,lower,upper,size\nä,0,1,4\n",  # not ASCII
        "id,lower,upper,size\na,0,1,4\n\x85b,0,1,4\n",
        "id,lower,upper,size\na, 0 ,\v1,4\n",  # a vertical tab: strip() takes it
    ],
)
def test_what_the_native_reader_does_not_take_is_read_row_by_row(text: str) -> None:
    assert mcsv.parse_problem(text) == mcsv._parse_rows(text, None, None)


def test_header_only_empty_and_crlf_files() -> None:
    assert mcsv.parse_problem("id,lower,upper,size").buffers == ()
    assert mcsv.parse_problem("id,lower,upper,size\r\n").buffers == ()
    crlf = mcsv.parse_problem("id,lower,upper,size\r\na,0,2,4\r\n\r\nb,1,3,8\r\n")
    assert [b.id for b in crlf.buffers] == ["a", "b"] and crlf.buffers[1].last == 2
    with pytest.raises(AllocationError, match="row 1: missing column"):
        mcsv.parse_problem("")


def test_the_sizes_sum_is_checked_beyond_int64() -> None:
    big = 1 << 61
    text = "id,lower,upper,size\n" + "".join(f"b{i},0,1,{big}\n" for i in range(5))
    with pytest.raises(AllocationError, match=r"beyond what the solver handles \(2\*\*62\)"):
        mcsv.parse_problem(text)


def test_a_file_of_200k_rows_reads_natively(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text(
        "id,lower,upper,size,alignment\n" + "".join(r + ",16\n" for r in _rows(200_000))
    )
    problem = mcsv.read_problem(path)
    assert len(problem.buffers) == 200_000
    assert problem.buffers[123_456] == Buffer("b123456", 123_456, 123_458, 16 * 5, 16)


def _python_verdict(problem: Problem, offsets: list[int | None]) -> list[str]:
    """The sentences of the Python path alone (the native one bypassed)."""
    found = []
    for b, off in zip(problem.buffers, offsets, strict=True):
        found.extend(_buffer_problems(b, off, problem.capacity))
    placed = [i for i, off in enumerate(offsets) if off is not None]
    return found + _all_overlaps(problem, offsets, placed, ())


@st.composite
def solutions(draw) -> tuple[Problem, list[int | None]]:
    n = draw(st.integers(0, 14))
    buffers, offsets = [], []
    for i in range(n):
        first = draw(st.integers(0, 10))
        align = draw(st.sampled_from([1, 4, 16]))
        fixed = draw(st.sampled_from([None, None, None, 0, 16, 32]))
        buffers.append(
            Buffer(f"b{i}", first, first + draw(st.integers(0, 5)), draw(st.integers(0, 40)),
                   align, fixed)
        )  # fmt: skip
        offsets.append(draw(st.sampled_from([None, -4, 0, 2, 4, 16, 20, 32, 48, 64, 80])))
    capacity = draw(st.sampled_from([None, 0, 64, 100, 1 << 70]))
    return Problem.of(buffers, capacity), offsets


@settings(max_examples=700, deadline=None, derandomize=True)
@given(solutions())
def test_the_native_check_agrees_with_the_python_sentences(case) -> None:
    problem, offsets = case
    verdict = _python_verdict(problem, offsets)
    assert (solution_problems(problem, offsets) == []) == (verdict == [])
    if None not in offsets and (problem.capacity is None or problem.capacity < 1 << 63):
        cap = -1 if problem.capacity is None else problem.capacity
        assert _check.surely_valid(problem.buffers, offsets, cap) == (verdict == [])


@st.composite
def wide_solutions(draw) -> tuple[Problem, list[int]]:
    """Hundreds of buffers (the bitmap's summary levels in play), steps from -3,
    offsets near one another: valid and invalid both common."""
    seed, n = draw(st.integers(0, 2**32)), draw(st.integers(60, 400))
    rng = random.Random(seed)
    buffers, offsets = [], []
    for i in range(n):
        first = rng.randrange(-3, 40)
        buffers.append(Buffer(f"b{i}", first, first + rng.randrange(4), rng.randrange(1, 24)))
        offsets.append(rng.randrange(0, 64 * n, 16))
    return Problem.of(buffers), offsets


@settings(max_examples=150, deadline=None, derandomize=True)
@given(wide_solutions())
def test_the_native_check_agrees_on_hundreds_of_buffers(case) -> None:
    problem, offsets = case
    verdict = _python_verdict(problem, offsets)
    assert _check.surely_valid(problem.buffers, offsets, -1) == (verdict == [])


def test_the_native_check_passes_200k_buffers_and_finds_one_moved_buffer() -> None:
    rng = random.Random(5)
    n = 200_000
    first = np.array([rng.randrange(20_000) for _ in range(n)])
    life = np.array([rng.randint(0, 50) for _ in range(n)])
    size = np.array([rng.randint(1, 64) for _ in range(n)])
    rows = zip(first.tolist(), life.tolist(), size.tolist(), strict=True)
    buffers = tuple(Buffer(f"b{i}", f, f + w, s) for i, (f, w, s) in enumerate(rows))
    problem = Problem(buffers)
    offsets = np.cumsum(size) - size  # every buffer on its own bytes: valid
    good = offsets.tolist()
    assert solution_problems(problem, good) == []
    # buffer k dropped onto the bytes of a buffer live with it (on 3,000 buffers:
    # naming every overlap is quadratic)
    small = Problem(buffers[:3000])
    k = next(
        i for i in range(1, n) if first[i] <= first[0] + life[0] and first[0] <= first[i] + life[i]
    )
    bad = good[:3000]
    bad[k] = good[0]
    assert not _check.surely_valid(small.buffers, bad, -1)
    found = solution_problems(small, bad)
    assert found and re.search(rf"\bb{k}\b", found[0]) and "b0" in found[0]


def test_the_checker_shares_no_code_with_the_packers() -> None:
    folder = Path(mcsv.__file__).parent
    source = (folder / "_check.c").read_text()
    assert '#include "_native.h"' not in source
    validate = (folder / "validate.py").read_text()
    assert not re.search(r"import .*(packing|_sweep|_search|heuristics)", validate)


def _outcome(parse, text: str) -> Problem | str:
    try:
        return parse(text)
    except AllocationError as exc:
        return str(exc)


@settings(max_examples=700, deadline=None, derandomize=True)
@given(
    st.sampled_from(
        ["id,lower,upper,size", "id,lower,upper,size,alignment,offset", "size,id,upper,lower"]
    ),
    st.lists(st.text(alphabet="0123456789-+ ,ab\t_", max_size=24), max_size=6),
    st.sampled_from(["\n", "\r\n"]),
)
def test_any_plain_text_gets_the_row_by_row_answer_or_error(head, rows, end) -> None:
    text = end.join([head, *rows]) + end
    native = _outcome(mcsv.parse_problem, text)
    assert native == _outcome(lambda t: mcsv._parse_rows(t, None, None), text)


def test_the_native_writer_answers_unless_an_id_needs_quotes() -> None:
    def written(name: str) -> bytes | None:
        problem = Problem((Buffer(name, 0, 1, 8, 1), Buffer("b", 1, 2, 8, 1)))
        cols = Columns.of(problem)
        at = np.array([0, 8], dtype=np.int64)
        return _csvwrite.write_rows(
            b"h\n", problem.buffers, cols.first, cols.last, cols.size, None, at
        )

    assert written("a b") == b"h\na b,0,2,8,0\nb,1,3,8,8\n"
    assert written("é") == "h\né,0,2,8,0\nb,1,3,8,8\n".encode()
    assert [written(name) for name in ("a,b", 'a"', "a\nb", "a\rb")] == [None] * 4
