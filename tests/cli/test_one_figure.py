"""One figure everywhere: every shared model planned under each option set shows the
same head, tail, arrays to set (each memory's bytes) and latency in the summary, the
JSON plan, the HTML report, the header, and in ``sweep`` and ``explore``'s rows for
the same capacity.

The reference is the JSON plan's ``firmware`` record; every other surface is read
back as text (or, for ``sweep`` and ``explore``, as the row they print)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from testkit import TFLM_REFUSES, model_params

from arenaplan.cli import main
from arenaplan.commands import sweep
from arenaplan.explore.grid import make_tasks
from arenaplan.explore.tasks import run_task
from arenaplan.pipeline import read_source
from arenaplan.targets import load_builtin

HALF = -1  # tcm at half the plan's head (or the least it can be), found per model
# (id, options, the fastest memory's capacity given, or None)
OPTION_SETS = [
    ("imxrt1170", ["--target", "imxrt1170"], None),
    ("tcm-half", ["--target", "imxrt1170", "--memory", "tcm=HALF"], HALF),
    (
        "arena-ocram-tail-hyperram",
        ["--target", "imxrt1170", "--arena-memory", "ocram", "--persistent-memory", "hyperram"],
        None,
    ),
    ("xcore-weights-auto", ["--target", "xcore_ai", "--weights", "auto"], None),
    ("generic-bands", ["--target", "generic", "--passes", "reorder,inplace,bands"], None),
    ("no-target", ["--profile", "pypi"], None),
]


def _plain(text: str) -> str:
    return " ".join(text.split())


def _plan(src: Path, options: list[str], tmp_path: Path, capsys) -> tuple[str, dict, str]:
    """(the summary, the JSON plan, the report) of one plan."""
    js, report = tmp_path / "plan.json", tmp_path / "report.html"
    argv = ["plan", str(src), *options, "--json", str(js), "--report", str(report)]
    code = main(argv)
    out, err = capsys.readouterr()
    if code == 3 and src.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses the model: its weight copies cannot be proven")
    assert code == 0, err
    page = report.read_text().replace(" class='text'", "")
    return _plain(out), json.loads(js.read_text()), _plain(page)


def _half(src: Path, capsys) -> int:
    """Half the head of the model's plan on imxrt1170, 16-aligned, or the least tcm
    the plan accepts when that is more."""
    assert main(["plan", str(src), "--target", "imxrt1170", "-q", "--json", "-"]) == 0
    half = json.loads(capsys.readouterr().out)["arena"]["size"] // 32 * 16
    main(["plan", str(src), "--target", "imxrt1170", "-q", "--memory", f"tcm={half}"])
    too_small = re.search(r"need ([\d,]+) B", capsys.readouterr().err)
    return int(too_small.group(1).replace(",", "")) if too_small else half


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.3f} ms"


@pytest.mark.parametrize(("name", "options", "cap"), OPTION_SETS, ids=[o[0] for o in OPTION_SETS])
@pytest.mark.parametrize("src", model_params())
def test_every_surface_shows_the_same_figures(
    src: Path, name: str, options: list[str], cap: int | None, tmp_path: Path, capsys
) -> None:
    if cap == HALF:
        cap = _half(src, capsys)
        options = [o.replace("HALF", str(cap)) for o in options]
    summary, plan, report = _plan(src, options, tmp_path, capsys)
    fw = plan["firmware"]
    profile = fw["profile"]
    arrays = fw["arrays"]
    # the JSON agrees with itself: the tail of the profile, the arrays' sum per memory
    assert fw["tail"] == plan["persistent"][profile]["tail"]
    sums: dict[str, int] = {}
    for a in arrays:
        if a["memory"] is not None:
            sums[a["memory"]] = sums.get(a["memory"], 0) + a["bytes"]
    assert fw["memories"] == sums
    # the summary: the tail, every array on the last line, the latency, the memories
    assert f"{fw['tail']:,} B ({profile})" in summary
    last = summary.split("wrote ")[-1]
    if fw["layout"] == "split":  # each memory's total, what it holds detailed
        for memory, total in fw["memories"].items():
            assert re.search(rf"{memory} (at least )?{total:,} B \(", last), memory
    else:
        for a in arrays:
            assert f"{a['bytes']:,} B" in last or f"{a['bytes']:,} bytes" in last, a
            if a["memory"] is not None:
                assert a["memory"] in last
    if fw["latency_seconds"] is not None:
        assert f"estimated latency {_ms(fw['latency_seconds'])}" in summary
        assert f"estimated latency {_ms(fw['latency_seconds'])}" in report
    else:
        assert "latency" not in summary
    # the report: the head, the tail of the profile, every array to set
    assert "arenaplan head" in report and f"{fw['head']:,}" in report
    assert f"TFLM tail, profile {profile}" in report and f"{fw['tail']:,}" in report
    for a in arrays:
        assert f"<td>{a['role']}</td><td>{a['memory'] or '-'}</td>" in report, a
        exact = "" if a["exact"] else "at least "
        assert f"{exact}{a['bytes']:,}</td>" in report, a
    _header_agrees(src, options, fw, tmp_path, capsys)
    if cap is not None or name == "imxrt1170":
        _sweep_and_explore_agree(src, "imxrt1170", cap or 512 * 1024, fw)
    if name == "xcore-weights-auto":
        _sweep_and_explore_agree(src, "xcore_ai", 512 * 1024, fw, "auto")


def _header_agrees(src: Path, options: list[str], fw: dict, tmp_path: Path, capsys) -> None:
    """The header defines the arrays the figures give (a split arena is refused)."""
    header = tmp_path / "arena.h"
    code = main(["plan", str(src), *options, "-q", "--header", str(header)])
    err = capsys.readouterr().err
    if fw["layout"] == "split":
        assert code == 2 and "--planner-cpp" in err
        return
    assert code == 0, err
    text = header.read_text()

    def define(name: str) -> int:
        found = re.search(rf"#define ARENAPLAN_{name} (\d+)u", text)
        assert found, name
        return int(found.group(1))

    arrays = fw["arrays"]
    assert define("TAIL_BYTES") == fw["tail"]
    if fw["layout"] == "one":
        assert define("ARENA_BYTES") == arrays[0]["bytes"]
        assert define("HEAD_BYTES") == arrays[0]["holds"]["head"]
    else:
        assert define("NON_PERSISTENT_BYTES") == arrays[0]["bytes"]
        assert define("PERSISTENT_BYTES") == arrays[1]["bytes"]
        assert define("HEAD_BYTES") == arrays[0]["holds"]["head"]


def _sweep_and_explore_agree(
    src: Path, target: str, cap: int, fw: dict, weights: str | None = None
) -> None:
    """``sweep``'s row and ``explore``'s row for the same capacity (and weights
    policy) show the plan's latency and each memory's bytes."""
    row = sweep._row(read_source(src), load_builtin(target), weights, cap)
    assert row.ours == pytest.approx(fw["latency_seconds"], rel=1e-12)
    assert row.heights == fw["memories"]
    (task,) = make_tasks([src], [target], [cap], weights=[weights or "none"])
    got = run_task(task)
    assert got["status"] == "ok", got["error"]
    assert json.loads(got["memories"]) == fw["memories"]
    assert got["latency"] == pytest.approx(fw["latency_seconds"], rel=1e-12)
