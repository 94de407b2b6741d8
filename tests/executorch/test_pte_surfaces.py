"""The surfaces a ``.pte`` plan reaches besides ``plan``'s summary: ``inspect`` (the
same bound as the plan), the report and its picture over a target's memories, and
``explore`` over programs (with and without ``reorder``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kits.pte import pte_path

from arenaplan.cli import main
from arenaplan.pipeline import PlanRequest, read_source, run_plan


def test_inspect_gives_the_plans_bound(capsys) -> None:
    path = pte_path("cnn")
    bound = run_plan(PlanRequest(read_source(path))).plan.lower_bound
    assert main(["inspect", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"lower bound of the head: {bound:,} B" in out and "carries ExecuTorch's plan" in out


def test_the_report_and_picture_of_a_spread_program(tmp_path: Path) -> None:
    report, picture = tmp_path / "r.html", tmp_path / "p.png"
    args = ["plan", str(pte_path("unet")), "--target", "imxrt1170", "--memory", "tcm=64KiB"]
    assert main([*args, "--report", str(report), "--picture", str(picture), "-q"]) == 0
    text = report.read_text()
    assert "a pool per memory and the method allocator" in text
    assert "each a pool of its own (memory id 1: tcm 65,536 B, memory id 2: ocram" in text
    assert "TFLM tail" not in text and "TFLM&#x27;s greedy" not in text
    assert picture.read_bytes()[:4] == b"\x89PNG"


def test_explore_sweeps_programs_with_and_without_reorder(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    models = [str(pte_path("int8")), str(pte_path("cnn"))]
    args = ["explore", *models, "--target", "imxrt1170", "--sram", "32768,262144"]
    assert (
        main([*args, "--passes", "none,reorder", "--out", str(out), "--backend", "inprocess", "-q"])
        == 0
    )
    rows = (
        sqlite3.connect(out / "results.sqlite")
        .execute("select model, sram, passes, status, head, spread from results")
        .fetchall()
    )
    assert len(rows) == 8 and all(r[3] == "ok" for r in rows)
    heads = {(m, s, p): h for m, s, p, _, h, _ in rows}
    assert heads[("int8.pte", 262144, "reorder")] == 131_072 < heads[("int8.pte", 262144, "none")]
    assert {r[5] for r in rows if r[1] == 32768} == {1}  # spread over tcm and ocram
    page = tmp_path / "page.html"
    assert main(["explore", "--report", str(out), "-o", str(page), "-q"]) == 0
    assert "int8.pte" in page.read_text()
