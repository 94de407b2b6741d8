"""TFLM built from source (``scripts/build_tflm.py``), run as a child process per request.

Each variant is the TFLM library of the commit our facts were checked against, built
with one kernel set for one machine, linked with ``native/tflm_runner.cc``. The runner
sets the interpreter up as the PyPI runtime does (recording allocator, resource
variables, the same kernels) and reports TFLM's head and tail the same way, so a
``NativeRunner`` answers like ``TflmRunner``, plus each tensor's offset in the arena.

The 32-bit ARM variants are Cortex-M4 code (arm-none-eabi-gcc, soft float, one-byte
enums) run under ``qemu-arm``, with file I/O through semihosting (newlib's rdimon).
qemu-arm 7.2's user mode cannot load an M-profile program at all (it aborts in
``probe_guest_base`` on the 2 GiB address space it gives M-profile CPUs), so the
program runs on an A-profile CPU model, which executes the same Thumb-2 and DSP
instructions; it is linked with newlib's profile-neutral ARMv7 multilib, whose
semihosting call (``SVC 0xAB``) qemu-arm serves on A-profile CPUs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arenaplan.verify.runner import Measurement, RunResult
from arenaplan.verify.worker import explain

BUILD_COMMAND = "python scripts/build_tflm.py"
ARM_CPU = "cortex-m4"  # TARGET_ARCH of the library: what the code is compiled for
QEMU_CPU = "cortex-a15"  # the CPU model qemu-arm runs it on (see the module docstring)
RUN_TIMEOUT = 900  # seconds for one request (qemu runs a large model in minutes)
# The TFLM source bundle beside a clone of the project (../shared/third_party).
BUNDLE = (
    Path(__file__).resolve().parents[3].parent
    / "shared"
    / "third_party"
    / "tflite-micro-90b983c2b-src.tar.xz"
)
# ARM programs link newlib's ARMv7 multilib (A/R/M-neutral): its semihosting call
# runs under qemu-arm's A-profile CPUs; the objects stay Cortex-M4 code.
ARM_LINK = "-march=armv7 -mthumb -mfloat-abi=soft --specs=rdimon.specs"


@dataclass(frozen=True, slots=True)
class Variant:
    """One build of TFLM: its name, the ``make`` arguments, and how to run its programs."""

    name: str
    make_args: tuple[str, ...]  # besides the toolchain root and the output folder
    arm32: bool  # built with arm-none-eabi-gcc, run under qemu-arm

    @property
    def gendir(self) -> str:
        """TFLM's output folder for these arguments, under the variant's ``gen``."""
        base = f"cortex_m_generic_{ARM_CPU}_default" if self.arm32 else "linux_x86_64_default"
        kernels = "_cmsis_nn" if "OPTIMIZED_KERNEL_DIR=cmsis_nn" in self.make_args else ""
        return f"{base}{kernels}_gcc"

    @property
    def compiler(self) -> str:
        return "arm-none-eabi-g++" if self.arm32 else "g++"


_ARM = ("TARGET=cortex_m_generic", f"TARGET_ARCH={ARM_CPU}")
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("host-reference", (), arm32=False),
        Variant("host-cmsis_nn", ("OPTIMIZED_KERNEL_DIR=cmsis_nn",), arm32=False),
        Variant("arm32-reference", _ARM, arm32=True),
        Variant("arm32-cmsis_nn", (*_ARM, "OPTIMIZED_KERNEL_DIR=cmsis_nn"), arm32=True),
    )
}

# TfLiteType codes (tensorflow/lite/core/c/c_api_types.h) -> numpy.
_NUMPY = {
    1: np.float32,
    2: np.int32,
    3: np.uint8,
    4: np.int64,
    6: np.bool_,
    7: np.int16,
    9: np.int8,
    10: np.float16,
    11: np.float64,
    13: np.uint64,
    16: np.uint32,
    17: np.uint16,
}


@functools.cache
def bundle_key(bundle: Path = BUNDLE) -> str:
    """The first 16 hex digits of the bundle's SHA-256 ("no-bundle" if it is absent)."""
    if not bundle.is_file():
        return "no-bundle"
    return hashlib.sha256(bundle.read_bytes()).hexdigest()[:16]


def build_root() -> Path:
    """Where the builds live: ``$ARENAPLAN_TFLM_BUILD``, else the user's cache
    (``$XDG_CACHE_HOME``, else ``~/.cache``) under ``arenaplan/tflm/<bundle key>``:
    outside any clone, so that every clone on the machine reuses one build."""
    env = os.environ.get("ARENAPLAN_TFLM_BUILD")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "arenaplan" / "tflm" / bundle_key()


@functools.cache
def compiler_identity(compiler: str) -> str:
    """The first line of ``compiler --version`` ("absent" when it is not installed)."""
    if shutil.which(compiler) is None:
        return "absent"
    done = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False)
    return (done.stdout.splitlines() or ["unknown"])[0]


def options_key(variant: Variant) -> str:
    """12 hex digits naming what the build depends on besides the bundle: the make
    arguments, the runner's link, the compiler's identity."""
    facts = [variant.name, *variant.make_args, compiler_identity(variant.compiler)]
    if variant.arm32:
        facts.append(ARM_LINK)
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:12]


def variant_dir(variant: str, root: Path | None = None) -> Path:
    """The variant's build folder: ``<root>/<variant>-<options key>``."""
    return (root or build_root()) / f"{variant}-{options_key(VARIANTS[variant])}"


