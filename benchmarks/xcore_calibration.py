"""xcore.ai's split-arena figures (xmos/ai_tools #908): the fit, and how it does on
figures it did not see.

    python benchmarks/xcore_calibration.py

The report gives, per operator kind, the time with the whole arena in SRAM and in
LPDDR, not the model; the model is assumed (``xcore_report_model.py`` beside this script:
the report's operator counts, shapes from a TCN + LSTM audio network, not tuned to
the timings), its accesses are lib_nn's (``cost.traffic_xcore``).

The fit, in two stages, on five kinds (conv2d, add, lookup, mul, split):

1. compute rates, one per kind, from the all-in-SRAM times: work / cycles, exact
   (five rates from five times: reproducing the SRAM column checks nothing);
   LOGISTIC and TANH (lookup) share one rate;
2. LPDDR's extra latency per line read and per store (write-through) from the
   all-in-LPDDR times with those rates fixed: bounded weighted least squares, one
   row per kind, weights 1 / sqrt(measured cycles) as in ``cost.calibration``
   (bandwidth fixed at the target's: transfer time is subtracted, not fitted).

Structural choices (:class:`Structure`) are not fitted but were chosen, some on the
same five ratios: the cache's write policy and size, the lookup table's scattered
reads, MUL's over-read, the line size, and where the weights and kernel scratch
are. For each one the script prints every kind's error under each alternative,
and which kinds tell them apart (none: the figures cannot).

Judged on figures it did not see: leave-one-kind-out (the two latencies fitted on
four kinds' ratios, the fifth's predicted from its SRAM time and its accesses),
once with the structure kept and once with the choices the figures decide made
again on the four kinds (write policy, cache size, scattered lookups, MUL's
over-read: the one whose largest error on the four is smallest); and the figure
no stage uses, the persistent arena alone in LPDDR (27.91 ms). The built-in
target (``xcore_ai.toml``) carries the fit's rates and latencies; the script
prints the TOML lines and the per-kind ratios of the target as shipped.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from xcore_report_model import split_arena_model  # benchmarks/xcore_report_model.py

from arenaplan.cost.timing import (
    SCRATCH,
    OpAccesses,
    Reach,
    Timer,
    operator_accesses,
    per_memory,
    transfer_cycles,
)
from arenaplan.ir.model import Model
from arenaplan.targets import Target, load_builtin
from arenaplan.tflm.sizes import tensor_bytes

# the report's figures: kind -> (SRAM ms, LPDDR ms); its timer: 100 ticks per us
MEASURED = {
    "conv2d": (0.80, 13.72),
    "add": (0.12, 0.47),
    "lookup": (0.12, 0.26),
    "mul": (0.07, 0.11),
    "split": (0.10, 0.12),
}
WHOLE = (27.85, 41.36)  # ms, ld_flash included
PERSISTENT_ONLY = 27.91  # ms: persistent arena alone in LPDDR (used by no fit)
LD_FLASH_MS = 26.6  # ms of OP_XC_ld_flash in both runs (53 events)
KIND = {"CONV_2D": "conv2d", "ADD": "add", "LOGISTIC": "lookup", "TANH": "lookup"}
KIND |= {"MUL": "mul", "SPLIT": "split"}
LOOKUPS = ("LOGISTIC", "TANH")  # lib_nn's lookup8 for both: one rate
SAME = 0.005  # fits whose ratio errors all differ by less than this are the same fit


@dataclass(frozen=True, slots=True)
class Structure:
    """The choices the fit rests on, as shipped (:data:`SHIPPED`: the cache as
    ``xcore_ai.toml`` has it, the rest as the defaults) or an alternative.
    ``writes``: stores pass the cache ("through", each at its own latency) or fill
    lines ("back"); ``cache_bytes``/``line_bytes``: LPDDR's cache; ``scattered``:
    lookup-table reads fall at random (else in order); ``overread``: MUL's last
    32-byte VLDC reads 16 bytes past its first input; ``weights_in_arena``:
    ld_flash copies weights into the arena (so into LPDDR with it);
    ``scratch_in_arena``: kernel scratch and the lookup table live with the
    activations (``GetScratchBuffer``)."""

    writes: str = "through"
    cache_bytes: int = 2048
    line_bytes: int = 32
    scattered: bool = True
    overread: bool = True
    weights_in_arena: bool = True
    scratch_in_arena: bool = True

    def target(self, base: Target) -> Target:
        """``base`` with this LPDDR cache."""
        mems = tuple(
            replace(
                m,
                cache_writes=self.writes,
                cache_bytes=self.cache_bytes,
                line_bytes=self.line_bytes,
            )
            if m.name == "lpddr"
            else m
            for m in base.memories
        )
        return replace(base, memories=mems)

    def ops(self, model: Model, ops: list[OpAccesses]) -> list[OpAccesses]:
        """lib_nn's accesses with this structure's lookups and MUL reads."""
        sizes = tensor_bytes(model)
        return [_op_variant(op, self, sizes) for op in ops]

    def lpddr_run(self, model: Model) -> dict:
        """The all-in-LPDDR placement, weights and scratch where this structure has them."""
        if self.weights_in_arena:
            where = everything_in(model, "lpddr")
        else:
            where = activations_in(model, "lpddr", "sram")
        return where | {SCRATCH: "lpddr" if self.scratch_in_arena else "sram"}


def _op_variant(op: OpAccesses, s: Structure, sizes) -> OpAccesses:
    """``op`` with a lookup table read in order (``not s.scattered``) or MUL's inputs
    taken as no longer than the tensors (``not s.overread``)."""
    acc = dict(op.accesses)
    if op.opcode in LOOKUPS and SCRATCH in acc:
        acc[SCRATCH] = replace(acc[SCRATCH], scattered=s.scattered)
    if op.opcode == "MUL" and not s.overread:
        for key, a in acc.items():
            if isinstance(key, tuple):
                acc[key] = replace(a, footprint=min(a.footprint, sizes[key[0]][key[1]]))
    return replace(op, accesses=acc)


def _shipped() -> Structure:
    m = load_builtin("xcore_ai").memory("lpddr")
    return Structure(m.cache_writes, m.cache_bytes, m.line_bytes)


SHIPPED = _shipped()


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


def cycles(ms: float, target: Target) -> float:
    return ms * 1e-3 * target.clock_hz


# ---- stage 1: compute rates -------------------------------------------------------


def fitted_rates(ops: list[OpAccesses], target: Target) -> dict[str, float]:
    """Work per cycle of each measured opcode: its kind's work over its kind's
    all-in-SRAM cycles (exact; in SRAM nothing stalls)."""
    rates: dict[str, float] = {}
    for kind, (sram_ms, _) in MEASURED.items():
        opcodes = [o for o, k in KIND.items() if k == kind]
        work = sum(op.work for op in ops if op.opcode in opcodes and op.subgraph == 0)
        rates |= {o: work / cycles(sram_ms, target) for o in opcodes}
    return rates


# ---- stage 2: LPDDR latencies -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class KindRow:
    """One kind with the whole arena in LPDDR, in cycles: ``compute`` (= its SRAM
    time: the rates are exact there), ``reads`` (line fills, or accesses without a
    cache) and ``writes`` (stores passing a write-through cache) reaching LPDDR,
    ``transfer`` (bytes over LPDDR's bandwidth beyond SRAM's, fixed), ``measured``."""

    kind: str
    compute: float
    reads: float
    writes: float
    transfer: float
    measured: float

    def predicted(self, read: float, store: float) -> float:
        """Cycles with ``read``/``store`` extra cycles per line read / store."""
        return self.compute + self.transfer + self.reads * read + self.writes * store

    def ratio(self, read: float, store: float) -> float:
        """Predicted LPDDR/SRAM ratio."""
        return self.predicted(read, store) / self.compute


def kind_rows(model: Model, ops: list[OpAccesses], target: Target, s: Structure) -> list[KindRow]:
    """Per measured kind, what the all-in-LPDDR run costs (``target``: rates fitted)."""
    where = s.lpddr_run(model)
    rows = []
    for kind, (_, lpddr_ms) in MEASURED.items():
        group = [o for o in ops if KIND.get(o.opcode) == kind and o.subgraph == 0]
        reach = Reach(0, 0, 0)
        for op in group:
            reach += per_memory(op, where, "lpddr", target).get("lpddr", Reach(0, 0, 0))
        compute = sum(op.work / target.rate(op.kind, op.opcode) for op in group)
        transfer = transfer_cycles(target, "lpddr", reach.bytes)
        measured = cycles(lpddr_ms, target)
        rows.append(KindRow(kind, compute, reach.reads, reach.writes, transfer, measured))
    return rows


def fit_latencies(rows: Iterable[KindRow]) -> tuple[float, float]:
    """Extra cycles per LPDDR line read and per store (both >= 0), fitted to the
    rows' measured all-in-LPDDR cycles with the rates fixed."""
    from scipy.optimize import lsq_linear

    rows = list(rows)
    a = np.array([(r.reads, r.writes) for r in rows], dtype=float)
    y = np.array([r.measured - r.compute - r.transfer for r in rows])
    w = 1 / np.sqrt(np.array([r.measured for r in rows]))
    scale = np.maximum(a.max(axis=0), 1e-12)  # columns of like size
    fit = lsq_linear(a * w[:, None] / scale, y * w, bounds=(0, np.inf)).x / scale
    return float(fit[0]), float(fit[1])


