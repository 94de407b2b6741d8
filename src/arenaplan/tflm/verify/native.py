"""TFLM built from source (``scripts/build_tflm.py``), run as a child process per request.

Each variant is the TFLM library of the commit our facts were checked against, built
with one kernel set for one machine, linked with ``native/tflm_runner.cc``. The runner
sets the interpreter up as the PyPI runtime does (recording allocator, resource
variables, the same kernels) and reports TFLM's head and tail the same way, so a
``NativeRunner`` answers like ``TflmRunner``, plus each tensor's offset in the arena.
A variant's ``runs`` says how its program runs:

- ``host``: an x86-64 program, run directly.
- ``qemu-user``: Cortex-M4 code (arm-none-eabi-gcc, soft float) under ``qemu-arm``,
  with file I/O through semihosting (newlib's rdimon). qemu-arm 7.2's user mode cannot
  load an M-profile program at all (it aborts in ``probe_guest_base`` on the 2 GiB
  address space it gives M-profile CPUs), so the program runs on an A-profile CPU
  model, which executes the same Thumb-2 and DSP instructions; it is linked with
  newlib's profile-neutral ARMv7 multilib, whose semihosting call (``SVC 0xAB``)
  qemu-arm serves on A-profile CPUs. MVE (an ARMv8.1-M extension) has no A-profile
  CPU to run on, hence:
- ``qemu-system``: Cortex-M55 code (hard float, MVE) linked as a bare-metal program
  for ``qemu-system-arm``'s ``mps3-an547`` board (Corstone-300), with the project's
  startup (``native/m55_startup.c``: vector table, FPU and MVE enabled before any of
  their instructions) and memory map (``native/an547.ld``); the command line, files
  and stderr go through semihosting (``BKPT 0xAB``), each request boots the board.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arenaplan.errors import RuntimeUnavailableError, VerificationError
from arenaplan.signals import die_with_parent
from arenaplan.tflm.verify.runner import Measurement, RunResult
from arenaplan.tflm.verify.worker import explain

BUILD_COMMAND = "python scripts/build_tflm.py"
RUN_TIMEOUT = 900  # seconds for one request (qemu runs a large model in minutes)
# The TFLM source bundle beside a clone of the project (../shared/third_party).
BUNDLE = (
    Path(__file__).resolve().parents[4].parent
    / "shared"
    / "third_party"
    / "tflite-micro-90b983c2b-src.tar.xz"
)

# How a variant's program runs (``Variant.runs``).
HOST = "host"  # an x86-64 program
QEMU_USER = "qemu-user"  # an ARM program under qemu-arm (user mode)
QEMU_SYSTEM = "qemu-system"  # a bare-metal ARM program on qemu-system-arm's board

ARM_CPU = "cortex-m4"  # TARGET_ARCH of the qemu-user builds: what the code is compiled for
QEMU_CPU = "cortex-a15"  # the CPU model qemu-arm runs it on (see the module docstring)
# qemu-user programs link newlib's ARMv7 multilib (A/R/M-neutral): its semihosting call
# runs under qemu-arm's A-profile CPUs; the objects stay Cortex-M4 code.
ARM_LINK = "-march=armv7 -mthumb -mfloat-abi=soft --specs=rdimon.specs"
# -fno-short-enums objects linked with newlib's one-byte-enum ones: ld warns, and TFLM's
# LDFLAGS make warnings fatal. No enum crosses between them (newlib's and libstdc++'s
# interfaces the runner and TFLM use take and return none), so the warning is moot.
INT_ENUMS_LINK = f"{ARM_LINK} -Wl,--no-enum-size-warning"

M55_CPU = "cortex-m55"  # TARGET_ARCH of the qemu-system builds: ARMv8.1-M with MVE
QEMU_MACHINE = "mps3-an547"  # the qemu-system-arm board: Corstone-300, one Cortex-M55
# The runner's link for the board: the library's CPU flags, newlib's multilib for them
# (hard float), rdimon, and, added by the build, native/M55_STARTUP and -T native/M55_LD.
M55_LINK = f"-mcpu={M55_CPU} -mfpu=auto -mfloat-abi=hard -mthumb --specs=rdimon.specs"
M55_STARTUP = "m55_startup.c"  # in native/: vector table, reset, heap, fault report
M55_LD = "an547.ld"  # in native/: the AN547 memory map


@dataclass(frozen=True, slots=True)
class Variant:
    """One build of TFLM: its name, the ``make`` arguments, and how its programs run."""

    name: str
    make_args: tuple[str, ...]  # besides the toolchain root and the output folder
    runs: str = HOST  # HOST, QEMU_USER or QEMU_SYSTEM
    link: str = ""  # the runner's link flags besides TFLM's LDFLAGS ("" on the host)

    @property
    def arm32(self) -> bool:
        """Built with arm-none-eabi-gcc (run under qemu)."""
        return self.runs != HOST

    @property
    def cpu(self) -> str | None:
        """TARGET_ARCH of an ARM build; None on the host."""
        found = [a.split("=", 1)[1] for a in self.make_args if a.startswith("TARGET_ARCH=")]
        return found[0] if found else None

    @property
    def gendir(self) -> str:
        """TFLM's output folder for these arguments, under the variant's ``gen``."""
        base = f"cortex_m_generic_{self.cpu}_default" if self.arm32 else "linux_x86_64_default"
        kernels = "_cmsis_nn" if "OPTIMIZED_KERNEL_DIR=cmsis_nn" in self.make_args else ""
        return f"{base}{kernels}_gcc"

    @property
    def compiler(self) -> str:
        return "arm-none-eabi-g++" if self.arm32 else "g++"

    @property
    def kernels(self) -> str:
        """The kernels the build runs (``tflm.kernel_sets``): CMSIS-NN at the feature
        level its CPU compiles (plain C on the host, DSP on the Cortex-M4, MVE on the
        Cortex-M55), else TFLM's reference kernels."""
        if _CMSIS_NN not in self.make_args:
            return "reference"
        return {None: "cmsis_nn", ARM_CPU: "cmsis_nn+dsp", M55_CPU: "cmsis_nn+mve"}[self.cpu]


