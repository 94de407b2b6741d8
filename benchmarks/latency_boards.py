#!/usr/bin/env python3
"""Estimated latency against published board measurements (MLPerf Tiny, TFLM + CMSIS-NN).

    python benchmarks/latency_boards.py [--instructions]

For each board with a built-in target (``stm32l4r5``, ``ra6m4``, ``ra8d1``) and each of
the four MLPerf Tiny models in ``../shared/models``, the table prints the estimate of
the target's time model (CMSIS-NN instruction counts measured under QEMU, the core's
cycles per instruction class, the memories' wait states), the published latency and
where it is published, and the error. The arena is placed as each submission placed it
(RA8D1: VWW's in SRAM, the others in DTCM; ``PLACED``).

Nothing is fitted on these figures but one parameter, and only on the reference board:
the MLPerf reference build is TFLM 2.3.1 (2020) compiled for size (mbed's default
profile, -Os). Its instructions are counted in the project's build compiled for size
(``compiled_for = "size"``, measured), and what an older release executes beyond that
is its ``instructions_scale``: the geometric mean, over the four models, of (published
cycles - estimated stalls) / estimated compute cycles on that board alone. The other
boards' builds (-O2/-O3) are taken as the project's (scale 1) and their errors fall as
they do.

``--instructions`` also counts each model's whole invoke under QEMU on the ARM builds
and prints the table's prediction beside it (the held-out check of
``tflm.kernel_counts``: none of these models is among its cases); it needs the TFLM
builds and qemu.

The issue's bar: every estimate within 25%, the median within 10%, the ranking of the
four models right on each board, the reference board within 15%.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
from pathlib import Path

from arenaplan.cost.roofline import default_memory
from arenaplan.cost.timing import Timer, op_cycles
from arenaplan.reader import read_model_bytes
from arenaplan.targets.cores import core_named
from arenaplan.targets.load import load_builtin
from arenaplan.targets.model import Target
from arenaplan.tflm.kernel_counts import build_name, op_counts

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
NAMES = {
    "KWS": "mlcommons-tiny__kws_ref_model.tflite",
    "VWW": "mlcommons-tiny__vww_96_int8.tflite",
    "IC": "mlcommons-tiny__pretrainedResnet_quant.tflite",
    "AD": "mlcommons-tiny__ad01_int8.tflite",
}
# published median latency in ms (1000 / the median throughput of results.txt)
RESULTS = "closed/{}/results/{}/*/performance/results.txt"
PUBLISHED = {
    "stm32l4r5": (
        {"KWS": 181.917, "VWW": 600.601, "IC": 704.225, "AD": 10.052},
        "mlcommons/tiny_results_v0.5 " + RESULTS.format("reference", "Nucleo-L4R5ZI"),
    ),
    "ra6m4": (
        {"KWS": 50.571, "VWW": 162.364, "IC": 246.184, "AD": 4.613},
        "mlcommons/tiny_results_v0.7 " + RESULTS.format("renesas", "EK-RA6M4"),
    ),
    "ra8d1": (
        {"KWS": 3.465, "VWW": 13.393, "IC": 8.478, "AD": 0.531},
        "mlcommons/tiny_results_v1.2 " + RESULTS.format("Renesas", "EK-RA8D1"),
    ),
}
REFERENCE = "stm32l4r5"  # the only board a parameter is taken from
# where a submission put the arena, when not in the target's fastest memory
# (closed/Renesas/code/EK-RA8D1/src/examples/vww_tflm/app.cc: a plain global)
PLACED = {("ra8d1", "VWW"): "sram"}


def split_cycles(model, target: Target, arena: str | None) -> tuple[float, float]:
    """(compute, stall) cycles of one inference with the arena in ``arena``."""
    where = default_memory(model, target, arena)
    timer = Timer(model, target, arena)
    compute = stall = 0.0
    for i in range(len(timer.work)):
        c = op_cycles(timer.accesses[i], where, timer.persistent, target,
                      timer.counts[i] if timer.counts else None, timer.constants)  # fmt: skip
        compute += c.compute
        stall += sum(c.memory.values())
    return compute, stall


def reference_target(scale: float) -> Target:
    """The reference board as MLPerf's reference build ran on it: kernels compiled
    for size, ``scale`` instructions per counted instruction."""
    board = load_builtin(REFERENCE)
    return dataclasses.replace(board, compiled_for="size", instructions_scale=scale)


def reference_scale(models: dict) -> float:
    """The reference build's instructions per counted instruction, from the reference
    board alone (see the module's docstring)."""
    target = reference_target(1.0)
    published, _ = PUBLISHED[REFERENCE]
    logs = []
    for key, model in models.items():
        compute, stall = split_cycles(model, target, None)
        cycles = published[key] * 1e-3 * target.clock_hz
        logs.append(math.log(max(cycles - stall, 1.0) / compute))
    return math.exp(sum(logs) / len(logs))


def _ranking_right(est: dict[str, float], pub: dict[str, float]) -> bool:
    return sorted(est, key=est.__getitem__) == sorted(pub, key=pub.__getitem__)


def instructions_table(models: dict) -> None:
    from arenaplan.tflm.verify.instructions import instructions_available, invoke_instructions

    print("\nInstructions of one invoke: the table's prediction against a count under QEMU")
    print("| model | build | predicted | counted | error |\n|---|---|---:|---:|---:|")
    for level, compiled_for in (("dsp", "speed"), ("mve", "speed"), ("dsp", "size")):
        variant = build_name(level, compiled_for)
        why = instructions_available(variant)
        if why is not None:
            print(f"| - | {variant} | skipped: {why} | | |")
            continue
        for key, model in models.items():
            predicted = sum(c["insns"] for c in op_counts(model, level, compiled_for))
            counted = invoke_instructions((MODELS / NAMES[key]).read_bytes(), 0, variant)
            print(f"| {key} | {variant} | {predicted:,.0f} | {counted:,} | "
                  f"{predicted / counted - 1:+.1%} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", action="store_true", help="also count under QEMU")
    args = ap.parse_args(argv)
    if not MODELS.is_dir():
        print(f"latency_boards: {MODELS} is absent (the shared models)", file=sys.stderr)
        return 2
    models = {k: read_model_bytes((MODELS / f).read_bytes()) for k, f in NAMES.items()}
    scale = reference_scale(models)
    print(f"reference build scale (fitted on {REFERENCE} alone): {scale:.3f}\n")
    print("| board | core | model | estimate ms | published ms | error | source |")
    print("|---|---|---|---:|---:|---:|---|")
    errors, bad_rank = [], []
    for board, (published, source) in PUBLISHED.items():
        target = reference_target(scale) if board == REFERENCE else load_builtin(board)
        est = {}
        for key, model in models.items():
            compute, stall = split_cycles(model, target, PLACED.get((board, key)))
            est[key] = (compute + stall) / target.clock_hz * 1e3
            err = est[key] / published[key] - 1
            errors.append((board, key, err))
            print(f"| {board} | {core_named(target.core).name} | {key} | {est[key]:.3f} | "
                  f"{published[key]:.3f} | {err:+.1%} | {source} |")  # fmt: skip
        if not _ranking_right(est, published):
            bad_rank.append(board)
    worst = max(errors, key=lambda e: abs(e[2]))
    median = statistics.median(abs(e[2]) for e in errors)
    within = sum(abs(e[2]) <= 0.25 for e in errors)
    print(f"\nwithin 25%: {within} of {len(errors)}; median |error| {median:.1%}; "
          f"worst {worst[0]} {worst[1]} {worst[2]:+.1%}")  # fmt: skip
    print(f"ranking of the four models right on: "
          f"{', '.join(b for b in PUBLISHED if b not in bad_rank)}"
          + (f"; wrong on: {', '.join(bad_rank)}" if bad_rank else ""))  # fmt: skip
    if args.instructions:
        instructions_table(models)
    return 0


if __name__ == "__main__":
    sys.exit(main())
