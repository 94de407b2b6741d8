"""The generated MicroMemoryPlanner compiles and answers TFLM's calls from its table.

Compiled with g++ against a minimal declaration of TFLM's MicroMemoryPlanner
interface (micro_memory_planner.h's virtual methods), not against TFLM itself;
a small driver makes the calls TFLM's allocator makes and checks the addresses.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.cli import main
from arenaplan.placement.buffers import arena_items
from arenaplan.placement.tiers import place_tiers
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin

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


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")
def test_planner_answers_from_its_table(tmp_path: Path) -> None:
    src = model_path("tflite-micro__keyword_scrambled")
    out = tmp_path / "planner.h"
    assert (
        main(
            [
                "plan",
                str(src),
                "-q",
                "--target",
                "imxrt1170",
                "--memory",
                "tcm=640",
                "--planner-cpp",
                str(out),
            ]
        )
        == 0
    )
    model = read_model(src)
    items = arena_items(model)
    placement = place_tiers(model, load_builtin("imxrt1170"), {"tcm": 640})
    iface = tmp_path / "tensorflow/lite/micro/memory_planner/micro_memory_planner.h"
    iface.parent.mkdir(parents=True)
    iface.write_text(INTERFACE)
    calls, checks = [], []
    for k, (key, b) in enumerate(zip(items.tensors, items.tensor_buffers, strict=True)):
        calls.append(f"ok &= p.AddBuffer({b.size}, {b.first}, {b.last}) == kTfLiteOk;")
        base = "arena" if placement.memory_of[key] == "tcm" else "arenaplan_ocram"
        checks.append(f"ok &= at({k}) == {base} + {placement.offsets[key]};")
    n = len(items.tensors)
    for k, b in enumerate(items.scratch_buffers):
        calls.append(f"ok &= p.AddBuffer({b.size}, {b.first}, {b.last}) == kTfLiteOk;")
        checks.append(f"ok &= at({n + k}) == arena + {placement.scratch_offsets[k]};")
    driver = tmp_path / "driver.cc"
    driver.write_text(f"""#define ARENAPLAN_DEFINE_ARENAS
#include "planner.h"
#include <stdio.h>
static uint8_t arena[4096];
static arenaplan::TablePlanner p(arena);
static uint8_t* at(int i) {{ int off = 0; p.GetOffsetForBuffer(i, &off); return arena + off; }}
int main() {{
  bool ok = true;
  {" ".join(calls)}
  ok &= p.AddBuffer(16, 0, 0) == kTfLiteError;  /* one buffer too many: refused */
  {" ".join(checks)}
  ok &= p.GetMaximumMemorySize() == {placement.heights["tcm"]}u;
  printf(ok ? "ok\\n" : "FAILED\\n");
  return ok ? 0 : 1;
}}
""")
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-Wall",
            "-Werror",
            "-I",
            str(tmp_path),
            str(driver),
            "-o",
            str(tmp_path / "driver"),
        ],
        check=True,
        cwd=tmp_path,
    )
    run = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stdout == "ok\n"


def test_planner_cpp_needs_a_target(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    assert main(["plan", str(src), "--planner-cpp", str(tmp_path / "p.h")]) == 2
    assert "--planner-cpp needs --target" in capsys.readouterr().err
