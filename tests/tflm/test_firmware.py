"""The generated C/C++ header compiles, includes what it needs, and says the truth.

C: compiled as C11 with warnings as errors (no TFLM header needed); its arrays
have the planned sizes and its model check agrees with zlib's CRC-32. C++: the
allocator branch is compiled against a minimal declaration of TFLM's
MicroAllocator::Create, and syntax-checked against TFLM's real headers
(``conftest.tflm_headers``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.cli import main
from arenaplan.placement import Plan, PlanOptions, plan_model
from arenaplan.reader import load_model, read_model
from arenaplan.tflm.firmware import firmware_header
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.tail import PROFILES, min_arena, predict_tail

# The signatures of micro_allocator.h that the header calls, standing in for it.
TFLM_DECL = """#pragma once
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
C_FLAGS = ["gcc", "-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror"]
CXX_FLAGS = ["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror"]
needs_gcc = pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("g++") and shutil.which("nm")),
    reason="gcc, g++ and nm compile the generated header (apt-get install gcc g++ binutils)",
)


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


def _planned(stem: str) -> tuple[bytes, bytes, Plan]:
    """The model's bytes, the planned model's bytes, and the plan."""
    data, model = load_model(model_path(stem))
    plan = plan_model(model, PlanOptions())
    return data, with_offline_plan(data, plan.tensor_offsets), plan


def _define(value: int, text: str, name: str) -> bool:
    return f"#define {name} {value}u" in text


