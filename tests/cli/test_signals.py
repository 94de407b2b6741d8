"""Signals that end a run: SIGTERM and SIGHUP end it as Ctrl-C does, with one line, exit
128 + the signal, and nothing written (held back during the final renames:
tests/export/test_files.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arenaplan.builder.ds_cnn import ds_cnn


def _catches(pid: int, signum: int) -> bool:
    """Has process ``pid`` installed a handler for ``signum`` (Linux /proc)?"""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_signal_ends_a_long_run_in_one_line(tmp_path: Path, signum: int) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(ds_cnn("M"))
    argv = [sys.executable, "-m", "arenaplan", "sweep", str(model), "--points", "1000"]
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not _catches(run.pid, signum) and run.poll() is None:
        assert time.monotonic() < deadline, "the command never set its handlers"
        time.sleep(0.01)
    run.send_signal(signum)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 128 + signum, err
    assert err == f"arenaplan: ended by {signal.Signals(signum).name}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]
