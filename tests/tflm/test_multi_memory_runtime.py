"""The multi-memory plan run for real: ``--planner-cpp``'s split arena in TFLM's library.

For every model ``benchmarks/tiers.py`` spreads over two memories (a target's fastest
memory at half the model's lower bound: the i.MX RT1170, or each target that
``$ARENAPLAN_SPREAD_TARGETS`` names, comma-separated) and for shared models spread by
``plan --memory`` with a small fast capacity, the generated ``planner.h`` is compiled
with ``native/multi_memory_driver.cc`` against the real TFLM library of the build
root (``scripts/build_tflm.py``), with the flags the build compiled its own runner
with: activations in one array per memory, TFLM's persistent data in a third, wired
by ``arenaplan::CreateAllocator``. The driver runs the model first with TFLM's own
planner in one plain arena, then through the split arena. Checked for each case:

- the outputs are bit-identical to TFLM's own plan's (same build) and to the PyPI
  runtime's, on the same random inputs;
- TFLM put the model's inputs and outputs in the planned array at the planned offset;
- every byte written in an activation array lies in a buffer planned in that memory,
  and the array's high-water mark (rounded up to 16) is the plan's height there;
- in the persistent array, TFLM's temporaries reach exactly the planned part and its
  persistent data is the predicted tail, and TFLM refuses each part 16 bytes smaller
  (exactly for the build's own profile, see ``split_profile``).

On the host (``host-reference``) and on 32-bit ARM under qemu-arm
(``arm32-reference``); a variant that is not built is skipped, naming the build
command. The cases of a variant are built and run together, in parallel, the first
time one is asked for. ``pytest -s`` prints each case's planned and measured figures.

``examples/firmware`` (``make run``, main.cc unchanged, its operators from the
header's ``arenaplan::RegisterOps``) is built and run for every model TFLM runs in
its own build (``arm32-cmsis_nn``), its outputs the PyPI runtime's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from testkit import MODEL_PATHS, SHARED_ABSENT, STATEFUL_LSTM, TFLM_REFUSES, kernel_set, model_path

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Problem
from arenaplan.analysis.buffers import arena_items
from arenaplan.cli import main
from arenaplan.errors import AllocationError
from arenaplan.ir.model import Model
from arenaplan.placement import PlanOptions, plan_model
from arenaplan.placement.tiers import TierPlacement, place_tiers
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin
from arenaplan.tflm import tail as persistent
from arenaplan.tflm.firmware import firmware_header
from arenaplan.tflm.planner_cpp import (
    MICRO_ALLOCATOR_BYTES,
    SplitArray,
    SplitPersistent,
    planner_source,
    split_arrays,
    split_persistent,
)
from arenaplan.tflm.tail import PROFILES, BuildProfile, predict_tail
from arenaplan.tflm.verify.inputs import random_inputs
from arenaplan.tflm.verify.runner import GENEROUS_ARENA, TflmRunner, tflm_available
from arenaplan.units import parse_size

native = pytest.importorskip(
    "arenaplan.tflm.verify.native", reason="arenaplan.tflm.verify.native is absent"
)
QEMU_CPU, VARIANTS = native.QEMU_CPU, native.VARIANTS
build_root, native_available = native.build_root, native.native_available
variant_dir = native.variant_dir

DRIVER = Path(__file__).parent / "native" / "multi_memory_driver.cc"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "firmware"
# examples/firmware's model and placement (its Makefile's defaults)
EXAMPLE_CASE = ("tflite-micro__keyword_scrambled", "imxrt1170", "tcm=640")
EXAMPLE_VARIANT = "arm32-cmsis_nn"  # the build its Makefile uses by default
TRIALS = 2  # random inputs per case
RUN_TIMEOUT = 900  # seconds for a driver's run (qemu runs the largest model in about 10)
PROBE_TIMEOUT = 60  # seconds for an allocation only (about 1; a halted TFLM never ends)
SEED = 7
# The targets of the benchmark rows: each model once, on the i.MX RT1170 (whose arm32
# profile is the ARM build's), unless $ARENAPLAN_SPREAD_TARGETS names others, e.g.
# generic,esp32s3,imxrt1170 (benchmarks/tiers.py's: 3 times the cases and the time).
BENCH_TARGETS = tuple(os.environ.get("ARENAPLAN_SPREAD_TARGETS", "imxrt1170").split(","))
# (model, target, --memory): a small fast memory given on the command line.
MEMORY_CASES = (
    ("tflite-micro__keyword_scrambled", "imxrt1170", "tcm=640"),
    ("mlcommons-tiny__vww_96_int8", "esp32s3", "sram=16KiB"),
    ("tflite-micro__micro_speech_quantized", "generic", "sram=1KiB"),
)
# The builds run: every placement and planner.h is made for the kernels of the build
# it runs in (``Variant.kernels``: their scratch requests are in its table);
# arm32-cmsis_nn runs the i.MX RT1170's and the generic target's own kernels.
VARIANTS_RUN = ("host-reference", "arm32-reference", "arm32-cmsis_nn")


def split_profile(variant: str) -> tuple[BuildProfile, bool]:
    """The build profile of ``variant`` as the split arena sees it (no resource
    variables: the driver makes none), and whether its sizes are that build's own.
    ARM: arm32, the targets' profile. Host: the native host profile where the
    analysis has one (64-bit, no compression), else the PyPI wheel's, whose
    compression-build structs are larger (then the prediction is an upper bound)."""
    if VARIANTS[variant].arm32:
        return PROFILES["arm32"], True
    host = getattr(persistent, "NATIVE_PROFILES", {}).get("host")
    if host is not None:
        return dataclasses.replace(host, resource_variables=False), True
    return PROFILES["pypi"], False


@dataclass(frozen=True, slots=True)
class Case:
    """One placement to run: a benchmark row (``memory`` empty) or a --memory case."""

    stem: str
    target: str
    memory: str = ""

    @property
    def id(self) -> str:
        return f"{self.stem}-{self.target}" + (f"-{self.memory}" if self.memory else "")


def _cases() -> list:
    stems = [p.stem for p in MODEL_PATHS if p.stem not in TFLM_REFUSES]
    cases = [Case(s, t) for s in stems for t in BENCH_TARGETS]
    cases += [Case(s, t, m) for s, t, m in MEMORY_CASES]
    if not stems:
        return [
            pytest.param(
                None,
                marks=pytest.mark.skip(
                    reason="../shared/models is absent (CI has it beside the clone)"
                ),
            )
        ]
    return [pytest.param(c, id=c.id) for c in cases]


# ---- the library's compiler, from the build's own log --------------------------------


@dataclass(frozen=True, slots=True)
class Toolchain:
    """How the build compiled and linked its runner, to do the same with the driver."""

    variant: str
    tree: Path  # the TFLM source tree: the compile's working folder (relative -I)
    compile: tuple[str, ...]  # compiler and flags, before ``-c SOURCE -o OBJECT``
    link: tuple[str, ...]  # compiler and link flags, before ``-o PROGRAM``
    libraries: tuple[str, ...]  # after the object: the library, LDFLAGS, libraries
    run: tuple[str, ...]  # before the program: qemu-arm on 32-bit ARM


@cache
def toolchain(variant: str) -> Toolchain | str:
    """The variant's toolchain, or why there is none (a skip reason naming the build)."""
    why = native_available(variant)
    if why is not None:
        return why
    root, folder = build_root(), variant_dir(variant)
    log, facts = folder / "build.log", folder / "build.json"
    if not log.is_file() or not facts.is_file():
        return f"TFLM {variant} has no build.log and build.json in {folder}"
    runner = json.loads(facts.read_text())["runner"]
    compile_line = link_line = None
    for line in log.read_text(errors="replace").splitlines():
        words = shlex.split(line) if runner in line else []
        if "-o" not in words:
            continue
        if "-c" in words and words[-1] == f"{runner}.o":
            compile_line = words
        elif words[words.index("-o") + 1 :][:1] == [runner]:
            link_line = words
    if compile_line is None or link_line is None:
        return f"TFLM {variant}'s build.log does not show how its runner was compiled and linked"
    at = link_line.index("-o")
    return Toolchain(
        variant,
        root / "tflite-micro",
        tuple(compile_line[: compile_line.index("-c")]),
        tuple(link_line[:at]),
        tuple(link_line[at + 3 :]),  # after -o PROGRAM OBJECT
        ("qemu-arm", "-cpu", QEMU_CPU) if VARIANTS[variant].arm32 else (),
    )


