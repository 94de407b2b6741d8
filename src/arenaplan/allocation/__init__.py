"""Offset assignment: buffers with a lifetime and a size in, offsets out.

Nothing in this package knows about neural networks.
"""

from arenaplan.allocation.problem import Buffer, Problem, Solution
from arenaplan.allocation.registry import ALLOCATORS, get_allocator
from arenaplan.allocation.validate import check_solution, solution_problems

__all__ = [
    "ALLOCATORS",
    "Buffer",
    "Problem",
    "Solution",
    "check_solution",
    "get_allocator",
    "solution_problems",
]
