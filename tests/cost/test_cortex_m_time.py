"""The Cortex-M time model: CMSIS-NN's instructions by class (measured under QEMU,
fitted per kernel path), each core's cycles per class, and the board targets."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from testkit import model_path

from arenaplan.cli import main
from arenaplan.cost.roofline import default_memory
from arenaplan.cost.timing import Timer, time_model_label
from arenaplan.errors import TargetError
from arenaplan.reader import read_model_bytes
from arenaplan.targets import load_builtin
from arenaplan.targets.cores import CORES, core_named, data_accesses
from arenaplan.targets.load import parse_target
from arenaplan.tflm.cmsis_nn.paths import FEATURES, kernel_call
from arenaplan.tflm.kernel_counts import build_name, op_counts

BOARDS = ("stm32l4r5", "stm32h7a3", "ra6m4", "corstone300", "ra8d1")
TABLE = json.loads(
    resources.files("arenaplan.tflm").joinpath("data/kernel_counts.json").read_text()
)
MLPERF = ("kws_ref_model", "vww_96_int8", "pretrainedResnet_quant", "ad01_int8")


def _model(name: str):
    return read_model_bytes(model_path(f"mlcommons-tiny__{name}").read_bytes())


def test_paths_follow_the_cmsis_nn_wrappers() -> None:
    m = _model("kws_ref_model")
    sg = m.subgraphs[0]
    paths = [kernel_call(sg, op, "dsp").path for op in sg.operators]
    assert paths[0] == "conv" and "dw_3x3" in paths and "conv_1x1" in paths
    assert [kernel_call(sg, op, "mve").path for op in sg.operators].count("dw_3x3") == 0
    assert "fc" in paths and "softmax" in paths and "avg_pool" in paths


@pytest.mark.parametrize("build", sorted(TABLE["builds"]))
def test_the_table_is_the_fit_of_its_samples(build: str) -> None:
    """Every path's total reproduces its own measured cases within the worst residual
    the table records, and that residual stays under 60% (the worst: a one-channel
    10x4 convolution on MVE, which the im2col features fit least)."""
    doc = TABLE["builds"][build]
    assert TABLE["features"] == list(FEATURES)
    for path, row in doc["paths"].items():
        coef = np.array(row["classes"]["insns"])
        cases = [s for s in doc["samples"] if s["path"] == path]
        assert len(cases) == row["cases"] > 0
        for s in cases:
            err = abs(coef @ np.array(s["features"]) / s["counts"]["insns"] - 1)
            assert err <= row["worst"] + 1e-3
        assert row["worst"] < 0.6, (build, path)


def test_classes_add_up_to_the_instructions() -> None:
    for build in TABLE["builds"].values():
        for s in build["samples"]:
            c = s["counts"]
            parts = sum(v for k, v in c.items() if k not in ("insns", "multi_regs", "taken"))
            assert parts == c["insns"], s["case"]


def test_core_cycles_follow_the_classes() -> None:
    m4 = core_named("cortex-m4")
    counts = {"alu": 10, "load": 4, "load_next": 2, "taken": 3, "branch": 3, "mul": 5}
    assert m4.cycles(counts) == 10 + 8 + 2 + 3 * 3 + 5  # TRM: LDR 2, pipelined 1, B 1+P
    m55 = core_named("cortex-m55")
    assert m55.cycles({"vload": 10, "vop": 30}) == 60  # dual-beat, loads overlapped
    assert data_accesses({"load": 1, "load_next": 2, "store": 3, "vload": 4, "multi_regs": 9}) == 10
    with pytest.raises(TargetError, match="unknown core"):
        core_named("cortex-m3")


@pytest.mark.parametrize("board", BOARDS)
def test_board_targets_name_core_sources_and_label(board: str) -> None:
    t = load_builtin(board)
    assert t.core in CORES and t.sources
    assert t.kernels.level == core_named(t.core).level
    label = time_model_label(t)
    assert "measured under QEMU" in label and t.core in label
    assert ("assumed" in label) == bool(core_named(t.core).assumed)


def test_a_core_needs_its_kernels() -> None:
    sram = {"name": "sram", "capacity": 1024, "read_bandwidth": 1e8, "write_bandwidth": 1e8,
            "latency": 0, "holds": ["activations"]}  # fmt: skip
    data = {"name": "x", "clock_hz": 1e8, "kernels": "cmsis_nn+dsp", "core": "cortex-m55",
            "memory": [sram]}  # fmt: skip
    with pytest.raises(TargetError, match=r"cmsis_nn\+mve"):
        parse_target(data, "t.toml")
    with pytest.raises(TargetError, match="unknown core"):
        parse_target(data | {"core": "z80"}, "t.toml")


def test_flash_wait_states_and_a_slower_arena_cost_time() -> None:
    """The same model is slower with its arena in SRAM than in the RA8D1's DTCM, and
    every board's estimate grows with the flash's wait states."""
    from dataclasses import replace

    m = _model("kws_ref_model")
    t = load_builtin("ra8d1")
    fast = sum(x.seconds for x in Timer(m, t).times(default_memory(m, t)))
    slow = sum(x.seconds for x in Timer(m, t, "sram").times(default_memory(m, t, "sram")))
    assert slow > fast > 0
    flash = t.memory("flash")
    memories = tuple(replace(x, latency=0) if x is flash else x for x in t.memories)
    quick = replace(t, memories=memories)
    assert sum(x.seconds for x in Timer(m, quick).times(default_memory(m, quick))) < fast


def test_plan_prints_the_core_label(capsys) -> None:
    src = model_path("mlcommons-tiny__ad01_int8")
    assert main(["plan", str(src), "--target", "ra6m4"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cortex-m33 cycles per class (assumed)" in out and "measured under QEMU" in out


def _qemu_or_skip(variant: str) -> None:
    from arenaplan.tflm.verify.instructions import instructions_available

    why = instructions_available(variant)
    if why is not None:
        pytest.skip(why)


@pytest.mark.parametrize("level", ["dsp", "mve"])
def test_counts_reproduce_under_qemu(level: str) -> None:
    """Two of the table's cases, counted again by class, give the stored counts."""
    import sys

    from arenaplan.tflm.verify.instructions import invoke_classes

    variant = build_name(level)
    _qemu_or_skip(variant)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from gen_kernel_counts import cases

    stored = {s["case"]: s["counts"] for s in TABLE["builds"][variant]["samples"]}
    picked = dict(list(cases())[::40])
    for name, data in picked.items():
        assert invoke_classes(data, 0, variant) == stored[name], name