PCH_HEADERS = (
    "new",
    "tensorflow/lite/micro/arena_allocator/single_arena_buffer_allocator.h",
    "tensorflow/lite/micro/micro_allocator.h",
    "tensorflow/lite/micro/micro_interpreter.h",
    "tensorflow/lite/micro/micro_log.h",
    "tensorflow/lite/micro/micro_mutable_op_resolver.h",
)


def _precompiled_header(tools: Toolchain, folder: Path) -> tuple[str, ...]:
    """TFLM's headers precompiled once with the library's flags (each driver then
    compiles in a second instead of five): the flags that use it, or none if it
    could not be made."""
    folder.mkdir(parents=True, exist_ok=True)
    header = folder / "tflm_headers.h"
    header.write_text("".join(f"#include <{h}>\n" for h in PCH_HEADERS))
    made = subprocess.run(
        [*tools.compile, "-x", "c++-header", str(header), "-o", f"{header}.gch"],
        cwd=tools.tree,
        capture_output=True,
        check=False,
    )
    return ("-I", str(folder), "-include", header.name) if made.returncode == 0 else ()


# ---- one case: plan, generate, build, run ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Prepared:
    """A case's placement and generated planner.h, before any build."""

    case: Case
    model: Model
    placement: TierPlacement
    arrays: tuple[SplitArray, ...]  # activation arrays, fastest first, then the persistent one
    persistent: SplitPersistent  # the persistent array's two parts
    source: str  # planner.h