def errors(rows: Iterable[KindRow], read: float, store: float) -> dict[str, float]:
    """Predicted / measured LPDDR/SRAM ratio - 1, per kind."""
    return {r.kind: r.ratio(read, store) / (r.measured / r.compute) - 1 for r in rows}


# ---- the fit and the target it gives ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Fit:
    """A fit under one structure: the target (rates and latencies in), its rows."""

    target: Target
    rows: list[KindRow]
    read: float  # extra cycles per LPDDR line read, beyond SRAM's latency
    store: float  # extra cycles per store passing the cache

    def errors(self) -> dict[str, float]:
        return errors(self.rows, self.read, self.store)


def fit(
    model: Model,
    s: Structure = SHIPPED,
    base: Target | None = None,
    ops: list[OpAccesses] | None = None,
) -> Fit:
    """Both stages under structure ``s`` from ``base`` (default: the built-in
    xcore_ai; its bandwidths and clock are kept, its rates and latencies refitted);
    ``ops``: lib_nn's accesses of ``model``, if already counted."""
    base = s.target(replace(base or load_builtin("xcore_ai"), traffic="xcore"))
    ops = s.ops(model, ops if ops is not None else operator_accesses(model, "xcore"))
    rated = replace(base, macs_per_cycle=base.macs_per_cycle | fitted_rates(ops, base))
    rows = kind_rows(model, ops, rated, s)
    read, store = fit_latencies(rows)
    return Fit(with_latencies(rated, read, store), rows, read, store)


