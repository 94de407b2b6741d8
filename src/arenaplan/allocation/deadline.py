"""One deadline shared by every phase of a solve, and the phase it ended.

Phases, in the order a solve runs them: ``reading`` (the CSV), ``preparation``
(bounds, arrays, orders), ``greedy:<order>`` (one first-fit order each),
``search`` (the exact search). Each phase asks ``expired(phase)`` before and
during its work; the first phase to find the time gone is remembered in
``ended_by`` so that the answer can say what was cut short.

Some work always follows the deadline: checking the answer, writing it, the
process's exit. Its time is kept back from the phases, measured during the run,
not assumed: each piece is a CPU cost the caller measured (``expect``), and the
wall time it will take is that cost over the share of a CPU this process has
been getting since the deadline's clock started (``share``). On a machine with
other jobs, the share falls and the reserve grows with it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

MIN_SHARE = 0.05  # of a CPU: the reserve never assumes less
SETTLED = 0.2  # wall seconds measured before the share is trusted (1.0 until then)
SLACK = 0.05  # wall seconds kept back beyond the measured work
# CPU seconds of freeing a problem at the process's exit, per CPU second its
# reading took (measured: a million buffers read in 1.3 s, freed in 0.19 s)
TEARDOWN = 0.2


def process_age() -> float:
    """Wall seconds since this process started (Linux's ``/proc/self/stat``; 0.0
    where that cannot be read)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])  # field 22, starttime: clock ticks after boot
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        return max(now - ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


@dataclass
class Deadline:
    """``at``: monotonic seconds, or None for no limit. ``ended_by``: "" until a
    phase finds the time gone, then that phase's name. ``started``/``cpu_at_start``:
    the monotonic and CPU (``time.process_time``) seconds the clock started at.
    ``work_after``: CPU seconds of each piece of work that follows the deadline."""

    at: float | None
    ended_by: str = ""
    started: float = field(default_factory=time.monotonic)
    cpu_at_start: float = field(default_factory=time.process_time)
    work_after: dict[str, float] = field(default_factory=dict)

    @classmethod
    def after(cls, seconds: float | None, since_start: bool = False) -> Deadline:
        """``seconds`` from now, or from the process's start (``since_start``: the
        limit then covers the interpreter's start-up too, and the share is measured
        over the whole process)."""
        now = time.monotonic()
        start = now - process_age() if since_start else now
        cpu = 0.0 if since_start else time.process_time()
        at = None if seconds is None else start + seconds
        return cls(at, started=start, cpu_at_start=cpu)

    def expect(self, work: str, cpu_seconds: float) -> None:
        """Keep back time for ``work`` done after the deadline: ``cpu_seconds`` of
        CPU, measured (or scaled from a measured sample) by the caller."""
        self.work_after[work] = max(cpu_seconds, 0.0)

    def share(self) -> float:
        """The share of one CPU this process has had since the clock started: CPU
        seconds over wall seconds, in [MIN_SHARE, 1] (1 for the first SETTLED s)."""
        wall = time.monotonic() - self.started
        if wall < SETTLED:
            return 1.0
        return min(max((time.process_time() - self.cpu_at_start) / wall, MIN_SHARE), 1.0)

    @property
    def reserve(self) -> float:
        """Wall seconds kept back for the work after the deadline (0 without any)."""
        cpu = sum(self.work_after.values())
        return cpu / self.share() + SLACK if cpu > 0 else 0.0

    def left(self) -> float | None:
        """Seconds left (never below zero), or None without a limit."""
        return None if self.at is None else max(self.at - self.reserve - time.monotonic(), 0.0)

    def expired(self, phase: str) -> bool:
        """Has the time run out? The first phase to see it is recorded."""
        if self.at is None or time.monotonic() < self.at - self.reserve:
            return False
        if not self.ended_by:
            self.ended_by = phase
        return True

    def stop(self, phase: str) -> None:
        """Record that ``phase`` was cut short by the deadline (found inside it)."""
        if not self.ended_by:
            self.ended_by = phase
