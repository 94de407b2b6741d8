"""xcore.ai's split-arena figures (xmos/ai_tools #908) against the calibrated time model.

    python benchmarks/xcore_calibration.py

On the assumed model (``arenaplan.builder.xcore_report``: the report's operator
counts, shapes from a TCN + LSTM audio network, not tuned to the timings), with
lib_nn's accesses (``analysis.traffic_xcore``): stage 1 fits one compute rate per
opcode to the all-in-SRAM run (calibrate --per-opcode, exact: one row per tag);
stage 2 fits LPDDR's extra latency per access to the all-in-LPDDR run with those
rates fixed (bounded weighted least squares as in ``analysis.calibration``;
bandwidth fixed at the target's). LPDDR is behind the target's cache (size
assumed, 32-byte lines): a load is a line filled, a store passes the cache
(write-through, its own latency; the fit with stores filling lines is printed
too). Then per kind: measured and predicted
LPDDR/SRAM ratio; the whole model with the report's ld_flash time (26.6 ms,
measured, the same in every run) added as a constant; persistent-only and
activations-only in LPDDR (kernel scratch, in the arena, with the activations);
and the fit again for other cache sizes.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from arenaplan.analysis.calibration import Run, calibrate
from arenaplan.analysis.profile_log import ProfileLog
from arenaplan.analysis.timing import (
    SCRATCH,
    OpAccesses,
    Reach,
    Timer,
    operator_accesses,
    per_memory,
    transfer_cycles,
)
from arenaplan.builder.xcore_report import split_arena_model
from arenaplan.ir.model import Model
from arenaplan.targets import Target, load_builtin

# the report's figures: kind -> (SRAM ms, LPDDR ms); its timer: 100 ticks per us
MEASURED = {
    "conv2d": (0.80, 13.72),
    "add": (0.12, 0.47),
    "lookup": (0.12, 0.26),
    "mul": (0.07, 0.11),
    "split": (0.10, 0.12),
}
WHOLE = (27.85, 41.36)  # ms, ld_flash included
PERSISTENT_ONLY = 27.91  # ms: persistent arena alone in LPDDR
LD_FLASH_MS = 26.6  # ms of OP_XC_ld_flash in both runs (53 events)
KIND = {"CONV_2D": "conv2d", "ADD": "add", "LOGISTIC": "lookup", "TANH": "lookup"}
KIND |= {"MUL": "mul", "SPLIT": "split"}
TICKS_PER_MS = 1e5


def everything_in(model: Model, memory: str) -> dict:
    """The whole arena in ``memory``: tensors (weights too: ld_flash copies them into
    the arena) and kernel scratch (``GetScratchBuffer``: tensor_arena + offset)."""
    where = {(sg.index, t.index): memory for sg in model.subgraphs for t in sg.tensors}
    return where | {SCRATCH: memory}


def activations_in(model: Model, memory: str, other: str) -> dict:
    """Activations and kernel scratch in ``memory``, weights in ``other``."""
    where = {
        (sg.index, t.index): other if t.is_constant else memory
        for sg in model.subgraphs
        for t in sg.tensors
    }
    return where | {SCRATCH: memory}


def per_tag_log(ops: list[OpAccesses], run: int) -> ProfileLog:
    """The report's per-kind times as per-tag totals; the lookup time split between
    LOGISTIC and TANH by their elements (the same kernel, lookup8)."""
    work = {tag: sum(o.work for o in ops if o.opcode == tag) for tag in ("LOGISTIC", "TANH")}
    per_tag = {tag: MEASURED[KIND[tag]][run] for tag in ("CONV_2D", "ADD", "MUL", "SPLIT")}
    for tag, w in work.items():
        per_tag[tag] = MEASURED["lookup"][run] * w / sum(work.values())
    ticks = {tag: round(ms * TICKS_PER_MS) for tag, ms in per_tag.items()}
    return ProfileLog((), ticks, sum(ticks.values()), TICKS_PER_MS, "per-tag")


def lpddr_latencies(ops: list[OpAccesses], target: Target, model: Model) -> tuple[float, float]:
    """Extra cycles per LPDDR line read and per store (write-through), fitted to the
    all-in-LPDDR run with the rates fixed (bounded least squares, both >= 0)."""
    from scipy.optimize import lsq_linear

    where, rows, ys, weights = everything_in(model, "lpddr"), [], [], []
    sram = Timer(model, target).times(everything_in(model, "sram"))
    for tag, ms in per_tag_log(ops, 1).per_tag.items():
        group = [i for i, o in enumerate(ops) if o.opcode == tag and o.subgraph == 0]
        reads = writes = transfer = 0.0
        for i in group:
            reach = per_memory(ops[i], where, "lpddr", target).get("lpddr", Reach(0, 0, 0))
            reads, writes = reads + reach.reads, writes + reach.writes
            transfer += transfer_cycles(target, "lpddr", reach.bytes)
        compute = sum(sram[i].seconds for i in group) * target.clock_hz
        measured = ms / TICKS_PER_MS * 1e-3 * target.clock_hz
        rows.append((reads, writes))
        ys.append(measured - compute - transfer)
        weights.append(1 / np.sqrt(measured))
    a, y, w = np.array(rows), np.array(ys), np.array(weights)
    scale = np.maximum(a.max(axis=0), 1e-12)
    fit = lsq_linear(a * w[:, None] / scale, y * w, bounds=(0, np.inf)).x / scale
    return float(fit[0]), float(fit[1])


def report_build(model: Model, start: Target | None = None) -> tuple[Target, list[OpAccesses]]:
    """``start`` (default: the built-in xcore_ai) with xcore's traffic and one compute
    rate per opcode fitted to the all-in-SRAM run (the report's build: its thread
    count is not stated); memories as ``start`` has them."""
    start = replace(start or load_builtin("xcore_ai"), traffic="xcore")
    ops = operator_accesses(model, "xcore")
    run = Run("sram", per_tag_log(ops, 0), everything_in(model, "sram"), "sram")
    return calibrate(ops, [run], start, TICKS_PER_MS * 1e3, per_opcode=True).target, ops


def calibrated(model: Model, start: Target | None = None) -> tuple[Target, list[OpAccesses]]:
    """The report's build (``report_build``) with LPDDR's latencies fitted to the
    all-in-LPDDR run."""
    rates, ops = report_build(model, start)
    read, store = lpddr_latencies(ops, rates, model)
    fast = rates.memory("sram").latency
    mems = tuple(
        replace(m, latency=fast + read, write_latency=fast + store) if m.name == "lpddr" else m
        for m in rates.memories
    )
    return replace(rates, memories=mems), ops


def kind_ms(model: Model, target: Target, where: dict, persistent: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in Timer(model, target, persistent).times(where):
        kind = KIND.get(t.work.opcode, "other")
        out[kind] = out.get(kind, 0.0) + t.seconds * 1e3
    return out


def report(model: Model, target: Target) -> None:
    sram = kind_ms(model, target, everything_in(model, "sram"), "sram")
    lpddr = kind_ms(model, target, everything_in(model, "lpddr"), "lpddr")
    print(f"{'kind':8} {'SRAM ms':>8} {'LPDDR ms':>9} {'ratio':>6} {'predicted':>9} {'error':>7}")
    for kind, (s, e) in MEASURED.items():
        p = lpddr[kind] / sram[kind]
        print(f"{kind:8} {s:8.2f} {e:9.2f} {e / s:6.2f} {p:9.2f} {p / (e / s) - 1:+7.1%}")
    base = sum(sram.values()) + LD_FLASH_MS
    whole = sum(lpddr.values()) + LD_FLASH_MS
    print(
        f"whole model, ld_flash {LD_FLASH_MS} ms (measured) added: SRAM {base:.2f} ms "
        f"(measured {WHOLE[0]}), LPDDR {whole:.2f} ms (measured {WHOLE[1]}), "
        f"ratio {whole / base:.3f} (measured {WHOLE[1] / WHOLE[0]:.3f})"
    )
    placements(model, target, base, f"measured {PERSISTENT_ONLY / WHOLE[0]:.3f}")


def placements(model: Model, target: Target, base: float, note: str, flash: float = 0.0) -> None:
    ops_ms = sum(kind_ms(model, target, everything_in(model, "sram"), "sram").values())
    pers = sum(kind_ms(model, target, everything_in(model, "sram"), "lpddr").values())
    acts = activations_in(model, "lpddr", "sram")
    act = sum(kind_ms(model, target, acts, "sram").values())
    for name, ms in (("persistent alone in LPDDR", pers), ("activations in LPDDR", act)):
        print(
            f"  {name}: +{ms - ops_ms:.3f} ms = {(ms - ops_ms) / base:+.2%} of the whole "
            f"model, {(ms - ops_ms) / ops_ms:+.1%} of the operators' time"
            + (f" ({note})" if "persistent" in name else "")
        )


def ratio_errors(model: Model, target: Target) -> dict[str, float]:
    """Predicted / measured LPDDR/SRAM ratio - 1, per kind."""
    sram = kind_ms(model, target, everything_in(model, "sram"), "sram")
    lpddr = kind_ms(model, target, everything_in(model, "lpddr"), "lpddr")
    return {k: lpddr[k] / sram[k] / (e / s) - 1 for k, (s, e) in MEASURED.items()}


def with_cache(target: Target, cache_bytes: int) -> Target:
    mems = tuple(
        replace(m, cache_bytes=cache_bytes) if m.name == "lpddr" else m for m in target.memories
    )
    return replace(target, memories=mems)


def with_writes(target: Target, policy: str) -> Target:
    mems = tuple(
        replace(m, cache_writes=policy) if m.name == "lpddr" else m for m in target.memories
    )
    return replace(target, memories=mems)


def write_policies(model: Model) -> None:
    """The fit with stores filling lines like loads (write-back) against the target's."""
    for policy in ("back", "through"):
        target, _ = calibrated(model, with_writes(load_builtin("xcore_ai"), policy))
        errors = " ".join(f"{k} {e:+.0%}" for k, e in ratio_errors(model, target).items())
        print(f"  stores {policy:7}: {errors}")


