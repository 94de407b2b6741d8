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

Nonsense is refused in one line, nothing fitted: a timer rate that is not a positive
finite number of at most ``MAX_TICKS_PER_SECOND``; a tick count above an hour of the
timer (``profile_log.check_durations``); a log with no operator events; tags that
name no operator of the model, or events out of the model's order; and fitted
parameters outside the bounds a target file allows (``targets.load``: a rate of
``RATE_MIN``..``RATE_MAX`` work per cycle, a latency of at most ``LATENCY_LIMIT``
cycles), with the log lines whose rows set them. A kind (or opcode) with no work in
any row is not fitted: it keeps the target's rate.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from arenaplan.cost.profile_log import ProfileLog, check_durations
from arenaplan.cost.roofline import TensorKey
from arenaplan.cost.timing import OpAccesses, per_memory, transfer_cycles
from arenaplan.errors import UsageError
from arenaplan.targets.load import LATENCY_LIMIT, RATE_MAX, RATE_MIN
from arenaplan.targets.model import Memory, Target

WRITES = ":writes"  # unknown of a memory's store latency (a write-through cache)
MAX_TICKS_PER_SECOND = 1e12  # a timer rate above 1 THz is no real timer


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
    lines: tuple[int, ...]  # lines of the run's log this row's ticks come from (1-based)


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
    rate = target.clock_hz if ticks_per_second is None else check_ticks_per_second(ticks_per_second)
    for run in runs:
        check_durations(run.log, rate)
    cycles_per_tick = target.clock_hz / rate
    label = _opcode if per_opcode else _kind
    rows = [r for run in runs for r in _rows(ops, run, target, cycles_per_tick, label)]
    kinds = sorted({k for r in rows for k, w in r.work.items() if w > 0})
    memories = sorted({m for r in rows for m in r.accesses})
    if not kinds and not memories:
        raise UsageError("the logs' operators do no work the time model counts: nothing to fit")
    x = _solve(rows, kinds, memories)
    _check_fit(rows, kinds, memories, x, target)
    fitted = _with(
        target, dict(zip(kinds, x[: len(kinds)], strict=True)), memories, x[len(kinds) :]
    )
    return Calibration(fitted, _errors(rows, kinds, memories, x))


def check_ticks_per_second(value: float) -> float:
    """``value`` if it is a timer rate: positive, finite, at most ``MAX_TICKS_PER_SECOND``."""
    if not math.isfinite(value) or not 0 < value <= MAX_TICKS_PER_SECOND:
        raise UsageError(
            f"ticks per second must be a positive finite number of at most "
            f"{MAX_TICKS_PER_SECOND:g}, got {value:g}"
        )
    return float(value)


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
    groups = _per_operator(main, run) if run.log.events else _per_tag(main, run)
    return [
        _row(group, t * cycles_per_tick, run, target, label, lines) for group, t, lines in groups
    ]


_Group = tuple[list[OpAccesses], float, tuple[int, ...]]  # operators, ticks, log lines


def _per_operator(main: Sequence[OpAccesses], run: Run) -> list[_Group]:
    """Each operator with its mean ticks over the invocations the log holds, whose
    events must name the model's operators in the model's order."""
    log = run.log
    found = [
        (line, tag, t)
        for line, (tag, t) in zip(log.lines, log.events, strict=True)
        if tag not in _INTERPRETER_TAGS
    ]
    _check_tags(run, {tag for _, tag, _ in found}, main)
    n_ops = len(main)
    if len(found) % n_ops:
        raise UsageError(
            f"{run.name}: {len(found)} operator events is not a whole number of "
            f"invocations of a model with {n_ops} operators"
        )
    for k, (line, tag, _) in enumerate(found):
        op = main[k % n_ops]
        if tag != op.opcode:
            raise UsageError(
                f"{run.name} line {line}: event {tag}, where the model's operator "
                f"{op.op} ({k % n_ops + 1} of {n_ops} in order) is {op.opcode}: "
                "a log of another model"
            )
    per = np.asarray([t for _, _, t in found], dtype=float).reshape(-1, n_ops)
    lines = [tuple(line for line, _, _ in found[i::n_ops]) for i in range(n_ops)]
    return [([op], float(t), ls) for op, t, ls in zip(main, per.mean(axis=0), lines, strict=True)]


