"""Read TFLM's MicroProfiler output (``micro_profiler.cc``), in any of its formats.

- ``Log()``: one line per event, ``<TAG> took <ticks> ticks (<ms> ms).``
- ``LogCsv()``: a header ``"Event","Tag","Ticks"``, then ``<i>,<TAG>,<ticks>``.
- ``LogTicksPerTagCsv()``: a header ``"Unique Tag","Total ticks across all events
  with that tag."``, then ``<TAG>, <ticks>`` per tag and ``"total number of ticks",
  <ticks>``.

Lines around them (the application's own output, log prefixes) are ignored. Ticks
are the target's timer ticks (``GetCurrentTimeTicks``); ``ticks_per_ms`` is known
only where ``Log()`` printed both (the largest event gives the best estimate).
Events are per operator invocation, in execution order: a log of N invocations of
a model with K operators has N * K events, besides the interpreter's own (tagged
for example ``AllocateTensors``: kept here, left out by ``cost.calibration``). These
are measurements, read as they are; only ``ticks_per_ms`` is an estimate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from arenaplan.errors import UsageError

_LOG = re.compile(r"(?P<tag>[^\s,\"]+) took (?P<ticks>\d+) ticks \((?P<ms>-?\d+) ms\)")
_CSV_HEADER = '"Event","Tag","Ticks"'
_CSV_ROW = re.compile(r"^\s*(?P<i>\d+),(?P<tag>[^,]+),(?P<ticks>-?\d+)\s*$")
_TAG_HEADER = '"Unique Tag","Total ticks across all events with that tag."'
_TAG_ROW = re.compile(r"^\s*(?P<tag>[^,\"]+), (?P<ticks>-?\d+)\s*$")
_TAG_TOTAL = re.compile(r'^\s*"total number of ticks", (?P<ticks>-?\d+)\s*$')


@dataclass(frozen=True, slots=True)
class ProfileLog:
    """``events``: (tag, ticks) per event in order (empty for a per-tag summary);
    ``per_tag``: ticks summed per tag; ``total``: all ticks; ``ticks_per_ms`` when
    the log says it (0 otherwise)."""

    events: tuple[tuple[str, int], ...]
    per_tag: dict[str, int]
    total: int
    ticks_per_ms: float = 0.0
    format: str = ""


def parse_profile(text: str, source: str = "profile") -> ProfileLog:
    """The profile in ``text``; a one-line ``UsageError`` if no format is found."""
    lines = text.splitlines()
    if any(line.strip() == _TAG_HEADER for line in lines):
        return _per_tag(lines, source)
    if any(line.strip() == _CSV_HEADER for line in lines):
        return _events([_csv_event(m) for m in map(_CSV_ROW.match, lines) if m], "csv")
    found = [m for m in map(_LOG.search, lines) if m]
    if not found:
        raise UsageError(
            f"{source}: no MicroProfiler output found (expected lines like "
            "'CONV_2D took 1234 ticks (1 ms).', a LogCsv or a LogTicksPerTagCsv table)"
        )
    log = _events([(m["tag"], int(m["ticks"])) for m in found], "log")
    return ProfileLog(log.events, log.per_tag, log.total, _ticks_per_ms(found), "log")


def _csv_event(m: re.Match) -> tuple[str, int]:
    return m["tag"].strip().strip('"'), int(m["ticks"])


def _events(events: list[tuple[str, int]], fmt: str) -> ProfileLog:
    per_tag: dict[str, int] = {}
    for tag, ticks in events:
        per_tag[tag] = per_tag.get(tag, 0) + ticks
    return ProfileLog(tuple(events), per_tag, sum(t for _, t in events), 0.0, fmt)


def _per_tag(lines: list[str], source: str) -> ProfileLog:
    start = next(i for i, line in enumerate(lines) if line.strip() == _TAG_HEADER)
    per_tag: dict[str, int] = {}
    total = None
    for line in lines[start + 1 :]:
        if m := _TAG_TOTAL.match(line):
            total = int(m["ticks"])
            break
        if m := _TAG_ROW.match(line):
            per_tag[m["tag"].strip()] = per_tag.get(m["tag"].strip(), 0) + int(m["ticks"])
    if not per_tag:
        raise UsageError(f"{source}: the per-tag table has no rows")
    return ProfileLog(
        (), per_tag, total if total is not None else sum(per_tag.values()), 0.0, "per-tag"
    )


def _ticks_per_ms(found: list[re.Match]) -> float:
    best = max(found, key=lambda m: int(m["ticks"]))
    ms = int(best["ms"])
    return int(best["ticks"]) / ms if ms > 0 else 0.0