@needs_gcc
@pytest.mark.parametrize("two", [False, True])
def test_header_compiles_in_c_and_cpp(tmp_path: Path, two: bool) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    header = tmp_path / "arena.h"
    argv = ["plan", str(src), "-q", "--header", str(header), "--target", "xcore_ai"]
    assert main([*argv, *(["--persistent-memory", "lpddr"] if two else [])]) == 0
    text = header.read_text()
    assert _define(55296, text, "ARENAPLAN_HEAD_BYTES")
    profile = re.search(r'#define ARENAPLAN_PROFILE "(\w+)"', text)
    assert profile is not None
    tail = predict_tail(read_model(src), profile[1])
    assert _define(tail, text, "ARENAPLAN_TAIL_BYTES")
    array = "arenaplan_non_persistent" if two else "arenaplan_arena"
    (tmp_path / "arena.c").write_text('#define ARENAPLAN_DEFINE_ARENAS\n#include "arena.h"\n')
    # another file sees the arrays through the header's declarations
    (tmp_path / "use.c").write_text(f'#include "arena.h"\nuint8_t* f(void) {{ return {array}; }}\n')
    for c in ("arena", "use"):
        subprocess.run([*C_FLAGS, "-c", f"{c}.c", "-o", f"{c}.o"], check=True, cwd=tmp_path)
    sizes = _symbols(tmp_path / "arena.o")
    if two:
        assert sizes["arenaplan_non_persistent"] == 55296
        assert sizes["arenaplan_persistent"] == -(-tail // 16) * 16
        assert ".ExtMem.bss" in text
    else:
        assert sizes["arenaplan_arena"] >= 55296 + tail
    # C++: the header includes micro_allocator.h itself (here the stand-in); with
    # and without the arrays defined in the same file
    decl = tmp_path / "tensorflow/lite/micro/micro_allocator.h"
    decl.parent.mkdir(parents=True)
    decl.write_text(TFLM_DECL)
    for name, arenas in (("define.cc", "#define ARENAPLAN_DEFINE_ARENAS\n"), ("use.cc", "")):
        (tmp_path / name).write_text(
            f'{arenas}#define ARENAPLAN_DEFINE_ALLOCATOR\n#include "arena.h"\n'
            "void* f() { return arenaplan_create_allocator(); }\n"
        )
        subprocess.run(
            [*CXX_FLAGS, "-I", ".", "-c", name, "-o", f"{name}.o"], check=True, cwd=tmp_path
        )


@needs_gcc
def test_model_check_matches_zlib(tmp_path: Path) -> None:
    """The header records the planned model's size and CRC-32; its C check accepts
    that model and refuses the original and a one-byte change."""
    data, planned, plan = _planned("tflite-micro__keyword_scrambled")
    model = read_model(model_path("tflite-micro__keyword_scrambled"))
    text = firmware_header(model, plan, "kws", planned_model=planned)
    assert _define(len(planned), text, "ARENAPLAN_MODEL_BYTES")
    assert f"#define ARENAPLAN_MODEL_CRC32 0x{zlib.crc32(planned):08X}u" in text
    (tmp_path / "arena.h").write_text(text)
    (tmp_path / "check.c").write_text(
        """#define ARENAPLAN_DEFINE_MODEL_CHECK
#include "arena.h"
#include <stdio.h>
#include <stdlib.h>
static unsigned char buf[1 << 20];
int main(int argc, char** argv) {
  FILE* f = fopen(argv[argc - 1], "rb");
  size_t n;
  if (f == NULL) return 2;
  n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  printf("%d\\n", arenaplan_model_matches(buf, n));
  return 0;
}
"""
    )
    subprocess.run([*C_FLAGS, "check.c", "-o", "check"], check=True, cwd=tmp_path)
    flipped = bytearray(planned)
    flipped[len(flipped) // 2] ^= 1
    for name, content, expected in (
        ("planned.tflite", planned, "1"),
        ("original.tflite", data, "0"),
        ("flipped.tflite", bytes(flipped), "0"),
    ):
        (tmp_path / name).write_bytes(content)
        run = subprocess.run(
            [str(tmp_path / "check"), name], cwd=tmp_path, capture_output=True, text=True
        )
        assert run.stdout.strip() == expected, name


def test_header_names_the_original_models_arena() -> None:
    """vww: TFLM's own plan of the original model takes a larger head, and the header
    gives its arena; hello_world: the same head, so the original fits too."""
    _, planned, plan = _planned("mlcommons-tiny__vww_96_int8")
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    n = len(plan.tensors) + len(plan.scratch)
    text = firmware_header(model, plan, "vww", "arm32", planned_model=planned)
    assert plan.tflm_greedy > plan.arena
    original = min_arena(model, plan.tflm_greedy, n, "arm32")
    assert "the original one (without the offline plan)\n   needs a larger arena" in text
    assert f"a head of {plan.tflm_greedy} bytes:\n   {original} bytes in one arena" in text
    _, planned, plan = _planned("tflite-micro__hello_world_int8")
    model = read_model(model_path("tflite-micro__hello_world_int8"))
    text = firmware_header(model, plan, "hello", "arm32", planned_model=planned)
    assert "The original model (without the offline plan) fits these sizes too" in text


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_header_states_its_profile(profile: str) -> None:
    _, planned, plan = _planned("mlcommons-tiny__vww_96_int8")
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    text = firmware_header(model, plan, "vww", profile, planned_model=planned)
    bits = PROFILES[profile].pointer
    assert f"Sized for TFLM build profile {profile}:" in text
    assert f"({bits}-byte pointers" in text or f": {bits}-byte pointers" in text
    assert f'#define ARENAPLAN_PROFILE "{profile}"' in text
    assert _define(bits, text, "ARENAPLAN_POINTER_BYTES")
    assert _define(predict_tail(model, profile), text, "ARENAPLAN_TAIL_BYTES")
    assert all(len(line) <= 100 for line in text.splitlines())


def test_header_is_deterministic() -> None:
    """The same input gives the same text; the old call (no model bytes) still works."""
    texts = []
    for _ in range(2):
        _, planned, plan = _planned("mlcommons-tiny__vww_96_int8")
        model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
        texts.append(
            firmware_header(
                model, plan, "vww", "arm32", ".sram", ".ext", 40000, planned_model=planned
            )
        )
    assert texts[0] == texts[1]
    old = firmware_header(model, plan, "vww", "arm32", "", None, None)
    assert "ARENAPLAN_MODEL_CRC32" not in old and "arenaplan_arena[" in old


@needs_gcc
def test_split_plan_with_two_arenas_has_no_allocator(tmp_path: Path) -> None:
    """A plan over several memories needs the TablePlanner, which TFLM cannot take
    with two arenas: the allocator branch stops the build with the reason."""
    _, _, plan = _planned("tflite-micro__keyword_scrambled")
    model = read_model(model_path("tflite-micro__keyword_scrambled"))
    split = plan.arena - 16
    text = firmware_header(model, plan, "kws", "arm32", ".dtcm", ".ocram", split)
    (tmp_path / "arena.h").write_text(text)
    (tmp_path / "arena.c").write_text('#define ARENAPLAN_DEFINE_ARENAS\n#include "arena.h"\n')
    subprocess.run([*C_FLAGS, "-c", "arena.c"], check=True, cwd=tmp_path)
    (tmp_path / "use.cc").write_text('#define ARENAPLAN_DEFINE_ALLOCATOR\n#include "arena.h"\n')
    run = subprocess.run(
        [*CXX_FLAGS, "-fsyntax-only", "use.cc"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode != 0 and "TablePlanner" in run.stderr
    one = firmware_header(model, plan, "kws", "arm32", ".dtcm", None, split)
    assert "arenaplan_create_allocator(\n    tflite::MicroMemoryPlanner* planner)" in one


def test_header_compiles_against_tflm(tmp_path: Path, tflm_headers) -> None:
    """Both layouts, with TFLM's own micro_allocator.h: one arena defined here with the
    model check, two arenas declared (defined elsewhere)."""
    _, planned, plan = _planned("mlcommons-tiny__vww_96_int8")
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    sources = []
    for layout, persistent, defines in (
        ("one", None, "ARENAPLAN_DEFINE_ARENAS ARENAPLAN_DEFINE_MODEL_CHECK"),
        ("two", ".ext", ""),
    ):
        folder = tmp_path / layout
        folder.mkdir()
        header = firmware_header(
            model, plan, "vww", "arm32", ".sram", persistent, planned_model=planned
        )
        (folder / "arena.h").write_text(header)
        lines = [f"#define {d}" for d in defines.split()]
        (folder / "use.cc").write_text(
            "\n".join(
                [
                    *lines,
                    "#define ARENAPLAN_DEFINE_ALLOCATOR",
                    '#include "arena.h"',
                    "tflite::MicroAllocator* make() { return arenaplan_create_allocator(); }",
                    "",
                ]
            )
        )
        sources.append(folder / "use.cc")
    tflm_headers.syntax_check(*sources)  # each finds its arena.h beside it
    print(f"TFLM headers extracted in {tflm_headers.seconds:.2f} s")


def test_header_options_are_checked(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    h = tmp_path / "a.h"
    assert main(["plan", str(src), "--header", str(h), "--persistent-memory", "x"]) == 2
    assert re.search("needs? --target", capsys.readouterr().err)
    argv = ["plan", str(src), "--header", str(h), "--target", "xcore_ai"]
    assert main([*argv, "--persistent-memory", "flash"]) == 2
    assert "may not hold persistent data" in capsys.readouterr().err
    assert not h.exists()


def test_header_follows_the_persistent_advice(tmp_path: Path) -> None:
    """With a target and no --persistent-memory, two arenas only when one does not fit."""
    src = model_path("mlcommons-tiny__vww_96_int8")
    roomy, tight = tmp_path / "roomy.h", tmp_path / "tight.h"
    assert main(["plan", str(src), "-q", "--target", "imxrt1170", "--header", str(roomy)]) == 0
    assert "arenaplan_arena[" in roomy.read_text()
    argv = ["plan", str(src), "-q", "--target", "imxrt1170", "--memory", "tcm=64KiB"]
    assert main([*argv, "--header", str(tight)]) == 0
    text = tight.read_text()
    assert "arenaplan_persistent[" in text and 'section(".ocram")' in text
    assert re.search(r"#define ARENAPLAN_PERSISTENT_BYTES \d+u", text)


@pytest.mark.parametrize(
    ("target", "profile", "kernels"),
    [("esp32s3", "int32", "reference"), ("imxrt1170", "arm32", "cmsis_nn+dsp")],
)
def test_header_takes_the_targets_build_profile(
    tmp_path: Path, target: str, profile: str, kernels: str
):
    """The test drive found arm32 sizes in an ESP32-S3 header (its profile is int32).
    The target's kernels size it too (the i.MX RT1170's Cortex-M7 runs CMSIS-NN)."""
    src = model_path("mlcommons-tiny__vww_96_int8")
    header = tmp_path / "arena.h"
    assert main(["plan", str(src), "-q", "--target", target, "--header", str(header)]) == 0
    text = header.read_text()
    assert f'#define ARENAPLAN_PROFILE "{profile}"' in text
    tail = predict_tail(read_model(src), profile, kernels=kernels)
    assert f"#define ARENAPLAN_TAIL_BYTES {tail}u" in text
    assert (f'#define ARENAPLAN_KERNELS "{kernels}"' in text) == (kernels != "reference")
    explicit = tmp_path / "pypi.h"
    argv = ["plan", str(src), "-q", "--target", target, "--profile", "pypi"]
    assert main([*argv, "--header", str(explicit)]) == 0
    assert '#define ARENAPLAN_PROFILE "pypi"' in explicit.read_text()
