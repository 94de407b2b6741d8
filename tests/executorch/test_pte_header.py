"""``plan model.pte --header``: the pools and the method allocator for firmware. The
header compiles as C; a firmware-like program built against ExecuTorch's wheel
(``data/firmware_main.cc``) runs the planned program from the header's arrays, with
a method allocator of exactly the predicted bytes, and fails with fewer."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kits.pte import need_runtime, pte_path

from arenaplan.cli import main
from arenaplan.executorch import native
from arenaplan.executorch.runtime import PROFILES, RUNTIME
from arenaplan.pipeline import PlanRequest, Wanted, read_source, run_plan
from arenaplan.reader.pte_format import read_program
from arenaplan.targets.load import load_builtin

FIRMWARE = Path(__file__).with_name("data") / "firmware_main.cc"
HOST = next(p for p in PROFILES if p.pointer_bytes == 8)


def _compile_c(tmp_path: Path, header: Path) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("no gcc here")
    probe = tmp_path / "probe.c"
    probe.write_text(
        f'#define ARENAPLAN_DEFINE_POOLS\n#include "{header}"\nint main(void) {{ return 0; }}\n'
    )
    subprocess.run(
        ["gcc", "-Wall", "-Werror", "-c", str(probe), "-o", str(tmp_path / "probe.o")], check=True
    )


def test_the_header_of_a_spread_program_names_each_pool_in_its_section(tmp_path: Path) -> None:
    out, header = tmp_path / "cnn.planned.pte", tmp_path / "cnn.h"
    args = ["plan", str(pte_path("cnn")), "--target", "imxrt1170", "--memory", "tcm=32KiB"]
    assert main([*args, "-o", str(out), "--header", str(header), "-q"]) == 0
    text = header.read_text()
    pools = read_program(out.read_bytes()).plans[0].pools
    assert f"#define ARENAPLAN_POOL_1_BYTES {pools[1]}u" in text
    assert f"#define ARENAPLAN_POOL_2_BYTES {pools[2]}u" in text
    assert '__attribute__((aligned(16), section(".dtcm")))\nuint8_t arenaplan_pool_1' in text
    assert '__attribute__((aligned(16), section(".ocram")))\nuint8_t arenaplan_pool_2' in text
    assert "#define ARENAPLAN_METHOD_ALLOCATOR_BYTES 1788u" in text  # arm32's prediction
    _compile_c(tmp_path, header)


def _firmware(tmp_path: Path, header: Path, short: int) -> Path:
    folder = native.wheel_dir()
    exe = tmp_path / f"firmware{short}"
    command = native.build_command(folder, exe, FIRMWARE)  # type: ignore[arg-type]
    command[1:1] = [f'-DARENAPLAN_HEADER="{header}"', f"-DARENAPLAN_SHORT={short}"]
    subprocess.run(command, check=True, capture_output=True, timeout=native.TIMEOUT)
    return exe


@pytest.mark.parametrize("name", ["cnn", "unet"])
def test_firmware_runs_from_the_header_with_the_predicted_method_allocator(
    tmp_path: Path, name: str
) -> None:
    need_runtime()
    source = read_source(pte_path(name))
    request = PlanRequest(
        source, target=load_builtin("imxrt1170"), caps={"tcm": 32768}, outputs=Wanted(model=True)
    )
    done = run_plan(request)
    planned = tmp_path / f"{name}.pte"
    planned.write_bytes(done.files["model"])
    header = tmp_path / f"{name}.h"
    text = RUNTIME.header(
        done.model, done.plan, planned.name, HOST, ("", "", ""), None, done.files["model"]
    )
    header.write_text(text)
    exact = subprocess.run(
        [_firmware(tmp_path, header, 0), planned, "forward"], capture_output=True, text=True
    )
    assert exact.returncode == 0, exact.stderr
    short = subprocess.run(
        [_firmware(tmp_path, header, 8), planned, "forward"], capture_output=True, text=True
    )
    assert short.returncode == 1 and "load_method" in short.stderr
