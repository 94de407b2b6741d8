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

Every tick count must be a whole number of at least one tick: MicroProfiler prints
unsigned 32-bit differences (or, per tag, their int sum), so a negative count is a
wrapped total, and zero is a timer that does not run (TFLM's default
``micro_time.cc`` returns 0) or is too coarse to time the operator; both are refused
naming the line (1-based), as is a table with no rows. How long a count may be
depends on the timer's rate: :func:`check_durations`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from arenaplan.errors import UsageError

_LOG = re.compile(r"(?P<tag>[^\s,\"]+) took (?P<ticks>\S+) ticks \((?P<ms>-?\d+) ms\)")
_CSV_HEADER = '"Event","Tag","Ticks"'
_CSV_ROW = re.compile(r"^\s*(?P<i>\d+),(?P<tag>[^,]+),(?P<ticks>[^,\s]+)\s*$")
_TAG_HEADER = '"Unique Tag","Total ticks across all events with that tag."'
_TAG_ROW = re.compile(r"^\s*(?P<tag>[^,\"]+), (?P<ticks>[^,\s]+)\s*$")
_TAG_TOTAL = re.compile(r'^\s*"total number of ticks", (?P<ticks>-?\d+)\s*$')

# The longest one event or one tag's total may last: one hour of the timer. No
# operator of a model TFLM runs takes that long; a count above it is a wrong timer
# rate or a corrupt log.
MAX_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class ProfileLog:
    """``events``: (tag, ticks) per event in order (empty for a per-tag summary);
    ``per_tag``: ticks summed per tag; ``total``: all ticks; ``ticks_per_ms`` when
    the log says it (0 otherwise). ``lines``: the line (1-based) of each event;
    ``tag_lines``: the lines each tag's ticks come from; ``source``: the file."""

    events: tuple[tuple[str, int], ...]
    per_tag: dict[str, int]
    total: int
    ticks_per_ms: float = 0.0
    format: str = ""
    lines: tuple[int, ...] = ()
    tag_lines: dict[str, tuple[int, ...]] = field(default_factory=dict)
    source: str = "profile"


def parse_profile(text: str, source: str = "profile") -> ProfileLog:
    """The profile in ``text``; a one-line ``UsageError`` if no format is found, a
    table has no rows, or a tick count is not a whole number of at least one."""
    lines = text.splitlines()
    if any(line.strip() == _TAG_HEADER for line in lines):
        return _per_tag(lines, source)
    if any(line.strip() == _CSV_HEADER for line in lines):
        start = next(i for i, line in enumerate(lines) if line.strip() == _CSV_HEADER)
        rows = [(n, m) for n, m in _numbered(lines, start + 1, _CSV_ROW.match) if m]
        if not rows:
            raise UsageError(f"{source}: the LogCsv table (line {start + 1}) has no rows")
        found = [(n, m["tag"].strip().strip('"'), m["ticks"]) for n, m in rows]
        return _events(found, "csv", source)
    matched = [(n, m) for n, m in _numbered(lines, 0, _LOG.search) if m]
    if not matched:
        raise UsageError(
            f"{source}: no MicroProfiler output found (expected lines like "
            "'CONV_2D took 1234 ticks (1 ms).', a LogCsv or a LogTicksPerTagCsv table)"
        )
    log = _events([(n, m["tag"], m["ticks"]) for n, m in matched], "log", source)
    ms = [(log.events[i][1], int(m["ms"])) for i, (_, m) in enumerate(matched)]
    return ProfileLog(
        log.events,
        log.per_tag,
        log.total,
        _ticks_per_ms(ms),
        "log",
        log.lines,
        log.tag_lines,
        source,
    )


def _numbered(lines: list[str], start: int, match) -> list[tuple[int, re.Match | None]]:
    """(1-based line number, match) of each line from ``start`` (0-based)."""
    return [(i + 1, match(lines[i])) for i in range(start, len(lines))]


def _ticks(text: str, source: str, line: int) -> int:
    """A tick count: a whole number, at least 1."""
    try:
        ticks = int(text)
    except ValueError:
        raise UsageError(f"{source} line {line}: ticks {text!r} is not a whole number") from None
    if ticks < 0:
        raise UsageError(
            f"{source} line {line}: {ticks} ticks is negative (a wrapped counter or a corrupt log)"
        )
    if ticks == 0:
        raise UsageError(
            f"{source} line {line}: 0 ticks: the timer does not run (TFLM's default "
            "micro_time.cc returns 0) or is too coarse to time this operator"
        )
    return ticks


def _events(found: list[tuple[int, str, str]], fmt: str, source: str) -> ProfileLog:
    """A log of events from (line, tag, ticks text) in order."""
    events = tuple((tag, _ticks(text, source, n)) for n, tag, text in found)
    per_tag: dict[str, int] = {}
    tag_lines: dict[str, tuple[int, ...]] = {}
    for (n, _, _), (tag, ticks) in zip(found, events, strict=True):
        per_tag[tag] = per_tag.get(tag, 0) + ticks
        tag_lines[tag] = (*tag_lines.get(tag, ()), n)
    lines = tuple(n for n, _, _ in found)
    total = sum(t for _, t in events)
    return ProfileLog(events, per_tag, total, 0.0, fmt, lines, tag_lines, source)


def _per_tag(lines: list[str], source: str) -> ProfileLog:
    start = next(i for i, line in enumerate(lines) if line.strip() == _TAG_HEADER)
    per_tag: dict[str, int] = {}
    tag_lines: dict[str, tuple[int, ...]] = {}
    total = None
    for n in range(start + 1, len(lines)):
        if m := _TAG_TOTAL.match(lines[n]):
            total = int(m["ticks"])
            break
        if m := _TAG_ROW.match(lines[n]):
            tag = m["tag"].strip()
            per_tag[tag] = per_tag.get(tag, 0) + _ticks(m["ticks"], source, n + 1)
            tag_lines[tag] = (*tag_lines.get(tag, ()), n + 1)
    if not per_tag:
        raise UsageError(f"{source}: the per-tag table (line {start + 1}) has no rows")
    total = total if total is not None else sum(per_tag.values())
    return ProfileLog((), per_tag, total, 0.0, "per-tag", (), tag_lines, source)


def _ticks_per_ms(events: list[tuple[int, int]]) -> float:
    """From (ticks, ms) of each event: the largest event's ratio (0 if it says 0 ms)."""
    ticks, ms = max(events, key=lambda e: e[0])
    return ticks / ms if ms > 0 else 0.0


def check_durations(log: ProfileLog, ticks_per_second: float) -> None:
    """Refuse, naming the line, a tick count (an event's, or a tag's total) above
    :data:`MAX_SECONDS` at ``ticks_per_second`` (the timer's rate, positive)."""
    limit = MAX_SECONDS * ticks_per_second
    counts = (
        list(zip(log.lines, log.events, strict=True))
        if log.events
        else [(log.tag_lines.get(tag, (0,))[0], (tag, t)) for tag, t in log.per_tag.items()]
    )
    for line, (tag, ticks) in counts:
        if ticks > limit:
            raise UsageError(
                f"{log.source} line {line}: {tag} took {ticks:,} ticks, more than "
                f"{MAX_SECONDS / 3600:g} hour at {ticks_per_second:g} ticks per second "
                f"(at most {limit:,.0f}): a wrong timer rate or a corrupt log"
            )
