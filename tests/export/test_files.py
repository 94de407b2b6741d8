"""The output set: every path checked first, everything written together or nothing."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import threading
from pathlib import Path

import pytest

from arenaplan.errors import UsageError
from arenaplan.export.files import TMP_SUFFIX, Outputs


def test_paths_are_checked_when_claimed(tmp_path: Path) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(b"x")
    out = Outputs((model,))
    with pytest.raises(UsageError, match="overwrite the input"):
        out.claim(model, "-o")
    with pytest.raises(UsageError, match="is a directory"):
        out.claim(tmp_path, "-o")
    with pytest.raises(UsageError, match="does not exist"):
        out.claim(tmp_path / "no" / "x", "-o")
    with pytest.raises(UsageError, match="is not a directory"):
        out.claim(model / "x", "-o")
    assert out.claim(tmp_path / "a", "-o") == tmp_path / "a"
    with pytest.raises(UsageError, match="-o and --json both name"):
        out.claim(tmp_path / "." / "a", "--json")
    with pytest.raises(UsageError, match="standard output"):
        out.claim(Path("-"), "--picture")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]  # probes leave nothing


def test_a_failure_while_writing_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    out = Outputs()
    first, second = tmp_path / "a.bin", tmp_path / "sub" / "b.bin"
    out.claim(first, "-o")
    out.claim(second, "--json")
    out.add(first, b"1")
    out.add(second, b"2")
    shutil.rmtree(tmp_path / "sub")  # the folder goes away between the check and the write
    with pytest.raises(UsageError, match="cannot write"):
        out.write_all()
    assert list(tmp_path.iterdir()) == []


def test_all_written_with_ordinary_permissions(tmp_path: Path) -> None:
    out = Outputs()
    paths = [out.claim(tmp_path / f"{k}.txt", f"--o{k}") for k in range(3)]
    for k, p in enumerate(paths):
        out.add(p, str(k).encode())
    assert out.write_all() == paths
    assert [p.read_text() for p in paths] == ["0", "1", "2"]
    assert all(p.stat().st_mode & 0o044 for p in paths)


def test_only_regular_files_are_replaced(tmp_path: Path) -> None:
    fifo, link, target = tmp_path / "fifo", tmp_path / "link", tmp_path / "target"
    os.mkfifo(fifo)
    target.write_bytes(b"kept")
    link.symlink_to(target)
    out = Outputs()
    with pytest.raises(UsageError, match="is a FIFO, not a regular file"):
        out.claim(fifo, "-o")
    with pytest.raises(UsageError, match="is a symbolic link, not a regular file"):
        out.claim(link, "--json")
    if Path("/dev/null").exists():
        with pytest.raises(UsageError, match="is a character device"):
            out.claim(Path("/dev/null"), "--report")
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and link.is_symlink()
    assert target.read_bytes() == b"kept"


def test_a_killed_runs_temporary_files_are_cleaned_by_the_next(tmp_path: Path) -> None:
    out_path = tmp_path / "plan.json"
    stale = tmp_path / f".plan.json.abc123{TMP_SUFFIX}"
    other = tmp_path / f".other.json.abc123{TMP_SUFFIX}"
    stale.write_bytes(b"half")
    other.write_bytes(b"not ours")
    out = Outputs()
    out.claim(out_path, "--json")
    assert not stale.exists() and other.exists()
    out.add(out_path, b"{}")
    out.write_all()
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "plan.json"]


def _two_outputs(tmp_path: Path) -> tuple[Outputs, Path, Path]:
    out = Outputs()
    first, second = tmp_path / "model.tflite", tmp_path / "model.h"
    for path, option in ((first, "-o"), (second, "--header")):
        path.write_bytes(b"old")
        out.claim(path, option)
        out.add(path, b"new")
    return out, first, second


def test_a_signal_during_the_renames_ends_the_run_after_the_last(
    tmp_path: Path, monkeypatch
) -> None:
    """A kill after the first rename is held back: the run ends with both files new,
    never a new model beside an old header (also when another thread could take it)."""
    from arenaplan.cli import Terminated, _ending_on_signals
    from arenaplan.export import files

    idle = threading.Event()
    threading.Thread(target=idle.wait, daemon=True).start()

    out, first, second = _two_outputs(tmp_path)
    renames: list[str] = []
    replace = os.replace

    def replace_then_kill(src: str, dst: Path) -> None:
        replace(src, dst)
        renames.append(str(dst))
        if len(renames) == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(files.os, "replace", replace_then_kill)
    with pytest.raises(Terminated), _ending_on_signals():
        out.write_all()
    idle.set()
    assert len(renames) == 2
    assert first.read_bytes() == second.read_bytes() == b"new"


def test_a_signal_while_staging_leaves_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    from arenaplan.cli import Terminated, _ending_on_signals
    from arenaplan.export import files

    out, first, second = _two_outputs(tmp_path)
    staged: list[str] = []
    stage = files._stage

    def stage_then_kill(path: Path, data: bytes) -> str:
        if staged:  # the kill comes after the first file is staged, before the second
            os.kill(os.getpid(), signal.SIGTERM)
        staged.append(stage(path, data))
        return staged[-1]

    monkeypatch.setattr(files, "_stage", stage_then_kill)
    with pytest.raises(Terminated), _ending_on_signals():
        out.write_all()
    assert len(staged) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.h", "model.tflite"]
    assert first.read_bytes() == second.read_bytes() == b"old"
