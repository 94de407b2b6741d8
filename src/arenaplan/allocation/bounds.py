"""Lower bounds on the height of any solution."""

from __future__ import annotations

from arenaplan.allocation.problem import Problem


def live_bytes_bound(problem: Problem) -> int:
    """The peak over steps of the sum of sizes of buffers live at that step.

    Sizes are taken as given (callers pass sizes already rounded to their
    alignment where that matters). Computed by a sweep over interval ends.
    """
    events: list[tuple[int, int]] = []
    for b in problem.buffers:
        events.append((b.first, b.size))
        events.append((b.last + 1, -b.size))
    events.sort(key=lambda e: (e[0], e[1]))  # at one step, frees before allocations
    peak = live = 0
    for _, delta in events:
        live += delta
        peak = max(peak, live)
    return peak


def fixed_bound(problem: Problem) -> int:
    """No solution is lower than the top of a fixed-offset buffer."""
    return max((b.offset + b.size for b in problem.buffers if b.offset is not None), default=0)


def lower_bound(problem: Problem) -> int:
    return max(live_bytes_bound(problem), fixed_bound(problem))
