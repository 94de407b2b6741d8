#!/usr/bin/env python3
"""Count, by instruction class, one invoke of MLPerf Tiny's four models in the TFLM
release their reference results ran: TFLM 2.3 with its CMSIS-NN, compiled for size.

    python scripts/gen_reference_release_counts.py --tree DIR [--cmsis-core DIR]
                                                   [--out FILE] [--jobs N]

MLPerf Tiny v0.5's reference submission (NUCLEO-L4R5ZI) built TFLM 2.3.1 with CMSIS-NN
by GCC 6 under mbed's default profile (-Os), as its system description says. The
count here is GCC 12's (Debian's arm-none-eabi-gcc): what an older compiler adds is
left to the benchmark's one parameter. ``benchmarks/latency_boards.py`` judges the time
model on that board with these counts, not with the project's own TFLM build: the 2020
kernels execute other instructions than today's (more on the convolutions, about the
same on the fully connected layers), and a count of the release itself leaves nothing
to guess about them.

``--tree`` is a TFLM 2.3 source tree with the CMSIS-NN its Makefile downloads under
``tensorflow/lite/micro/tools/make/downloads/cmsis`` (what TFLM's project generation
writes, e.g. its mbed export). The tree is not shipped with the project; the counts
in ``benchmarks/data/reference_release_counts.json`` were taken from TFLM 2.3.0's mbed
export (2.3.1 is a patch release of it) as published in the public repository
MarkoSagadin/tensorflow_mbed_test at fc74f6f (whose author added one log line to
``MicroInterpreter::Invoke``; error strings are compiled out here, which drops it).
``--cmsis-core`` gives the CMSIS Core headers the 2020 CMSIS-DSP header includes (the
export has none): by default the shared TFLM bundle's, extracted by
``scripts/native_lane.sh``.

Every ``.c``/``.cc`` of the library's folders and CMSIS-NN's sources is compiled
with arm-none-eabi-gcc for the Cortex-M4 (soft float, -Os, as the qemu-user builds
of ``arenaplan.tflm.verify.native``), linked with ``native/tflm_2_3_runner.cc``, and
run under qemu-arm with the project's counting plugin: one invoke is a run of two
trials less a run of one. A few minutes on two cores. Exit status 0 written, 2 the
tree, a tool or a model is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("src", "benchmarks")]
from latency_boards import MODELS, NAMES  # noqa: E402  (benchmarks/: the models it judges)

from arenaplan.errors import RuntimeUnavailableError  # noqa: E402
from arenaplan.tflm.verify.instructions import qemu_user_classes  # noqa: E402
from arenaplan.tflm.verify.native import (  # noqa: E402
    ARM_CPU,
    ARM_LINK,
    build_root,
    compiler_identity,
)

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "data" / "reference_release_counts.json"
RUNNER = REPO / "native" / "tflm_2_3_runner.cc"
CMSIS = Path("tensorflow/lite/micro/tools/make/downloads/cmsis")
FOLDERS = [  # the library: TFLM 2.3's layout
    "tensorflow/lite/c",
    "tensorflow/lite/core/api",
    "tensorflow/lite/kernels",
    "tensorflow/lite/kernels/internal",
    "tensorflow/lite/micro",
    "tensorflow/lite/micro/memory_planner",
    "tensorflow/lite/micro/kernels",
    "tensorflow/lite/micro/kernels/cmsis-nn",
]
# test and debugging helpers (printf, test-only code), not linked by a firmware
SKIP = re.compile(r"test_helpers|micro_optional_debug_tools|recording_")
# mbed's default profile compiles with -Os; NDEBUG as a release; soft float as the
# project's qemu-user builds (the models are int8)
FLAGS = [
    f"-mcpu={ARM_CPU}", "-mthumb", "-mfloat-abi=soft", "-Os", "-DNDEBUG",
    "-DTF_LITE_STATIC_MEMORY", "-DTF_LITE_STRIP_ERROR_STRINGS", "-ffunction-sections",
    "-fdata-sections", "-funsigned-char", "-fomit-frame-pointer", "-fno-exceptions",
]  # fmt: skip
ABOUT = (
    "Instructions of one invoke of each MLPerf Tiny model, by class, in TFLM 2.3 with "
    "its CMSIS-NN compiled for size for the Cortex-M4, counted under qemu-arm with "
    "native/qemu_insn_classes.c (two trials less one): the release of MLPerf Tiny's "
    "reference results. Measured counts; nothing fitted."
)


class TreeError(Exception):
    """The tree, a compile or the link failed: the message says which."""


def default_core() -> Path:
    return build_root() / "tflite-micro" / CMSIS / "CMSIS" / "Core" / "Include"


def core_version(core: Path) -> str:
    """The Core headers' version (``cmsis_version.h``), e.g. "CMSIS Core 6.1"."""
    text = (core / "cmsis_version.h").read_text(errors="replace")
    parts = [re.search(rf"__CM_CMSIS_VERSION_{k}\s+\(\s*(\d+)U?", text) for k in ("MAIN", "SUB")]
    return "CMSIS Core " + ".".join(p.group(1) if p else "?" for p in parts)


