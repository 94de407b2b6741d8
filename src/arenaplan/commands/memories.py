"""``plan --target T [--memory NAME=SIZE ...]``: fit the plan into the target's memories.

If the single-arena plan fits the fastest memory that holds activations, it
stays; otherwise the activations are spread over the target's memories
(``placement.tiers``) and the memories are laid end to end in TFLM's one head,
fastest first, so the offline plan carries them and TFLM can verify it.
Every option that names a memory is checked against the target and the model
before anything is computed or written.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Problem
from arenaplan.analysis.buffers import arena_items
from arenaplan.errors import UsageError
from arenaplan.export.summary import PROFILE_WORDS, arena_line, estimate_words
from arenaplan.ir.model import Model
from arenaplan.placement import Plan, PlanOptions
from arenaplan.placement.planner import layout_plan
from arenaplan.placement.tiers import TierPlacement, laid_out_offsets, place_tiers, region_bases
from arenaplan.targets import Memory, Target
from arenaplan.tflm.tail import (
    min_arena,
    planning_room,
    predict_tail,
    tail_estimate,
)
from arenaplan.units import parse_size


def _kib(n: int) -> str:
    return f"{n:,} B" if n < 1024 else f"{n:,} B ({n / 1024:g} KiB)"


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


def parse_memories(specs: list[str], target: Target | None) -> dict[str, int]:
    """``["sram=256KiB", ...]`` -> capacities (bytes) of memories that hold activations,
    each no larger than the memory really is."""
    if specs and target is None:
        raise UsageError("--memory needs --target")
    caps: dict[str, int] = {}
    for spec in specs:
        name, sep, size = spec.partition("=")
        if not sep:
            raise UsageError(f"--memory {spec!r}: expected NAME=SIZE, e.g. sram=256KiB")
        memory = target_memory(target, name, "activations", f"--memory {spec}")  # type: ignore[arg-type]
        if name in caps:
            raise UsageError(f"--memory {name} is given twice")
        caps[name] = parse_size(size, f"--memory {name}")
        if caps[name] > memory.capacity:
            raise UsageError(
                f"--memory {spec}: {name} of {target.name} has only "  # type: ignore[union-attr]
                f"{_kib(memory.capacity)}; a plan for more would not fit the chip"
            )
    return caps


def check_capacities(model: Model, target: Target, caps: dict[str, int]) -> None:
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
                f"--memory {name}={cap}: too small to be used; {what} need {_kib(need)} "
                "(sizes are bytes unless a unit is given: 32KiB)"
            )


def fit_to_target(
    model: Model, plan: Plan, target: Target, caps: dict[str, int], options: PlanOptions
) -> tuple[Plan, TierPlacement | None]:
    """The plan itself if it fits the fastest memory, else a multi-memory plan."""
    fast = target.fastest()
    if plan.arena <= caps.get(fast.name, fast.capacity):
        return plan, None
    tiers = place_tiers(
        model, target, caps, kernels=options.kernels, pointer_size=options.pointer_size
    )
    laid = layout_plan(model, laid_out_offsets(tiers, target), "tiers", options)
    return laid, tiers


def check_arena_memory(
    name: str | None,
    plan: Plan,
    target: Target,
    caps: dict[str, int],
    tiers: TierPlacement | None,
) -> Memory:
    """The memory of the (non-persistent) arena: the fastest unless ``name`` says
    otherwise, and never one that contradicts the placement or cannot hold it."""
    fast = target.fastest()
    if name is None:
        return fast
    memory = target_memory(target, name, "activations", "--arena-memory")
    if tiers is not None and memory.name != fast.name:
        spread = ", ".join(m for m, h in tiers.heights.items() if h)
        raise UsageError(
            f"--arena-memory {name}: the plan spreads the activations over {spread}; "
            f"TFLM's arena is the region in {fast.name}, so it must be {fast.name}"
        )
    room = caps.get(memory.name, memory.capacity)
    if plan.arena > room:
        raise UsageError(
            f"--arena-memory {name}: the arena needs {_kib(plan.arena)}, {name} has {_kib(room)}"
        )
    return memory


def print_memories(
    console: Console,
    model: Model,
    target: Target,
    caps: dict[str, int],
    plan: Plan,
    tiers: TierPlacement | None,
) -> None:
    table = Table(title=f"memories of {target.name}")
    for col in ("memory", "capacity", "arena bytes", "tensors", "region in the head"):
        table.add_column(col, justify="left" if col == "memory" else "right")
    names = [m.name for m in target.memories if "activations" in m.holds]
    bases = region_bases(tiers, names) if tiers else {names[0]: 0}
    for name in names:
        cap = caps.get(name, target.memory(name).capacity)
        used = tiers.heights.get(name, 0) if tiers else (plan.arena if name == names[0] else 0)
        count = (
            sum(1 for m in tiers.memory_of.values() if m == name)
            if tiers
            else (len(plan.tensors) if name == names[0] else 0)
        )
        where = f"{bases[name]:,}..{bases[name] + used:,}" if used else "-"
        table.add_row(name, f"{cap:,}", f"{used:,}", str(count), where)
    console.print(table)
    if tiers is not None:
        console.print(
            f"estimated latency {tiers.seconds * 1e3:.3f} ms (roofline estimate); the "
            f"offline plan lays the memories end to end in one head of "
            f"{plan.arena:,} B"
        )
    console.print(persistent_advice(model, plan, target, caps, tiers))


def persistent_memory(
    model: Model, plan: Plan, target: Target, caps: dict[str, int], tiers: TierPlacement | None
) -> tuple[str | None, int, int]:
    """Where TFLM's persistent arena (its tail, at the target's profile) should go:
    (None when one arena fits the fastest memory, else the first other memory that may
    hold persistent data and has room, or "" if none has), tail bytes, one-arena bytes."""
    profile = target.tflm_profile
    tail = predict_tail(model, profile, kernels=plan.kernels)
    fast = target.fastest()
    head = tiers.heights[fast.name] if tiers else plan.arena
    one = min_arena(model, head, len(plan.tensors) + len(plan.scratch), profile, plan.kernels)
    if one <= caps.get(fast.name, fast.capacity):
        return None, tail, one
    used = tiers.heights if tiers else {fast.name: head}
    for m in target.memories:
        room = caps.get(m.name, m.capacity) - used.get(m.name, 0)
        if m.name != fast.name and "persistent" in m.holds and room >= tail:
            return m.name, tail, one
    return "", tail, one


def persistent_advice(
    model: Model, plan: Plan, target: Target, caps: dict[str, int], tiers: TierPlacement | None
) -> str:
    memory, tail, one = persistent_memory(model, plan, target, caps, tiers)
    fast = target.fastest().name
    what = f"persistent arena ({target.tflm_profile} tail {tail:,} B)"
    if memory is None:
        return f"{what} fits beside the head: one arena of {one:,} B in {fast}"
    if memory:
        return (
            f"{what} does not fit beside the head in {fast}: it goes to {memory} "
            "(two arenas; --header writes them)"
        )
    return f"{what}: no memory has room for it"


def memory_regions(
    target: Target, caps: dict[str, int], plan: Plan, tiers: TierPlacement
) -> list[tuple[str, int, int, int]]:
    """(memory, base in the laid-out head, bytes used, capacity) of each memory used."""
    names = [m.name for m in target.memories if m.name in tiers.heights]
    bases = region_bases(tiers, names)
    used = [n for n in names if tiers.heights[n] > 0 or n == names[0]]
    return [(n, bases[n], tiers.heights[n], caps.get(n, target.memory(n).capacity)) for n in used]


def target_arena_line(
    model: Model,
    plan: Plan,
    target: Target,
    caps: dict[str, int],
    tiers: TierPlacement | None,
    profile: str,
) -> str:
    """The firmware line for a target: one arena in the fastest memory, or two."""
    fast = target.fastest().name
    head = tiers.heights[fast] if tiers else plan.arena
    memory, _, _ = persistent_memory(model, plan, target, caps, tiers)
    if not memory:
        return f"{arena_line(model, plan, profile, head)}, in {fast}"
    n_planned = len(plan.tensors) + len(plan.scratch)
    non_persistent = max(head, planning_room(model, len(plan.scratch), n_planned, profile))
    estimate = tail_estimate(model, profile, kernels=plan.kernels)
    tail = -(-estimate.bytes // 16) * 16
    words = PROFILE_WORDS.get(profile, profile)
    if not estimate.exact:
        words += f"; an estimate, not modelled: {estimate_words(estimate.unmodelled)}"
    least = "" if estimate.exact else "at least "
    return (
        f"set the non-persistent arena to {non_persistent:,} bytes in {fast} and the "
        f"persistent arena to {least}{tail:,} bytes in {memory} (profile {profile}: {words})"
    )