@cache
def _model(stem: str) -> Model:
    return read_model(model_path(stem))


def _fast_capacity(model: Model, kernels: str) -> int:
    """benchmarks/tiers.py's fastest memory: half the lower bound, or the kernel scratch
    buffers' peak (bytes, 16-aligned) where that is more (they stay in the fastest)."""
    scratch = arena_items(model, kernels=kernel_set(kernels)).scratch_buffers
    peak = live_bytes_bound(Problem(scratch)) if scratch else 0
    return max(
        plan_model(model, PlanOptions(kernels=kernel_set(kernels))).lower_bound // 2, _up16(peak)
    )


@cache
def _placement(case: Case, kernels: str) -> TierPlacement | str:
    """The case's placement for ``kernels``, or why there is none (a failure)."""
    model = _model(case.stem)
    target = load_builtin(case.target)
    if case.memory:
        name, _, size = case.memory.partition("=")
        caps = {name: parse_size(size, "--memory")}
    else:
        caps = {target.fastest().name: _fast_capacity(model, kernels)}
    try:
        placement = place_tiers(model, target, caps, kernels=kernel_set(kernels))
    except AllocationError as exc:  # a planner error fails the case, never skips it
        return f"no placement with {caps}: {exc}"
    spread = [m for m, h in placement.heights.items() if h > 0]
    if len(spread) < 2:
        return f"not spread over two memories: {placement.heights}"
    return placement


class NotBuilt(str):
    """Why a variant's cases cannot run here (its build or tools are absent): a skip.
    Any other reason a case has no result is a failure."""


def prepare(case: Case, variant: str) -> Prepared | str:
    """The case's placement and its planner.h sized for ``variant``, or why not."""
    kernels = VARIANTS[variant].kernels
    placement = _placement(case, kernels)
    if isinstance(placement, str):
        return placement
    model, target = _model(case.stem), load_builtin(case.target)
    profile, _ = split_profile(variant)
    arrays = split_arrays(model, placement, target, profile)
    name = model_path(case.stem).name
    source = planner_source(model, placement, target, name, profile)
    persistent = split_persistent(model, profile, kernels)
    return Prepared(case, model, placement, arrays, persistent, source)


def _arrays_h(arrays: tuple[SplitArray, ...]) -> str:
    listed = " ".join(f"X({a.name})" for a in arrays)
    return (
        f"#define ARENAPLAN_FAST {arrays[0].name}\n"
        f"#define ARENAPLAN_PERSISTENT {arrays[-1].name}\n"
        f"#define ARENAPLAN_ARRAYS(X) {listed}\n"
    )


