"""``arenaplan sweep``: latency against fast-memory size, printed and plotted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from testkit import model_path

import arenaplan.commands.sweep as sweep
from arenaplan.cli import main
from arenaplan.pipeline import PlanRequest, read_source, run_plan
from arenaplan.targets import load_builtin

GENERIC = Path(sweep.__file__).parents[1] / "targets" / "builtin" / "generic.toml"


def small_target(tmp_path: Path, sram: str) -> Path:
    """The generic target with its fastest memory (sram) cut to ``sram``."""
    path = tmp_path / "small.toml"
    text = GENERIC.read_text()
    assert 'capacity = "640KiB"' in text
    path.write_text(text.replace('capacity = "640KiB"', f'capacity = "{sram}"', 1))
    return path


def whole(src: Path, target: str) -> int:
    """What ``plan`` puts in the target's fastest memory (its one arena) given room."""
    request = PlanRequest(read_source(src), load_builtin(target), prove=False)
    figures = run_plan(request).figures
    assert figures is not None and figures.layout == "one"
    return figures.arrays[0].bytes


def rows(out: str) -> list[list[str]]:
    """The table's rows (first line of each), cells stripped."""
    lines = [line for line in out.splitlines() if line.startswith("│")]
    found = []
    for line in lines:
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[0]:  # a wrapped continuation line has an empty first cell
            found.append(cells)
    return found


def test_sweep_prints_every_capacity_and_plots(tmp_path: Path, capsys) -> None:
    pytest.importorskip(
        "matplotlib", reason="pictures need matplotlib (pip install 'arenaplan[report]')"
    )
    src = model_path("arm-ml-examples__ds_cnn_s_quantized")
    plot = tmp_path / "sweep.svg"
    assert (
        main(["sweep", str(src), "--target", "esp32s3", "--points", "4", "--plot", str(plot)]) == 0
    )
    out = capsys.readouterr().out
    top = whole(src, "esp32s3")  # the one arena: head and TFLM's tail, all in sram
    assert f"{top:,}" in out and f"{sweep.sizes(top, 4)[-1]:,}" in out and "Vela" in out
    assert plot.read_bytes().startswith(b"<?xml")
    assert "compute-bound" not in out  # ds_cnn's latency moves with the size
    words = " ".join(out.split())
    assert "latencies: stall-model estimate" in words and "TFLM's reference kernels" in words


