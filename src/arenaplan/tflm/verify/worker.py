"""The child process that runs TFLM. Nothing here may run in the parent.

TFLM can ``abort()`` or crash the whole process on a bad model, so the parent
talks to this worker over a pipe and survives its death. Everything TFLM writes
to file descriptor 2 (its log, the allocation report) is captured per request.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

_HEAD = re.compile(r"Arena allocation head (\d+) bytes")
_TAIL = re.compile(r"Arena allocation tail (\d+) bytes")


class _CaptureFd2:
    """Redirect C-level stderr to a temporary file while active."""

    def __enter__(self) -> _CaptureFd2:
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc: object) -> None:
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", errors="replace")
        self.file.close()


def _run_one(request: dict[str, Any]) -> dict[str, Any]:
    from tflite_micro import runtime

    with _CaptureFd2() as log:
        try:
            it = runtime.Interpreter.from_bytes(request["model"], arena_size=request["arena"])
            outputs = []
            for trial in request["inputs"]:
                for k, array in enumerate(trial):
                    it.set_input(array, k)
                it.invoke()
                outputs.append([it.get_output(k).copy() for k in range(request["n_outputs"])])
            it.print_allocations()
            error = None
        except (RuntimeError, ValueError) as exc:
            outputs, error = [], str(exc)
    if error is not None:
        error = explain(error, log.text)
    reply: dict[str, Any] = {"outputs": outputs, "error": error, "log": log.text[-2000:]}
    head, tail = _HEAD.search(log.text), _TAIL.search(log.text)
    if error is None and head and tail:
        reply["head"], reply["tail"] = int(head.group(1)), int(tail.group(1))
    return reply


def explain(error: str, log: str) -> str:
    """TFLM's exception text plus its own log lines saying why (one line)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("[RecordingMicroAllocator]")]
    why = " / ".join(
        line.split(" ", 1)[-1] if line.startswith("tensorflow/") else line for line in lines[-2:]
    )
    return f"{error} ({why})" if why else error


def serve(conn: Connection) -> None:
    """Answer requests until the parent closes the pipe. (Not told to die with its
    parent: Linux's parent-death signal follows the thread that started the process,
    and this long-lived worker may be started from a thread that ends first.)"""
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        conn.send(_run_one(request))