def _check_tags(run: Run, tags: set[str], main: Sequence[OpAccesses]) -> None:
    """Refuse a log with no operator's ticks, or with tags no operator of the model has."""
    if not tags:
        raise UsageError(f"{run.name}: the log has no ticks of any operator")
    if not main:
        raise UsageError(f"{run.name}: the model has no operators to calibrate")
    unknown = sorted(tags - {op.opcode for op in main})
    if unknown:
        lines = sorted(n for tag in unknown for n in run.log.tag_lines.get(tag, ()))
        raise UsageError(
            f"{run.name}: tag(s) {', '.join(unknown)} ({_lines(lines)}) match no "
            "operator of the model: a log of another model"
        )


_INTERPRETER_TAGS = {"AllocateTensors", "Invoke", "MicroInterpreter::Invoke"}


def _per_tag(main: Sequence[OpAccesses], run: Run) -> list[_Group]:
    by_tag: dict[str, list[OpAccesses]] = defaultdict(list)
    for op in main:
        by_tag[op.opcode].append(op)
    _check_tags(run, set(run.log.per_tag) - _INTERPRETER_TAGS, main)
    return [
        (by_tag[tag], float(t), run.log.tag_lines.get(tag, ()))
        for tag, t in sorted(run.log.per_tag.items())
        if tag in by_tag
    ]


def _lines(lines: Sequence[int], shown: int = 5) -> str:
    """``lines 3, 5, 9 and 12 more``: line numbers (1-based), the first ``shown`` of them."""
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    word = "line" if len(lines) == 1 else "lines"
    return f"{word} " + ", ".join(str(n) for n in lines[:shown]) + more


def _row(
    group: list[OpAccesses],
    measured: float,
    r: Run,
    target: Target,
    label: Callable[[OpAccesses], str],
    lines: tuple[int, ...],
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
    return _Row(r.name, label(group[0]), dict(work), dict(accesses), transfer, measured, lines)


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


def _check_fit(
    rows: Sequence[_Row], kinds: list[str], memories: list[str], x: np.ndarray, target: Target
) -> None:
    """Refuse a fitted parameter that is not finite or outside what a target file
    allows, naming it and the log lines of the rows that set it."""
    a = _matrix(rows, kinds, memories)
    fast = target.fastest().latency
    for j, name in enumerate(kinds + memories):
        value = float(x[j])
        if j < len(kinds):
            rate = 1.0 / value if value > 0 else math.inf
            if math.isfinite(rate) and RATE_MIN <= rate <= RATE_MAX:
                continue
            what = f"the compute rate of {name} came out at {rate:g} work per cycle"
            bound = f"outside {RATE_MIN:g}..{RATE_MAX:g}"
        else:
            latency = fast + value
            if math.isfinite(latency) and latency <= LATENCY_LIMIT:
                continue
            kind = "store latency" if name.endswith(WRITES) else "latency"
            what = f"the {kind} of {name.removesuffix(WRITES)} came out at {latency:g} cycles"
            bound = f"above {LATENCY_LIMIT:g}"
        raise UsageError(f"{what}, {bound}: from {_sources(rows, a[:, j])}")


def _sources(rows: Sequence[_Row], column: np.ndarray) -> str:
    """``run_a.log lines 3, 5; run_b.log lines 4``: the log lines of the rows in which
    an unknown's column is non-zero."""
    per_run: dict[str, list[int]] = defaultdict(list)
    for r, value in zip(rows, column, strict=True):
        if value:
            per_run[r.run].extend(r.lines)
    shown = "; ".join(f"{run} {_lines(sorted(ls))}" for run, ls in per_run.items())
    return shown or "no row of the logs (the model does none of it)"


def _with(
    target: Target, cycles_per_work: dict[str, float], memories: list[str], latency
) -> Target:
    rates = dict(target.macs_per_cycle)
    for kind, c in cycles_per_work.items():
        rates[kind] = 1.0 / c  # c > 0: _check_fit refused a rate of inf
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
