#!/usr/bin/env python3
"""Build the memory-traffic measurement: a valgrind tool and an instrumented TFLM runner.

    python scripts/build_traffic.py [--variant host-reference] [--out BUILD_ROOT]

- ``arenatraffic`` (``native/traffic_tool.c``): a valgrind tool that counts every data
  load and store by address range and operator. It is linked against the static
  libraries and headers the Debian/Ubuntu ``valgrind`` package installs
  (``/usr/include/valgrind``, ``/usr/lib/x86_64-linux-gnu/valgrind``); valgrind finds
  it through ``VALGRIND_LIB``, so the build makes a directory holding it beside links
  to valgrind's own files.
- ``traffic_runner`` (``native/traffic_runner.cc``): runs a model in TFLM and tells the
  tool which ranges belong to which operator. It is compiled with the flags TFLM's
  Makefile gives the variant's library (asked from the Makefile itself) and linked
  against that library, which ``scripts/build_tflm.py`` builds first.

Output: ``<variant folder of build_tflm>/traffic/``: ``traffic_runner``,
``valgrind/arenatraffic-amd64-linux`` and ``build.json``, where
``arenaplan.tflm.verify.traffic_measure`` finds them. Host (x86-64) variants only: valgrind
runs the host build. Exit status 0 on success, 1 with one line on stderr naming what is
missing.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from arenaplan.tflm.verify.native import VARIANTS, build_root, variant_dir  # noqa: E402

NATIVE = REPO / "native"
MAKEFILE = "tensorflow/lite/micro/tools/make/Makefile"
# Appended to TFLM's Makefile: print the flags it compiles the variant's core with.
FLAGS_MK = """\
# Written by arenaplan's scripts/build_traffic.py: the library's flags, for the runner.
traffic_flags:
\t@echo "CXX=$(CXX)"
\t@echo "CXXFLAGS=$(CXXFLAGS) $(KERNEL_OPTIMIZATION_LEVEL)"
\t@echo "INCLUDES=$(INCLUDES)"
\t@echo "LIB=$(MICROLITE_LIB_PATH)"
\t@echo "LIBS=$(LDFLAGS) $(MICROLITE_LIBS)"
"""
VALGRIND_INCLUDE = Path("/usr/include/valgrind")
# As valgrind's own Makefile.tool.am compiles an amd64 Linux tool.
TOOL_CFLAGS = (
    "-O2",
    "-g",
    "-Wall",
    "-m64",
    "-DVGA_amd64=1",
    "-DVGO_linux=1",
    "-DVGP_amd64_linux=1",
    "-DVGPV_amd64_linux_vanilla=1",
    "-fno-stack-protector",
    "-fno-builtin",
    "-fno-strict-aliasing",
    "-fno-pie",
    "-fno-pic",
)
VALGRIND_STATIC = (
    Path("/usr/lib/x86_64-linux-gnu/valgrind"),
    Path("/usr/lib/valgrind"),
    Path("/usr/libexec/valgrind"),
)
VALGRIND_LIBEXEC = (
    Path("/usr/libexec/valgrind"),
    Path("/usr/lib/x86_64-linux-gnu/valgrind"),
    Path("/usr/lib/valgrind"),
)


class BuildError(Exception):
    pass


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
        raise BuildError(f"{cmd[0]} failed:\n" + "\n".join(tail))


def _first(paths, name: str) -> Path:
    for p in paths:
        if (p / name).exists():
            return p
    raise BuildError(f"{name} not found in {', '.join(str(p) for p in paths)}")


def build_tool(out: Path) -> Path:
    """Compile and link the valgrind tool; return the VALGRIND_LIB directory."""
    if platform.machine() != "x86_64":
        raise BuildError(f"the valgrind tool is built for amd64 only, not {platform.machine()}")
    if not (VALGRIND_INCLUDE / "pub_tool_basics.h").exists():
        raise BuildError("valgrind's tool headers are missing (/usr/include/valgrind)")
    static = _first(VALGRIND_STATIC, "libcoregrind-amd64-linux.a")
    libexec = _first(VALGRIND_LIBEXEC, "vgpreload_core-amd64-linux.so")
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise BuildError("no C compiler (gcc)")
    vdir = out / "valgrind"
    vdir.mkdir(parents=True, exist_ok=True)
    obj = out / "traffic_tool.o"
    source = NATIVE / "traffic_tool.c"
    _run(
        [
            cc,
            "-c",
            *TOOL_CFLAGS,
            f"-I{VALGRIND_INCLUDE}",
            f"-I{NATIVE}",
            str(source),
            "-o",
            str(obj),
        ]
    )
    tool = vdir / "arenatraffic-amd64-linux"
    _run(
        [cc, "-o", str(tool), str(obj), "-m64", "-static", "-nodefaultlibs", "-nostartfiles"]
        + ["-u", "_start", "-no-pie", "-Wl,--build-id=none", "-Wl,-Ttext-segment=0x58000000"]
        + [str(static / f"lib{n}-amd64-linux.a") for n in ("coregrind", "vex", "gcc-sup")]
        + ["-lgcc"]
    )
    for f in libexec.iterdir():  # valgrind's own files, beside the tool
        link = vdir / f.name
        if f.name.startswith("arenatraffic") or link.exists() or link.is_symlink():
            continue
        link.symlink_to(f)
    return vdir


def library_flags(tree: Path, make_args: tuple[str, ...], root: Path) -> dict[str, str]:
    """CXX, CXXFLAGS, INCLUDES, LIB and LIBS as TFLM's Makefile gives them."""
    mk = root / "traffic_flags.mk"
    if not mk.is_file() or mk.read_text() != FLAGS_MK:
        mk.write_text(FLAGS_MK)
    cmd = ["make", "-s", "-f", MAKEFILE, "-f", str(mk), *make_args, "traffic_flags"]
    done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(f"TFLM's Makefile did not give its flags: {done.stderr.strip()[-300:]}")
    flags = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in ("CXX", "CXXFLAGS", "INCLUDES", "LIB", "LIBS"):
            flags[key] = value.strip()
    return flags


