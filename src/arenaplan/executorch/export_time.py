"""arenaplan as ExecuTorch's memory planning algorithm, at export time.

    from arenaplan.executorch import memory_planning_algo
    program = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=
        MemoryPlanningPass(memory_planning_algo=memory_planning_algo())))

ExecuTorch calls the algorithm once per graph with ``(alignment, specs, graph_module,
graph_signature, extra_padding)``; each spec has an inclusive ``lifetime`` (node
indices) and its bytes (``realign(alignment)``), may be pinned to a memory
(``mem_id`` set) or alias another (``storage_base`` at ``storage_base_offset``). The
algorithm sets ``mem_id`` and ``mem_offset`` on every spec and returns the pool sizes
``[0, pool 1, pool 2, ...]``. Here each memory's specs are one buffer problem for
arenaplan's solver, every solution checked by the allocation validator (which shares
no code with the solver) before a spec is touched; aliases follow their base; each pool
keeps the room ``graph_module.input_mem_buffer_sizes`` reserves below it and gets
``extra_padding`` above. Nothing here imports torch: the specs are duck-typed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.registry import get_allocator
from arenaplan.allocation.validate import check_solution
from arenaplan.errors import UsageError

DEFAULT_MEMORY = 1  # the memory id of a spec nobody pinned


def memory_planning_algo(
    time_limit: float = 2.0, allocator: str = "portfolio"
) -> Callable[..., list[int]]:
    """The algorithm for ``MemoryPlanningPass(memory_planning_algo=...)``; the exact
    search of each memory's problem stops after ``time_limit`` seconds."""
    solver = get_allocator(allocator, time_limit)

    def arenaplan(
        alignment: int, specs: Any, graph_module: Any, graph_signature: Any, extra_padding: int = 0
    ) -> list[int]:
        reserved = getattr(graph_module, "input_mem_buffer_sizes", None) or []
        return plan_specs(list(specs), alignment, extra_padding, reserved, solver)

    return arenaplan


def plan_specs(
    specs: list[Any], alignment: int, extra_padding: int, reserved: Sequence[int], solver: Any
) -> list[int]:
    """Place ``specs`` (setting ``mem_id`` and ``mem_offset``); the pool sizes, bytes."""
    if alignment <= 0:
        raise UsageError(f"alignment {alignment}: must be positive")
    ordered = sorted(specs, key=_key)
    own = [s for s in ordered if getattr(s, "storage_base", None) is None]
    sizes: dict[int, int] = {}
    for memory in sorted({_memory(s) for s in own}):
        group = [s for s in own if _memory(s) == memory]
        below = reserved[memory] if memory < len(reserved) else 0
        sizes[memory] = below + _place(group, memory, below, alignment, solver) + extra_padding
    for spec in ordered:
        if getattr(spec, "storage_base", None) is not None:
            root, delta = _root(spec)
            spec.mem_id, spec.mem_offset = root.mem_id, root.mem_offset + delta
    top = max(sizes, default=DEFAULT_MEMORY)
    return [0 if k == 0 else sizes.get(k, 0) for k in range(top + 1)]


def _place(group: list[Any], memory: int, below: int, alignment: int, solver: Any) -> int:
    """Solve one memory's specs, check the solution, set them; the pool's height."""
    buffers = tuple(
        Buffer(f"spec {k}", *_lifetime(s), s.realign(alignment), alignment)
        for k, s in enumerate(group)
    )
    problem = Problem(buffers)
    solution = solver.solve(problem)
    check_solution(problem, solution.offsets)
    for spec, offset in zip(group, solution.offsets, strict=True):
        spec.mem_id, spec.mem_offset = memory, below + offset
    return solution.height


def _memory(spec: Any) -> int:
    return DEFAULT_MEMORY if spec.mem_id is None else int(spec.mem_id)


def _lifetime(spec: Any) -> tuple[int, int]:
    first, last = spec.lifetime
    return (0, 0) if first is None or last is None else (int(first), int(last))


def _root(spec: Any) -> tuple[Any, int]:
    """The spec whose storage ``spec`` lies in, and how far into it (bytes)."""
    delta, seen = 0, set()
    while spec.storage_base is not None:
        if id(spec) in seen:
            raise UsageError("specs whose storage_base chain is a cycle")
        seen.add(id(spec))
        delta += int(getattr(spec, "storage_base_offset", 0))
        spec = spec.storage_base
    return spec, delta


def _key(spec: Any) -> tuple:
    """An order of the specs that does not depend on the set they came in."""
    first, last = _lifetime(spec)
    return (first, last, -spec.allocated_memory, tuple(getattr(spec, "shape", ())))