@dataclass(frozen=True, slots=True)
class Measured:
    """What the driver printed, parsed (bytes and byte offsets)."""

    outputs: dict[tuple[int, int], bytes]  # (trial, output) -> its bytes
    where: dict[tuple[str, int], tuple[str, int]]  # (input|output, index) -> (array, offset)
    written: dict[str, list[tuple[int, int]]]  # array -> half-open written ranges
    identical: bool  # the split run's outputs are TFLM's own plan's
    tail: int  # TFLM's persistent data after AllocateTensors
    # (temporary, tail) -> whether AllocateTensors succeeds with those parts
    allocates: dict[tuple[int, int], bool]


def _parse(text: str, allocates: dict[tuple[int, int], bool]) -> Measured:
    outputs, where, written = {}, {}, {}
    identical, tail = False, -1
    for line in text.splitlines():
        word = line.split()
        if not word:
            continue
        if word[0] == "output":
            outputs[int(word[1]), int(word[2])] = bytes.fromhex(word[3] if len(word) > 3 else "")
        elif word[0] == "tensor":
            where[word[1], int(word[2])] = (word[3], int(word[4]))
        elif word[0] == "array":
            written[word[1]] = [tuple(map(int, r.split("-"))) for r in word[3:]]
        elif word[0] == "identical":
            identical = word[1] == "1"
        elif word[0] == "tail":
            tail = int(word[1])
    return Measured(outputs, where, written, identical, tail, allocates)


