"""``arenaplan solve``: minimalloc CSV in, validated solution CSV out."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from testkit import shared_path

from arenaplan.allocation import check_solution
from arenaplan.allocation.minimalloc_csv import parse_problem, read_problem
from arenaplan.cli import main


def _offsets(path: Path) -> list[int]:
    return [int(r["offset"]) for r in csv.DictReader(path.open())]


def test_minimise_the_readme_example(tmp_path: Path, capsys) -> None:
    src = shared_path("benchmarks/minimalloc/input.12.csv")
    out = tmp_path / "solution.csv"
    assert main(["solve", str(src), "-o", str(out)]) == 0
    assert "height 12" in capsys.readouterr().out
    problem = read_problem(src)
    offsets = _offsets(out)
    check_solution(problem, offsets)
    assert max(o + b.size for o, b in zip(offsets, problem.buffers, strict=True)) == 12
    rows = list(csv.DictReader(out.open()))
    assert [r["id"] for r in rows] == ["b1", "b2", "b3", "b4", "b5"]
    assert rows[0]["upper"] == "3"  # half-open upper bound written back as read


def test_capacity_decisions_and_exit_codes(tmp_path: Path, capsys) -> None:
    src = shared_path("benchmarks/minimalloc/input.12.csv")
    assert main(["solve", str(src), "--capacity", "12", "-q"]) == 0
    assert main(["solve", str(src), "--capacity", "11"]) == 1
    assert "12 bytes are live at step 0" in capsys.readouterr().out
    hard = shared_path("benchmarks/minimalloc/D.1048576.csv")  # tiled at 986,112 in 0.1 s
    untiled = ["--disable", "tiling", "--time-limit", "0.3", "-q"]
    assert main(["solve", str(hard), "--capacity", "986112", *untiled]) == 3
    assert main(["solve", str(hard), "--capacity", "986112", "--time-limit", "30", "-q"]) == 0


def test_switches_can_be_turned_off(tmp_path: Path, capsys) -> None:
    src = shared_path("benchmarks/minimalloc/input.12.csv")
    off = "canonical,section-inference,dominance,unplaced-floor,hatless-pruning,dynamic-split"
    assert main(["solve", str(src), "--disable", off, "-q", "-o", str(tmp_path / "s.csv")]) == 0
    assert main(["solve", str(src), "--disable", "magic"]) == 2
    assert "unknown heuristic(s) magic" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,lower,upper\n1,0,1\n", "row 1: missing column(s) size"),
        ("id,lower,upper,size\na,0,1,-4\n", "row 2 (a): negative size -4"),
        ("id,lower,upper,size\na,3,3,4\n", "row 2 (a): upper 3 must be above lower 3"),
        ("id,lower,upper,size\na,0,1,four\n", "row 2: size 'four' is not an integer"),
        ("id,lower,upper,size\na,0,1,4\na,1,2,4\n", "row 3: duplicate id 'a'"),
        ("id,lower,upper,size,offset\na,0,1,4,-8\n", "fixed offset -8 is negative"),
    ],
)
def test_bad_csv_names_the_row(tmp_path: Path, capsys, text: str, message: str) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    assert main(["solve", str(bad), "-o", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "out.csv").exists()


def test_alignment_and_fixed_columns_round_trip() -> None:
    problem = parse_problem("id,lower,upper,size,alignment,offset\na,0,2,3,4,\nb,1,3,4,4,8\n")
    assert problem.buffers[0].alignment == 4 and problem.buffers[0].offset is None
    assert problem.buffers[1].offset == 8 and problem.buffers[1].last == 2


@pytest.mark.parametrize("capacity", ["4611686018427387905", str(2**63), str(2**70)])
def test_capacity_is_range_checked_like_the_csv(tmp_path: Path, capsys, capacity: str) -> None:
    problem = tmp_path / "p.csv"
    problem.write_text("id,lower,upper,size\n0,0,1,16\n")
    out = tmp_path / "s.csv"
    assert main(["solve", str(problem), "--capacity", capacity, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "above the limit" in err and not out.exists()
    assert main(["solve", str(problem), "--capacity", str(2**62), "-o", str(out)]) == 0