_ARM = ("TARGET=cortex_m_generic", f"TARGET_ARCH={ARM_CPU}")
_M55 = ("TARGET=cortex_m_generic", f"TARGET_ARCH={M55_CPU}")
_CMSIS_NN = "OPTIMIZED_KERNEL_DIR=cmsis_nn"
_SIZE = ("KERNEL_OPTIMIZATION_LEVEL=-Os", "THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL=-Os")
# ARENAPLAN_CFLAGS: compile flags build_tflm's runner.mk adds to the library's and the
# runner's (TFLM's Makefile has no variable for extra flags).
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("host-reference", ()),
        Variant("host-cmsis_nn", (_CMSIS_NN,)),
        Variant("arm32-reference", _ARM, QEMU_USER, ARM_LINK),
        Variant("arm32-cmsis_nn", (*_ARM, _CMSIS_NN), QEMU_USER, ARM_LINK),
        # the int32 profile's ABI: 32-bit ARM with int-sized enums
        Variant(
            "arm32-int32-reference",
            (*_ARM, "ARENAPLAN_CFLAGS=-fno-short-enums"),
            QEMU_USER,
            INT_ENUMS_LINK,
        ),
        Variant("m55-cmsis_nn", (*_M55, _CMSIS_NN), QEMU_SYSTEM, M55_LINK),
        # CMSIS-NN and TFLM's kernels at -Os (TFLM's default is -O2): what a firmware
        # built for size runs, counted by scripts/gen_kernel_counts.py; not built in CI
        Variant("arm32-cmsis_nn-os", (*_ARM, _CMSIS_NN, *_SIZE), QEMU_USER, ARM_LINK),
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
    outside any clone, so that every clone on the machine reuses one build. An
    arenaplan installed away from its clone (no bundle beside it) uses the one
    bundle's builds the cache holds, if it holds one."""
    env = os.environ.get("ARENAPLAN_TFLM_BUILD")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    builds = Path(cache) / "arenaplan" / "tflm"
    key = bundle_key()
    if key == "no-bundle":  # installed away from the clone: the one build made, if one
        made = sorted(d for d in builds.glob("*") if d.is_dir() and d.name != key)
        if len(made) == 1:
            return made[0]
    return builds / key


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
    if variant.link:
        facts.append(variant.link)
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:12]


def variant_dir(variant: str, root: Path | None = None) -> Path:
    """The variant's build folder: ``<root>/<variant>-<options key>``."""
    return (root or build_root()) / f"{variant}-{options_key(VARIANTS[variant])}"


def runner_path(variant: str, root: Path | None = None) -> Path:
    return variant_dir(variant, root) / "tflm_runner"


# runs -> (the emulator's program, its Debian package)
_EMULATOR = {
    QEMU_USER: ("qemu-arm", "qemu-user"),
    QEMU_SYSTEM: ("qemu-system-arm", "qemu-system-arm"),
}


