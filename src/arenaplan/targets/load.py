"""Load and check target TOML files; every problem is one ``TargetError`` line.

Format (all keys checked; sizes are bytes or strings like "512KiB", "2MB", see
``arenaplan.units``)::

    name = "generic"
    description = "..."
    clock_hz = 120e6
    time_model = "stall"     # optional; "roofline" for an NPU whose DMA overlaps compute
    tflm_profile = "arm32"   # optional: TFLM build profile of the tail (pypi, arm32, int32)
    kernels = "cmsis_nn+dsp" # optional: the TFLM kernels the firmware runs (default
                             # "reference"; "cmsis_nn", "cmsis_nn+dsp", "cmsis_nn+mve")
    traffic = "xcore"        # optional: whose kernels' memory accesses the time model
                             # counts: "tflm" (default, TFLM's reference kernels) or
                             # "xcore" (lib_nn on the xcore.ai VPU)
    core = "cortex-m4"       # optional: compute cycles from CMSIS-NN's measured
                             # instruction counts and this core's timings
                             # (targets.cores: cortex-m4, -m7, -m33, -m55, -m85);
                             # needs kernels "cmsis_nn+dsp" or "cmsis_nn+mve"
    instructions_scale = 1.0 # optional, with core: the firmware build's instructions
                             # per instruction of the counted build
    compiled_for = "speed"   # optional, with core: kernels built for "speed" (TFLM's
                             # -O2) or "size" (-Os); picks the counted build
    sources = ["..."]        # optional: where the target's figures come from
    [compute]            # MACs (or elements) per cycle, per opcode or operator kind
    conv = 0.25
    ADD = 0.5                # an opcode's rate is used before its kind's
    default = 0.2
    [[memory]]           # fastest first
    name = "sram"
    capacity = "640KiB"
    read_bandwidth = 480e6   # bytes/s
    write_bandwidth = 480e6
    latency = 1              # cycles per access (a fraction is fine)
    holds = ["activations", "persistent"]
    section = ".bss"         # optional
    cache_bytes = "32KiB"    # optional: a data cache in front of it (default none)
    line_bytes = 32          # optional: its line (default 32)
    cache_writes = "back"    # optional: stores fill lines like loads ("back", default) or
                             # pass the cache one by one ("through")
    write_latency = 20       # optional, with "through": cycles per store
    read = "in-place"        # optional, for weights: "in-place" (memory-mapped) or "copy"
                             # (firmware copies them into RAM before use)
    copy = "blocking"        # optional: copies made by the core ("blocking") or a "dma"
    copy_rate = 49e6         # optional: bytes/s of a copy (default: read_bandwidth)
    copy_latency = 0         # optional: cycles to start one copy

Every number is finite and within its field's range (the constants below): clock
1 kHz..100 GHz; rates 1e-6..1e6 work per cycle; latencies 0..1e6 cycles; bandwidths
and copy rates 1..1e15 B/s (or 0 where 0 means none); sizes at most 4 GiB.
"""

from __future__ import annotations

import math
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from arenaplan.errors import TargetError
from arenaplan.inputs import read_text_input
from arenaplan.runtime.registry import (
    default_kernels,
    default_profile,
    kernel_names,
    kernels_named,
    profile_named,
    profile_names,
    runtime_of,
)
from arenaplan.runtime.spec import KernelSet, Profile
from arenaplan.targets.cores import core_named
from arenaplan.targets.model import (
    CACHE_WRITES,
    COMPILED_FOR,
    COPIES,
    HOLDS,
    READS,
    Memory,
    Target,
)
from arenaplan.units import parse_size

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # becomes part of C identifiers
_SECTION = re.compile(r"[A-Za-z0-9_.$]*")  # written into C attributes
_TOP_KEYS = {
    "name",
    "description",
    "clock_hz",
    "tflm_profile",
    "kernels",
    "traffic",
    "time_model",
    "compute",
    "memory",
    "core",
    "instructions_scale",
    "compiled_for",
    "sources",
}
TIME_MODELS = ("stall", "roofline")
TRAFFIC = ("tflm", "xcore")  # cost.timing.operator_accesses
_MEMORY_KEYS = {
    "name",
    "capacity",
    "read_bandwidth",
    "write_bandwidth",
    "latency",
    "holds",
    "section",
    "note",
    "cache_bytes",
    "line_bytes",
    "cache_writes",
    "write_latency",
    "read",
    "copy",
    "copy_rate",
    "copy_latency",
}