class _Driver:
    """The built driver of one case, run in its folder."""

    def __init__(self, tools: Toolchain, work: Path) -> None:
        self.tools, self.work = tools, work

    def run(self, *args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
        """The driver's output; on timeout it is killed and its output is empty."""
        command = [*self.tools.run, "./driver", "m.tflite", "in.bin", str(TRIALS), *args]
        try:
            return subprocess.run(
                command, cwd=self.work, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(command, -9, "", f"timed out after {timeout} s")

    def allocates(self, temporary: int, tail: int) -> bool:
        """AllocateTensors with those parts. A crash or a halt (TFLM's kernels may
        crash on a failed allocation; on cortex_m_generic a failed check halts in a
        loop) counts as no."""
        return "allocates 1" in self.run(str(temporary), str(tail), timeout=PROBE_TIMEOUT).stdout

    def smallest(self, temporary: int, tail: int, which: int) -> int:
        """The least bytes of part ``which`` (0: temporaries, 1: tail) with which TFLM
        allocates, the other part as given (generous), by bisection over multiples
        of 16 (up to 1 MiB)."""
        sizes = [temporary, tail]
        lo, hi = 0, 1 << 16  # units of 16 bytes

        def ok(n: int) -> bool:
            sizes[which] = 16 * n
            return self.allocates(*sizes)

        if not ok(hi):
            return -1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        return 16 * hi


def build_and_run(
    prepared: Prepared, tools: Toolchain, work: Path, include: tuple[str, ...]
) -> Measured | str:
    """Compile the driver with planner.h, link it with TFLM, run it and probe the
    persistent array 16 bytes below each part: the parsed output, or the failure
    (compiler or driver output, with what the persistent array needed)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "planner.h").write_text(prepared.source)
    (work / "arrays.h").write_text(_arrays_h(prepared.arrays))
    (work / "m.tflite").write_bytes(model_path(prepared.case.stem).read_bytes())
    inputs = random_inputs(prepared.model, TRIALS, SEED)
    blob = b"".join(np.ascontiguousarray(a).tobytes() for trial in inputs for a in trial)
    (work / "in.bin").write_bytes(blob)
    obj, program = work / "driver.o", work / "driver"
    steps = [
        [*tools.compile, *include, "-I", str(work), "-c", str(DRIVER), "-o", str(obj)],
        [*tools.link, "-o", str(program), str(obj), *tools.libraries],
    ]
    for step in steps:
        done = subprocess.run(step, cwd=tools.tree, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"{step[0]} failed:\n{done.stdout}{done.stderr}"[-3000:]
    driver = _Driver(tools, work)
    run = driver.run()
    (work / "stdout.txt").write_text(run.stdout)
    (work / "stderr.txt").write_text(run.stderr)
    temporary, tail = prepared.persistent.temporary, prepared.persistent.tail
    if "identical" not in run.stdout:
        need = (driver.smallest(0, 1 << 20, 0), driver.smallest(1 << 20, 0, 1))
        return (
            f"the driver failed (status {run.returncode}) in {work}; TFLM allocates with "
            f"temporaries {need[0]} B (planned {temporary}) and persistent data {need[1]} B "
            f"(planned {tail}):\n{run.stdout[-1500:]}{run.stderr[-1500:]}"
        )
    probes = [(temporary - 16, tail), (temporary, tail - 16)]
    return _parse(run.stdout, {p: driver.allocates(*p) for p in probes})


# ---- what the plan says -----------------------------------------------------------------


def _planned_buffers(prepared: Prepared) -> dict[str, list[tuple[int, int]]]:
    """Array name -> half-open byte ranges of the buffers planned in it."""
    p = prepared.placement
    items = arena_items(prepared.model, p.pointer_size, p.kernels)
    by_memory = {a.memory: a.name for a in prepared.arrays if a.holds == "activations"}
    ranges: dict[str, list[tuple[int, int]]] = {name: [] for name in by_memory.values()}
    p = prepared.placement
    for key, b in zip(items.tensors, items.tensor_buffers, strict=True):
        ranges[by_memory[p.memory_of[key]]].append((p.offsets[key], p.offsets[key] + b.size))
    fast = prepared.arrays[0].name
    for k, b in enumerate(items.scratch_buffers):
        ranges[fast].append((p.scratch_offsets[k], p.scratch_offsets[k] + b.size))
    return ranges


def _outside(written: list[tuple[int, int]], planned: list[tuple[int, int]]) -> list[int]:
    """Bytes written outside every planned range."""
    mask = np.zeros(max([e for _, e in written] + [0]), dtype=bool)
    for s, e in written:
        mask[s:e] = True
    for s, e in planned:
        mask[s:e] = False
    return np.flatnonzero(mask).tolist()


def _predicted_tail(model: Model, variant: str) -> int:
    """TFLM's persistent data in the split arena: its tail with the MicroAllocator as
    the only allocator object in the persistent array."""
    profile, _ = split_profile(variant)
    objects = (MICRO_ALLOCATOR_BYTES[profile.pointer],)
    alone = dataclasses.replace(profile, allocator_objects=objects)
    return predict_tail(model, alone, kernels=VARIANTS[variant].kernels)


_PYPI: list[TflmRunner] = []  # one PyPI runtime process for the session (see ``pypi``)


@pytest.fixture(scope="session", autouse=True)
def pypi():
    """Closes the PyPI runtime's process at the end of the session."""
    yield
    for runner in _PYPI:
        runner.close()


def _pypi_run(model: bytes, inputs: list[list[np.ndarray]], n_outputs: int):
    if not _PYPI:
        _PYPI.append(TflmRunner())
    return _PYPI[0].run(model, GENEROUS_ARENA, inputs, n_outputs)


@cache
def _pypi_outputs(stem: str) -> list[list[np.ndarray]] | str:
    if not tflm_available():
        return "the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    model = _model(stem)
    inputs = random_inputs(model, TRIALS, SEED)
    result = _pypi_run(model_path(stem).read_bytes(), inputs, len(model.subgraphs[0].outputs))
    return result.outputs if result.ok else f"the PyPI runtime failed: {result.error}"


def _up16(x: int) -> int:
    return -(-x // 16) * 16


def _high_water(measured: Measured, array: str, below: int | None = None) -> int:
    """The highest byte written in ``array`` (below offset ``below``), rounded up to 16
    (TFLM's sizes)."""
    ranges = measured.written.get(array, [])
    if below is not None:
        ranges = [(s, min(e, below)) for s, e in ranges if s < below]
    return _up16(max((e for _, e in ranges), default=0))


def _lowest(measured: Measured, array: str, above: int) -> int:
    """The lowest byte written in ``array`` at or above offset ``above``."""
    starts = [max(s, above) for s, e in measured.written.get(array, []) if e > above]
    return min(starts, default=-1)


def check(prepared: Prepared, measured: Measured, variant: str) -> list[str]:
    """Every difference between the plan and the run, one line each (empty: none)."""
    problems = []
    if not measured.identical:
        problems.append("outputs differ from TFLM's own plan in the same build")
    pypi = _pypi_outputs(prepared.case.stem)
    if not isinstance(pypi, str):
        stateful = prepared.case.stem in STATEFUL_LSTM  # kernels agree on a first invoke
        if stateful and VARIANTS[variant].kernels != "reference":
            pypi = pypi[:1]
        for t, trial in enumerate(pypi):
            for k, array in enumerate(trial):
                if measured.outputs.get((t, k)) != np.ascontiguousarray(array).tobytes():
                    problems.append(f"trial {t} output {k} differs from the PyPI runtime's")
    p, sg = prepared.placement, prepared.model.subgraphs[0]
    by_memory = {a.memory: a.name for a in prepared.arrays if a.holds == "activations"}
    for kind, indices in (("input", sg.inputs), ("output", sg.outputs)):
        for i, t in enumerate(indices):
            want = (by_memory[p.memory_of[(0, t)]], p.offsets[(0, t)])
            if measured.where.get((kind, i)) != want:
                problems.append(f"{kind} {i} at {measured.where.get((kind, i))}, planned {want}")
    planned = _planned_buffers(prepared)
    for a in prepared.arrays[:-1]:
        outside = _outside(measured.written.get(a.name, []), planned[a.name])
        if outside:
            problems.append(f"{a.name}: {len(outside)} B written outside the plan, at {outside[0]}")
        if _high_water(measured, a.name) != a.bytes:
            high = _high_water(measured, a.name)
            problems.append(f"{a.name}: high-water mark {high} B, planned {a.bytes} B")
    problems += _check_persistent(prepared, measured, variant)
    return problems


def _check_persistent(prepared: Prepared, measured: Measured, variant: str) -> list[str]:
    """TFLM's temporaries reach exactly the planned part, its persistent data is the
    predicted tail, and TFLM refuses each part 16 bytes smaller."""
    problems = []
    name, parts = prepared.arrays[-1].name, prepared.persistent
    _, exact = split_profile(variant)
    high = _high_water(measured, name, below=parts.temporary)
    if (high != parts.temporary) if exact else high > parts.temporary:
        problems.append(f"temporaries' high-water mark {high} B, planned {parts.temporary} B")
    tail = _predicted_tail(prepared.model, variant)
    if (measured.tail != tail) if exact else measured.tail > tail:
        problems.append(f"persistent data {measured.tail} B, predicted {tail} B")
    lowest = _lowest(measured, name, parts.temporary)
    if lowest >= 0 and parts.bytes - lowest > measured.tail:
        problems.append(f"bytes written at {lowest}, below TFLM's persistent data")
    for (temporary, tail_bytes), allocates in measured.allocates.items():
        if allocates and exact:
            problems.append(f"TFLM also allocates with parts of {temporary} + {tail_bytes} B")
    return problems


def _report(prepared: Prepared, measured: Measured, variant: str) -> str:
    """One line: planned / measured bytes per array."""
    cells = [f"{a.memory} {a.bytes}/{_high_water(measured, a.name)}" for a in prepared.arrays[:-1]]
    name, parts = prepared.arrays[-1].name, prepared.persistent
    high = _high_water(measured, name, below=parts.temporary)
    tail = _predicted_tail(prepared.model, variant)
    cells.append(
        f"persistent in {prepared.arrays[-1].memory}: temporaries {parts.temporary}/{high}, "
        f"tail {tail}/{measured.tail}"
    )
    return f"{variant} {prepared.case.id}: " + ", ".join(cells) + " (planned/measured B)"


# ---- the tests ------------------------------------------------------------------------------

TEST = "test_split_arena_runs_the_plan_in_tflm"


class Runs:
    """Every selected case of a variant, built and run together on first use (the
    compiles and qemu runs in parallel, one per CPU)."""

    def __init__(self, session: pytest.Session, tmp: Path) -> None:
        self.session, self.tmp = session, tmp
        self.done: dict[str, dict[Case, Prepared | Measured | str]] = {}

    def get(self, case: Case, variant: str) -> tuple[Prepared | str, Measured | str]:
        if variant not in self.done:
            self.done[variant] = self._run_all(variant)
        return self.done[variant][case]

    def _selected(self, variant: str) -> list[Case]:
        items = [i for i in self.session.items if getattr(i, "originalname", "") == TEST]
        return [
            i.callspec.params["case"]
            for i in items
            if i.callspec.params["variant"] == variant and i.callspec.params["case"] is not None
        ]

    def _run_all(self, variant: str) -> dict:
        tools = toolchain(variant)
        cases = self._selected(variant)
        if isinstance(tools, str):
            return {c: (NotBuilt(tools), NotBuilt(tools)) for c in cases}
        prepared = {c: prepare(c, variant) for c in cases}
        work = self.tmp / variant
        include = _precompiled_header(tools, work / "pch")
        todo = [(c, p) for c, p in prepared.items() if not isinstance(p, str)]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            measured = pool.map(
                lambda cp: build_and_run(cp[1], tools, work / cp[0].id, include), todo
            )
        results = {c: (p, p) for c, p in prepared.items() if isinstance(p, str)}
        results |= {c: (p, m) for (c, p), m in zip(todo, measured, strict=True)}
        return results


@pytest.fixture(scope="session")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(request.session, tmp_path_factory.mktemp("multi_memory"))


@pytest.mark.parametrize("case", _cases())
@pytest.mark.parametrize("variant", list(VARIANTS_RUN))
def test_split_arena_runs_the_plan_in_tflm(case: Case, variant: str, runs: Runs) -> None:
    prepared, measured = runs.get(case, variant)
    if isinstance(prepared, NotBuilt):
        pytest.skip(prepared)
    assert not isinstance(prepared, str), prepared
    assert not isinstance(measured, str), measured
    print(_report(prepared, measured, variant))
    problems = check(prepared, measured, variant)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stem,target,memory", MEMORY_CASES)
def test_command_line_writes_the_planner_that_runs(
    stem: str, target: str, memory: str, tmp_path: Path
) -> None:
    """``plan --target --memory --planner-cpp`` writes the planner these tests build,
    sized for the target's profile (arm32, as the ARM variants build it) and kernels."""
    out = tmp_path / "planner.h"
    argv = ["plan", str(model_path(stem)), "-q", "--target", target, "--memory", memory]
    assert main([*argv, "--planner-cpp", str(out)]) == 0
    model, t = _model(stem), load_builtin(target)
    placement = _placement(Case(stem, target, memory), t.kernels)
    assert not isinstance(placement, str), placement
    expected = planner_source(model, placement, t, model_path(stem).name)
    assert out.read_text() == expected
    assert "#ifdef ARENAPLAN_SPLIT_ARENA" in expected
    assert "arenaplan::CreateAllocator" in expected or "CreateAllocator()" in expected


def _example_cases() -> list:
    """(variant, model): every model TFLM runs in the example's own build (its
    Makefile's default variant), and its default model in the other builds."""
    stems = [p.stem for p in MODEL_PATHS if p.stem not in TFLM_REFUSES]
    if not stems:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=SHARED_ABSENT))]
    cases = [(EXAMPLE_VARIANT, s) for s in stems]
    cases += [(v, EXAMPLE_CASE[0]) for v in VARIANTS_RUN if v != EXAMPLE_VARIANT]
    return [pytest.param(v, s, id=f"{v}-{s}") for v, s in cases]


