#!/usr/bin/env python3
"""Estimated latency against published board measurements (MLPerf Tiny, TFLM + CMSIS-NN).

    python benchmarks/latency_boards.py [--instructions]

For each board with a built-in target (``stm32l4r5``, ``ra6m4``, ``ra8d1``) and each of
the four MLPerf Tiny models in ``../shared/models``, the table prints the estimate of
the target's time model (CMSIS-NN instruction counts measured under QEMU, the core's
cycles per instruction class, the memories' wait states), the published latency and
where it is published, and the error. The arena is placed as each submission placed it
(RA8D1: VWW's in SRAM, the others in DTCM; ``PLACED``).

The reference board ran MLPerf's reference build: TFLM 2.3.1 (2020) compiled for size
by GCC 6 (mbed's default profile, -Os; the submission's system description). Its
instructions are not the project's table's (the 2020 kernels execute a fifth to two
fifths more on the convolutional networks, slightly fewer on AD's fully connected
layers): they are counted in that release itself, by class, under QEMU
(``data/reference_release_counts.json``, ``python
scripts/gen_reference_release_counts.py --tree DIR``), and timed by the same cycles
per class and the same memory model as every other board.

Nothing is fitted on these figures but one parameter, and only on the reference board:
its ``instructions_scale``, the cycles the board spends per modelled compute cycle of
that build (what the model leaves out there: GCC 6 where GCC 12 counted, the flash's
wait states on instruction fetch behind the ART accelerator), the geometric mean over
the four models of (published cycles - estimated stalls) / estimated compute cycles on
that board alone. The other boards' builds (-O2/-O3) are timed by the project's table
(scale 1) and their errors fall as they do.

``--instructions`` also counts each model's whole invoke under QEMU on the ARM builds
and prints the table's prediction beside it (the held-out check of
``tflm.kernel_counts``: none of these models is among its cases); it needs the TFLM
builds and qemu.

The bar: every estimate within 25%, the median within 10%, the ranking of the
four models right on each board, the reference board within 15%.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
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
# the reference build's instructions by class, counted in TFLM 2.3 (see the docstring)
RELEASE_COUNTS = Path(__file__).resolve().parent / "data" / "reference_release_counts.json"
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
    for size, ``scale`` cycles per modelled compute cycle."""
    board = load_builtin(REFERENCE)
    return dataclasses.replace(board, compiled_for="size", instructions_scale=scale)


def release_counts(path: Path = RELEASE_COUNTS) -> dict[str, dict[str, int]]:
    """Per model, one invoke's instructions by class in the reference release; the
    models must be the files they were counted on."""
    doc = json.loads(path.read_text())
    out = {}
    for key, name in NAMES.items():
        row = doc["models"][key]
        digest = hashlib.sha256((MODELS / name).read_bytes()).hexdigest()
        if row["file"] != name or row["sha256"] != digest:
            why = f"{path.name} counted another {name}: {doc['command']}"
            raise SystemExit(f"latency_boards: {why}")
        out[key] = row["classes"]
    return out


def reference_split(models: dict, counts: dict[str, dict[str, int]]) -> dict[str, tuple]:
    """Per model, (compute, stall) cycles on the reference board at scale 1: the
    release's counted instructions at the core's cycles per class, and the memory
    model's stalls."""
    target = reference_target(1.0)
    core = core_named(target.core)
    return {
        key: (core.cycles(dict(counts[key])), split_cycles(model, target, None)[1])
        for key, model in models.items()
    }


def reference_scale(split: dict[str, tuple]) -> float:
    """Cycles per modelled compute cycle on the reference board, from that board
    alone (see the module's docstring)."""
    published, _ = PUBLISHED[REFERENCE]
    clock = reference_target(1.0).clock_hz
    logs = [
        math.log(max(published[key] * 1e-3 * clock - stall, 1.0) / compute)
        for key, (compute, stall) in split.items()
    ]
    return math.exp(sum(logs) / len(logs))


def board_rows(
    models: dict, counts: dict[str, dict[str, int]]
) -> tuple[float, list[tuple[str, str, float, float]]]:
    """The reference scale, and per board and model (board, model, estimate ms,
    published ms)."""
    split = reference_split(models, counts)
    scale = reference_scale(split)
    rows = []
    for board, (published, _) in PUBLISHED.items():
        target = reference_target(scale) if board == REFERENCE else load_builtin(board)
        for key, model in models.items():
            if board == REFERENCE:
                compute, stall = split[key][0] * scale, split[key][1]
            else:
                compute, stall = split_cycles(model, target, PLACED.get((board, key)))
            rows.append((board, key, (compute + stall) / target.clock_hz * 1e3, published[key]))
    return scale, rows


def ranking_right(rows: list[tuple[str, str, float, float]], board: str) -> bool:
    """Do the estimates order ``board``'s four models as the published figures do?"""
    mine = [r for r in rows if r[0] == board]
    return sorted(mine, key=lambda r: r[2]) == sorted(mine, key=lambda r: r[3])


def release_table(models: dict, counts: dict[str, dict[str, int]]) -> None:
    """The reference release's counted instructions beside the project's table for
    the same build options (Cortex-M4 DSP, -Os)."""
    print("\nInstructions of one invoke: TFLM 2.3 counted, the project's table at -Os")
    print("| model | TFLM 2.3 | project | ratio |\n|---|---:|---:|---:|")
    for key, model in models.items():
        ours = sum(c["insns"] for c in op_counts(model, "dsp", "size"))
        theirs = counts[key]["insns"]
        print(f"| {key} | {theirs:,} | {ours:,.0f} | {theirs / ours:.2f} |")


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
    if not RELEASE_COUNTS.is_file():
        print(f"latency_boards: {RELEASE_COUNTS} is absent", file=sys.stderr)
        return 2
    models = {k: read_model_bytes((MODELS / f).read_bytes()) for k, f in NAMES.items()}
    counts = release_counts()
    scale, rows = board_rows(models, counts)
    print(f"reference board: TFLM 2.3's counted instructions; cycles per modelled cycle "
          f"(fitted on {REFERENCE} alone): {scale:.3f}\n")  # fmt: skip
    print("| board | core | model | estimate ms | published ms | error | source |")
    print("|---|---|---|---:|---:|---:|---|")
    for board, key, est, pub in rows:
        core = core_named(load_builtin(board).core).name
        print(f"| {board} | {core} | {key} | {est:.3f} | {pub:.3f} | {est / pub - 1:+.1%} | "
              f"{PUBLISHED[board][1]} |")  # fmt: skip
    errors = [(board, key, est / pub - 1) for board, key, est, pub in rows]
    bad_rank = [b for b in PUBLISHED if not ranking_right(rows, b)]
    worst = max(errors, key=lambda e: abs(e[2]))
    median = statistics.median(abs(e[2]) for e in errors)
    within = sum(abs(e[2]) <= 0.25 for e in errors)
    print(f"\nwithin 25%: {within} of {len(errors)}; median |error| {median:.1%}; "
          f"worst {worst[0]} {worst[1]} {worst[2]:+.1%}")  # fmt: skip
    print(f"ranking of the four models right on: "
          f"{', '.join(b for b in PUBLISHED if b not in bad_rank)}"
          + (f"; wrong on: {', '.join(bad_rank)}" if bad_rank else ""))  # fmt: skip
    release_table(models, counts)
    if args.instructions:
        instructions_table(models)
    return 0


if __name__ == "__main__":
    sys.exit(main())