def with_latencies(target: Target, read: float, store: float) -> Target:
    """``target`` with LPDDR ``read``/``store`` cycles beyond SRAM's latency."""
    fast = target.memory("sram").latency
    mems = tuple(
        replace(m, latency=fast + read, write_latency=fast + store) if m.name == "lpddr" else m
        for m in target.memories
    )
    return replace(target, memories=mems)


def toml_lines(target: Target) -> list[str]:
    """What ``xcore_ai.toml`` carries of the fit (rates to 4 significant digits)."""
    rates = [f"{o} = {target.macs_per_cycle[o]:.4g}" for o in KIND]
    m = target.memory("lpddr")
    return [*rates, f"latency = {m.latency:.1f}", f"write_latency = {m.write_latency:.1f}"]


# ---- judged on what it did not see ------------------------------------------------


def held_out(rows: list[KindRow], kind: str) -> float:
    """The held-out ``kind``'s predicted ratio, latencies fitted on the other four."""
    read, store = fit_latencies(r for r in rows if r.kind != kind)
    (row,) = (r for r in rows if r.kind == kind)
    return row.ratio(read, store)


def chosen_without(
    fits: Mapping[Structure, Fit], kind: str
) -> tuple[list[Structure], float, float]:
    """Structures the four other kinds pick (smallest largest error on them, ties
    within ``SAME``) and the range of the held-out ratio they predict."""
    worst: dict[Structure, float] = {}
    for s, f in fits.items():
        read, store = fit_latencies(r for r in f.rows if r.kind != kind)
        worst[s] = max(abs(e) for k, e in errors(f.rows, read, store).items() if k != kind)
    best = min(worst.values())
    picked = [s for s, w in worst.items() if w <= best + SAME]
    predicted = [held_out(fits[s].rows, kind) for s in picked]
    return picked, min(predicted), max(predicted)


