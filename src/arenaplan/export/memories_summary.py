"""What ``plan --target`` prints about the target's memories: a table of the
memories (what the plan places in each and what the firmware sets there), the
estimated latency, where TFLM's persistent arena goes, and the firmware's line.

Every figure comes from the plan's ``Figures`` (``export.figures``), the same that
the JSON, the report and the header show. A plan that fits the arena's memory runs
from one arena, or two (the persistent arena elsewhere), which ``--header`` writes.
A plan spread over memories runs from one arena plus the other memories' arrays, or
from the split arena ``--planner-cpp`` writes (``tflm.planner_cpp``): one array
per activation memory and a persistent array for TFLM's temporaries and persistent
data."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from arenaplan.errors import PlanValidationError
from arenaplan.export.figures import ONE, POOLS, SPLIT, TWO, Array, Figures, placed_in
from arenaplan.export.summary import estimate_words
from arenaplan.placement import Plan
from arenaplan.placement.tiers import TierPlacement, region_bases
from arenaplan.runtime.registry import runtime_of
from arenaplan.targets import Target


def print_memories(
    console: Console,
    target: Target,
    caps: dict[str, int],
    plan: Plan,
    tiers: TierPlacement | None,
    figures: Figures,
) -> None:
    table = Table(title=f"memories of {target.name}")
    columns = ("memory", "capacity", "arena bytes", "tensors", "region in the head", "firmware")
    for col in columns:
        table.add_column(col, justify="left" if col == "memory" else "right")
    names = [m.name for m in target.memories if "activations" in m.holds]
    arena = figures.arrays[0].memory or names[0]
    bases = region_bases(tiers, names) if tiers else {arena: 0}
    pools = _pool_ids(figures)
    if pools:
        table.columns[4].header = "pool"
    firmware = figures.per_memory()
    for name in names:
        cap = caps.get(name, target.memory(name).capacity)
        used = tiers.heights.get(name, 0) if tiers else (plan.arena if name == arena else 0)
        count = (
            sum(1 for m in tiers.memory_of.values() if m == name)
            if tiers
            else (len(plan.tensors) if name == arena else 0)
        )
        where = f"{bases[name]:,}..{bases[name] + used:,}" if used else "-"
        if pools:
            where = f"memory id {pools[name]}" if name in pools else "-"
        sets = f"{firmware[name]:,}" if name in firmware else "-"
        table.add_row(name, f"{cap:,}", f"{used:,}", str(count), where, sets)
    console.print(table)
    if tiers is not None and not pools:
        console.print(
            f"the offline plan lays the memories end to end in one head of {plan.arena:,} B "
            "(so that TFLM can check it); each memory holds only its own region"
        )
    console.print(latency_line(figures))
    console.print(persistent_advice(figures, tiers is not None))


def latency_line(figures: Figures) -> str:
    """The estimated latency, labelled with the time model that made it."""
    if figures.latency is None:  # the figures of a plan for a target are timed
        raise PlanValidationError(["the figures of a plan for a target have no latency"])
    return f"estimated latency {figures.latency * 1e3:,.3f} ms ({figures.latency_label})"


def _pool_ids(figures: Figures) -> dict[str, int]:
    """The memory id of each memory's pool (POOLS: one pool per memory), else none."""
    if figures.layout != POOLS:
        return {}
    pools = [a for a in figures.arrays if a.role == "pool"]
    return {placed_in(a): k for k, a in enumerate(pools, 1)}


