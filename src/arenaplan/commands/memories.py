"""``plan --target T [--memory NAME=SIZE ...]``: fit the plan into the target's memories.

If the single-arena plan fits the fastest memory that holds activations, it
stays; otherwise the activations are spread over the target's memories
(``placement.tiers``) and the memories are laid end to end in TFLM's one head,
fastest first, so the offline plan carries them and TFLM can verify it.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from arenaplan.analysis.persistent import min_arena, predict_tail
from arenaplan.errors import UsageError
from arenaplan.ir.model import Model
from arenaplan.placement import Plan, PlanOptions
from arenaplan.placement.planner import layout_plan
from arenaplan.placement.tiers import TierPlacement, laid_out_offsets, place_tiers, region_bases
from arenaplan.targets import Target
from arenaplan.units import parse_size


def parse_memories(specs: list[str], target: Target | None) -> dict[str, int]:
    """``["sram=256KiB", ...]`` -> capacities (bytes), checked against the target."""
    if specs and target is None:
        raise UsageError("--memory needs --target")
    caps: dict[str, int] = {}
    for spec in specs:
        name, sep, size = spec.partition("=")
        if not sep:
            raise UsageError(f"--memory {spec!r}: expected NAME=SIZE, e.g. sram=256KiB")
        try:
            target.memory(name)  # type: ignore[union-attr]
        except KeyError:
            known = ", ".join(m.name for m in target.memories)  # type: ignore[union-attr]
            raise UsageError(f"--memory {spec!r}: no memory {name!r} ({known})") from None
        caps[name] = parse_size(size, f"--memory {name}")
    return caps


def fit_to_target(
    model: Model, plan: Plan, target: Target, caps: dict[str, int], options: PlanOptions
) -> tuple[Plan, TierPlacement | None]:
    """The plan itself if it fits the fastest memory, else a multi-memory plan."""
    fast = target.fastest()
    if plan.arena <= caps.get(fast.name, fast.capacity):
        return plan, None
    tiers = place_tiers(model, target, caps)
    laid = layout_plan(model, laid_out_offsets(tiers, target), "tiers", options)
    return laid, tiers


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
            f"estimated latency {tiers.seconds * 1e3:.3f} ms (roofline); the "
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
    tail = predict_tail(model, profile)
    fast = target.fastest()
    head = tiers.heights[fast.name] if tiers else plan.arena
    one = min_arena(model, head, len(plan.tensors) + len(plan.scratch), profile)
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
