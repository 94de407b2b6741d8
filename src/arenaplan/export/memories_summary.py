"""What ``plan --target`` prints about the target's memories: a table of the
memories, where TFLM's persistent arena goes, and the firmware's arena line.

A plan that fits the fastest memory runs from one arena, or two (the persistent
arena elsewhere), which ``--header`` writes. A plan spread over memories runs
from the split arena ``--planner-cpp`` writes (``export.planner_cpp``): one array
per activation memory and a persistent array for TFLM's temporaries and
persistent data; its figures are those arrays'."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from arenaplan.cost.timing import time_model_label
from arenaplan.export.planner_cpp import split_arrays, split_persistent
from arenaplan.export.summary import PROFILE_WORDS, arena_line, estimate_words
from arenaplan.ir.model import Model
from arenaplan.placement import Plan
from arenaplan.placement.memories import persistent_memory
from arenaplan.placement.tiers import TierPlacement, region_bases
from arenaplan.targets import Target
from arenaplan.tflm.tail import planning_room, tail_estimate


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
            f"estimated latency {tiers.seconds * 1e3:.3f} ms ({time_model_label(target)}); the "
            f"offline plan lays the memories end to end in one head of "
            f"{plan.arena:,} B"
        )
    console.print(persistent_advice(model, plan, target, caps, tiers))


def persistent_advice(
    model: Model, plan: Plan, target: Target, caps: dict[str, int], tiers: TierPlacement | None
) -> str:
    memory, tail, one = persistent_memory(model, plan, target, caps, tiers)
    fast = target.fastest().name
    what = f"persistent arena ({target.tflm_profile} tail {tail:,} B)"
    others = "; --planner-cpp writes the other memories' arrays and the planner" if tiers else ""
    if memory is None:
        return f"{what} fits beside the head: one arena of {one:,} B in {fast}{others}"
    if tiers is not None:  # the split arena's own figures are on the last line
        home = split_arrays(model, tiers, target)[-1].memory
        return (
            f"TFLM's persistent data does not fit beside the activations in {fast}: they are "
            "spread over memories, so TFLM runs them from the split arena --planner-cpp "
            f"writes (define ARENAPLAN_SPLIT_ARENA), with its persistent data and temporaries "
            f"in {home}; --header cannot write it"
        )
    if memory:
        return (
            f"{what} does not fit beside the head in {fast}: it goes to {memory} "
            "(two arenas; --header writes them)"
        )
    return f"{what}: no memory has room for it"


def target_arena_line(
    model: Model,
    plan: Plan,
    target: Target,
    caps: dict[str, int],
    tiers: TierPlacement | None,
    profile: str,
) -> str:
    """The firmware line for a target: one arena in the fastest memory, or two; for a
    plan spread over memories, every memory's bytes (the other memories' arrays
    beside one arena, or the split arena's arrays)."""
    fast = target.fastest().name
    head = tiers.heights[fast] if tiers else plan.arena
    memory, _, _ = persistent_memory(model, plan, target, caps, tiers)
    if tiers is not None and memory is not None:
        return split_arena_line(model, tiers, target, caps, profile)
    if not memory:
        line = f"{arena_line(model, plan, profile, head)}, in {fast}"
        if tiers is None:
            return line
        others = split_arrays(model, tiers, target, profile)[1:-1]
        listed = "; ".join(f"{a.memory} {a.bytes:,} B" for a in others)
        return f"{line}; the other memories' arrays (--planner-cpp writes them): {listed}"
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


def split_arena_line(
    model: Model, tiers: TierPlacement, target: Target, caps: dict[str, int], profile: str
) -> str:
    """The firmware line of a spread plan: every memory's bytes in the split arena
    ``--planner-cpp`` writes for ``profile`` (activations per memory; in the
    persistent array's memory, TFLM's temporaries and persistent data too)."""
    arrays = split_arrays(model, tiers, target, profile)
    persistent = split_persistent(model, profile, tiers.kernels)
    home = arrays[-1].memory
    least = "at least " if persistent.unmodelled else ""
    parts = {a.memory: [f"activations {a.bytes:,} B"] for a in arrays[:-1]}
    parts.setdefault(home, []).extend(
        [
            f"TFLM's temporaries {least}{persistent.temporary:,} B",
            f"persistent data {least}{persistent.tail:,} B",
        ]
    )
    shown = []
    for m, what in parts.items():
        total = sum(a.bytes for a in arrays if a.memory == m)
        room = caps.get(m, target.memory(m).capacity)
        over = f", more than its {room:,} B" if total > room else ""
        detail = "activations" if len(what) == 1 else " + ".join(what)
        shown.append(f"{m} {least if m == home else ''}{total:,} B ({detail}{over})")
    words = PROFILE_WORDS.get(profile, profile)
    if persistent.unmodelled:
        words += f"; an estimate, not modelled: {estimate_words(persistent.unmodelled)}"
    return f"split arena (--planner-cpp writes it): {'; '.join(shown)} (profile {profile}: {words})"