@pytest.mark.parametrize("points", [2, 5, 8, 13])
def test_exactly_points_rows(points: int, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")  # a 32-byte arena: few 16-byte steps
    assert main(["sweep", str(src), "--points", str(points)]) == 0
    found = rows(capsys.readouterr().out)
    assert len(found) == points
    sizes = [int(r[0].replace(",", "")) for r in found]
    assert len(set(sizes)) == points and sizes == sorted(sizes, reverse=True)
    top = whole(src, "generic")  # the one arena, head and tail, down to a quarter
    assert sizes[0] == top and top // 4 - 15 <= sizes[-1] <= top // 4 + 15


def test_sizes_are_distinct_multiples_of_16_when_there_is_room() -> None:
    assert sweep.sizes(55_296, 8) == [
        55_296,
        49_360,
        43_440,
        37_520,
        31_584,
        25_664,
        19_744,
        13_824,
    ]
    for top in (20_000, 1_000, 300, 64, 33):
        for points in (2, 3, 7, 10):
            got = sweep.sizes(top, points)
            assert len(got) == len(set(got)) == points and got[0] == top
            assert got == sorted(got, reverse=True) and got[-1] >= top // 4 - 15


def test_too_many_points_for_a_tiny_arena_is_one_line(capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    top = whole(src, "generic")
    span = top - top // 4
    assert main(["sweep", str(src), "--points", str(span + 2)]) == 2
    err = capsys.readouterr().err
    assert f"has only {span + 1} sizes" in err and len(err.strip().splitlines()) == 1


def test_starts_at_the_fastest_memorys_real_capacity(tmp_path: Path, capsys) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")  # arena 55,296 B > 20 KiB of sram
    target = small_target(tmp_path, "20KiB")
    assert main(["sweep", str(src), "--target-file", str(target), "--points", "4"]) == 0
    out = capsys.readouterr().out
    found = rows(out)
    assert [r[0] for r in found] == ["20,480", "15,360", "10,240", "5,120"]
    assert [r[1] for r in found] == ["20.0", "15.0", "10.0", "5.00"]  # KiB
    assert "55,296" not in out.split("┃")[0] and "from sram's capacity (20,480 B)" in out


def test_a_size_that_cannot_be_placed_is_a_row_saying_why(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__keyword_scrambled")  # 512 B of kernel scratch in sram
    target = small_target(tmp_path, "300B")
    assert main(["sweep", str(src), "--target-file", str(target), "--points", "3"]) == 0
    out = capsys.readouterr().out
    found = rows(out)
    assert [r[0] for r in found] == ["300", "176", "64"]
    assert all(r[2] == "-" and r[3] == "-" for r in found)
    assert out.count("cannot place") == 3 and "scratch" in out
    assert "compute-bound" not in out


def test_compute_bound_is_said_plainly(tmp_path: Path, capsys) -> None:
    """A second memory as fast as the first (its latency and bandwidth): where the
    activations go changes nothing."""
    src = model_path("mlcommons-tiny__vww_96_int8")
    text = GENERIC.read_text()
    slow = "read_bandwidth = 36e6    # 0.3 B/cycle (estimate)"
    assert slow in text and "latency = 30" in text
    text = text.replace(slow, "read_bandwidth = 480e6").replace("latency = 30", "latency = 1")
    text = text.replace("write_bandwidth = 18e6 ", "write_bandwidth = 480e6 ")
    (tmp_path / "even.toml").write_text(text)
    argv = ["sweep", str(src), "--target-file", str(tmp_path / "even.toml"), "--points", "3"]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "compute-bound at every size: the fastest memory's size does not change the "
        "estimated latency" in out
    )


def test_sweep_options_are_checked(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    for bad in ("1", "2.5", "many"):
        assert main(["sweep", str(src), "--points", bad]) == 2
        err = capsys.readouterr().err
        assert "--points" in err and len(err.strip().splitlines()) == 1
    assert main(["sweep", str(src), "--target", "nowhere"]) == 2
    assert "unknown target" in capsys.readouterr().err
    target = small_target(tmp_path, "20KiB")
    assert main(["sweep", str(src), "--target", "generic", "--target-file", str(target)]) == 2
    assert "not both" in capsys.readouterr().err


@pytest.fixture
def no_computing(monkeypatch):
    """Fail the test if the sweep plans or places anything."""

    def refuse(*args, **kwargs):
        raise AssertionError("computed before checking the options")

    monkeypatch.setattr(sweep, "run_plan", refuse)
    monkeypatch.setattr(sweep, "place_tiers", refuse)


def test_plot_path_is_checked_before_computing(tmp_path: Path, capsys, no_computing) -> None:
    pytest.importorskip(
        "matplotlib", reason="pictures need matplotlib (pip install 'arenaplan[report]')"
    )
    src = model_path("tflite-micro__hello_world_int8")
    missing = tmp_path / "no" / "such" / "dir" / "p.png"
    assert main(["sweep", str(src), "--plot", str(missing)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["sweep", str(src), "--plot", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["sweep", str(src), "--plot", str(tmp_path / "p.gif")]) == 2
    assert "must end in .png or .svg" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_plot_without_matplotlib_fails_first(
    tmp_path: Path, capsys, monkeypatch, no_computing
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    src = model_path("tflite-micro__hello_world_int8")
    assert main(["sweep", str(src), "--plot", str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err
    assert "pip install 'arenaplan[report]'" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_plot_is_deterministic(tmp_path: Path) -> None:
    pytest.importorskip(
        "matplotlib", reason="pictures need matplotlib (pip install 'arenaplan[report]')"
    )
    src = model_path("tflite-micro__hello_world_int8")
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    assert main(["sweep", str(src), "--points", "3", "--plot", str(first)]) == 0
    assert main(["sweep", str(src), "--points", "3", "--plot", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