def footprints(model: Model) -> list[int]:
    """Distinct footprints (bytes) of the accesses that reach LPDDR: the cache sizes
    at which what fits changes."""
    ops = operator_accesses(model, "xcore")
    found = {a.footprint for op in ops for a in op.accesses.values() if a.footprint}
    return sorted(found)


def size_intervals(model: Model) -> list[tuple[int, int]]:
    """[low, high) cache sizes, bytes, within which every access fits or not alike
    (the fit is identical anywhere inside one); (0, 0): no cache."""
    edges = [1, *footprints(model)]
    pairs = [(lo, hi) for lo, hi in itertools.pairwise(edges) if lo < hi]
    return [(0, 0), *pairs, (edges[-1], 1 << 30)]


def choice_grid(model: Model) -> list[Structure]:
    """The choices the figures decide, every combination: write policy, cache size
    (one per interval), scattered lookups, MUL's over-read."""
    return [
        replace(SHIPPED, writes=w, cache_bytes=lo, scattered=sc, overread=ov)
        for w in ("through", "back")
        for lo, _ in size_intervals(model)
        for sc in (True, False)
        for ov in (True, False)
    ]


# ---- printing ---------------------------------------------------------------------


def fmt_errors(e: Mapping[str, float]) -> str:
    return " ".join(f"{k} {v:+5.0%}" for k, v in e.items())


def deciders(shipped: Mapping[str, float], other: Mapping[str, float]) -> str:
    """Kinds whose |error| differs between the shipped fit and ``other`` by 5 points
    or more, by whether ``other`` does worse or better on them."""
    worse = [k for k in shipped if abs(other[k]) - abs(shipped[k]) >= 0.05]
    better = [k for k in shipped if abs(shipped[k]) - abs(other[k]) >= 0.05]
    said = [f"{w} on {', '.join(ks)}" for w, ks in (("worse", worse), ("better", better)) if ks]
    return "; ".join(said) if said else "no kind moves 5 points: the figures cannot tell"


def print_parameters(f: Fit) -> None:
    t = f.target
    print("Fitted parameters (600 MHz cycles) and the figures each is fitted on:")
    for kind, (sram_ms, _) in MEASURED.items():
        opcodes = [o for o, k in KIND.items() if k == kind]
        rate = t.macs_per_cycle[opcodes[0]]
        unit = "MAC" if kind == "conv2d" else "element"
        print(f"  {'/'.join(opcodes):15} {rate:8.4f} {unit}/cycle  <- {kind} SRAM {sram_ms} ms")
    print(
        f"  LPDDR line read  {f.read:8.1f} cycles beyond SRAM's 1  <- all five LPDDR times\n"
        f"  LPDDR store      {f.store:8.1f} cycles beyond SRAM's 1  <- all five LPDDR times"
    )
    m = t.memory("lpddr")
    print(
        f"  fixed, not fitted: clock {t.clock_hz / 1e6:.0f} MHz (assumed), LPDDR bandwidth "
        f"{m.read_bandwidth / 1e9:.2f} GB/s (estimate), SRAM latency 1 cycle"
    )
    print("  toml: " + "; ".join(toml_lines(t)))


def print_held_out(f: Fit, fits: Mapping[Structure, Fit]) -> None:
    print(
        "\nLeave one kind out: LPDDR latencies fitted on the other four kinds, the held-out"
        "\nkind's LPDDR/SRAM ratio predicted from its SRAM time and accesses; 'kept': the"
        "\nshipped structure; 're-made': write policy, cache size, scattered lookups and"
        "\nMUL's over-read chosen again on the four (smallest largest error; ties: a range)"
    )
    print(
        f"{'kind':7} {'measured':>8} {'in-fit':>7} {'error':>6} {'kept':>6} {'error':>6}"
        f" {'(read/store)':>12} {'re-made':>11} {'error':>10}"
    )
    ins = f.errors()
    picks = []
    for r in f.rows:
        meas = r.measured / r.compute
        out = held_out(f.rows, r.kind)
        read, store = fit_latencies(x for x in f.rows if x.kind != r.kind)
        picked, lo, hi = chosen_without(fits, r.kind)
        picks.append((r.kind, picked))
        one = hi - lo < 0.005
        span = f"{lo:.2f}" if one else f"{lo:.2f}..{hi:.2f}"
        errs = f"{lo / meas - 1:+.0%}" + ("" if one else f"..{hi / meas - 1:+.0%}")
        print(
            f"{r.kind:7} {meas:8.2f} {r.ratio(f.read, f.store):7.2f} {ins[r.kind]:+6.1%}"
            f" {out:6.2f} {out / meas - 1:+6.1%} {f'{read:.1f}/{store:.1f}':>12}"
            f" {span:>11} {errs:>10}"
        )
    for kind, picked in picks:
        print(f"  without {kind:6}, the four pick: {describe(picked)}")


