"""``explore`` fails loudly: every input is checked before the sweep starts (exit 2,
one line, no results folder); a task that fails is counted and makes the exit status
1 (70 when it is arenaplan's bug), a size that does not fit is a result; the pool's
workers end when ``explore`` ends, however it ends."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from kits.weights_models import chain

import arenaplan.explore.tasks as tasks
import arenaplan.pipeline as pipeline
from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.cli import main
from arenaplan.errors import UnsupportedModelError
from arenaplan.explore.grid import MAX_SIZES, MAX_TASKS, parse_sizes
from arenaplan.explore.store import Store
from arenaplan.export.tflite_writer import write_model
from arenaplan.reader import read_model_bytes

SRC = Path(__file__).resolve().parents[2] / "src"
_RUN_PLAN = pipeline.run_plan  # the real one


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """Good and bad models: ``chain`` (valid), ``cyclic`` (DS-CNN M with its first two
    operators swapped: operator 0 reads what operator 1 writes), ``empty``, ``text``
    (not a .tflite), ``corrupt`` (a TFLite header and nothing after it)."""
    folder = tmp_path_factory.mktemp("models")
    model = read_model_bytes(ds_cnn("M"))
    sg = model.subgraphs[0]
    ops = list(sg.operators)
    ops[0], ops[1] = replace(ops[1], index=0), replace(ops[0], index=1)
    cyclic = write_model(replace(model, subgraphs=(replace(sg, operators=tuple(ops)),)))
    files = {
        "chain": chain(),
        "cyclic": cyclic,
        "empty": b"",
        "text": b"not a model\n" * 8,
        "corrupt": b"\0\0\0\0TFL3" + bytes(40),
    }
    paths = {}
    for name, data in files.items():
        paths[name] = folder / f"{name}.tflite"
        paths[name].write_bytes(data)
    bad = folder / "bad.toml"
    bad.write_text("[target\nname = 1\n")
    paths["bad.toml"] = bad
    wrong = folder / "wrong.toml"
    wrong.write_text('name = "w"\nclock_hz = nan\n')
    paths["wrong.toml"] = wrong
    return paths


def _args(models: dict[str, Path], out: Path, words: list[str]) -> list[str]:
    """``words`` with model and TOML names replaced by their paths."""
    return ["explore", *(str(models.get(w, w)) for w in words), "--out", str(out), "-q"]


@pytest.mark.parametrize(
    "words,message",
    [
        (["chain", "--target", "nope", "--sram", "4KiB"], "unknown target 'nope'"),
        (["chain", "--target", "generic,missing.toml", "--sram", "4KiB"], "no such file"),
        (["chain", "--target", "bad.toml", "--sram", "4KiB"], "not valid TOML"),
        (["chain", "--target", "wrong.toml", "--sram", "4KiB"], "wrong.toml"),
        (["chain", "missing", "--sram", "4KiB"], "missing: no such file"),
        (["chain", "empty", "--sram", "4KiB"], "empty file"),
        (["text", "--sram", "4KiB"], "not a TFLite model"),
        (["corrupt", "--sram", "4KiB"], "corrupt.tflite"),
        (["chain", "cyclic", "--sram", "4KiB"], "invalid model: subgraph 0 operator 0"),
        (["chain", "--target", "xcore_ai", "--sram", "64GiB"], "sram of xcore_ai has only"),
        (["chain", "--target", "xcore_ai,generic", "--sram", "4KiB..1MiB:4"], "of xcore_ai"),
        (["chain", "--sram", "1KiB..1MiB:1000000000"], "above the limit of 1,000"),
        (["chain", "--sram", "1KiB..1MiB:1001"], "above the limit of 1,000"),
        (["chain", "--sram", ",".join(["4KiB"] * 1001)], "above the limit of 1,000"),
        (["chain", "--sram", "1KiB..1MiB:²"], "expected SMALL..LARGE:N"),
        (["chain", "--sram", "1KiB.." + "9" * 5000 + "0:4"], "--sram"),
        (["chain", "--sram", ","], "at least one size"),
        (
            ["chain"] * 11
            + ["--target", "generic,imxrt1170", "--sram", "1KiB..512KiB:1000"]
            + ["--passes", "none,bands", "--weights", "none,whole,auto"],
            "above the limit of 100,000",
        ),
    ],
)
def test_bad_input_is_refused_before_the_sweep(
    models, tmp_path: Path, capsys, words: list[str], message: str
) -> None:
    out = tmp_path / "sweep"
    assert main(_args(models, out, words)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()  # nothing created: no results from a run that never started


def test_the_limits_are_in_the_help(capsys) -> None:
    assert main(["explore", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"N from 2 to {MAX_SIZES:,}" in text and f"at most {MAX_TASKS:,} tasks" in text
    assert "1: some tasks failed" in text


def test_a_range_is_not_enumerated_before_its_count_is_checked() -> None:
    # 10**12 sizes would take hours to enumerate: refused from the count alone
    with pytest.raises(Exception, match="above the limit"):
        parse_sizes("1KiB..1MiB:1000000000000")
    assert len(parse_sizes(f"64KiB..{1 << 40}:{MAX_SIZES}")) == MAX_SIZES


def test_a_results_file_that_cannot_be_opened_is_not_left(models, tmp_path: Path, capsys) -> None:
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "results.sqlite").write_bytes(b"not a database" * 100)
    assert main(_args(models, out, ["chain", "--sram", "4KiB"])) == 2
    assert "cannot open the results" in capsys.readouterr().err
    assert (out / "results.sqlite").read_bytes() == b"not a database" * 100  # not ours


def _failing(names: dict[str, type[Exception]]):
    """``run_plan`` that raises ``names[model file name]`` for those models."""

    def run_plan(request, notify=None):
        error = names.get(request.source.name)
        if error is not None:
            raise error("the planner refuses this one")
        return _RUN_PLAN(request)

    return run_plan


def test_failed_tasks_are_counted_and_exit_1(models, tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "sweep"
    words = ["chain", "--target", "xcore_ai", "--sram", "64,32KiB", "--weights", "groups"]
    argv = [*_args(models, out, words), "--backend", "inprocess"]
    assert main(argv) == 0  # 64 B cannot hold the weight buffers: no fit, not a failure
    assert "(1 do not fit, 0 failed)" in capsys.readouterr().out
    monkeypatch.setattr(tasks, "run_plan", _failing({"chain.tflite": UnsupportedModelError}))
    assert main([*argv, "--retry-failed"]) == 0  # nothing failed: nothing run again
    fresh = tmp_path / "fresh"
    argv = [*_args(models, fresh, words), "--backend", "inprocess"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "(0 do not fit, 2 failed)" in captured.out
    assert captured.err.count("\n") == 1
    assert "2 of 2 tasks failed; e.g. the planner refuses this one" in captured.err
    rows = Store(fresh, create=False).rows()
    assert [r["status"] for r in rows] == ["failed", "failed"]
    assert main(argv) == 1  # a rerun runs nothing, and still says so
    assert "2 in an earlier run (--retry-failed" in capsys.readouterr().err
    monkeypatch.undo()
    assert main([*argv, "--retry-failed"]) == 0
    assert sorted(r["status"] for r in Store(fresh, create=False).rows()) == ["no-fit", "ok"]


def test_a_bug_in_a_task_is_exit_70(models, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(tasks, "run_plan", _failing({"chain.tflite": ZeroDivisionError}))
    out = tmp_path / "sweep"
    argv = [*_args(models, out, ["chain", "--sram", "4KiB"]), "--backend", "inprocess"]
    assert main(argv) == 70
    err = capsys.readouterr().err
    assert "1 of 1 tasks failed; e.g. internal error: ZeroDivisionError" in err
    assert "a bug in arenaplan" in err and err.count("\n") == 1
    (row,) = Store(out, create=False).rows()
    assert row["status"] == "failed"


# ---- the pool's workers end with explore --------------------------------------------


def _children(pid: int) -> set[int]:
    """Processes whose parent is ``pid`` (Linux /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _parent(int(entry.name)) == pid:
            found.add(int(entry.name))
    return found


def _status(pid: int) -> dict[str, str]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:  # gone
        return {}
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _parent(pid: int) -> int | None:
    ppid = _status(pid).get("PPid")
    return int(ppid) if ppid else None


def _rows(sweep: Path) -> int:
    """Results recorded in a sweep folder so far (0 before its file is made)."""
    try:
        with closing(sqlite3.connect(f"file:{sweep / 'results.sqlite'}?mode=ro", uri=True)) as db:
            return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.Error:  # not made yet, or being written
        return 0


def _ctrl_c_acted_on() -> None:
    """In the child before it runs: Ctrl-C as a terminal gives it (a test runner
    started in the background passes SIGINT on ignored, and Python keeps it so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for whoever adopted it to reap it."""
    state = _status(pid).get("State", "Z")
    return not state.startswith(("Z", "X"))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_workers_end_when_explore_ends(models, tmp_path: Path, sig: signal.Signals) -> None:
    # 3 x 400 x 2 tasks (the model twice is swept once): tens of seconds of work, ended
    # once both workers have started and the first results are in (every task handed
    # to the pool, results streaming in); the run must stop there, not at the end
    argv = _args(models, tmp_path / "sweep", ["chain", "chain", "--target",
                 "generic,imxrt1170,xcore_ai", "--sram", "1KiB..512KiB:400",
                 "--passes", "none,bands", "--workers", "2"])  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-m", "arenaplan", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=_ctrl_c_acted_on)  # fmt: skip
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(seen) < 3 and time.monotonic() < deadline and proc.poll() is None:
            seen |= _children(proc.pid)  # two workers and the resource tracker
            time.sleep(0.05)
        assert len(seen) >= 3 and proc.poll() is None, "the workers never started"
        while _rows(tmp_path / "sweep") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep ended before the signal"
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in seen if _alive(p)], "workers outlived explore"
        ending = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "ended by SIGTERM")}
        if sig in ending:  # ended as the command line ends a run: one line, no traceback
            err = proc.stderr.read().decode() if proc.stderr else ""
            assert (code, err) == (ending[sig][0], f"arenaplan: {ending[sig][1]}\n"), err
            assert _rows(tmp_path / "sweep") < 2400, "the signal waited for the sweep's end"
        else:
            assert code == -sig
    finally:
        proc.kill()
        for p in seen:  # only if the test failed: the workers it started, by pid
            if _alive(p) and "multiprocessing" in _cmdline(p):
                os.kill(p, signal.SIGKILL)


def test_a_model_given_twice_is_swept_once(models, tmp_path: Path, capsys) -> None:
    out = tmp_path / "sweep"
    argv = [*_args(models, out, ["chain", "chain", "--sram", "4KiB"]), "--backend", "inprocess"]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("1 tasks: 0 already done, 1 run now")
