"""Instructions one invoke executes, counted: the runner of a host build under valgrind.

``invoke_instructions`` runs TFLM built from source (``verify.native``, a host
variant) under callgrind with collection on only inside ``MicroInterpreter::Invoke``
and returns the instructions executed there (callgrind's ``Ir``) for one trial: the
measured time cost of a model's kernels on that build, setup and file I/O left out.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from arenaplan.errors import RuntimeUnavailableError
from arenaplan.reader import read_model_bytes
from arenaplan.verify.inputs import random_inputs
from arenaplan.verify.native import VARIANTS, native_available, runner_path

ARENA = 16 << 20  # bytes: room for any model the benchmarks count
TIMEOUT = 3600  # seconds for one model under callgrind
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def instructions_available(variant: str = "host-reference") -> str | None:
    """None when instructions can be counted here, else why not."""
    if variant not in VARIANTS or VARIANTS[variant].arm32:
        return f"instructions are counted on host variants only, not {variant!r}"
    if shutil.which("valgrind") is None:
        return "valgrind is absent: apt-get install valgrind"
    return native_available(variant)


def invoke_instructions(model: bytes, seed: int = 0, variant: str = "host-reference") -> int:
    """Instructions of one invoke of ``model`` on random inputs (``seed``)."""
    why = instructions_available(variant)
    if why is not None:
        raise RuntimeUnavailableError(why)
    inputs = random_inputs(read_model_bytes(model), 1, seed)[0]
    with tempfile.TemporaryDirectory(prefix="arenaplan-ir-") as tmp:
        d = Path(tmp)
        (d / "m.tflite").write_bytes(model)
        (d / "in.bin").write_bytes(b"".join(np.ascontiguousarray(a).tobytes() for a in inputs))
        argv = [
            "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
            "--toggle-collect=tflite::MicroInterpreter::Invoke()",
            str(runner_path(variant)), "m.tflite", str(ARENA), "r.json", "out.bin", "in.bin",
        ]  # fmt: skip
        done = subprocess.run(
            argv, cwd=d, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
        result = d / "r.json"
        status = json.loads(result.read_text()).get("status") if result.is_file() else None
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None or status != "ok":
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeUnavailableError(f"the model did not run under callgrind: {last}")
    return int(found.group(1))
