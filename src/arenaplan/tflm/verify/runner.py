"""The parent side: a long-lived TFLM worker process, restarted if it dies."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np

from arenaplan.errors import RuntimeUnavailableError, VerificationError
from arenaplan.reader import read_model_bytes
from arenaplan.runtime.report import Measurement
from arenaplan.tflm.verify import worker
from arenaplan.tflm.verify.inputs import zero_inputs

GENEROUS_ARENA = 16 << 20  # bytes: more than any model here needs


def tflm_available() -> bool:
    return importlib.util.find_spec("tflite_micro") is not None


def require_tflm() -> None:
    if not tflm_available():
        raise RuntimeUnavailableError(
            "the TFLM runtime is not installed: pip install 'arenaplan[tflm]'"
        )


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run: outputs per trial, or why TFLM failed (``error``), and the arena it used."""

    outputs: list[list[np.ndarray]]
    error: str | None
    measurement: Measurement | None
    log: str

    @property
    def ok(self) -> bool:
        return self.error is None


class TflmRunner:
    """Runs requests in a child process; a crash becomes a ``RunResult`` with an error."""

    def __init__(self) -> None:
        require_tflm()
        import multiprocessing  # here, not above: planning alone never starts a child

        self._ctx = multiprocessing.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None

    def __enter__(self) -> TflmRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None:
            self._proc.join(timeout=5)
            if self._proc.is_alive():
                self._proc.kill()
        self._proc = self._conn = None

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=worker.serve, args=(child,), daemon=True)
        proc.start()  # kept only once started, so that close() never joins a dead start
        child.close()
        self._proc, self._conn = proc, parent

    def run(
        self, model: bytes, arena_size: int, inputs: list[list[np.ndarray]], n_outputs: int
    ) -> RunResult:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        request = {"model": model, "arena": arena_size, "inputs": inputs, "n_outputs": n_outputs}
        try:
            self._conn.send(request)
            reply = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self._proc.join(timeout=5)
            code = self._proc.exitcode
            self.close()
            why = f"killed by signal {-code}" if code and code < 0 else f"exit status {code}"
            return RunResult([], f"the TFLM process died ({why})", None, "")
        m = Measurement(reply["head"], reply["tail"]) if "head" in reply else None
        return RunResult(reply["outputs"], reply["error"], m, reply["log"])


def measure(model: bytes, arena_size: int = GENEROUS_ARENA) -> Measurement:
    """TFLM's head and tail for ``model`` (allocated and invoked once on zeros)."""

    ir = read_model_bytes(model)
    with TflmRunner() as runner:
        result = runner.run(model, arena_size, [zero_inputs(ir)], len(ir.subgraphs[0].outputs))
    if not result.ok or result.measurement is None:
        raise VerificationError(f"TFLM refuses the model: {result.error}")
    return result.measurement
