"""The generated C/C++ header compiles, and its arrays have the planned sizes.

It is compiled against a minimal declaration of TFLM's MicroAllocator::Create
(the signatures of micro_allocator.h), not against TFLM itself.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.analysis.persistent import predict_tail
from arenaplan.cli import main
from arenaplan.reader import read_model

TFLM_DECL = """
#include <stddef.h>
#include <stdint.h>
namespace tflite {
enum class MemoryPlannerType { kGreedy, kLinear };
class MicroAllocator {
 public:
  static MicroAllocator* Create(uint8_t* arena, size_t size,
                                MemoryPlannerType t = MemoryPlannerType::kGreedy);
  static MicroAllocator* Create(uint8_t* persistent, size_t persistent_size,
                                uint8_t* non_persistent, size_t non_persistent_size,
                                MemoryPlannerType t = MemoryPlannerType::kGreedy);
};
}  // namespace tflite
"""


def _symbols(obj: Path) -> dict[str, int]:
    out = subprocess.run(
        ["nm", "-S", "-C", str(obj)], capture_output=True, text=True, check=True
    ).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4:
            sizes[parts[3]] = int(parts[1], 16)
    return sizes


@pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("g++") and shutil.which("nm")),
    reason="gcc, g++ and nm are needed to compile the generated header",
)
@pytest.mark.parametrize("two", [False, True])
def test_header_compiles_in_c_and_cpp(tmp_path: Path, two: bool) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    header = tmp_path / "arena.h"
    argv = ["plan", str(src), "-q", "--header", str(header), "--target", "xcore_ai"]
    assert main([*argv, *(["--persistent-memory", "lpddr"] if two else [])]) == 0
    text = header.read_text()
    assert "#define ARENAPLAN_HEAD_BYTES 55296u" in text
    tail = predict_tail(read_model(src), "arm32")
    assert f"#define ARENAPLAN_TAIL_BYTES {tail}u" in text
    c_file = tmp_path / "arena.c"
    c_file.write_text('#define ARENAPLAN_DEFINE_ARENAS\n#include "arena.h"\n')
    subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Werror", "-c", str(c_file), "-o", str(tmp_path / "arena.o")],
        check=True,
        cwd=tmp_path,
    )
    sizes = _symbols(tmp_path / "arena.o")
    if two:
        assert sizes["arenaplan_non_persistent"] == 55296
        assert sizes["arenaplan_persistent"] == -(-tail // 16) * 16
        assert ".ExtMem.bss" in text
    else:
        assert sizes["arenaplan_arena"] >= 55296 + tail
    cpp = tmp_path / "use.cc"
    cpp.write_text(
        TFLM_DECL + "#define ARENAPLAN_DEFINE_ARENAS\n#define ARENAPLAN_DEFINE_ALLOCATOR\n"
        '#include "arena.h"\nvoid* f() { return arenaplan_create_allocator(); }\n'
    )
    subprocess.run(
        ["g++", "-std=c++17", "-Wall", "-Werror", "-c", str(cpp), "-o", str(tmp_path / "use.o")],
        check=True,
        cwd=tmp_path,
    )


def test_header_options_are_checked(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    h = tmp_path / "a.h"
    assert main(["plan", str(src), "--header", str(h), "--persistent-memory", "x"]) == 2
    assert "need --target" in capsys.readouterr().err
    assert (
        main(
            [
                "plan",
                str(src),
                "--header",
                str(h),
                "--target",
                "xcore_ai",
                "--persistent-memory",
                "flash",
            ]
        )
        == 2
    )
    assert "may not hold persistent data" in capsys.readouterr().err
    assert not h.exists()


def test_header_follows_the_persistent_advice(tmp_path: Path) -> None:
    """With a target and no --persistent-memory, two arenas only when one does not fit."""
    src = model_path("mlcommons-tiny__vww_96_int8")
    roomy, tight = tmp_path / "roomy.h", tmp_path / "tight.h"
    assert main(["plan", str(src), "-q", "--target", "imxrt1170", "--header", str(roomy)]) == 0
    assert "arenaplan_arena[" in roomy.read_text()
    assert (
        main(
            [
                "plan",
                str(src),
                "-q",
                "--target",
                "imxrt1170",
                "--memory",
                "tcm=64KiB",
                "--header",
                str(tight),
            ]
        )
        == 0
    )
    text = tight.read_text()
    assert "arenaplan_persistent[" in text and 'section(".ocram")' in text