def describe(picked: list[Structure]) -> str:
    """The choices a set of structures makes, each as the values they take."""
    sizes = sorted({s.cache_bytes for s in picked})
    sizes_text = (
        f"{sizes[0]} B"
        if len(sizes) == 1
        else f"{sizes[0]}..{sizes[-1]} B ({len(sizes)} intervals)"
    )
    writes = "/".join(sorted({s.writes for s in picked}))
    scattered = "/".join(sorted({"scattered" if s.scattered else "in order" for s in picked}))
    overread = "/".join(sorted({"yes" if s.overread else "no" for s in picked}))
    return (
        f"write-{writes}; cache from {sizes_text}; table {scattered}; "
        f"MUL over-read {overread} ({len(picked)} structures)"
    )


# (choice, what ships and why, an alternative, its structure)
CHOICES = (
    (
        "store policy",
        "write-through, own latency (on the figures)",
        "stores fill lines (write-back)",
        replace(SHIPPED, writes="back"),
    ),
    (
        "lookup table reads",
        "scattered (lookup8.S: the input picks the byte)",
        "in order",
        replace(SHIPPED, scattered=False),
    ),
    (
        "MUL's first input",
        "read 16 B past its end (mul_elementwise.S's last VLDC)",
        "no byte past it",
        replace(SHIPPED, overread=False),
    ),
    (
        "line size",
        "32 B (lib_nn prefetches '2 lines' as 64 B)",
        "16-byte lines",
        replace(SHIPPED, line_bytes=16),
    ),
    ("", "", "64-byte lines", replace(SHIPPED, line_bytes=64)),
    (
        "weights",
        "in the arena (ld_flash copies them there)",
        "in SRAM, arena in LPDDR",
        replace(SHIPPED, weights_in_arena=False),
    ),
    (
        "scratch, lookup table",
        "in the arena (GetScratchBuffer: arena + offset)",
        "in SRAM",
        replace(SHIPPED, scratch_in_arena=False),
    ),
)


def print_choices(model: Model, f: Fit, fits: Mapping[Structure, Fit]) -> None:
    shipped = f.errors()
    print("\nStructural choices, each alternative refitted: ratio error per kind, and the")
    print("kinds that tell it from what ships (5 points or more)")
    print(f"  {'shipped':31} {fmt_errors(shipped)}")
    for choice, ships, name, s in CHOICES:
        if choice:
            print(f"  {choice}: {ships}")
        e = (fits.get(s) or fit(model, s)).errors()
        print(f"    {name:29} {fmt_errors(e)}  <- {deciders(shipped, e)}")
    print(f"  LPDDR cache size: {SHIPPED.cache_bytes} B, assumed (no published figure)")
    for lo, hi in merged_intervals(model, fits):
        e = fits[replace(SHIPPED, cache_bytes=lo)].errors()
        span = "no cache" if hi == 0 else f"[{lo}, {hi}) B" if hi < 1 << 30 else f">= {lo} B"
        same = max(abs(e[k] - shipped[k]) for k in e) < SAME
        told = "the shipped fit" if same else deciders(shipped, e)
        print(f"    {span:29} {fmt_errors(e)}  <- {told}")
    exact, told = size_ranges(model, fits, shipped)
    print(
        f"  the fit is the shipped one for any size in [{exact[0]}, {exact[1]}) B, and no kind"
        f" moves 5 points over [{told[0]}, {told[1]}) B: the figures cannot tell sizes there apart"
    )


def merged_intervals(model: Model, fits: Mapping[Structure, Fit]) -> list[tuple[int, int]]:
    """``size_intervals`` with neighbours that give the same fit (within ``SAME``) joined."""
    out: list[tuple[int, int]] = []
    for lo, hi in size_intervals(model):
        if out and out[-1][1] == lo:
            a = fits[replace(SHIPPED, cache_bytes=out[-1][0])].errors()
            b = fits[replace(SHIPPED, cache_bytes=lo)].errors()
            if all(abs(a[k] - b[k]) < SAME for k in a):
                out[-1] = (out[-1][0], hi)
                continue
        out.append((lo, hi))
    return out


