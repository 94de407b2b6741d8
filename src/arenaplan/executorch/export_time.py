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

With a target (``target=``, its memories' capacities overridden by ``memory=``), the
specs nobody pinned are spread over the memories that hold activations, fastest first,
as memory ids 1, 2, ...: each to a memory where it still packs, by the rule that costs
least (``allocation.banks``), where a spec costs the time its bytes take to be written
once and read by each node that takes it, at the memory's bandwidths and latency.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arenaplan.allocation.banks import assign_banks
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.registry import get_allocator
from arenaplan.allocation.validate import check_solution
from arenaplan.errors import UsageError
from arenaplan.targets.load import load_builtin
from arenaplan.targets.model import Target

DEFAULT_MEMORY = 1  # the memory id of a spec nobody pinned


@dataclass(frozen=True, slots=True)
class Bank:
    """A memory specs may go to: bytes, bytes per second, seconds per access."""

    name: str
    capacity: int
    read_bandwidth: float
    write_bandwidth: float
    latency: float


def memory_planning_algo(
    time_limit: float = 2.0,
    allocator: str = "portfolio",
    target: str | Target | None = None,
    memory: Mapping[str, int] | None = None,
) -> Callable[..., list[int]]:
    """The algorithm for ``MemoryPlanningPass(memory_planning_algo=...)``; the exact
    search of each memory's problem stops after ``time_limit`` seconds. ``target``: a
    built-in target's name or a ``Target`` whose memories the specs are spread over;
    ``memory``: capacities (bytes) by memory name, each at most the memory's."""
    solver = get_allocator(allocator, time_limit)
    banks = _banks(target, memory) if target is not None else None

    def arenaplan(
        alignment: int, specs: Any, graph_module: Any, graph_signature: Any, extra_padding: int = 0
    ) -> list[int]:
        reserved = getattr(graph_module, "input_mem_buffer_sizes", None) or []
        specs = list(specs)
        if banks is None:
            return plan_specs(specs, alignment, extra_padding, reserved, solver)
        used = spread_specs(specs, alignment, banks, _reads(graph_module))
        sizes = plan_specs(specs, alignment, extra_padding, reserved, solver)
        for bank, size in zip(used, sizes[DEFAULT_MEMORY:], strict=False):
            if size > bank.capacity:
                raise UsageError(
                    f"memory {bank.name}: the pool needs {size:,} B, it has {bank.capacity:,} B"
                )
        return sizes

    return arenaplan


def _banks(target: str | Target, memory: Mapping[str, int] | None) -> list[Bank]:
    """The memories that may hold activations, fastest first, at their capacities."""
    found = load_builtin(target) if isinstance(target, str) else target
    given = dict(memory or {})
    banks = []
    for m in found.memories:
        if "activations" not in m.holds:
            continue
        capacity = given.pop(m.name, m.capacity)
        if not 0 < capacity <= m.capacity:
            raise UsageError(f"memory {m.name}: {capacity:,} B, it has {m.capacity:,} B")
        banks.append(
            Bank(m.name, capacity, m.read_bandwidth, m.write_bandwidth, m.latency / found.clock_hz)
        )
    if given:
        raise UsageError(f"{found.name} has no memory {', '.join(sorted(given))} for activations")
    return banks


def spread_specs(
    specs: list[Any], alignment: int, banks: Sequence[Bank], reads: Mapping[int, int]
) -> None:
    """Set the memory id of every spec nobody pinned and that is no alias: memory id
    k+1 for ``banks[k]`` (``reads``: by ``id(spec)``, how many nodes read it)."""
    own = [s for s in sorted(specs, key=_key) if getattr(s, "storage_base", None) is None]
    if any(s.mem_id is not None for s in own):
        raise UsageError("specs pinned to a memory id: a target spreads only unpinned specs")
    if not own:
        return []
    buffers = tuple(
        Buffer(f"spec {k}", *_lifetime(s), s.realign(alignment), alignment)
        for k, s in enumerate(own)
    )

    def cost(i: int, k: int) -> float:  # seconds: written once, read by each reader
        b, n = banks[k], reads.get(id(own[i]), 1)
        return (
            buffers[i].size * (n / b.read_bandwidth + 1 / b.write_bandwidth) + (n + 1) * b.latency
        )

    where = assign_banks(Problem(buffers), [b.capacity for b in banks], cost)
    used = sorted(set(where))  # memory ids 1, 2, ... for the banks that hold a spec
    for spec, k in zip(own, where, strict=True):
        spec.mem_id = DEFAULT_MEMORY + used.index(k)
    return [banks[k] for k in used]


def _reads(graph_module: Any) -> dict[int, int]:
    """How many nodes of the graph take each spec (by ``id``), as far as the graph
    says (a node's ``meta["spec"]``, one spec or several)."""
    graph = getattr(graph_module, "graph", None)
    found: dict[int, int] = {}
    for node in getattr(graph, "nodes", ()):
        for source in getattr(node, "all_input_nodes", ()):
            spec = getattr(source, "meta", {}).get("spec")
            for s in spec if isinstance(spec, (list, tuple)) else (spec,):
                if s is not None:
                    found[id(s)] = found.get(id(s), 0) + 1
    return found


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