def native_available(variant: str, root: Path | None = None) -> str | None:
    """None when ``variant`` can run here, else the reason (naming the build command)."""
    if variant not in VARIANTS:
        return f"unknown TFLM variant {variant!r} (known: {', '.join(VARIANTS)})"
    path = runner_path(variant, root)
    if not path.is_file():
        return (
            f"TFLM {variant} is not built (looked in {path.parent}): "
            f"{BUILD_COMMAND} --variants {variant}, or bash scripts/native_lane.sh for every build"
        )
    emulator = _EMULATOR.get(VARIANTS[variant].runs)
    if emulator is not None and shutil.which(emulator[0]) is None:
        return f"{emulator[0]} is absent, TFLM {variant} cannot run: apt-get install {emulator[1]}"
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
            # Short relative names: semihosting caps the command line of the ARM program
            # (newlib's rdimon-crt0: 255 characters).
            args = ["m.tflite", str(arena_size), "r.json", "out.bin"]
            if inputs:  # no input file: allocation only, no trial
                args.append("in.bin")
            run = _run(command(self.variant, self.program, args), work)
            log = run.log
            if run.status is None:
                why = f"TFLM {self.variant.name} ran over {RUN_TIMEOUT} s"
                return NativeResult(RunResult([], why, None, log[-2000:]), [], {})
            if run.halted:
                error = explain("TFLM halted (TFLITE_ABORT, which spins forever on an MCU)", log)
                return NativeResult(RunResult([], error, None, log[-2000:]), [], {})
            result_file = work / "r.json"
            if not result_file.is_file():
                code = run.status
                why = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
                error = explain(f"the TFLM process died ({why})", log)
                return NativeResult(RunResult([], error, None, log[-2000:]), [], {})
            report = json.loads(result_file.read_text())
            outputs = (work / "out.bin").read_bytes() if (work / "out.bin").is_file() else b""
        return _result(report, outputs, inputs, n_outputs, log)


# The line TFLM's TFLITE_ABORT prints on builds with TF_LITE_MCU_DEBUG_LOG (the ARM
# ones) before it spins forever (tensorflow/lite/kernels/op_macros.h, AbortImpl).
HALTED = re.compile(rb"^HALTED\r?$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class _Run:
    status: int | None  # exit status (negative: killed by that signal); None: timed out
    log: str  # stderr
    halted: bool  # TFLM printed HALTED and was stopped


def _run(argv: list[str], cwd: Path, timeout: float = RUN_TIMEOUT) -> _Run:
    """Run ``argv`` in ``cwd``, reading its stderr as it comes: stopped when TFLM says
    it halted (else an ARM build would spin until ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    log = bytearray()
    halted = timed_out = False
    with subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=die_with_parent,  # a killed arenaplan leaves no TFLM process running
    ) as proc:
        if proc.stderr is None:  # not reached: stderr=PIPE
            raise VerificationError(f"{argv[0]}: no pipe to read its stderr from")
        fd = proc.stderr.fileno()
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if not select.select([fd], [], [], left)[0]:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:  # end of stderr: the process ended
                    break
                log += chunk
                if HALTED.search(log):
                    halted = True
                    break
        except BaseException:  # Ctrl-C, SIGTERM: the run ends now, not when TFLM does
            proc.kill()
            raise
        if timed_out or halted:
            proc.kill()
        status = proc.wait()
    text = log.decode("utf-8", errors="replace")
    return _Run(None if timed_out else status, text, halted)


def command(variant: Variant, program: Path, args: list[str]) -> list[str]:
    """The command that runs ``program`` (built for ``variant``) with ``args``, in the
    working folder its files are in (semihosting opens them relative to qemu's)."""
    if variant.runs == QEMU_USER:
        return ["qemu-arm", "-cpu", QEMU_CPU, str(program), *args]
    if variant.runs == QEMU_SYSTEM:
        # Each arg= is one word of the program's command line (argv[0] first); the
        # board's UART and qemu's monitor are off, semihosting writes stderr to stderr.
        words = ",".join(f"arg={word}" for word in [program.name, *args])
        return [
            "qemu-system-arm", "-M", QEMU_MACHINE, "-nographic", "-monitor", "none",
            "-serial", "null", "-semihosting-config", f"enable=on,target=native,{words}",
            "-kernel", str(program),
        ]  # fmt: skip
    return [str(program), *args]


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