def release_of(tree: Path) -> str:
    """The tree's release from its version header, e.g. "2.3.0" (TreeError if it is
    not a TFLM 2.3 tree)."""
    header = tree / "tensorflow" / "core" / "public" / "version.h"
    if not header.is_file():
        raise TreeError(f"{header} is absent (not a TFLM tree)")
    text = header.read_text(errors="replace")
    parts = [re.search(rf"#define TF_{k}_VERSION (\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    if any(p is None for p in parts):
        raise TreeError(f"{header} names no version")
    version = ".".join(p.group(1) for p in parts if p is not None)
    if not version.startswith("2.3."):
        raise TreeError(f"the tree is TFLM {version}, not 2.3")
    return version


def sources(tree: Path) -> list[str]:
    """The library's and CMSIS-NN's sources, relative to ``tree``, sorted."""
    nn = tree / CMSIS / "CMSIS" / "NN" / "Source"
    if not nn.is_dir():
        raise TreeError(f"{nn} is absent (no CMSIS-NN)")
    found = [p for f in FOLDERS for p in (tree / f).glob("*.c*") if p.suffix in (".c", ".cc")]
    found += nn.rglob("*.c")
    return sorted(str(p.relative_to(tree)) for p in found if not SKIP.search(p.name))


def tree_digest(tree: Path, files: list[str]) -> str:
    """SHA-256 over the compiled sources' paths and bytes (headers aside)."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.encode() + b"\0" + (tree / f).read_bytes() + b"\0")
    return h.hexdigest()


def provenance(tree: Path, files: list[str], core: Path, version: str) -> dict:
    """What was counted and how (the models' rows are added as they are counted)."""
    return {
        "about": ABOUT,
        "release": f"TFLM {version}",
        "tree_sha256": tree_digest(tree, files),
        "sources": len(files),
        "compiler": compiler_identity("arm-none-eabi-gcc"),
        "flags": FLAGS,
        "link": ARM_LINK,
        "cmsis_core": core_version(core),
        "runner_sha256": hashlib.sha256(RUNNER.read_bytes()).hexdigest(),
        "command": "python scripts/gen_reference_release_counts.py --tree DIR",
        "models": {},
    }


def _compile(tree: Path, includes: list[str], src: str, obj: Path) -> None:
    cxx = src.endswith(".cc")
    tool = "arm-none-eabi-g++" if cxx else "arm-none-eabi-gcc"
    lang = ["-std=gnu++14", "-fno-rtti"] if cxx else ["-std=gnu11"]
    argv = [tool, *FLAGS, *lang, *includes, "-w", "-c", str(tree / src), "-o", str(obj)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[0]
        raise TreeError(f"{src} did not compile: {first}")


def build(tree: Path, core: Path, files: list[str], out: Path, jobs: int) -> Path:
    """The runner linked with the tree's library, in ``out``."""
    roots = [tree, tree / CMSIS.parent, tree / "third_party" / "flatbuffers" / "include",
             tree / "third_party" / "gemmlowp", tree / "third_party" / "ruy",
             tree / CMSIS / "CMSIS" / "NN" / "Include", tree / CMSIS / "CMSIS" / "DSP" / "Include",
             core]  # fmt: skip
    includes = [f"-I{r}" for r in roots]
    objs = [out / f"{i}.o" for i in range(len(files))]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(lambda k: _compile(tree, includes, files[k], objs[k]), range(len(files))))
    runner = out / "runner.o"
    _compile(RUNNER.parent, includes, RUNNER.name, runner)
    program = out / "tflm_2_3_runner"
    argv = ["arm-none-eabi-g++", *ARM_LINK.split(), "-Wl,--gc-sections", "-o", str(program),
            str(runner), *map(str, objs), "-lm"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TreeError(f"link failed: {done.stderr.strip()[:300]}")
    return program


def invoke_classes(program: Path, model: Path, work: Path) -> dict[str, int]:
    """One invoke's instructions by class: two trials less one."""
    (work / "m.tflite").write_bytes(model.read_bytes())
    two = qemu_user_classes(program, ["m.tflite", "2"], work)
    one = qemu_user_classes(program, ["m.tflite", "1"], work)
    return {k: two[k] - one.get(k, 0) for k in sorted(two)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True, help="a TFLM 2.3 source tree")
    ap.add_argument("--cmsis-core", type=Path, default=None, help="CMSIS Core/Include")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    core = args.cmsis_core or default_core()
    if args.out.exists() and not args.out.is_file():
        print(f"gen_reference_release_counts: {args.out} is not a regular file", file=sys.stderr)
        return 2
    if not (core / "cmsis_compiler.h").is_file():
        print(f"gen_reference_release_counts: no CMSIS Core headers in {core}", file=sys.stderr)
        return 2
    if compiler_identity("arm-none-eabi-gcc") == "absent":
        print("gen_reference_release_counts: apt-get install gcc-arm-none-eabi", file=sys.stderr)
        return 2
    missing = [n for n in NAMES.values() if not (MODELS / n).is_file()]
    if missing:
        print(f"gen_reference_release_counts: {MODELS / missing[0]} is absent", file=sys.stderr)
        return 2
    try:
        return _count(args.tree, core, args.out, args.jobs)
    except TreeError as e:
        print(f"gen_reference_release_counts: {e}", file=sys.stderr)
        return 2


def _count(tree: Path, core: Path, out: Path, jobs: int) -> int:
    version, files = release_of(tree), sources(tree)
    doc = provenance(tree, files, core, version)
    with tempfile.TemporaryDirectory(prefix="arenaplan-tflm23-") as tmp:
        work = Path(tmp)
        print(f"compiling {len(files)} sources of TFLM {version}...", file=sys.stderr)
        program = build(tree, core, files, work, jobs)
        for key, name in NAMES.items():
            try:
                classes = invoke_classes(program, MODELS / name, work)
            except RuntimeUnavailableError as e:
                print(f"gen_reference_release_counts: {key}: {e}", file=sys.stderr)
                return 2
            digest = hashlib.sha256((MODELS / name).read_bytes()).hexdigest()
            doc["models"][key] = {"file": name, "sha256": digest, "classes": classes}
            print(f"  {key}: {classes['insns']:,} instructions", file=sys.stderr)
    partial = out.with_suffix(".part")
    partial.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    partial.replace(out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
