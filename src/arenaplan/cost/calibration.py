"""Fit a target's compute rates and memory latencies to measured operator times.

Each run is one MicroProfiler log of the model under one placement (which memory
holds each tensor and the persistent arena). Under the time model of
``cost.timing`` an operator's cycles are linear in the unknowns

    x = [cycles per unit of work of each operator kind (or, with ``per_opcode``,
         of each opcode: ADD and MUL are both "elementwise" but need not cost alike)]
      + [latency of each memory beyond the fastest's, cycles per access]
      + [store latency of each memory behind a write-through cache beyond the
         fastest's latency, cycles per store]

(transfer time, bytes / bandwidth, is taken from the target and subtracted; the
fastest memory's own costs are part of the compute rates), so
the fit is one bounded linear least-squares problem (scipy's ``lsq_linear``,
every unknown >= 0): one row per operator when the log lists events in order
(invocations averaged), one row per tag when it gives per-tag totals. Rows are
weighted by 1 / sqrt(measured cycles): between absolute errors (where a 10 ms
conv would drown a 0.1 ms add) and relative ones (where an operator of a few
cycles, all timer noise, would steer the fit). Ticks are converted to cycles
with ``ticks_per_second`` (default: the target's clock, one tick per cycle).
The fitted rates (work per cycle) and latencies (cycles per access), and the fitted
cycles set against the measured ones, are estimates of the time model's parameters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from arenaplan.cost.profile_log import ProfileLog
from arenaplan.cost.roofline import TensorKey
from arenaplan.cost.timing import OpAccesses, per_memory, transfer_cycles
from arenaplan.errors import UsageError
from arenaplan.targets.model import Memory, Target

WRITES = ":writes"  # unknown of a memory's store latency (a write-through cache)


@dataclass(frozen=True, slots=True)
class Run:
    """One profile and the placement it was measured with."""

    name: str
    log: ProfileLog
    where: Mapping[TensorKey, str]
    persistent: str


@dataclass(frozen=True, slots=True)
class _Row:
    run: str
    label: str  # operator kind or opcode (for the error table)
    work: dict[str, float]  # kind (or opcode) -> work
    accesses: dict[str, float]  # memory (not the fastest) -> accesses reaching it
    transfer: float  # cycles of transfer beyond the fastest memory's (known)
    measured: float  # cycles


@dataclass(frozen=True, slots=True)
class Calibration:
    """The fitted target, and per (run, kind or opcode): measured and fitted cycles."""

    target: Target
    errors: tuple[tuple[str, str, float, float], ...]  # run, kind, measured, fitted cycles

    def worst(self) -> float:
        """The largest relative error of a (run, kind) total."""
        return max((abs(f - m) / m for _, _, m, f in self.errors if m), default=0.0)


def calibrate(
    ops: Sequence[OpAccesses],
    runs: Sequence[Run],
    target: Target,
    ticks_per_second: float | None = None,
    per_opcode: bool = False,
) -> Calibration:
    """Fit ``target``'s compute rates (per operator kind, or per opcode with
    ``per_opcode``) and memory latencies to the runs."""
    cycles_per_tick = target.clock_hz / (ticks_per_second or target.clock_hz)
    label = _opcode if per_opcode else _kind
    rows = [r for run in runs for r in _rows(ops, run, target, cycles_per_tick, label)]
    kinds = sorted({k for r in rows for k in r.work})
    memories = sorted({m for r in rows for m in r.accesses})
    x = _solve(rows, kinds, memories)
    fitted = _with(
        target, dict(zip(kinds, x[: len(kinds)], strict=True)), memories, x[len(kinds) :]
    )
    return Calibration(fitted, _errors(rows, kinds, memories, x))


def _kind(op: OpAccesses) -> str:
    return op.kind


def _opcode(op: OpAccesses) -> str:
    return op.opcode


def _rows(
    ops: Sequence[OpAccesses],
    run: Run,
    target: Target,
    cycles_per_tick: float,
    label: Callable[[OpAccesses], str],
) -> list[_Row]:
    main = [op for op in ops if op.subgraph == 0]
    if run.log.events:
        times = _per_operator(run, len(main))
        groups = [([op], t) for op, t in zip(main, times, strict=True)]
    else:
        groups = _per_tag(main, run)
    return [_row(group, t * cycles_per_tick, run, target, label) for group, t in groups]


def _per_operator(run: Run, n_ops: int) -> list[float]:
    """Mean ticks of each operator over the invocations the log holds."""
    events = [t for tag, t in run.log.events if tag not in _INTERPRETER_TAGS]
    if not n_ops or len(events) % n_ops:
        raise UsageError(
            f"{run.name}: {len(events)} operator events is not a whole number of "
            f"invocations of a model with {n_ops} operators"
        )
    per = np.asarray(events, dtype=float).reshape(-1, n_ops)
    return [float(v) for v in per.mean(axis=0)]


_INTERPRETER_TAGS = {"AllocateTensors", "Invoke", "MicroInterpreter::Invoke"}


def _per_tag(main: Sequence[OpAccesses], run: Run) -> list[tuple[list[OpAccesses], float]]:
    by_tag: dict[str, list[OpAccesses]] = defaultdict(list)
    for op in main:
        by_tag[op.opcode].append(op)
    missing = sorted(set(run.log.per_tag) - set(by_tag) - _INTERPRETER_TAGS)
    if missing:
        raise UsageError(
            f"{run.name}: the log has ticks for {', '.join(missing)}, which the model does not run"
        )
    return [(by_tag[tag], float(t)) for tag, t in sorted(run.log.per_tag.items()) if tag in by_tag]


def _row(
    group: list[OpAccesses],
    measured: float,
    r: Run,
    target: Target,
    label: Callable[[OpAccesses], str],
) -> _Row:
    work: dict[str, float] = defaultdict(float)
    accesses: dict[str, float] = defaultdict(float)
    transfer = 0.0
    fastest = target.fastest().name
    for op in group:
        work[label(op)] += op.work
        for name, reach in per_memory(op, r.where, r.persistent, target).items():
            if name == fastest:
                continue
            accesses[name] += reach.reads
            if reach.writes:
                accesses[name + WRITES] += reach.writes
            transfer += transfer_cycles(target, name, reach.bytes)
    return _Row(r.name, label(group[0]), dict(work), dict(accesses), transfer, measured)


def _matrix(rows: Sequence[_Row], kinds: list[str], memories: list[str]) -> np.ndarray:
    a = np.zeros((len(rows), len(kinds) + len(memories)))
    for i, r in enumerate(rows):
        for j, k in enumerate(kinds):
            a[i, j] = r.work.get(k, 0.0)
        for j, m in enumerate(memories):
            a[i, len(kinds) + j] = r.accesses.get(m, 0.0)
    return a


def _solve(rows: Sequence[_Row], kinds: list[str], memories: list[str]) -> np.ndarray:
    from scipy.optimize import lsq_linear

    a = _matrix(rows, kinds, memories)
    y = np.array([r.measured - r.transfer for r in rows])
    weight = 1.0 / np.sqrt(np.maximum(np.array([r.measured for r in rows]), 1.0))
    scale = np.maximum(np.abs(a).max(axis=0), 1e-12)  # columns of like size
    result = lsq_linear(a * weight[:, None] / scale, y * weight, bounds=(0, np.inf))
    return result.x / scale


def _with(
    target: Target, cycles_per_work: dict[str, float], memories: list[str], latency
) -> Target:
    rates = dict(target.macs_per_cycle)
    for kind, c in cycles_per_work.items():
        rates[kind] = 1.0 / c if c > 0 else float("inf")
    fast = target.fastest().latency
    extra = dict(zip(memories, (float(v) for v in latency), strict=True))
    mems = tuple(_latencies(m, fast, extra) for m in target.memories)
    return replace(target, macs_per_cycle=rates, memories=mems)


def _latencies(m: Memory, fast: float, extra: Mapping[str, float]) -> Memory:
    """``m`` with the fitted latencies (cycles beyond the fastest memory's) it has."""
    if m.name in extra:
        m = replace(m, latency=fast + extra[m.name])
    if m.name + WRITES in extra:
        m = replace(m, write_latency=fast + extra[m.name + WRITES])
    return m


def _errors(
    rows: Sequence[_Row], kinds: list[str], memories: list[str], x: np.ndarray
) -> tuple[tuple[str, str, float, float], ...]:
    fitted = _matrix(rows, kinds, memories) @ x + np.array([r.transfer for r in rows])
    totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r, f in zip(rows, fitted, strict=True):
        totals[(r.run, r.label)][0] += r.measured
        totals[(r.run, r.label)][1] += float(f)
    return tuple((run, kind, m, f) for (run, kind), (m, f) in sorted(totals.items()))
