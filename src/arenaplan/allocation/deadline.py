"""One deadline shared by every phase of a solve, and the phase it ended.

Phases, in the order a solve runs them: ``reading`` (the CSV), ``preparation``
(bounds, arrays, orders), ``greedy:<order>`` (one first-fit order each),
``search`` (the exact search). Each phase asks ``expired(phase)`` before and
during its work; the first phase to find the time gone is remembered in
``ended_by`` so that the answer can say what was cut short.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Deadline:
    """``at``: monotonic seconds, or None for no limit. ``ended_by``: "" until a
    phase finds the time gone, then that phase's name."""

    at: float | None
    ended_by: str = ""
    started: float = field(default_factory=time.monotonic)
    reserve: float = 0.0  # seconds kept back at the end for validation and output

    def keep_back(self, n_buffers: int, writing: bool = False) -> None:
        """Keep time for what follows the work: checking the answer natively and
        printing it (about 2 us a buffer at a million on a loaded 2-core
        machine), then the process's exit: 4 us a buffer kept; ``writing`` a
        solution file: 1 us a buffer more."""
        self.reserve = max(self.reserve, n_buffers * (5e-6 if writing else 4e-6))

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        return cls(None if seconds is None else time.monotonic() + seconds)

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