def build_runner(out: Path, tree: Path, flags: dict[str, str]) -> Path:
    lib = tree / flags["LIB"]
    if not lib.is_file():
        raise BuildError(f"the TFLM library {lib} is absent: python scripts/build_tflm.py first")
    runner = out / "traffic_runner"
    _run(
        [flags.get("CXX") or "g++", "-std=c++17", "-g"]
        + shlex.split(flags["CXXFLAGS"])
        + ["-Wno-unused-parameter", "-Wno-missing-field-initializers"]
        + [
            f"-I{tree / p[2:]}" if p.startswith("-I") and not p[2:].startswith("/") else p
            for p in shlex.split(flags["INCLUDES"])
        ]
        + [f"-I{NATIVE}", f"-I{VALGRIND_INCLUDE.parent}"]
        + [str(NATIVE / "traffic_runner.cc")]
        + [str(tree / "python" / "tflite_micro" / "python_ops_resolver.cc")]
        + [str(lib), "-o", str(runner)]
        + shlex.split(flags.get("LIBS", ""))
    )
    return runner


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="host-reference", help="a host variant of build_tflm")
    ap.add_argument("--out", type=Path, default=None, help="the build root of build_tflm")
    args = ap.parse_args(argv)
    try:
        variant = VARIANTS.get(args.variant)
        if variant is None or variant.arm32:
            hosts = [n for n, v in VARIANTS.items() if not v.arm32]
            raise BuildError(f"{args.variant!r} is not a host variant ({', '.join(hosts)})")
        root = (args.out or build_root()).resolve()
        tree = root / "tflite-micro"
        if not (tree / MAKEFILE).is_file():
            raise BuildError(f"no TFLM tree at {tree}: python scripts/build_tflm.py first")
        out = variant_dir(variant.name, root) / "traffic"
        out.mkdir(parents=True, exist_ok=True)
        vdir = build_tool(out)
        make_args = (*variant.make_args, f"BASE_GENDIR={out.parent / 'gen'}")
        flags = library_flags(tree, make_args, root)
        runner = build_runner(out, tree, flags)
    except BuildError as exc:
        print(f"build_traffic: {exc}", file=sys.stderr)
        return 1
    record = {
        "variant": variant.name,
        "library": str(tree / flags["LIB"]),
        "cxxflags": flags["CXXFLAGS"],
        "runner": str(runner),
        "valgrind_lib": str(vdir),
    }
    (out / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"built {runner} and {vdir / 'arenatraffic-amd64-linux'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
