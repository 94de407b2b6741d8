"""Design-space sweeps (explore/, commands/explore.py): tasks, backends, the results
store (resume after a kill), failures as rows, the report. Models are written here with
the project's writer, so nothing needs ../shared."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kits.weights_models import chain

from arenaplan.builder.mobilenet import mobilenet_v1
from arenaplan.cli import main
from arenaplan.errors import UsageError
from arenaplan.explore.backends import ray_available, run
from arenaplan.explore.grid import make_tasks, parse_sizes, policy_words
from arenaplan.explore.report import pareto, smallest_fitting, sweep_report
from arenaplan.explore.store import Store
from arenaplan.explore.tasks import Task, run_task


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("zoo")
    paths = []
    for name, data in (("chain", chain()), ("mnv1", mobilenet_v1(0.25, 32))):
        path = folder / f"{name}.tflite"
        path.write_bytes(data)
        paths.append(path)
    return paths


def _same(rows: list[dict]) -> list[dict]:
    """Rows without the wall time, in key order."""
    return sorted(
        ({k: v for k, v in r.items() if k != "seconds"} for r in rows), key=lambda r: r["key"]
    )


# ---- tasks -----------------------------------------------------------------------


def test_sizes() -> None:
    assert parse_sizes("1KiB..16KiB:5") == [1024, 2048, 4096, 8192, 16384]
    assert parse_sizes("100,64KiB") == [100, 65536]
    for bad in ("16KiB..1KiB:4", "1KiB..2KiB:1", "1KiB..2KiB", "x..2KiB:3"):
        with pytest.raises(UsageError):
            parse_sizes(bad)


def test_weights_policies_keep_their_double() -> None:
    assert policy_words("none,groups:8,double") == ["none", "groups:8,double"]
    assert policy_words("groups,double") == ["groups,double"]
    assert policy_words("none, auto ,whole") == ["none", "auto", "whole"]
    assert policy_words("groups,double,groups:4") == ["groups,double", "groups:4"]
    assert policy_words("whole,double") == ["whole", "double"]  # refused by parse_weights


def test_explore_sweeps_a_double_buffered_policy(zoo, tmp_path: Path, capsys) -> None:
    argv = ["explore", str(zoo[0]), "--target", "xcore_ai", "--sram", "64KiB", "-q"]
    out = tmp_path / "o"
    assert main([*argv, "--weights", "none,groups:8,double", "--out", str(out)]) == 0
    with sqlite3.connect(out / "results.sqlite") as db:
        rows = db.execute("SELECT weights, status FROM results ORDER BY weights").fetchall()
    assert rows == [("groups:8,double", "ok"), ("none", "ok")]
    assert main([*argv, "--weights", "none,double", "--out", str(out)]) == 2
    assert "--weights 'double': expected" in capsys.readouterr().err


def test_task_key_is_what_decides_the_result(zoo: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere.tflite"
    copy.write_bytes(zoo[0].read_bytes())
    a, b = make_tasks([zoo[0], copy], ["generic"], [4096])
    assert a.key == b.key  # same bytes, another path
    tasks = make_tasks(zoo, ["generic", "xcore_ai"], [4096, 8192], ["none", "bands"])
    assert len(tasks) == 16 and len({t.key for t in tasks}) == 16


def test_a_row_per_task(zoo: list[Path]) -> None:
    # 512 B: room for the 288 B of scratch CMSIS-NN's DSP convolution asks for (the
    # generic target's kernels), not for the 2,880 B arena
    big, small = (run_task(t) for t in make_tasks([zoo[0]], ["generic"], [1 << 20, 512]))
    assert big["status"] == "ok" and big["fits"] == 1 and big["spread"] == 0
    one = json.loads(big["memories"])  # the one arena: head, TFLM's tail and planning room
    assert list(one) == ["sram"] and one["sram"] > big["head"] and big["latency"] > 0
    assert small["status"] == "ok" and small["spread"] == 1  # activations spread
    tiny, room = make_tasks([zoo[0]], ["xcore_ai"], [64, 32768], weights=["groups"])
    no = run_task(tiny)  # the weight buffers must stay in SRAM: 64 B cannot hold them
    assert no["status"] == "no-fit" and "weight buffers" in no["error"]
    assert run_task(room)["status"] == "ok"


def test_a_plan_the_validator_refuses_is_an_internal_error_row(zoo, monkeypatch) -> None:
    import arenaplan.tflm.sizes as sizes

    real = sizes._subgraph_bytes
    monkeypatch.setattr(sizes, "_subgraph_bytes", lambda sg: tuple(b // 2 for b in real(sg)))
    row = run_task(make_tasks([zoo[0]], ["generic"], [1 << 20])[0])
    assert row["status"] == "failed" and row["error"].startswith("internal error: invalid plan")


def test_weights_that_cannot_be_read_in_place_are_copied(zoo: list[Path]) -> None:
    none, whole = (
        run_task(t)
        for t in make_tasks([zoo[0]], ["xcore_ai"], [1 << 20], weights=["none", "whole"])
    )
    assert none["status"] == "ok" and none["latency"] == whole["latency"]
    assert none["memories"] == whole["memories"]


def test_a_corrupt_model_is_a_failed_row(tmp_path: Path) -> None:
    # make_tasks refuses it (tests/explore/test_fails_loudly.py); a task made by hand
    # for one is a row, never an exception
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"TFL3" + bytes(40))
    row = run_task(Task(str(bad), "0" * 64, "generic", 4096))
    assert row["status"] == "failed" and row["error"] and "\n" not in row["error"]
    assert not row["error"].startswith("internal error")


def test_a_model_changed_during_the_sweep_is_a_failed_row(zoo: list[Path], tmp_path: Path) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(zoo[0].read_bytes())
    (task,) = make_tasks([path], ["generic"], [4096])
    path.write_bytes(zoo[1].read_bytes())
    assert "changed since" in run_task(task)["error"]


# ---- backends --------------------------------------------------------------------


def _small_sweep(zoo: list[Path]) -> list[Task]:
    return make_tasks(zoo, ["generic"], [2048, 16384, 1 << 20], ["none", "bands"])


def test_inprocess_and_pool_give_the_same_rows(zoo: list[Path]) -> None:
    tasks = _small_sweep(zoo)
    one = list(run(tasks, "inprocess"))
    pool = list(run(tasks, "pool", workers=2))
    assert _same(one) == _same(pool) and len(one) == len(tasks)


@pytest.mark.skipif(ray_available() is not None, reason=str(ray_available()))
def test_ray_gives_the_same_rows(zoo: list[Path]) -> None:
    tasks = _small_sweep(zoo)[:6]
    assert _same(list(run(tasks, "ray", workers=2))) == _same(list(run(tasks, "inprocess")))


# ---- the store and the command ---------------------------------------------------


def _explore(zoo: list[Path], out: Path, *extra: str) -> list[str]:
    return ["explore", *map(str, zoo), "--target", "generic,imxrt1170", "--sram",
            "1KiB..512KiB:6", "--passes", "none,bands", "--out", str(out), "-q",
            *extra]  # fmt: skip


def test_rerun_skips_finished_tasks(zoo: list[Path], tmp_path: Path, capsys) -> None:
    out = tmp_path / "sweep"
    assert main(_explore(zoo, out, "--backend", "inprocess")) == 0
    first = Store(out, create=False).rows()
    assert len(first) == 2 * 2 * 6 * 2
    capsys.readouterr()
    assert main(_explore(zoo, out, "--backend", "inprocess")) == 0
    assert "48 already done, 0 run now" in capsys.readouterr().out
    assert Store(out, create=False).rows() == first


def test_workers_sets_the_pool_size(zoo: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    assert main(_explore(zoo, out, "--backend", "pool", "--workers", "2")) == 0
    assert len(Store(out, create=False).rows()) == 2 * 2 * 6 * 2


def test_resume_after_a_kill_loses_and_duplicates_nothing(zoo: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "arenaplan.cli", *_explore(zoo, out, "--backend", "inprocess")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = out / "results.sqlite"
    deadline = time.monotonic() + 120
    seen: list = []
    while time.monotonic() < deadline and len(seen) < 5 and proc.poll() is None:
        time.sleep(0.2)
        if db.exists():
            try:
                seen = sqlite3.connect(db).execute("SELECT key FROM results").fetchall()
            except sqlite3.Error:
                seen = []
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = Store(out, create=False).rows()
    assert 5 <= len(before) < 48, "the kill came too late to test a resume"
    assert main(_explore(zoo, out, "--backend", "pool")) == 0
    after = Store(out, create=False).rows()
    assert len(after) == 48 and len({r["key"] for r in after}) == 48
    kept = {r["key"]: r for r in after}
    assert all(kept[r["key"]] == r for r in before)  # finished rows untouched


def test_report(zoo: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    assert main(_explore(zoo, out, "--backend", "inprocess")) == 0
    page = tmp_path / "zoo.html"
    assert main(["explore", "--report", str(out), "-o", str(page)]) == 0
    text = page.read_text()
    assert text.count("<svg") == 2 and "chain.tflite" in text and "mnv1.tflite" in text
    again = sweep_report(Store(out, create=False).rows(), out.name)
    assert again == text  # the same rows give the same page


def test_pareto_and_shares() -> None:
    assert pareto([(4, 3.0), (1, 5.0), (2, 5.0), (8, 3.0), (16, 1.0)]) == [
        (1, 5.0),
        (4, 3.0),
        (16, 1.0),
    ]
    rows = [
        {"target": "t", "passes": "none", "weights": "none", "model_hash": m, "sram": s,
         "fits": 1, "spread": int(s < need)}
        for m, need in (("a", 2), ("b", 8)) for s in (1, 2, 4, 8)
    ]  # fmt: skip
    series = "t / passes none / weights none"
    assert smallest_fitting(rows, 50)[series] == 2
    assert smallest_fitting(rows, 100)[series] == 8


@pytest.mark.parametrize(
    "args,message",
    [
        (["--sram", "1KiB", "--out", "o"], "explore needs MODELS"),
        (["m.tflite", "--sram", "1KiB", "--out", "o"], "no such file"),
        (["MODEL", "--target", "nope", "--sram", "1KiB", "--out", "o"], "unknown target"),
        (["MODEL", "--sram", "9KiB..1KiB:3", "--out", "o"], "expected SMALL..LARGE"),
        (["MODEL", "--passes", "magic", "--sram", "1KiB", "--out", "o"], "unknown pass"),
        (["--report", "nowhere", "-o", "x.html"], "no sweep results"),
        (["MODEL", "--sram", "1KiB", "--out", "o", "--workers", "0"], "must be at least 1"),
    ],
)
def test_errors_are_one_line(zoo, tmp_path: Path, capsys, args: list[str], message: str) -> None:
    args = [
        str(zoo[0]) if a == "MODEL" else str(tmp_path / a) if a in ("o", "nowhere") else a
        for a in args
    ]
    assert main(["explore", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
