"""Fit a plan into a target's memories (``plan --target T [--memory NAME=SIZE ...]``).

If the single-arena plan fits the fastest memory that holds activations, it
stays; otherwise the activations are spread over the target's memories
(``placement.tiers``) and the memories are laid end to end in TFLM's one head,
fastest first, so the offline plan carries them and TFLM can verify it.
Every option that names a memory is checked against the target and the model
before anything is computed or written.
"""

from __future__ import annotations

from collections.abc import Mapping

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Problem
from arenaplan.analysis.buffers import arena_items
from arenaplan.errors import UsageError
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan, PlanOptions
from arenaplan.placement.planner import layout_plan
from arenaplan.placement.tiers import TierPlacement, laid_out_offsets, place_tiers, region_bases
from arenaplan.targets import Memory, Target


def kib(n: int) -> str:
    return f"{n:,} B" if n < 1024 else f"{n:,} B ({n / 1024:g} KiB)"


def check_within(size: int, memory: Memory, target: Target, option: str) -> None:
    """A size asked of ``memory`` (``option`` says where) that it really has: a plan for
    more would not fit the chip (``plan --memory``, ``explore --sram``)."""
    if size > memory.capacity:
        raise UsageError(
            f"{option}: {memory.name} of {target.name} has only {kib(memory.capacity)}; "
            "a plan for more would not fit the chip"
        )


def target_memory(target: Target, name: str, holds: str, option: str) -> Memory:
    """The memory ``name`` of ``target``, which must be allowed to hold ``holds`` data."""
    try:
        memory = target.memory(name)
    except KeyError:
        known = ", ".join(m.name for m in target.memories)
        raise UsageError(
            f"{option}: target {target.name} has no memory {name!r} ({known})"
        ) from None
    if holds not in memory.holds:
        raise UsageError(
            f"{option}: memory {name!r} of {target.name} may not hold {holds} data "
            f"(it holds {', '.join(memory.holds)})"
        )
    return memory


def check_capacities(model: Model, target: Target, caps: Mapping[str, int]) -> None:
    """A capacity must hold something: the fastest memory the kernel scratch buffers
    (TFLM places them in the head's first region), every memory the smallest tensor."""
    items = arena_items(model)
    sizes = [b.size for b in items.tensor_buffers if b.size > 0]
    smallest = min(sizes, default=0)
    scratch = live_bytes_bound(Problem(items.scratch_buffers))
    fast = target.fastest().name
    for name, cap in caps.items():
        need = max(smallest, scratch) if name == fast else smallest
        if cap < need:
            what = (
                "the kernel scratch buffers TFLM places there"
                if name == fast and scratch >= smallest
                else "the smallest tensor of this model"
            )
            raise UsageError(
                f"--memory {name}={cap}: too small to be used; {what} need {kib(need)} "
                "(sizes are bytes unless a unit is given: 32KiB)"
            )


def fit_to_target(
    model: Model,
    plan: Plan,
    target: Target,
    caps: Mapping[str, int],
    options: PlanOptions,
    lay_out: bool = True,
) -> tuple[Plan, TierPlacement | None]:
    """The plan itself if it fits the fastest memory, else a multi-memory plan: the
    placement over the memories and, with ``lay_out``, the plan of TFLM's one head with
    the memories laid end to end (without, the single-arena plan stays beside it)."""
    fast = target.fastest()
    if plan.arena <= caps.get(fast.name, fast.capacity):
        return plan, None
    tiers = place_tiers(
        model, target, caps, kernels=options.kernels, pointer_size=options.pointer_size
    )
    if not lay_out:
        return plan, tiers
    laid = layout_plan(model, laid_out_offsets(tiers, target), "tiers", options)
    return laid, tiers


def check_arena_memory(
    name: str | None,
    plan: Plan,
    target: Target,
    caps: Mapping[str, int],
    tiers: TierPlacement | None,
) -> Memory:
    """The memory of the (non-persistent) arena: the fastest unless ``name`` says
    otherwise, and never one that contradicts the placement (a weights plan spread
    over memories: a plain plan with ``name`` is never spread) or cannot hold it."""
    fast = target.fastest()
    if name is None:
        return fast
    memory = target_memory(target, name, "activations", "--arena-memory")
    if tiers is not None and memory.name != fast.name:
        spread = ", ".join(m for m, h in tiers.heights.items() if h)
        raise UsageError(
            f"--arena-memory {name}: the weights plan keeps its weight buffers in "
            f"{fast.name} and spreads the activations over {spread}, so TFLM's arena is "
            f"in {fast.name}; leave --arena-memory out, or give {fast.name} room (--memory)"
        )
    room = caps.get(memory.name, memory.capacity)
    if plan.arena > room:
        raise UsageError(
            f"--arena-memory {name}: the arena needs {kib(plan.arena)}, {name} has {kib(room)}"
        )
    return memory


def memory_regions(
    target: Target, caps: Mapping[str, int], plan: Plan, tiers: TierPlacement
) -> list[tuple[str, int, int, int]]:
    """(memory, base in the laid-out head, bytes used, capacity) of each memory used."""
    names = [m.name for m in target.memories if m.name in tiers.heights]
    bases = region_bases(tiers, names)
    used = [n for n in names if tiers.heights[n] > 0 or n == names[0]]
    return [(n, bases[n], tiers.heights[n], caps.get(n, target.memory(n).capacity)) for n in used]
