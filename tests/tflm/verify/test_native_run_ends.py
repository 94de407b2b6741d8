"""A TFLM run from source never outlives arenaplan: an interrupted run kills it at once,
and a killed arenaplan takes it along (the kernel's parent-death signal, Linux)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arenaplan.tflm.verify.native import _run

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's"
)


class Stop(BaseException):
    pass


def _alive(pid: int) -> bool:
    try:
        state = next(
            line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
            if line.startswith("State:")
        )  # fmt: skip
    except (OSError, StopIteration):
        return False
    return "Z" not in state.split()[1]


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found |= {int(p) for p in text.split()}
    return found


def test_an_interrupted_run_kills_the_program(tmp_path: Path) -> None:
    def stop(*_: object) -> None:
        raise Stop

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    start = time.monotonic()
    try:
        with pytest.raises(Stop):
            _run(["sleep", "60"], tmp_path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - start < 30  # not the 60 s of the program


def test_a_killed_arenaplan_takes_the_program_along(tmp_path: Path) -> None:
    code = (
        "from pathlib import Path; from arenaplan.tflm.verify.native import _run; "
        f"_run(['sleep', '120'], Path({str(tmp_path)!r}))"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    children: set[int] = set()
    while not children and time.monotonic() < deadline:
        children = _children(parent.pid)
        time.sleep(0.05)
    assert children, "the program never started"
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in children if _alive(p)], "the program outlived arenaplan"
