"""Placement over several memories: within capacities, validated, never worse than Vela's."""

from __future__ import annotations

import dataclasses

import pytest
from testkit import model_path

from arenaplan.allocation import Buffer, Problem, check_solution
from arenaplan.errors import AllocationError
from arenaplan.placement import plan_model
from arenaplan.placement.tiers import place_tiers
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin

MODELS = [
    "mlcommons-tiny__vww_96_int8",
    "mlcommons-tiny__pretrainedResnet_quant",
    "arm-ml-examples__ds_cnn_s_quantized",
    "tflite-micro__micro_speech_quantized",
]


def _check(model, placement, capacities) -> None:
    """Each memory's tensors really pack within its capacity (the validator decides)."""
    plan = plan_model(model)
    for memory, cap in capacities.items():
        bufs, offs = [], []
        for t in plan.tensors:
            key = (t.subgraph, t.index)
            if placement.memory_of[key] == memory:
                bufs.append(Buffer(f"{key}", t.first, t.last, t.size, 16))
                offs.append(placement.offsets[key])
        check_solution(Problem(tuple(bufs), cap), offs)


@pytest.mark.parametrize("stem", MODELS)
@pytest.mark.parametrize("fraction", [1.0, 0.5, 0.25])
def test_ours_fits_and_is_never_slower_than_vela(stem: str, fraction: float) -> None:
    model = read_model(model_path(stem))
    target = load_builtin("generic")
    cap = {"sram": int(plan_model(model).lower_bound * fraction)}
    ours = place_tiers(model, target, cap)
    vela = place_tiers(model, target, cap, "vela")
    for placement in (ours, vela):
        assert placement.heights["sram"] <= cap["sram"]
        _check(model, placement, {**cap, "external": 8 << 20})
    assert ours.seconds <= vela.seconds + 1e-12
    if fraction == 1.0:
        assert set(ours.memory_of.values()) == {"sram"}


def test_slower_memory_costs_time() -> None:
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    generic = load_builtin("generic")
    slow = dataclasses.replace(
        generic.memory("external"), read_bandwidth=1e6, write_bandwidth=1e6
    )  # memory-bound, so placement matters
    target = dataclasses.replace(
        generic, memories=(generic.memories[0], slow, *generic.memories[2:])
    )
    lb = plan_model(model).lower_bound
    roomy = place_tiers(model, target, {"sram": lb})
    tight = place_tiers(model, target, {"sram": lb // 4})
    assert tight.seconds > roomy.seconds


def test_nothing_fits_names_the_need() -> None:
    model = read_model(model_path("mlcommons-tiny__vww_96_int8"))
    target = load_builtin("generic")
    with pytest.raises(AllocationError, match="would need 55,296 B"):
        place_tiers(model, target, {"sram": 1024, "external": 4096})


def test_scratch_stays_in_the_fastest_memory() -> None:
    model = read_model(model_path("tflite-micro__keyword_scrambled"))
    target = load_builtin("generic")
    with pytest.raises(AllocationError, match="scratch buffers alone need 512 B"):
        place_tiers(model, target, {"sram": 336})
