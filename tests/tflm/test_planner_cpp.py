"""The generated MicroMemoryPlanner compiles and answers TFLM's calls from its table.

A small driver makes the calls TFLM's allocator makes and checks the addresses;
it is built with g++ against a minimal declaration of TFLM's MicroMemoryPlanner
interface (micro_memory_planner.h's virtual methods), so it runs without TFLM.
The planner is also syntax-checked against TFLM's real headers, with the arena
header's allocator taking it (``conftest.tflm_headers``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.analysis.buffers import arena_items
from arenaplan.cli import main
from arenaplan.placement import PlanOptions, plan_model
from arenaplan.placement.tiers import place_tiers
from arenaplan.reader import load_model, read_model
from arenaplan.targets import load_builtin
from arenaplan.tflm.firmware import firmware_header
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.planner_cpp import planner_source, split_persistent

INTERFACE = """
#pragma once
#include <stddef.h>
typedef enum { kTfLiteOk = 0, kTfLiteError = 1 } TfLiteStatus;
namespace tflite {
class MicroMemoryPlanner {
 public:
  virtual ~MicroMemoryPlanner() {}
  virtual TfLiteStatus AddBuffer(int size, int first, int last) = 0;
  virtual TfLiteStatus AddBuffer(int size, int first, int last, int offline) {
    return kTfLiteError;
  }
  virtual size_t GetMaximumMemorySize() = 0;
  virtual int GetBufferCount() = 0;
  virtual TfLiteStatus GetOffsetForBuffer(int index, int* offset) = 0;
  virtual bool preserves_all_tensors() const = 0;
};
}
"""

LOG = """
#pragma once
#include <stdio.h>
#define MicroPrintf(...) (fprintf(stderr, __VA_ARGS__), fprintf(stderr, "\\n"))
"""

# The keyword model with 640 B of TCM on the i.MX RT1170: its first tensor goes to OCRAM.
MODEL, TARGET, CAPS = "tflite-micro__keyword_scrambled", "imxrt1170", {"tcm": 640}

# The arena TFLM gets: a static array beside the planner's static arrays, or a
# large heap block (mmap'd far from them on a 64-bit host: more than 2 GiB away,
# so the distance to an OCRAM buffer does not fit TFLM's int offset).
ARENAS = {
    "static": "static uint8_t static_arena[4096];\nstatic uint8_t* make_arena() "
    "{ return static_arena; }",
    "heap": "#include <stdlib.h>\nstatic uint8_t* make_arena() "
    "{ return (uint8_t*)malloc(64u << 20); }",
}


@pytest.mark.skipif(
    shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)"
)
@pytest.mark.parametrize("arena", sorted(ARENAS))
def test_planner_answers_from_its_table(tmp_path: Path, arena: str) -> None:
    """Each buffer at its planned address, or kTfLiteError where the distance from
    the arena does not fit an int (before the check, a truncated offset: TFLM would
    write through a wild pointer)."""
    src = model_path(MODEL)
    out = tmp_path / "planner.h"
    argv = ["plan", str(src), "-q", "--target", TARGET, "--memory", "tcm=640"]
    assert main([*argv, "--planner-cpp", str(out)]) == 0
    model, target = read_model(src), load_builtin(TARGET)
    items = arena_items(model, kernels=target.kernels)  # the planner is for the target's
    placement = place_tiers(model, target, CAPS, kernels=target.kernels)
    _interface(tmp_path)
    calls, checks = [], []
    for k, (key, b) in enumerate(zip(items.tensors, items.tensor_buffers, strict=True)):
        calls.append(f"ok &= p.AddBuffer({b.size}, {b.first}, {b.last}) == kTfLiteOk;")
        base = "arena" if placement.memory_of[key] == "tcm" else "arenaplan_ocram"
        checks.append(f"ok &= placed(p, arena, {k}, {base} + {placement.offsets[key]});")
    n = len(items.tensors)
    for k, b in enumerate(items.scratch_buffers):
        calls.append(f"ok &= p.AddBuffer({b.size}, {b.first}, {b.last}) == kTfLiteOk;")
        checks.append(f"ok &= placed(p, arena, {n + k}, arena + {placement.scratch_offsets[k]});")
    assert "arenaplan_ocram" in " ".join(checks)
    driver = tmp_path / "driver.cc"
    driver.write_text(f"""#define ARENAPLAN_DEFINE_ARENAS