def runner_path(variant: str, root: Path | None = None) -> Path:
    return variant_dir(variant, root) / "tflm_runner"


def native_available(variant: str, root: Path | None = None) -> str | None:
    """None when ``variant`` can run here, else the reason (naming the build command)."""
    if variant not in VARIANTS:
        return f"unknown TFLM variant {variant!r} (known: {', '.join(VARIANTS)})"
    path = runner_path(variant, root)
    if not path.is_file():
        return f"TFLM {variant} is not built at {path.parent}: {BUILD_COMMAND} --variants {variant}"
    if VARIANTS[variant].arm32 and shutil.which("qemu-arm") is None:
        return f"qemu-arm is absent, TFLM {variant} cannot run: apt-get install qemu-user"
    return None


@dataclass(frozen=True, slots=True)
class NativeResult:
    """A run plus what only the native runner reports."""

    result: RunResult
    tensor_offsets: list[list[int]]  # [subgraph][tensor]: bytes from the arena start, -1 outside
    report: dict  # the runner's whole JSON (arena_used_bytes, total, inputs, outputs, ...)


class NativeRunner:
    """Runs requests in a TFLM build from source, one child process each."""

    def __init__(self, variant: str, build_root: Path | None = None) -> None:
        why = native_available(variant, build_root)
        if why is not None:
            from arenaplan.errors import RuntimeUnavailableError

            raise RuntimeUnavailableError(why)
        self.variant = VARIANTS[variant]
        self.program = runner_path(variant, build_root)

    def __enter__(self) -> NativeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing stays running between requests."""

    def run(
        self, model: bytes, arena_size: int, inputs: list[list[np.ndarray]], n_outputs: int
    ) -> RunResult:
        return self.run_native(model, arena_size, inputs, n_outputs).result

    def run_native(
        self, model: bytes, arena_size: int, inputs: list[list[np.ndarray]], n_outputs: int
    ) -> NativeResult:
        with tempfile.TemporaryDirectory(prefix="arenaplan-tflm-") as tmp:
            work = Path(tmp)
            (work / "m.tflite").write_bytes(model)
            blob = b"".join(np.ascontiguousarray(a).tobytes() for trial in inputs for a in trial)
            (work / "in.bin").write_bytes(blob)
            # Short relative names: semihosting caps the command line of the ARM program.
            args = [str(self.program), "m.tflite", str(arena_size), "r.json", "out.bin"]
            if inputs:  # no input file: allocation only, no trial
                args.append("in.bin")
            if self.variant.arm32:
                args = ["qemu-arm", "-cpu", QEMU_CPU, *args]
            try:
                proc = subprocess.run(
                    args, cwd=work, capture_output=True, timeout=RUN_TIMEOUT, check=False
                )
            except subprocess.TimeoutExpired:
                why = f"TFLM {self.variant.name} ran over {RUN_TIMEOUT} s"
                return NativeResult(RunResult([], why, None, ""), [], {})
            log = proc.stderr.decode("utf-8", errors="replace")
            result_file = work / "r.json"
            if not result_file.is_file():
                code = proc.returncode
                why = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
                error = explain(f"the TFLM process died ({why})", log)
                return NativeResult(RunResult([], error, None, log[-2000:]), [], {})
            report = json.loads(result_file.read_text())
            outputs = (work / "out.bin").read_bytes() if (work / "out.bin").is_file() else b""
        return _result(report, outputs, inputs, n_outputs, log)


def _result(
    report: dict, blob: bytes, inputs: list[list[np.ndarray]], n_outputs: int, log: str
) -> NativeResult:
    offsets = report.get("tensors", [])
    mismatch = _input_mismatch(report["inputs"], inputs) if "inputs" in report else None
    if mismatch is not None:
        return NativeResult(RunResult([], mismatch, None, log[-2000:]), offsets, report)
    if report["status"] != "ok":
        error = explain(report["error"], log)
        return NativeResult(RunResult([], error, None, log[-2000:]), offsets, report)
    outputs: list[list[np.ndarray]] = []
    at = 0
    for _ in range(report["trials"]):
        trial = []
        for spec in report["outputs"]:
            data = blob[at : at + spec["bytes"]]
            at += spec["bytes"]
            trial.append(np.frombuffer(data, _NUMPY[spec["type"]]).reshape(spec["dims"]).copy())
        outputs.append(trial[:n_outputs])
    measurement = Measurement(report["head"], report["tail"])
    return NativeResult(RunResult(outputs, None, measurement, log[-2000:]), offsets, report)


def _input_mismatch(specs: list[dict], inputs: list[list[np.ndarray]]) -> str | None:
    """What the PyPI runtime's ``set_input`` would refuse: type, rank, dims, count."""
    for trial in inputs:
        if len(trial) != len(specs):
            return f"{len(trial)} inputs given, the model has {len(specs)}"
        for k, (array, spec) in enumerate(zip(trial, specs, strict=True)):
            want = _NUMPY.get(spec["type"])
            if want is None or array.dtype != np.dtype(want):
                return f"Cannot set tensor: input {k} is {array.dtype}, TFLM type {spec['type']}"
            if list(array.shape) != spec["dims"]:
                shape = list(array.shape)
                return f"Cannot set tensor: input {k} has shape {shape}, not {spec['dims']}"
    return None