# The largest value any number of a target file may take (bandwidths in bytes per
# second, latencies in cycles, rates in work per cycle): far above any chip, far
# below what turns a figure into inf; the clock has its own.
NUMBER_LIMIT = 1e15
CLOCK_LIMIT = 1e11  # Hz
CLOCK_MIN = 1e3  # Hz: no core runs slower; a tinier clock turns every time into inf
# Physical bounds of a compute rate (work per cycle: from one unit per million cycles
# to a million units per cycle, beyond the largest NPU) and of a latency (cycles per
# access or copy: a millisecond at 1 GHz); calibration keeps its fits within them.
RATE_MIN = 1e-6
RATE_MAX = 1e6
LATENCY_LIMIT = 1e6
# The slowest memory (bytes/s): a bandwidth or copy rate below 1 B/s is no memory,
# and one as tiny as 1e-300 turns estimated times into inf.
BANDWIDTH_MIN = 1.0
# The largest memory, cache or line (bytes): the 4 GiB a 32-bit core addresses.
CAPACITY_LIMIT = 1 << 32


def _number(
    table: dict,
    key: str,
    where: str,
    zero_ok: bool = False,
    limit: float = NUMBER_LIMIT,
    least: float = 0.0,
) -> float:
    """A finite number that must be positive (or at least zero, with ``zero_ok``),
    at most ``limit`` and, unless zero, at least ``least``."""
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TargetError(f"{where}: {key} must be a number, got {value!r}")
    if not math.isfinite(value) or value > limit:
        raise TargetError(f"{where}: {key} must be finite and at most {limit:g}, got {value!r}")
    if value < 0 or (value == 0 and not zero_ok):
        raise TargetError(f"{where}: {key} must be positive, got {value!r}")
    if 0 < value < least:
        raise TargetError(f"{where}: {key} must be at least {least:g}, got {value!r}")
    return float(value)


def _rate(compute: dict, key: object) -> float:
    """A compute rate of ``[compute]``: a named opcode or kind, work per cycle."""
    if not isinstance(key, str) or not key:
        raise TargetError(f"[compute]: {key!r} is not an opcode or operator kind")
    return _number(compute, key, "[compute]", limit=RATE_MAX, least=RATE_MIN)


def _memory(table: Any, k: int) -> Memory:
    where = f"memory {k + 1}"
    if not isinstance(table, dict):
        raise TargetError(f"{where}: must be a table")
    unknown = set(table) - _MEMORY_KEYS
    if unknown:
        raise TargetError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    name = table.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise TargetError(
            f"{where}: needs a name of letters, digits and _ (it names C arrays), got {name!r}"
        )
    where = f"memory {name!r}"
    section = table.get("section", "")
    if not isinstance(section, str) or not _SECTION.fullmatch(section):
        raise TargetError(
            f"{where}: section {section!r} is not a linker section name "
            "(letters, digits, '.', '_', '$')"
        )
    holds = table.get("holds", [])
    if not isinstance(holds, list) or not holds or any(h not in HOLDS for h in holds):
        raise TargetError(f"{where}: holds must list some of {', '.join(HOLDS)}, got {holds!r}")
    cache = _size(table, "cache_bytes", where, 0)
    line = _size(table, "line_bytes", where, 32, minimum=1)
    if cache and line > cache:
        raise TargetError(f"{where}: line_bytes {line:,} is larger than cache_bytes {cache:,}")
    return Memory(
        name=name,
        capacity=_size(table, "capacity", where, None, minimum=1),
        read_bandwidth=_number(table, "read_bandwidth", where, least=BANDWIDTH_MIN),
        write_bandwidth=_number(
            table, "write_bandwidth", where, zero_ok=holds == ["weights"], least=BANDWIDTH_MIN
        ),  # read-only memory
        latency=_number(table, "latency", where, zero_ok=True, limit=LATENCY_LIMIT),
        holds=tuple(holds),
        section=section,
        note=str(table.get("note", "")),
        cache_bytes=cache,
        line_bytes=line,
        cache_writes=_choice(table, "cache_writes", CACHE_WRITES, where),
        write_latency=_optional(table, "write_latency", where, LATENCY_LIMIT),
        read=_choice(table, "read", READS, where),
        copy=_choice(table, "copy", COPIES, where),
        copy_rate=_optional(table, "copy_rate", where, least=BANDWIDTH_MIN),
        copy_latency=_optional(table, "copy_latency", where, LATENCY_LIMIT),
    )


def _optional(
    table: dict, key: str, where: str, limit: float = NUMBER_LIMIT, least: float = 0.0
) -> float:
    """0, or a number from ``least`` to ``limit``; 0 when left out."""
    if key not in table:
        return 0.0
    return _number(table, key, where, zero_ok=True, limit=limit, least=least)


