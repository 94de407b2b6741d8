"""Work per operator and the roofline estimate."""

from __future__ import annotations

import pytest
from testkit import model_path

from arenaplan.cost.roofline import default_memory, estimate, operator_work
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin


# MAC counts computed from the .tflite files in targets-facts.md (conv, dw and fc only)
@pytest.mark.parametrize(
    ("stem", "macs"),
    [
        ("mlcommons-tiny__vww_96_int8", 7_489_664),
        ("mlcommons-tiny__kws_ref_model", 2_656_768),
        ("mlcommons-tiny__pretrainedResnet_quant", 12_501_632),
        ("mlcommons-tiny__ad01_int8", 264_192),
    ],
)
def test_mac_counts_of_the_benchmark_models(stem: str, macs: int) -> None:
    work = operator_work(read_model(model_path(stem)))
    assert sum(w.macs for w in work if w.kind != "elementwise") == macs


def test_bytes_read_and_written_per_operator() -> None:
    model = read_model(model_path("tflite-micro__simple_add_model"))
    (add,) = operator_work(model)
    assert add.kind == "elementwise" and add.macs == 16384
    assert [b for _, b in add.reads] == [16384, 16384] and [b for _, b in add.writes] == [16384]


def test_roofline_is_compute_bound_in_sram_and_slower_in_slow_memory() -> None:
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    target = load_builtin("generic")
    fast = estimate(model, target)
    assert all(t.bound == "compute" for t in fast if t.work.kind == "conv")
    where = {
        k: ("external" if v == "sram" else v) for k, v in default_memory(model, target).items()
    }
    slow = estimate(model, target, where)
    assert sum(t.seconds for t in slow) > sum(t.seconds for t in fast)
    assert all(s.seconds >= f.seconds for s, f in zip(slow, fast, strict=True))
    assert any(t.bound == "external" for t in slow)
    # xcore.ai, VWW measured (ai_tools app_profiling): 30.55 ms on one thread, 8.01 ms on
    # five. The built-in CONV_2D rate is the split-arena report's build (thread count not
    # stated; benchmarks/xcore_calibration.py), 6.7x the one-thread figure: between the two
    xcore = sum(t.seconds for t in estimate(model, load_builtin("xcore_ai")))
    assert 0.008 < xcore < 0.031


def test_time_model_label_names_the_model_and_its_accesses() -> None:
    """Labels name the time model a target uses: the stall model with whose accesses
    it counts (TFLM's reference kernels, or lib_nn's on xcore.ai), or the roofline."""
    from dataclasses import replace

    from arenaplan.cost.timing import time_model_label
    from arenaplan.targets import load_builtin

    imxrt, xcore = load_builtin("imxrt1170"), load_builtin("xcore_ai")
    assert time_model_label(imxrt).startswith("stall-model estimate")
    assert "TFLM's reference kernels" in time_model_label(imxrt)
    assert "lib_nn" in time_model_label(xcore) and "roofline" not in time_model_label(xcore)
    assert time_model_label(load_builtin("cortex_m55_ethos_u55")).startswith("roofline")
    assert time_model_label(replace(imxrt, time_model="roofline")).startswith("roofline")