def persistent_advice(figures: Figures, spread: bool) -> str:
    """Where TFLM's persistent arena goes, and which output writes the arrays."""
    what = f"persistent arena ({figures.profile} tail {figures.tail:,} B)"
    first = figures.arrays[0]
    if figures.layout == POOLS:
        home = figures.arrays[-1]
        least = "at least " if home.at_least else ""
        return (
            f"each memory holding tensors is a pool of its own (memory ids 1, 2, ... in the "
            f"order above); the method allocator ({least}{home.bytes:,} B, {figures.profile}) "
            f"goes to {home.memory}"
        )
    if figures.layout == ONE:
        others = (
            "; --planner-cpp writes the other memories' arrays and the planner" if spread else ""
        )
        return (
            f"{what} fits beside the head: one arena of {first.bytes:,} B in {first.memory}{others}"
        )
    if figures.layout == SPLIT:  # the split arena's own figures are on the last line
        return (
            "TFLM's persistent data and temporaries do not fit beside the activations in "
            f"{first.memory}: TFLM runs the plan from the split arena --planner-cpp writes "
            "(define ARENAPLAN_SPLIT_ARENA), with them in "
            f"{figures.arrays[-1].memory}; --header cannot write it"
        )
    home = figures.arrays[-1].memory
    return (
        f"{what} goes to {home}, the non-persistent arena to {first.memory} "
        "(two arenas; --header writes them)"
    )


def target_arena_line(figures: Figures) -> str:
    """The firmware line: every array the firmware defines, with its memory."""
    words = runtime_of(figures.kernels).profile_words(figures.profile)
    if figures.unmodelled:
        words += f"; an estimate, not modelled: {estimate_words(figures.unmodelled)}"
    profile = f"(profile {figures.profile}: {words})"
    first = figures.arrays[0]
    if figures.layout == POOLS:
        return pools_line(figures, profile)
    if figures.layout == SPLIT:
        return split_arena_line(figures, profile)
    if figures.layout == TWO:
        last = figures.arrays[-1]
        least = "at least " if last.at_least else ""
        return (
            f"set the non-persistent arena to {first.bytes:,} bytes in {first.memory} and the "
            f"persistent arena to {least}{last.bytes:,} bytes in {last.memory} {profile}"
        )
    least = "at least " if first.at_least else ""
    line = f"set the tensor arena to {least}{first.bytes:,} bytes {profile}"
    if first.memory is not None:
        line += f", in {first.memory}"
    others = figures.arrays[1:]
    if others:
        listed = "; ".join(f"{a.memory} {a.bytes:,} B" for a in others)
        line += f"; the other memories' arrays (--planner-cpp writes them): {listed}"
    return line


def pools_line(figures: Figures, profile: str) -> str:  # profile: the words said
    """The firmware line of a runtime with a pool per memory: each pool's bytes and
    memory, then the method allocator's."""
    pools = [a for a in figures.arrays if a.role == "pool"]
    shown = "; ".join(  # each pool's part says its memory id
        f"{a.parts[0][0]}: {a.bytes:,} B" + (f" in {a.memory}" if a.memory else "") for a in pools
    )
    last = figures.arrays[-1]
    least = "at least " if last.at_least else ""
    where = f" in {last.memory}" if last.memory else ""
    return (
        f"give the runtime its pools ({shown}) and a method allocator of "
        f"{least}{last.bytes:,} B{where} {profile}"
    )


def split_arena_line(figures: Figures, profile: str) -> str:  # profile: the words said
    """The firmware line of a spread plan: every memory's bytes in the split arena
    ``--planner-cpp`` writes (activations per memory; in the persistent array's
    memory, TFLM's temporaries and persistent data too)."""
    shown, rooms = [], dict(figures.rooms)
    for memory, total in figures.per_memory().items():
        arrays = [a for a in figures.arrays if a.memory == memory]
        least = "at least " if any(a.at_least for a in arrays) else ""
        detail = " + ".join(_parts(a, len(arrays) > 1 or a.role != "activations") for a in arrays)
        room = rooms[memory]
        over = f", more than its {room:,} B" if total > room else ""
        shown.append(f"{memory} {least}{total:,} B ({detail}{over})")
    return f"split arena (--planner-cpp writes it): {'; '.join(shown)} {profile}"


def _parts(array: Array, detailed: bool) -> str:
    if not detailed:
        return "activations"
    least = "at least " if array.at_least else ""
    return " + ".join(
        f"{what} {least if what != 'activations' else ''}{n:,} B" for what, n in array.parts
    )