#include "planner.h"
#include <limits.h>
#include <stdio.h>
{ARENAS[arena]}
static bool far_apart = false;
/* Buffer i at its address, or refused when its distance from the arena does not
   fit an int. */
static bool placed(arenaplan::TablePlanner& p, uint8_t* arena, int i, uint8_t* where) {{
  const intptr_t d = (intptr_t)((uintptr_t)where - (uintptr_t)arena);
  const bool fits = d >= INT_MIN && d <= INT_MAX;
  far_apart |= !fits;
  int off = 0;
  const TfLiteStatus s = p.GetOffsetForBuffer(i, &off);
  return fits ? s == kTfLiteOk && arena + off == where : s == kTfLiteError;
}}
int main() {{
  uint8_t* arena = make_arena();
  if (arena == NULL) return 2;
  arenaplan::TablePlanner p(arena, 4096);
  bool ok = true;
  {" ".join(calls)}
  ok &= p.AddBuffer(16, 0, 0) == kTfLiteError;  /* one buffer too many: refused */
  {" ".join(checks)}
  ok &= p.GetMaximumMemorySize() == {placement.heights["tcm"]}u;
  printf("%s%s\\n", ok ? "ok" : "FAILED", far_apart ? " far" : "");
  return ok ? 0 : 1;
}}
""")
    subprocess.run(
        ["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(tmp_path), str(driver), "-o", "driver"],
        check=True,
        cwd=tmp_path,
    )
    run = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True, check=False)
    if arena == "heap" and run.stdout == "ok\n":
        pytest.skip("malloc put the arena within 2 GiB of the static arrays: nothing to refuse")
    assert run.returncode == 0 and run.stdout == ("ok far\n" if arena == "heap" else "ok\n")


def _interface(folder: Path) -> None:
    """TFLM's MicroMemoryPlanner interface and MicroPrintf, declared minimally."""
    micro = folder / "tensorflow/lite/micro"
    (micro / "memory_planner").mkdir(parents=True)
    (micro / "memory_planner/micro_memory_planner.h").write_text(INTERFACE)
    (micro / "micro_log.h").write_text(LOG)


@pytest.mark.skipif(
    shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)"
)
@pytest.mark.parametrize("short", ["fast", "ocram"])
def test_planner_refuses_an_array_smaller_than_its_plan(tmp_path: Path, short: str) -> None:
    """An array 16 bytes short of what the table puts in it (the fast one given to the
    planner, or the OCRAM one) is refused at the first buffer, naming the memory:
    before the check, TFLM ran and wrote past the array's end."""
    src = model_path(MODEL)
    argv = ["plan", str(src), "-q", "--target", TARGET, "--memory", "tcm=640"]
    assert main([*argv, "--planner-cpp", str(tmp_path / "planner.h")]) == 0
    _interface(tmp_path)
    fast_less, ocram_less = (16, 0) if short == "fast" else (0, 16)
    driver = tmp_path / "driver.cc"
    driver.write_text(f"""#define ARENAPLAN_DEFINE_ARENAS
#include "planner.h"
static uint8_t arena[4096];
int main() {{
  const arenaplan::Array others[] = {{
      {{arenaplan_ocram, arenaplan::kNeededBytes[1] - {ocram_less}}}}};
  arenaplan::TablePlanner p(arena, arenaplan::kNeededBytes[0] - {fast_less}, others);
  const TfLiteStatus first = p.AddBuffer(16, 0, 0);
  printf("%d %d\\n", first == kTfLiteError, p.GetBufferCount());
  return 0;
}}
""")
    subprocess.run(
        ["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(tmp_path), str(driver), "-o", "driver"],
        check=True,
        cwd=tmp_path,
    )
    run = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True, check=True)
    assert run.stdout == "1 0\n"
    memory = "tcm" if short == "fast" else "ocram"
    assert f"arenaplan: the {memory} array has" in run.stderr and "the plan needs" in run.stderr