def _choice(table: dict, key: str, allowed: tuple[str, ...], where: str) -> str:
    value = table.get(key, allowed[0])
    if value not in allowed:
        raise TargetError(f"{where}: {key} must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _size(table: dict, key: str, where: str, default: int | None, minimum: int = 0) -> int:
    """Bytes, at least ``minimum`` and at most ``CAPACITY_LIMIT``; ``default`` when
    left out (None: required)."""
    if key not in table and default is not None:
        return default
    size = parse_size(table.get(key), f"{where} {key}", minimum=minimum, error=TargetError)
    if size > CAPACITY_LIMIT:
        raise TargetError(
            f"{where}: {key} must be at most {CAPACITY_LIMIT:,} B (4 GiB, what a 32-bit "
            f"core addresses), got {table[key]!r}"
        )
    return size


def parse_target(data: dict, source: str) -> Target:
    try:
        unknown = set(data) - _TOP_KEYS
        if unknown:
            raise TargetError(f"unknown key(s) {', '.join(sorted(unknown))}")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise TargetError("needs a name")
        memories = data.get("memory")
        if not isinstance(memories, list) or not memories:
            raise TargetError("needs at least one [[memory]]")
        mems = tuple(_memory(t, k) for k, t in enumerate(memories))
        names = [m.name for m in mems]
        if len(set(names)) != len(names):
            raise TargetError(f"memory names repeat: {', '.join(names)}")
        if not any("activations" in m.holds for m in mems):
            raise TargetError("no memory holds activations")
        compute = data.get("compute", {})
        if not isinstance(compute, dict):
            raise TargetError("[compute] must be a table")
        rates = {k: _rate(compute, k) for k in compute}
        profile = _profile(data.get("tflm_profile"))
        kernels = _kernels(data.get("kernels"))

        traffic = data.get("traffic", "tflm")
        if traffic not in TRAFFIC:
            raise TargetError(f"traffic must be one of {', '.join(TRAFFIC)}, got {traffic!r}")
        core = _core(data, kernels)
        compiled_for = _choice(data, "compiled_for", COMPILED_FOR, "target")
        if core and not runtime_of(kernels).counts_measured(kernels, compiled_for):
            raise TargetError(
                f"no instruction counts of {kernels.name} compiled for {compiled_for}"
            )
        scale = 1.0
        if "instructions_scale" in data:
            scale = _number(data, "instructions_scale", "target", limit=RATE_MAX, least=RATE_MIN)
        sources = data.get("sources", [])
        if not isinstance(sources, list | tuple) or not all(isinstance(x, str) for x in sources):
            raise TargetError("sources must be a list of strings")
        time_model = data.get("time_model", "stall")
        if time_model not in TIME_MODELS:
            raise TargetError(
                f"time_model must be one of {', '.join(TIME_MODELS)}, got {time_model!r}"
            )
        return Target(
            name,
            str(data.get("description", "")),
            _number(data, "clock_hz", "target", limit=CLOCK_LIMIT, least=CLOCK_MIN),
            mems,
            rates,
            profile,
            time_model,
            kernels,
            traffic,
            core,
            scale,
            compiled_for,
            tuple(sources),
        )
    except TargetError as exc:
        raise TargetError(f"{source}: {exc}") from None


def load_target(path: str | Path) -> Target:
    """A target from a user's TOML file."""
    text = read_text_input(path, "TOML", TargetError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TargetError(f"{path}: not valid TOML: {exc}") from None
    return parse_target(data, str(path))


def builtin_names() -> list[str]:
    folder = resources.files("arenaplan.targets") / "builtin"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def load_builtin(name: str) -> Target:
    if name not in builtin_names():
        raise TargetError(f"unknown target {name!r} (built in: {', '.join(builtin_names())})")
    text = (resources.files("arenaplan.targets") / "builtin" / f"{name}.toml").read_text()
    return parse_target(tomllib.loads(text), f"built-in target {name}")


def _core(data: dict, kernels: KernelSet) -> str:
    """The core named by ``core`` (absent: ""); its CMSIS-NN level must be the
    kernels'."""
    name = data.get("core", "")
    if name == "":
        return ""
    if not isinstance(name, str):
        raise TargetError(f"core must be a string, got {name!r}")
    core = core_named(name)
    if kernels.library != "cmsis_nn" or kernels.level != core.level:
        raise TargetError(
            f"core {name} times CMSIS-NN built for {core.level}: kernels must be "
            f'"cmsis_nn+{core.level}", got "{kernels.name}"'
        )
    return name


def _profile(text: object) -> Profile:
    """The build profile ``text`` spells (absent: the default runtime's default)."""
    found = default_profile() if text is None else profile_named(text)
    if found is None:
        names = ", ".join(profile_names())
        raise TargetError(f"tflm_profile must be one of {names}, got {text!r}")
    return found


def _kernels(text: object) -> KernelSet:
    """The kernel set ``text`` spells (absent: the default runtime's default)."""
    found = default_kernels() if text is None else kernels_named(text)
    if found is None:
        raise TargetError(f"kernels must be one of {', '.join(kernel_names())}, got {text!r}")
    return found
