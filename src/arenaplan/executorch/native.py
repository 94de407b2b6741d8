"""A ``.pte`` program run in ExecuTorch's own C++ runtime.

arenaplan's runner (``runner/et_runner.cc``) is built against the executorch wheel's
headers and libraries (``pip install executorch==1.5.1 --no-deps``: no torch) with
g++, once per wheel, into ``~/.cache/arenaplan/executorch/runner/<hash>/``. It hands
the runtime pools of its own, poisoned and fenced, runs a method for some calls and
reports the highest byte written in each pool and the method allocator's bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arenaplan.errors import RuntimeUnavailableError
from arenaplan.ir.model import Subgraph

SOURCE = Path(__file__).with_name("runner") / "et_runner.cc"
WHEEL = "executorch==1.5.1"
FLAGS = ("-O1", "-std=c++17", "-DC10_USING_CUSTOM_GENERATED_MACROS", "-DET_EVENT_TRACER_ENABLED")
TIMEOUT = 300  # seconds for one build or one run
# the kernel libraries of the wheel the runner registers (lib/lib<name>.so)
KERNELS = ("executorch_kernels_optimized", "executorch_kernels_quantized")


@dataclass(frozen=True, slots=True)
class Run:
    """What one method did: ``outputs[c][i]`` the bytes of output i after call c;
    ``pools[k]``: (size, highest byte written, -1: none) of memory id k + 1;
    ``method_allocator``: its bytes; ``guards``: the fences around the pools held."""

    outputs: tuple[tuple[bytes, ...], ...]
    pools: tuple[tuple[int, int], ...]
    method_allocator: int
    guards: bool


def wheel_dir() -> Path | None:
    """The executorch package's folder (``ARENAPLAN_EXECUTORCH`` if set): the first
    ``executorch/include`` on ``sys.path``, found without importing it (its Python
    side imports torch; a script or folder named ``executorch`` may come first)."""
    given = os.environ.get("ARENAPLAN_EXECUTORCH")
    if given:
        return Path(given)
    for entry in sys.path:
        folder = Path(entry or ".") / "executorch"
        if (folder / "include").is_dir() and (folder / "lib").is_dir():
            return folder
    return None


def unavailable() -> str | None:
    """Why the runner cannot be built here (None: it can)."""
    folder = wheel_dir()
    if folder is None or not (folder / "include").is_dir() or not (folder / "lib").is_dir():
        return f"ExecuTorch's runtime is not installed (pip install {WHEEL} --no-deps)"
    if shutil.which("g++") is None:
        return "no g++ to build the ExecuTorch runner (apt-get install g++)"
    return None


def runner() -> Path:
    """The runner, built when not cached (atomic: parallel builders do not clash);
    ``RuntimeUnavailableError`` when it cannot be built here. The cache is keyed on
    the source and the build command (the wheel's folder, flags and libraries)."""
    folder = wheel_dir()
    assert_available()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    key = build_key(folder)  # type: ignore[arg-type]
    target = cache / "arenaplan" / "executorch" / "runner" / key / "et_runner"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / "et_runner"
        command = build_command(folder, built)  # type: ignore[arg-type]
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
        if done.returncode != 0:
            last = done.stderr.strip().splitlines()[-1:] or ["no message"]
            raise RuntimeUnavailableError(f"building the ExecuTorch runner failed: {last[0]}")
        os.replace(built, target)
    return target


def build_key(folder: Path) -> str:
    """The runner's cache key: its source and its build command."""
    command = " ".join(build_command(folder, Path("et_runner")))
    return hashlib.sha256(SOURCE.read_bytes() + command.encode()).hexdigest()[:16]


def build_command(folder: Path, output: Path, source: Path = SOURCE) -> list[str]:
    """g++'s command line for the runner (or another ``source``) against the wheel in
    ``folder``. The kernel
    libraries only register their operators when loaded (nothing of theirs is
    called by name), so they are linked with ``--no-as-needed``: the optimized and
    portable kernels, and the quantized ones (``quantized_decomposed::quantize_*``,
    ``dequantize_*``) that int8 programs lowered without a delegate call."""
    include, lib = folder / "include", folder / "lib"
    c10 = include / "executorch/runtime/core/portable_type/c10"
    command = ["g++", *FLAGS, f"-I{include}", f"-I{c10}", str(source), "-o", str(output)]
    command += [f"-L{lib}", f"-Wl,-rpath,{lib}", "-lexecutorch"]
    command += ["-Wl,--push-state,--no-as-needed", *(f"-l{k}" for k in KERNELS)]
    return [*command, "-Wl,--pop-state", "-w"]


def assert_available() -> None:
    why = unavailable()
    if why is not None:
        raise RuntimeUnavailableError(why)


def run_method(program: bytes, method: str, inputs: list[bytes | None], calls: int) -> Run:
    """Run ``method`` of ``program`` for ``calls`` calls on ``inputs`` (None: not a
    tensor). RuntimeError with ExecuTorch's words when it refuses or fails."""
    exe = runner()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "program.pte"
        path.write_bytes(program)
        files = []
        for i, data in enumerate(inputs):
            if data is None:
                files.append("-")
                continue
            f = Path(tmp) / f"in{i}.bin"
            f.write_bytes(data)
            files.append(str(f))
        command = [str(exe), str(path), method, str(calls), tmp, *files]
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
        outputs = tuple(_outputs(Path(tmp), c) for c in range(calls))
    return _parse(done.stdout, outputs)


def _outputs(folder: Path, call: int) -> tuple[bytes, ...]:
    found = sorted(folder.glob(f"{call}.*.bin"), key=lambda p: int(p.name.split(".")[1]))
    return tuple(p.read_bytes() for p in found)


def _parse(text: str, outputs: tuple[tuple[bytes, ...], ...]) -> Run:
    pools, method, guards = [], 0, False
    for line in text.splitlines():
        fields = dict(part.split("=", 1) for part in line.split())
        if "pool" in fields:
            pools.append((int(fields["size"]), int(fields["highest"])))
        elif "method_allocator" in fields:
            method = int(fields["method_allocator"])
        elif "guards" in fields:
            guards = fields["guards"] == "ok"
    return Run(outputs, tuple(pools), method, guards)


def random_inputs(sg: Subgraph, seed: int) -> list[bytes | None]:
    """Bytes for each input of method ``sg``: floats from a normal distribution,
    integers small, booleans either (numpy's generator, seeded)."""
    rng = np.random.default_rng(seed)
    out: list[bytes | None] = []
    for t in sg.inputs:
        tensor = sg.tensors[t]
        kind = np.dtype(tensor.dtype.name.lower()) if _numpy_type(tensor.dtype.name) else None
        if kind is None:
            out.append(bytes(tensor.nbytes))
        elif kind.kind == "f":
            out.append(rng.standard_normal(tensor.elements).astype(kind).tobytes())
        elif kind.kind == "b":
            out.append(rng.integers(0, 2, tensor.elements).astype(kind).tobytes())
        else:
            out.append(rng.integers(-8, 8, tensor.elements).astype(kind).tobytes())
    return out


def _numpy_type(name: str) -> bool:
    try:
        np.dtype(name.lower())
    except TypeError:
        return False
    return True