def _split() -> tuple[str, str]:
    """The arena header and the planner of the keyword model over TCM and OCRAM."""
    data, model = load_model(model_path(MODEL))
    plan = plan_model(model, PlanOptions())
    target = load_builtin(TARGET)
    placement = place_tiers(model, target, CAPS)
    head = placement.heights["tcm"]
    assert head < plan.arena  # the plan spans two memories
    planned = with_offline_plan(data, plan.tensor_offsets)
    header = firmware_header(
        model, plan, MODEL, "arm32", ".dtcm", None, head, planned_model=planned
    )
    return header, planner_source(model, placement, target, MODEL)


def test_planner_compiles_against_tflm(tmp_path: Path, tflm_headers) -> None:
    """The planner overrides TFLM's own MicroMemoryPlanner (included by itself, first),
    and the arena header of the same split plan hands it to MicroAllocator::Create."""
    header, planner = _split()
    assert "arenaplan_create_allocator(\n    tflite::MicroMemoryPlanner* planner)" in header
    (tmp_path / "arena.h").write_text(header)
    (tmp_path / "planner.h").write_text(planner)
    use = tmp_path / "use.cc"
    use.write_text(
        """#define ARENAPLAN_DEFINE_ARENAS
#define ARENAPLAN_DEFINE_ALLOCATOR
#include "planner.h"
#include "arena.h"
static arenaplan::TablePlanner planner(arenaplan_arena, sizeof(arenaplan_arena));
tflite::MicroAllocator* make() { return arenaplan_create_allocator(&planner); }
"""
    )
    tflm_headers.syntax_check(use)


def test_planner_source_is_deterministic(tmp_path: Path) -> None:
    """The same input gives the same text: twice in this process, and through the
    command line in two processes with different string hashing."""
    assert _split() == _split()
    outputs = []
    for seed in ("0", "1"):
        folder = tmp_path / seed
        folder.mkdir()
        argv = ["plan", str(model_path(MODEL)), "-q", "--target", TARGET, "--memory", "tcm=640"]
        argv += ["--json", str(folder / "plan.json"), "--planner-cpp", str(folder / "planner.h")]
        code = "import sys; from arenaplan.cli import main; sys.exit(main(sys.argv[1:]))"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", code, *argv], check=True, env=env)
        outputs.append([(folder / f).read_bytes() for f in ("plan.json", "planner.h")])
    assert outputs[0] == outputs[1]


def test_no_header_for_a_spread_plan_with_two_arenas(tmp_path: Path, capsys) -> None:
    """One arena header cannot hold a spread plan with the tail apart: refused before
    writing, pointing to the split arena of --planner-cpp."""
    argv = ["plan", str(model_path(MODEL)), "--target", TARGET, "--memory", "tcm=640"]
    assert main([*argv, "--header", str(tmp_path / "arena.h")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ARENAPLAN_SPLIT_ARENA" in err
    assert list(tmp_path.iterdir()) == []


def test_planner_cpp_needs_a_target(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    assert main(["plan", str(src), "--planner-cpp", str(tmp_path / "p.h")]) == 2
    assert "--planner-cpp needs --target" in capsys.readouterr().err


@pytest.mark.parametrize("profile", ["arm32", "pypi"])
def test_planner_cpp_follows_the_profile_and_names_its_kernels(
    tmp_path: Path, profile: str
) -> None:
    """``--planner-cpp`` sizes the persistent array for ``--profile`` (a 64-bit one for a
    host build) and the table for the plan's kernels, and says both."""
    out = tmp_path / "planner.h"
    argv = ["plan", str(model_path(MODEL)), "-q", "--target", TARGET, "--memory", "tcm=640"]
    assert main([*argv, "--profile", profile, "--planner-cpp", str(out)]) == 0
    model, target = read_model(model_path(MODEL)), load_builtin(TARGET)
    placement = place_tiers(model, target, CAPS, kernels=target.kernels)
    assert out.read_text() == planner_source(model, placement, target, MODEL + ".tflite", profile)
    text = out.read_text()
    assert f'#define ARENAPLAN_PROFILE "{profile}"' in text
    assert f'#define ARENAPLAN_KERNELS "{target.kernels}"' in text
    persistent = split_persistent(model, profile, target.kernels)
    assert f"kTailBytes = {persistent.tail};" in text
