"""Instructions one invoke executes, counted in TFLM built from source.

``invoke_instructions`` counts the instructions of one invoke of a model on random
inputs in a build of ``verify.native``:

- a host build runs under callgrind with collection on only inside
  ``MicroInterpreter::Invoke`` (callgrind's ``Ir``), setup and file I/O left out;
  ``invoke_functions`` gives the same count split by the function that executed each
  instruction (exclusive counts, callgrind_annotate's), to see where they go;
- an ARM build (Cortex-M4 under qemu-arm, Cortex-M55 on qemu-system-arm's board)
  runs under QEMU with the project's plugin (``native/qemu_insn_classes.c``, compiled
  here once per source into the build root), which counts every guest instruction
  of the program: one invoke is the count with two trials less the count with one
  (the same program, model and first trial; every trial runs the same code).

Both are the measured cost of a model's kernels on that build (instructions, not
cycles: a Cortex-M's loads and multiplies take more than one).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from arenaplan.errors import RuntimeUnavailableError
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.verify.inputs import random_inputs
from arenaplan.tflm.verify.native import (
    QEMU_CPU,
    VARIANTS,
    build_root,
    command,
    native_available,
    runner_path,
)

ARENA = 16 << 20  # bytes: room for any model the benchmarks count
TIMEOUT = 3600  # seconds for one model under callgrind or QEMU
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")
# a line of callgrind_annotate's table: "  1,234 (12.3%)  file:function [object]"
_FUNCTION = re.compile(r"^\s*([\d,]+)\s+(?:\([\d.]+%\)\s+)?(\S.*?)(?:\s+\[.*\])?$")
OUT_FILE = "cg.out"  # callgrind's output, in the run's folder
# the plugin that counts instructions, in all and by class
PLUGIN_SOURCE = Path(__file__).resolve().parents[4] / "native" / "qemu_insn_classes.c"
_INSNS = re.compile(r"^insns (\d+)$", re.MULTILINE)
_CLASS = re.compile(r"^([a-z_]+) (\d+)$", re.MULTILINE)


def instructions_available(variant: str = "host-reference") -> str | None:
    """None when instructions can be counted here, else why not."""
    if variant not in VARIANTS:
        return f"no TFLM variant {variant!r}"
    if VARIANTS[variant].arm32:
        if not PLUGIN_SOURCE.is_file():
            return f"the QEMU counting plugin's source is absent ({PLUGIN_SOURCE})"
        if shutil.which("gcc") is None:
            return "no C compiler for the QEMU counting plugin: apt-get install gcc"
    elif shutil.which("valgrind") is None:
        return "valgrind is absent: apt-get install valgrind"
    return native_available(variant)


def invoke_instructions(model: bytes, seed: int = 0, variant: str = "host-reference") -> int:
    """Instructions of one invoke of ``model`` on random inputs (``seed``)."""
    why = instructions_available(variant)
    if why is not None:
        raise RuntimeUnavailableError(why)
    if VARIANTS[variant].arm32:
        trials = random_inputs(read_model_bytes(model), 2, seed)
        return _qemu(model, trials, variant) - _qemu(model, trials[:1], variant)
    return _callgrind(model, seed, variant, per_function=False)[0]


def invoke_classes(model: bytes, seed: int = 0, variant: str = "arm32-cmsis_nn") -> dict[str, int]:
    """Instructions of one invoke of ``model`` on an ARM build, by class
    (``native/qemu_insn_classes.c``: alu, mul, load, load_next, store, multi,
    multi_regs, branch, taken, lob, vload, vop, div; ``insns`` is their sum)."""
    why = instructions_available(variant)
    if why is None and not VARIANTS[variant].arm32:
        why = f"instruction classes are counted on ARM builds, not {variant}"
    if why is not None:
        raise RuntimeUnavailableError(why)
    trials = random_inputs(read_model_bytes(model), 2, seed)
    two = _qemu_classes(model, trials, variant)
    one = _qemu_classes(model, trials[:1], variant)
    return {k: two[k] - one.get(k, 0) for k in two}


def invoke_functions(
    model: bytes, seed: int = 0, variant: str = "host-reference"
) -> dict[str, int]:
    """Instructions of one invoke of ``model`` in a host build, per function
    (callgrind_annotate's names, ``file:function``); they add up to
    ``invoke_instructions``."""
    why = instructions_available(variant)
    if why is not None or VARIANTS[variant].arm32:
        raise RuntimeUnavailableError(why or f"functions are counted on host builds, not {variant}")
    return _callgrind(model, seed, variant, per_function=True)[1]


def _write_run(d: Path, model: bytes, trials: list[list[np.ndarray]]) -> list[str]:
    """The run's files in ``d`` and the runner's arguments (short relative names:
    semihosting caps an ARM program's command line)."""
    (d / "m.tflite").write_bytes(model)
    blob = b"".join(np.ascontiguousarray(a).tobytes() for trial in trials for a in trial)
    (d / "in.bin").write_bytes(blob)
    return ["m.tflite", str(ARENA), "r.json", "out.bin", "in.bin"]


def _status(d: Path) -> str | None:
    result = d / "r.json"
    return json.loads(result.read_text()).get("status") if result.is_file() else None


def _callgrind(
    model: bytes, seed: int, variant: str, per_function: bool
) -> tuple[int, dict[str, int]]:
    inputs = random_inputs(read_model_bytes(model), 1, seed)
    with tempfile.TemporaryDirectory(prefix="arenaplan-ir-") as tmp:
        d = Path(tmp)
        args = _write_run(d, model, inputs)
        out = OUT_FILE if per_function else "/dev/null"
        argv = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            "--toggle-collect=tflite::MicroInterpreter::Invoke()",
            str(runner_path(variant)), *args,
        ]  # fmt: skip
        done = subprocess.run(
            argv, cwd=d, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
        found = _COLLECTED.search(done.stderr)
        if done.returncode != 0 or found is None or _status(d) != "ok":
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeUnavailableError(f"the model did not run under callgrind: {last}")
        functions = _annotate(d / OUT_FILE) if per_function else {}
    return int(found.group(1)), functions


def _annotate(path: Path) -> dict[str, int]:
    """Exclusive instructions per function of a callgrind output file."""
    argv = ["callgrind_annotate", "--threshold=100", "--inclusive=no", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeUnavailableError(f"callgrind_annotate failed: {done.stderr.strip()[:200]}")
    out: dict[str, int] = {}
    table = done.stdout.split("file:function", 1)[-1]
    for line in table.splitlines()[1:]:
        m = _FUNCTION.match(line)
        if m is None:
            continue
        name = m.group(2)
        out[name] = out.get(name, 0) + int(m.group(1).replace(",", ""))
    return out


def plugin_path(source_path: Path = PLUGIN_SOURCE) -> Path:
    """A QEMU counting plugin, compiled once per source into the build root."""
    source = source_path.read_bytes()
    stem = source_path.stem.replace("_", "-")
    path = build_root() / f"{stem}-{hashlib.sha256(source).hexdigest()[:12]}.so"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part")  # one per process: tests run in several
    argv = ["gcc", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", str(partial)]
    done = subprocess.run(
        [*argv, str(source_path)], capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        raise RuntimeUnavailableError(f"the QEMU counting plugin did not compile: {done.stderr}")
    partial.replace(path)
    return path


def _qemu(model: bytes, trials: list[list[np.ndarray]], variant: str) -> int:
    """Guest instructions of the whole run of ``model`` over ``trials`` in QEMU."""
    return int(_qemu_run(model, trials, variant, PLUGIN_SOURCE, _INSNS)[0][1])


def _qemu_classes(model: bytes, trials: list[list[np.ndarray]], variant: str) -> dict[str, int]:
    """Guest instructions of the whole run by class."""
    return {k: int(v) for k, v in _qemu_run(model, trials, variant, PLUGIN_SOURCE, _CLASS)}


def _qemu_run(
    model: bytes, trials: list[list[np.ndarray]], variant: str, plugin: Path, line: re.Pattern
) -> list[tuple[str, ...]]:
    """The lines ``line`` matches in what ``plugin`` wrote after the run (its groups)."""
    with tempfile.TemporaryDirectory(prefix="arenaplan-ir-") as tmp:
        d = Path(tmp)
        args = _write_run(d, model, trials)
        argv = command(VARIANTS[variant], runner_path(variant), args)
        done, found = _plugin_run(argv, d, plugin, line)
        if not found or _status(d) != "ok":
            raise RuntimeUnavailableError(f"the model did not run under QEMU: {_last(done)}")
    return [f if isinstance(f, tuple) else (f, f) for f in found]


def qemu_user_classes(program: Path, args: list[str], cwd: Path) -> dict[str, int]:
    """Guest instructions by class of a whole run of an ARM ``program`` (linked as
    the qemu-user builds are) under qemu-arm, in ``cwd`` (semihosting opens files
    relative to it)."""
    if shutil.which("qemu-arm") is None:
        raise RuntimeUnavailableError("qemu-arm is absent: apt-get install qemu-user")
    argv = ["qemu-arm", "-cpu", QEMU_CPU, str(program), *args]
    done, found = _plugin_run(argv, cwd, PLUGIN_SOURCE, _CLASS)
    if done.returncode != 0 or not found:
        raise RuntimeUnavailableError(f"{program.name} did not run under QEMU: {_last(done)}")
    return {k: int(v) for k, v in found}


def _plugin_run(
    argv: list[str], cwd: Path, plugin: Path, line: re.Pattern
) -> tuple[subprocess.CompletedProcess, list]:
    """Run the emulator command ``argv`` in ``cwd`` with ``plugin`` loaded; the run
    and the matches of ``line`` in what the plugin wrote (none if it wrote nothing)."""
    count = cwd / "count.txt"
    argv = [argv[0], "-plugin", f"{plugin_path(plugin)},out={count}", *argv[1:]]
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    return done, line.findall(count.read_text()) if count.is_file() else []


def _last(done: subprocess.CompletedProcess) -> str:
    return (done.stderr.strip().splitlines() or ["no output"])[-1]