def size_ranges(
    model: Model, fits: Mapping[Structure, Fit], shipped: Mapping[str, float]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The cache sizes (bytes, [low, high)) around the shipped one that give the
    shipped fit (every error within ``SAME``), and those no kind tells from it
    (every |error| within 5 points): contiguous intervals of ``size_intervals``."""
    intervals = [iv for iv in size_intervals(model) if iv[1]]
    here = next(i for i, (lo, hi) in enumerate(intervals) if lo <= SHIPPED.cache_bytes < hi)

    def span(close) -> tuple[int, int]:
        def ok(i: int) -> bool:
            e = fits[replace(SHIPPED, cache_bytes=intervals[i][0])].errors()
            return all(close(e[k], shipped[k]) for k in e)

        lo = hi = here
        while lo > 0 and ok(lo - 1):
            lo -= 1
        while hi + 1 < len(intervals) and ok(hi + 1):
            hi += 1
        return intervals[lo][0], intervals[hi][1]

    exact = span(lambda a, b: abs(a - b) < SAME)
    told = span(lambda a, b: abs(abs(a) - abs(b)) < 0.05)
    return exact, told


def kind_ms(model: Model, target: Target, where: dict, persistent: str) -> dict[str, float]:
    """Milliseconds per kind by the time model as ``sweep`` and ``plan`` use it."""
    out: dict[str, float] = {}
    for t in Timer(model, target, persistent).times(where):
        kind = KIND.get(t.work.opcode, "other")
        out[kind] = out.get(kind, 0.0) + t.seconds * 1e3
    return out


def shipped_ratios(model: Model, target: Target) -> dict[str, float]:
    """Per kind, the LPDDR/SRAM ratio of ``target`` (as loaded: no refit)."""
    sram = kind_ms(model, target, everything_in(model, "sram"), "sram")
    lpddr = kind_ms(model, target, everything_in(model, "lpddr"), "lpddr")
    return {k: lpddr[k] / sram[k] for k in MEASURED}


def print_shipped(model: Model) -> None:
    target = load_builtin("xcore_ai")
    ratios = shipped_ratios(model, target)
    shown = " ".join(
        f"{k} {r:.2f} ({r / (e / s) - 1:+.0%})" for k, r in ratios.items() for s, e in [MEASURED[k]]
    )
    print(f"\nThe built-in xcore_ai as shipped, LPDDR/SRAM ratio (error): {shown}")
    sram = kind_ms(model, target, everything_in(model, "sram"), "sram")
    lpddr = kind_ms(model, target, everything_in(model, "lpddr"), "lpddr")
    base, whole = sum(sram.values()) + LD_FLASH_MS, sum(lpddr.values()) + LD_FLASH_MS
    print(
        f"whole model, ld_flash {LD_FLASH_MS} ms (measured) added: SRAM {base:.2f} ms "
        f"(measured {WHOLE[0]}), LPDDR {whole:.2f} ms (measured {WHOLE[1]})"
    )
    placements(model, target, base, f"measured {PERSISTENT_ONLY / WHOLE[0] - 1:+.2%}, in no fit")


def placements(model: Model, target: Target, base: float, note: str) -> None:
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


def main() -> int:
    model = split_arena_model()
    f = fit(model)
    m = f.target.memory("lpddr")
    print(f"LPDDR cache {m.cache_bytes} B, lines of {m.line_bytes} B, write-{m.cache_writes}")
    print_parameters(f)
    ops = operator_accesses(model, "xcore")
    fits = {s: fit(model, s, ops=ops) for s in choice_grid(model)}
    print_held_out(f, fits)
    print_choices(model, f, fits)
    print_shipped(model)
    vww = Path(__file__).resolve().parents[2] / "shared/models/mlcommons-tiny__vww_96_int8.tflite"
    if not vww.exists():
        print(f"{vww} absent: vww prediction skipped")
        return 0
    from arenaplan.reader import read_model

    m = read_model(vww)
    target = load_builtin("xcore_ai")
    print(f"{vww.name} on the built-in xcore_ai:")
    base = sum(kind_ms(m, target, everything_in(m, "sram"), "sram").values())
    placements(m, target, base, "no measurement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
