"""TFLM's real headers for the C++ tests, extracted once per session.

Only the headers (``tensorflow/**.h``, ``signal/**.h`` and FlatBuffers' include
folder, about 14 MB) come out of ``../shared/third_party``'s TFLM source tarball,
into pytest's temporary folder, never into the repository. The generated C++ is
then syntax-checked against them as a firmware build would compile it.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from testkit import SHARED

TARBALL = SHARED / "third_party" / "tflite-micro-90b983c2b-src.tar.xz"
FLATBUFFERS = "tflite-micro/tensorflow/lite/micro/tools/make/downloads/flatbuffers/include"
GEMMLOWP = "tflite-micro/tensorflow/lite/micro/tools/make/downloads/gemmlowp"
# signal/: micro_mutable_op_resolver.h includes the signal library's kernels (and,
# through TFLM's kernels, gemmlowp's fixed-point headers: under tensorflow/ too)
MEMBERS = ("tflite-micro/tensorflow/*.h", "tflite-micro/signal/*.h", f"{FLATBUFFERS}/*")


@dataclass(frozen=True, slots=True)
class TflmHeaders:
    """Where the headers are and how to compile against them."""

    root: Path  # the tflite-micro folder (TFLM's include root)
    seconds: float  # wall time of the extraction

    @property
    def flags(self) -> list[str]:
        return [
            "-std=c++17",
            "-Wall",
            "-Werror",
            "-DTF_LITE_STATIC_MEMORY",
            "-I",
            str(self.root),
            "-I",
            str(self.root.parent / FLATBUFFERS),
            "-I",
            str(self.root.parent / GEMMLOWP),
        ]

    def extract(self, *members: str) -> None:
        """More files of the tarball (``tflite-micro/...``), beside the headers."""
        subprocess.run(
            ["tar", "-xJf", str(TARBALL), "-C", str(self.root.parent), *members],
            check=True,
            capture_output=True,
        )

    def syntax_check(self, *sources: Path) -> None:
        """``g++ -fsyntax-only`` on each source (in parallel: each takes seconds, most
        of it TFLM's schema); fails the test with the compiler's message."""
        runs = [
            (
                src,
                subprocess.Popen(
                    ["g++", *self.flags, "-fsyntax-only", str(src)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                ),
            )
            for src in sources
        ]
        outputs = [(src, run.communicate()[0], run.returncode) for src, run in runs]
        failed = [f"{src.name}:\n{out}" for src, out, status in outputs if status]
        assert not failed, "\n".join(failed)


@pytest.fixture(scope="session")
def tflm_headers(tmp_path_factory: pytest.TempPathFactory) -> TflmHeaders:
    if not TARBALL.exists():
        pytest.skip(f"TFLM's source tarball is absent (../shared: looked for {TARBALL})")
    if shutil.which("g++") is None or shutil.which("tar") is None:
        pytest.skip(
            "g++ and tar are needed to compile against TFLM's headers (apt-get install g++ tar)"
        )
    dest = tmp_path_factory.mktemp("tflm")
    start = time.perf_counter()
    subprocess.run(
        ["tar", "-xJf", str(TARBALL), "-C", str(dest), "--wildcards", *MEMBERS],
        check=True,
        capture_output=True,
    )
    return TflmHeaders(dest / "tflite-micro", time.perf_counter() - start)


KERNEL_SOURCES = tuple(
    f"tflite-micro/tensorflow/lite/kernels/internal/{name}.cc"
    for name in ("common", "quantization_util", "runtime_shape")
)


@dataclass(frozen=True, slots=True)
class TflmKernels:
    """TFLM's headers, gemmlowp's and the few sources its reference kernels need."""

    headers: TflmHeaders

    def compile(self, source: Path, include: Path) -> Path:
        """Build ``source`` (with ``include`` on the include path) into an executable."""
        root = self.headers.root
        exe = include / source.stem
        cc = [str(root.parent / s) for s in KERNEL_SOURCES]
        run = subprocess.run(
            # -DNDEBUG: asserts off, as in TFLM's release builds (the PyPI runtime): an
            # int16x8 depthwise reading an int32 bias as int64 may go past common.cc's
            # 48-bit accumulator assert, and TFLM computes on
            ["g++", "-O1", "-DNDEBUG", *self.headers.flags, "-Wno-unused-variable",
             "-I", str(include), "-I", str(root.parent / GEMMLOWP), str(source), *cc,
             "-o", str(exe)],
            capture_output=True,
            text=True,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-4000:]
        return exe


@pytest.fixture(scope="session")
def tflm_kernels(tflm_headers: TflmHeaders) -> TflmKernels:
    """The headers plus the reference kernels' sources, extracted beside them."""
    subprocess.run(
        ["tar", "-xJf", str(TARBALL), "-C", str(tflm_headers.root.parent), "--wildcards",
         *KERNEL_SOURCES, f"{GEMMLOWP}/*"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return TflmKernels(tflm_headers)