def _example_memory(stem: str, variant: str) -> str:
    """The example's --memory for ``stem``: the Makefile's default for its default
    model, else the target's fastest memory at benchmarks/tiers.py's capacity (half
    the lower bound), which spreads every model over two memories."""
    if stem == EXAMPLE_CASE[0]:
        return EXAMPLE_CASE[2]
    fast = load_builtin(EXAMPLE_CASE[1]).fastest().name
    return f"{fast}={_fast_capacity(_model(stem), VARIANTS[variant].kernels)}"


def _example_inputs(model: Model) -> list[np.ndarray]:
    """main.cc's inputs: input k, byte i is 7 * i + k; a float32 input's element i is
    (7 * i + k) % 256 / 128 - 1."""
    inputs = []
    for k, sample in enumerate(random_inputs(model, 1, 0)[0]):
        if sample.dtype == np.float32:
            ramp = (np.arange(sample.size) * 7 + k) % 256
            inputs.append((ramp.astype(np.float32) / 128 - 1).reshape(sample.shape))
        else:
            ramp = ((np.arange(sample.nbytes) * 7 + k) % 256).astype(np.uint8)
            inputs.append(ramp.view(sample.dtype).reshape(sample.shape))
    return inputs


@pytest.mark.parametrize("variant,stem", _example_cases())
def test_example_firmware_runs_the_model(variant: str, stem: str, tmp_path: Path) -> None:
    """examples/firmware: ``make run`` plans the model (``plan --planner-cpp`` with the
    library's kernels), builds main.cc unchanged with TFLM's library (its operators
    from the header's arenaplan::RegisterOps) and runs it; each output it prints is
    the PyPI runtime's on the same inputs. On ARM with the Makefile's own flags; on
    the host with the build's flags and ``--profile pypi`` (64-bit: the persistent
    array sized for the wheel's larger structs, enough for a host build)."""
    tools = toolchain(variant)
    if isinstance(tools, str):
        pytest.skip(tools)
    arenaplan = Path(sys.executable).parent / "arenaplan"
    if not arenaplan.is_file() or shutil.which("make") is None or shutil.which("xxd") is None:
        pytest.skip(
            "make, xxd and the arenaplan command are needed to build the example "
            "(apt-get install make xxd; pip install -e .)"
        )
    out = tmp_path / "build"
    library = json.loads((variant_dir(variant) / "build.json").read_text())["library"]
    args = [f"OUT={out}", f"MODEL={model_path(stem)}", f"TFLM={tools.tree}", f"LIB={library}"]
    args += [f"ARENAPLAN={arenaplan}", f"TARGET={EXAMPLE_CASE[1]}"]
    args += [f"MEMORY={_example_memory(stem, variant)}"]
    args.append(f"KERNELS={VARIANTS[variant].kernels}")  # the library's kernels
    if not VARIANTS[variant].arm32:
        flags = " ".join(w for w in tools.compile[1:] if not w.startswith("-I"))
        args += [f"CXX={tools.compile[0]}", f"CXXFLAGS={flags}", "LDFLAGS=", "RUN="]
        args.append("PROFILE=pypi")
    run = subprocess.run(
        ["make", "-C", str(EXAMPLE), *args, "run"],
        capture_output=True,
        text=True,
        check=False,
        timeout=RUN_TIMEOUT,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    printed = {}
    for line in run.stdout.splitlines():
        word = line.split()
        if word[:1] == ["output"]:
            printed[int(word[1])] = bytes.fromhex("".join(word[2:]))
    model = _model(stem)
    assert sorted(printed) == list(range(len(model.subgraphs[0].outputs))), run.stdout[-2000:]
    if not tflm_available():
        pytest.skip(
            "the TFLM runtime is not installed (pip install 'arenaplan[tflm]'): "
            "nothing to compare the outputs with"
        )
    result = _pypi_run(model_path(stem).read_bytes(), [_example_inputs(model)], len(printed))
    assert result.ok, result.error
    for k, array in enumerate(result.outputs[0]):
        assert printed[k] == np.ascontiguousarray(array).tobytes(), f"output {k} differs"
    print(f"{variant} example {stem}: {len(printed)} outputs as the PyPI runtime's")


@pytest.mark.skipif(
    shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)"
)
def test_arena_header_sends_a_spread_plan_with_persistent_data_apart_to_the_split_arena(
    tmp_path: Path,
) -> None:
    """The arena header of a spread plan whose persistent data goes to another memory
    has no allocator of its own to offer: asked for one, it stops the build naming
    the split arena of --planner-cpp."""
    stem, target, memory = EXAMPLE_CASE
    placement = _placement(Case(stem, target, memory), "reference")
    assert not isinstance(placement, str), placement
    model = _model(stem)
    head = placement.heights[load_builtin(target).fastest().name]
    header = firmware_header(model, plan_model(model), stem, "arm32", ".dtcm", ".ocram", head)
    (tmp_path / "arena.h").write_text(header)
    use = tmp_path / "use.cc"
    use.write_text('#define ARENAPLAN_DEFINE_ALLOCATOR\n#include "arena.h"\n')
    done = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", "-I", str(tmp_path), str(use)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "arenaplan::CreateAllocator() of --planner-cpp" in done.stderr
    assert "ARENAPLAN_SPLIT_ARENA" in done.stderr
