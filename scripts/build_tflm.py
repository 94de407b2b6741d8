"""Build TFLM from the shared source tarball, outside the repository, with our runner.

    python scripts/build_tflm.py [--out DIR] [--variants host-reference,host-cmsis_nn,...]
                                 [--tarball FILE] [--jobs N] [--where]

For each variant (``arenaplan.tflm.verify.native.VARIANTS``): TFLM's ``microlite`` library
with TFLM's own Makefile, then ``native/tflm_runner.cc`` and arenaplan's own kernels
(``src/arenaplan/firmware/*.cc``, registered in the runner's resolver) compiled and
linked with the same flags (for the Cortex-M55 board, with ``native/m55_startup.c``
and the linker script ``native/an547.ld``), into ``DIR/<variant>-<options key>/`` (``tflm_runner``,
TFLM's ``gen`` folder, ``build.log`` and ``build.json``: arguments, compiler,
seconds, the runner sources' hash). The tarball (``../shared/third_party``) carries
every third-party download, so nothing is fetched. DIR defaults to
``$ARENAPLAN_TFLM_BUILD``, else the user's cache, ``~/.cache/arenaplan/tflm/<bundle
key>`` (``verify.native.build_root``): keyed by the bundle's hash, each variant by its
make arguments, runner link and compiler, so a later run on the machine, from any
clone, reuses what is built. It must lie outside the repository. Extracts once; skips
a variant whose library is built and whose runner was compiled from the same sources;
one build at a time per DIR (a lock).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from arenaplan.tflm.verify.native import (  # noqa: E402
    BUNDLE,
    M55_LD,
    M55_STARTUP,
    QEMU_CPU,
    QEMU_MACHINE,
    QEMU_SYSTEM,
    QEMU_USER,
    VARIANTS,
    Variant,
    build_root,
    bundle_key,
    variant_dir,
)

TARBALL = BUNDLE
TFLM_COMMIT = "90b983c2b3f1480642e040bbd2ddb37b998f3424"
NATIVE = REPO / "native"
RUNNER_SRC = NATIVE / "tflm_runner.cc"
# arenaplan's kernels, compiled into every runner (the runner includes their header).
FIRMWARE = REPO / "src" / "arenaplan" / "firmware"
KERNEL_SOURCES = [FIRMWARE / "arenaplan_cascade.cc"]
KERNEL_HEADERS = [FIRMWARE / "arenaplan_cascade.h"]
EXTRA_PREFIX = "_x_"  # the kernels' objects: <runner>_x_<name>.o
MAKEFILE = "tensorflow/lite/micro/tools/make/Makefile"
EXTRACTED = ".arenaplan-extracted"  # marker: the tree was extracted whole

# Appended to TFLM's Makefile (make -f Makefile -f runner.mk): the runner is compiled
# with the library's own CXXFLAGS and INCLUDES (a startup file, if RUNNER_STARTUP
# names one, with its CCFLAGS), and linked as RUNNER_LINK says. ARENAPLAN_CFLAGS, a
# variant's make argument, adds compile flags to the library's and the runner's alike
# (TFLM's Makefile has no variable for that; its recipes expand the flags when they
# run, after this file is read).
RUNNER_MK = """\
# Written by arenaplan's scripts/build_tflm.py: the runner, with the library's flags.
CXXFLAGS += $(ARENAPLAN_CFLAGS)
CCFLAGS += $(ARENAPLAN_CFLAGS)
RUNNER_CXX = $(CXX) $(CXXFLAGS) $(CORE_OPTIMIZATION_LEVEL)
$(RUNNER_OUT).o: $(RUNNER_SRC)
\t$(MKDIR_P) $(dir $@)
\t$(RUNNER_CXX) $(RUNNER_DEFINES) $(RUNNER_INCLUDES) $(INCLUDES) -c $< -o $@
$(RUNNER_OUT)_startup.o: $(RUNNER_STARTUP)
\t$(MKDIR_P) $(dir $@)
\t$(CC) $(CCFLAGS) $(CORE_OPTIMIZATION_LEVEL) -c $< -o $@
# RUNNER_EXTRA: more C++ sources of the runner (arenaplan's kernels), one object each,
# at the level TFLM compiles its own kernels (KERNEL_OPTIMIZATION_LEVEL, -O2).
RUNNER_EXTRA_OBJ = $(RUNNER_OUT)_x_$(basename $(notdir $(1))).o
define RUNNER_EXTRA_RULE
$(call RUNNER_EXTRA_OBJ,$(1)): $(1)
\t$$(MKDIR_P) $$(dir $$@)
\t$$(CXX) $$(CXXFLAGS) $$(KERNEL_OPTIMIZATION_LEVEL) $$(RUNNER_INCLUDES) $$(INCLUDES) -c $$< -o $$@
endef
$(foreach src,$(RUNNER_EXTRA),$(eval $(call RUNNER_EXTRA_RULE,$(src))))
$(RUNNER_OUT): $(RUNNER_OUT).o $(if $(RUNNER_STARTUP),$(RUNNER_OUT)_startup.o) \
\t\t$(foreach src,$(RUNNER_EXTRA),$(call RUNNER_EXTRA_OBJ,$(src))) $(MICROLITE_LIB_PATH)
\t$(CXX) $(RUNNER_LINK) -o $@ $(filter %.o,$^) $(MICROLITE_LIB_PATH) $(LDFLAGS) \
\t\t$(MICROLITE_LIBS)
tflm_runner: $(RUNNER_OUT)
"""


# The Debian package of each tool (else build-essential).
_PACKAGES = {
    "make": "make",
    "arm-none-eabi-gcc": "gcc-arm-none-eabi",
    "arm-none-eabi-g++": "gcc-arm-none-eabi",
    "arm-none-eabi-ar": "binutils-arm-none-eabi",
}


class BuildError(Exception):
    """One line saying what is missing or what failed."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="build root (outside the repo)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--tarball", type=Path, default=TARBALL)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--where", action="store_true", help="print each variant's folder and build nothing"
    )
    args = parser.parse_args(argv)
    try:
        names = [v.strip() for v in args.variants.split(",") if v.strip()]
        unknown = [n for n in names if n not in VARIANTS]
        if unknown:
            known = ", ".join(VARIANTS)
            raise BuildError(f"unknown variant(s) {', '.join(unknown)}; known: {known}")
        if args.out is None and bundle_key(args.tarball.resolve()) != bundle_key():
            raise BuildError("--tarball is not the bundle the tests look for: give --out too")
        root = (args.out or build_root()).resolve()
        if args.where:
            print("\n".join(str(variant_dir(name, root)) for name in names))
            return 0
        _check_outside_repo(root)
        for name in names:
            _check_tools(VARIANTS[name])
        root.mkdir(parents=True, exist_ok=True)
        with (root / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another build into this root waits here
            tree = _extract(args.tarball.resolve(), root)
            for name in names:
                _build(VARIANTS[name], root, tree, args.jobs)
    except BuildError as exc:
        print(f"build_tflm: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("build_tflm: interrupted", file=sys.stderr)
        return 130
    return 0


def _check_outside_repo(root: Path) -> None:
    if root == REPO or REPO in root.parents:
        raise BuildError(f"the build root {root} is inside the repository; use --out elsewhere")


def _check_tools(variant: Variant) -> None:
    compilers = ["arm-none-eabi-gcc", "arm-none-eabi-g++", "arm-none-eabi-ar"]
    needed = ["make", *(compilers if variant.arm32 else ["gcc", "g++", "ar"])]
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        packages = sorted({_PACKAGES.get(tool, "build-essential") for tool in missing})
        raise BuildError(
            f"{variant.name} needs {', '.join(missing)}: apt-get install {' '.join(packages)}"
        )
    if variant.arm32:
        specs = subprocess.run(
            ["arm-none-eabi-gcc", "-print-file-name=rdimon.specs"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if not os.path.isabs(specs):
            hint = "apt-get install libnewlib-arm-none-eabi"
            raise BuildError(f"{variant.name} needs newlib's rdimon.specs: {hint}")
    # TFLM's Makefile runs python3 while it reads itself (generate_cc_arrays.py).
    probe = subprocess.run(
        ["python3", "-c", "import numpy, PIL"], env=_env(), capture_output=True, check=False
    )
    if probe.returncode != 0:
        raise BuildError(
            "TFLM's Makefile runs python3 with numpy and pillow (it generates example "
            "sources while it reads itself): pip install numpy pillow"
        )


def _env() -> dict[str, str]:
    """PATH with this interpreter's folder first, so that ``python3`` is this venv's."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _extract(tarball: Path, root: Path) -> Path:
    tree = root / "tflite-micro"
    marker = tree / EXTRACTED
    if marker.is_file() and marker.read_text().strip() == tarball.name:
        print(f"source: {tree} (extracted before)")
        return tree
    if not tarball.is_file():
        raise BuildError(f"the TFLM source tarball is absent: {tarball} (see --tarball)")
    if tree.exists():
        raise BuildError(f"{tree} exists but is not a whole extraction of {tarball.name}")
    print(f"source: extracting {tarball.name} into {root} ...", flush=True)
    staging = root / ".extracting"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(staging, filter="tar")
    if not (staging / "tflite-micro" / MAKEFILE).is_file():
        raise BuildError(f"{tarball.name} does not hold tflite-micro/{MAKEFILE}")
    (staging / "tflite-micro").rename(tree)
    staging.rmdir()
    marker.write_text(tarball.name + "\n")
    return tree


def _build(variant: Variant, root: Path, tree: Path, jobs: int) -> None:
    out = variant_dir(variant.name, root)
    out.mkdir(parents=True, exist_ok=True)
    runner = out / "tflm_runner"
    library = out / "gen" / variant.gendir / "lib" / "libtensorflow-microlite.a"
    record = out / "build.json"
    source_hash = _sources_hash(variant)
    if _up_to_date(runner, library, record, source_hash):
        print(f"{variant.name}: up to date ({runner})")
        return
    extra = [out / f"{runner.name}{EXTRA_PREFIX}{src.stem}.o" for src in KERNEL_SOURCES]
    for stale in (runner, Path(f"{runner}.o"), Path(f"{runner}_startup.o"), *extra, record):
        stale.unlink(missing_ok=True)  # recompiled and relinked from these sources
    runner_mk = root / "runner.mk"
    if not runner_mk.is_file() or runner_mk.read_text() != RUNNER_MK:
        runner_mk.write_text(RUNNER_MK)
    make_args = [*variant.make_args, f"BASE_GENDIR={out / 'gen'}"]
    runner_vars = [f"RUNNER_SRC={RUNNER_SRC}", f"RUNNER_OUT={runner}"]
    runner_vars += [f"RUNNER_EXTRA={' '.join(str(src) for src in KERNEL_SOURCES)}"]
    runner_vars += [f"RUNNER_INCLUDES=-I{FIRMWARE}"]
    if variant.arm32:
        toolchain = Path(shutil.which("arm-none-eabi-g++") or "").parent
        make_args.append(f"TARGET_TOOLCHAIN_ROOT={toolchain}/")
        runner_vars += [f"RUNNER_LINK={_link(variant)}"]
        runner_vars += ["RUNNER_DEFINES=-DTFLM_RUNNER_LOG_CALLBACK"]
    if variant.runs == QEMU_SYSTEM:
        runner_vars.append(f"RUNNER_STARTUP={NATIVE / M55_STARTUP}")
    command = ["make", "-f", MAKEFILE, "-f", str(runner_mk), f"-j{jobs}", *make_args]
    command += [*runner_vars, "microlite", "tflm_runner"]
    log_path = out / "build.log"
    what = " ".join(variant.make_args) or "host, reference kernels"
    print(f"{variant.name}: building ({what}), log {log_path}", flush=True)
    start = time.monotonic()
    with log_path.open("w") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        proc = subprocess.Popen(command, cwd=tree, stdout=log, stderr=subprocess.STDOUT, env=_env())
        objects = out / "gen" / variant.gendir / "obj"
        while proc.poll() is None:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                n = sum(1 for _ in objects.rglob("*.o")) if objects.is_dir() else 0
                print(f"{variant.name}: {time.monotonic() - start:4.0f} s, {n} objects", flush=True)
    seconds = round(time.monotonic() - start)
    if proc.returncode != 0 or not runner.is_file():
        raise BuildError(
            f"{variant.name}: make failed (exit status {proc.returncode}) after {seconds} s: "
            f"{_last_error(log_path)} (log {log_path})"
        )
    facts = {
        "variant": variant.name,
        "tflm_commit": TFLM_COMMIT,
        "bundle_sha256_16": bundle_key(),
        "runner_source_sha256": source_hash,
        "make": command,
        "library": str(library),
        "runner": str(runner),
        "compiler": _compiler_version(variant),
        "seconds": seconds,
    }
    if variant.arm32:
        facts |= {"compiled_for": variant.cpu, "link": _link(variant)}
    if variant.runs == QEMU_USER:
        facts["qemu_cpu"] = QEMU_CPU
    if variant.runs == QEMU_SYSTEM:
        facts["qemu_machine"] = QEMU_MACHINE
    record.write_text(json.dumps(facts, indent=2) + "\n")
    print(f"{variant.name}: built in {seconds} s ({runner})", flush=True)


def _sources(variant: Variant) -> list[Path]:
    """The files the variant's runner is made of besides TFLM (the runner first, then
    arenaplan's kernels and their headers)."""
    kernels = [*KERNEL_SOURCES, *KERNEL_HEADERS]
    if variant.runs == QEMU_SYSTEM:
        return [RUNNER_SRC, *kernels, NATIVE / M55_STARTUP, NATIVE / M55_LD]
    return [RUNNER_SRC, *kernels]


def _sources_hash(variant: Variant) -> str:
    """SHA-256 of the runner's sources, one after the other, and of the make rules
    that build it (``RUNNER_MK``): a runner built before any of them changed is
    recompiled and relinked."""
    digest = hashlib.sha256()
    for path in _sources(variant):
        digest.update(path.read_bytes())
    digest.update(RUNNER_MK.encode())
    return digest.hexdigest()


def _link(variant: Variant) -> str:
    """The runner's link flags: the variant's, and the board's memory map."""
    if variant.runs == QEMU_SYSTEM:
        return f"{variant.link} -T {NATIVE / M55_LD}"
    return variant.link


def _up_to_date(runner: Path, library: Path, record: Path, source_hash: str) -> bool:
    """The library is built and the runner was linked from these sources (by content:
    each clone's checkout has new file times)."""
    if not (runner.is_file() and library.is_file() and record.is_file()):
        return False
    facts = json.loads(record.read_text())
    return facts.get("runner_source_sha256") == source_hash


def _last_error(log_path: Path) -> str:
    lines = log_path.read_text(errors="replace").splitlines()
    errors = [line.strip() for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[-1][:300]


def _compiler_version(variant: Variant) -> str:
    cxx = "arm-none-eabi-g++" if variant.arm32 else "g++"
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0] if out else cxx


if __name__ == "__main__":
    sys.exit(main())