def cache_sweep(model: Model) -> None:
    """The fit for other sizes of the LPDDR cache (the built-in size is assumed)."""
    print("LPDDR cache size sweep (refitted each time): bytes, latencies, ratio error per kind")
    for size in (0, 128, 256, 1024, 2048, 8192, 16384):
        target, _ = calibrated(model, with_cache(load_builtin("xcore_ai"), size))
        m, fast = target.memory("lpddr"), target.memory("sram").latency
        errors = " ".join(f"{k} {e:+.0%}" for k, e in ratio_errors(model, target).items())
        print(
            f"  {size:6d} B: {m.latency - fast:6.1f} cycles/line, "
            f"{m.write_latency - fast:5.1f}/store; {errors}"
        )


def main() -> int:
    model = split_arena_model()
    target, _ = calibrated(model)
    cache = target.memory("lpddr")
    print(f"LPDDR cache {cache.cache_bytes} B, lines of {cache.line_bytes} B (assumed, see target)")
    lpddr, fast = target.memory("lpddr"), target.memory("sram").latency
    rates = {k: round(float(v), 4) for k, v in target.macs_per_cycle.items() if k.isupper()}
    print(
        f"fitted: LPDDR extra latency {lpddr.latency - fast:.1f} cycles per line read, "
        f"{lpddr.write_latency - fast:.1f} per store (write-through); rates {rates}"
    )
    report(model, target)
    print("LPDDR cache write policy (refitted each time): ratio error per kind")
    write_policies(model)
    cache_sweep(model)
    vww = Path(__file__).resolve().parents[2] / "shared/models/mlcommons-tiny__vww_96_int8.tflite"
    if not vww.exists():
        print(f"{vww} absent: vww prediction skipped")
        return 0
    from arenaplan.reader import read_model

    m = read_model(vww)
    print(f"{vww.name} with the calibrated target:")
    base = sum(kind_ms(m, target, everything_in(m, "sram"), "sram").values())
    placements(m, target, base, "no measurement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