@pytest.mark.parametrize("level", ["dsp", "mve"])
@pytest.mark.parametrize("name", MLPERF)
def test_held_out_networks_within_15_percent(level: str, name: str) -> None:
    """The table predicts the instructions of a whole invoke of networks it was not
    fitted on (MLPerf Tiny's) within 15% of a count under QEMU."""
    from arenaplan.tflm.verify.instructions import invoke_instructions

    variant = build_name(level)
    _qemu_or_skip(variant)
    predicted = sum(c["insns"] for c in op_counts(_model(name), level))
    counted = invoke_instructions(model_path(f"mlcommons-tiny__{name}").read_bytes(), 0, variant)
    assert abs(predicted / counted - 1) < 0.15


def test_an_unmeasured_operator_is_timed_by_the_rates() -> None:
    """A custom operator (arenaplan's cascade, say) has no measured path: its counts
    are None and the target's compute rate times it, not a stand-in's counts."""
    from kits.opmodels import I8, Net

    from arenaplan.cost.roofline import work_cycles
    from arenaplan.cost.timing import op_cycles

    n = Net("custom")
    x, y = n.act((1, 8, 8, 4), I8), n.act((1, 8, 8, 4), I8)
    n.custom("MY_OP", [x], [y])
    m = read_model_bytes(n.done([x], [y]))
    assert op_counts(m, "dsp") == [None]
    t = load_builtin("stm32l4r5")
    timer = Timer(m, t)
    assert timer.counts == [None]
    c = op_cycles(timer.accesses[0], default_memory(m, t), timer.persistent, t, None)
    op = timer.work[0]
    assert c.compute == work_cycles(t, op.kind, op.opcode, op.macs, op.parts)


def test_a_target_compiled_for_size_counts_the_size_build() -> None:
    """``compiled_for = "size"`` times the kernels as the -Os build counted them; a
    kernel set with no such build is refused in one line."""
    from dataclasses import replace

    t = load_builtin("stm32l4r5")
    size = replace(t, compiled_for="size")
    m = _model("kws_ref_model")
    speed_counts, size_counts = Timer(m, t).counts, Timer(m, size).counts
    assert speed_counts is not None and size_counts is not None
    assert size_counts != speed_counts
    assert op_counts(m, "dsp", "size") == size_counts
    data = {"name": "x", "clock_hz": 1e8, "kernels": "cmsis_nn+mve", "core": "cortex-m55",
            "compiled_for": "size", "memory": [{"name": "sram", "capacity": 1024,
            "read_bandwidth": 1e8, "write_bandwidth": 1e8, "latency": 0,
            "holds": ["activations"]}]}  # fmt: skip
    with pytest.raises(TargetError, match="compiled for size"):
        parse_target(data, "t.toml")
    with pytest.raises(TargetError, match="compiled_for must be one of"):
        parse_target(data | {"compiled_for": "fast"}, "t.toml")
