"""Targets as data: built-in TOML files load, bad files get one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenaplan.cli import main
from arenaplan.errors import TargetError
from arenaplan.targets import builtin_names, load_builtin, load_target

GOOD = """
name = "mine"
clock_hz = 100e6
[compute]
conv = 0.5
[[memory]]
name = "sram"
capacity = "256KiB"
read_bandwidth = 400e6
write_bandwidth = 400e6
latency = 1
holds = ["activations", "persistent"]
[[memory]]
name = "flash"
capacity = 1048576
read_bandwidth = 50e6
write_bandwidth = 0
latency = 10
holds = ["weights"]
"""


def test_builtin_targets_load_with_their_figures() -> None:
    assert builtin_names() == [
        "corstone300",
        "cortex_m55_ethos_u55",
        "esp32s3",
        "generic",
        "imxrt1170",
        "ra6m4",
        "ra8d1",
        "stm32h7a3",
        "stm32l4r5",
        "xcore_ai",
    ]
    rt = load_builtin("imxrt1170")
    assert [m.name for m in rt.memories] == ["tcm", "ocram", "hyperram", "flash"]
    assert rt.memory("tcm").capacity == 512 * 1024 and rt.memory("tcm").read_bandwidth == 8e9
    assert rt.memory("ocram").read_bandwidth == 2e9
    assert rt.memory("hyperram").write_bandwidth == 0.1e9
    xcore = load_builtin("xcore_ai")
    assert xcore.memory("sram").capacity == 512 * 1024
    assert xcore.memory("lpddr").section == ".ExtMem.bss"
    assert load_builtin("generic").rate("conv") == 0.25
    assert load_builtin("generic").rate("unheard_of") == 0.2  # the default rate
    assert load_builtin("esp32s3").profile.name == "int32"  # Xtensa: int-sized enums


def test_targets_name_the_kernels_their_firmware_runs(tmp_path: Path) -> None:
    """Cortex-M targets run CMSIS-NN at their core's level; the others, and a file
    that says nothing, the reference kernels."""
    kernels = {name: load_builtin(name).kernels.name for name in builtin_names()}
    assert kernels == {
        "cortex_m55_ethos_u55": "cmsis_nn+mve",
        "esp32s3": "reference",
        "generic": "cmsis_nn+dsp",
        "imxrt1170": "cmsis_nn+dsp",
        "xcore_ai": "reference",
        "corstone300": "cmsis_nn+mve",
        "ra6m4": "cmsis_nn+dsp",
        "ra8d1": "cmsis_nn+mve",
        "stm32h7a3": "cmsis_nn+dsp",
        "stm32l4r5": "cmsis_nn+dsp",
    }
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    assert load_target(path).kernels.name == "reference"
    path.write_text(GOOD.replace("clock_hz = 100e6", 'clock_hz = 100e6\nkernels = "cmsis_nn"'))
    assert load_target(path).kernels.name == "cmsis_nn"


def test_a_users_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    t = load_target(path)
    assert t.memory("sram").capacity == 262144 and t.memory("flash").capacity == 1048576
    assert t.rate("conv") == 0.5


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("clock_hz = 100e6", "clock_hz = -1"), "clock_hz must be positive"),
        (('capacity = "256KiB"', 'capacity = "lots"'), "'lots' is not a size"),
        (('holds = ["activations", "persistent"]', 'holds = ["cats"]'), "holds must list"),
        (("latency = 1\n", "latency = 1\ncolour = 3\n"), "unknown key(s) colour"),
        (('name = "flash"', 'name = "sram"'), "memory names repeat"),
        (("write_bandwidth = 400e6", "write_bandwidth = 0"), "write_bandwidth must be positive"),
        (("[compute]", "[compute\n"), "not valid TOML"),
        (("clock_hz = 100e6", 'clock_hz = 100e6\ntflm_profile = "x86"'), "tflm_profile must be"),
        (('name = "flash"', 'name = "ext-ram"'), "letters, digits and _"),
        (('name = "flash"', 'name = "flash"\nsection = ".x\\" */"'), "not a linker section"),
        (("clock_hz = 100e6", 'clock_hz = 100e6\nkernels = "cmsis"'), "kernels must be one of"),
        (("latency = 1\n", "latency = nan\n"), "latency must be finite"),
        (("clock_hz = 100e6", "clock_hz = 1e400"), "clock_hz must be finite and at most 1e+11"),
        (("clock_hz = 100e6", "clock_hz = 1e12"), "clock_hz must be finite and at most 1e+11"),
        (("conv = 0.5", "conv = inf"), "conv must be finite"),
        (("latency = 1\n", "latency = 1\nline_bytes = 0\n"), "a size must be positive"),
        (("clock_hz = 100e6", "clock_hz = 1e-300"), "clock_hz must be at least 1000"),
        (("conv = 0.5", "conv = 1e-300"), "conv must be at least 1e-06"),
        (("conv = 0.5", "conv = 2e6"), "conv must be finite and at most 1e+06"),
        (("conv = 0.5", '"" = 0.5'), "'' is not an opcode or operator kind"),
        (("latency = 10\n", "latency = 2e6\n"), "latency must be finite and at most 1e+06"),
        (("latency = 1\n", "latency = 1\ncopy_latency = 1e7\n"), "copy_latency must be"),
        (('capacity = "256KiB"', "capacity = 99999999999999999999"), "capacity must be at most"),
        (('capacity = "256KiB"', 'capacity = "5GiB"'), "capacity must be at most 4,294,967,296"),
        (("latency = 1\n", 'latency = 1\ncache_bytes = "8GiB"\n'), "cache_bytes must be at"),
        (("read_bandwidth = 50e6", "read_bandwidth = 1e-300"), "read_bandwidth must be at least"),
        (("latency = 1\n", "latency = 1\ncopy_rate = 0.5\n"), "copy_rate must be at least 1,"),
        (
            ("latency = 1\n", "latency = 1\ncache_bytes = 64\nline_bytes = 128\n"),
            "line_bytes 128 is larger than cache_bytes 64",
        ),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(*edit, 1))
    with pytest.raises(TargetError) as info:
        load_target(path)
    assert message in str(info.value) and str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_targets_file_with_an_infinite_rate_is_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "inf.toml"
    path.write_text(GOOD.replace("conv = 0.5", "conv = inf"))
    assert main(["targets", "--file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[compute]: conv must be finite" in err and str(path) in err


def test_targets_command(tmp_path: Path, capsys) -> None:
    assert main(["targets"]) == 0
    assert "xcore_ai" in capsys.readouterr().out
    assert main(["targets", "esp32s3"]) == 0
    assert "psram" in capsys.readouterr().out
    assert main(["targets", "nope"]) == 2
    assert "unknown target 'nope'" in capsys.readouterr().err
    bad = tmp_path / "t.toml"
    bad.write_text('name = "x"\n')
    assert main(["targets", "--file", str(bad)]) == 2
    assert "needs at least one [[memory]]" in capsys.readouterr().err
