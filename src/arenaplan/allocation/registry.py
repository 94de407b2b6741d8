"""Allocators by name, as the command line and the plan builder choose them."""

from __future__ import annotations

import dataclasses

from arenaplan.allocation.minimize import ExactSolver
from arenaplan.allocation.portfolio import Portfolio
from arenaplan.allocation.problem import Allocator
from arenaplan.allocation.tflm_greedy import TflmGreedy
from arenaplan.errors import UsageError

ALLOCATORS: dict[str, Allocator] = {
    "portfolio": Portfolio(),
    "greedy": Portfolio(use_exact=False),
    "exact": ExactSolver(),
    "tflm-greedy": TflmGreedy(),
}


def get_allocator(name: str, seconds: float | None = None) -> Allocator:
    """The allocator called ``name``; ``seconds`` bounds its exact search, if it has one."""
    if name not in ALLOCATORS:
        known = ", ".join(sorted(ALLOCATORS))
        raise UsageError(f"unknown allocator {name!r} (known: {known})")
    allocator = ALLOCATORS[name]
    if seconds is not None and isinstance(allocator, Portfolio | ExactSolver):
        return dataclasses.replace(allocator, seconds=seconds)
    return allocator
