"""The figures of a plan that every surface shows: what the firmware sets (one arena,
two, or the split arena of a plan spread over memories), each memory's bytes, TFLM's
head and tail, and the estimated latency.

Made once per plan (``figures_of``) and read by the summary's last lines, the JSON,
the report, the header, ``sweep`` and ``explore``, so they cannot disagree. Bytes;
seconds. The decisions, in order:

- where the non-persistent arena goes: ``--arena-memory``, else the fastest memory;
- where TFLM's persistent arena goes: ``--persistent-memory``, else beside the head
  (one arena) when that fits the arena's memory, else the first other memory that
  may hold persistent data and has room beside what is placed there, else nowhere
  (the one-arena figure is shown all the same: nothing can hold it);
- a plan spread over memories runs from one arena in the fastest memory plus the
  other memories' arrays when the persistent data fits there, else from the split
  arena (one array per activation memory and one for TFLM's persistent data and
  temporaries);
- a runtime with one pool per memory (``Runtime.pools_per_memory``: ExecuTorch) runs
  from its pools, one per memory that holds activations, fastest first (memory ids
  1, 2, ...), and its persistent part (ExecuTorch's method allocator) in the first
  memory, fastest first, that may hold persistent data and has room beside the pools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from arenaplan.cost.roofline import default_memory
from arenaplan.cost.timing import SCRATCH, Timer, time_model_label
from arenaplan.errors import PlanValidationError, UsageError
from arenaplan.ir.model import Model
from arenaplan.placement.memories import kib, target_memory
from arenaplan.placement.plan import Plan
from arenaplan.placement.tiers import TierPlacement
from arenaplan.runtime.records import TailEstimate
from arenaplan.runtime.registry import runtime_of
from arenaplan.runtime.spec import KernelSet, Profile
from arenaplan.targets import Target

ONE, TWO, SPLIT, POOLS = "one", "two", "split", "pools"


@dataclass(frozen=True, slots=True)
class Array:
    """One array the firmware defines. ``role``: "arena" (TFLM's one arena: head and
    tail), "non-persistent", "persistent" (TFLM's tail), "activations" (a memory's
    share of a spread plan), "split-persistent" (TFLM's persistent data and
    temporaries of the split arena), "pool" (a memory id's pool: ExecuTorch) or
    "method allocator" (ExecuTorch's persistent part); ``memory``: None without a target; ``parts``:
    what it holds, (what, bytes); ``unmodelled``: what the estimate leaves out (empty:
    exact; else the bytes are a lower bound)."""

    role: str
    memory: str | None
    bytes: int
    parts: tuple[tuple[str, int], ...]
    unmodelled: tuple[str, ...] = ()

    @property
    def at_least(self) -> bool:
        return bool(self.unmodelled)


@dataclass(frozen=True, slots=True)
class Figures:
    """``layout``: ONE, TWO, SPLIT or POOLS; ``head``: the bytes of TFLM's head as planned
    (the memories laid end to end when spread); ``tail``: TFLM's persistent bytes
    predicted for ``profile``; ``arrays``: what the firmware sets, in order;
    ``latency``: estimated seconds of one inference (None without a target), made by
    ``latency_label``'s time model; ``rooms``: the capacity (bytes, as given) of each
    memory the arrays use."""

    layout: str
    head: int
    tail: int
    profile: Profile
    kernels: KernelSet
    arrays: tuple[Array, ...]
    latency: float | None = None
    latency_label: str = ""
    rooms: tuple[tuple[str, int], ...] = ()
    # with a weights plan: its baseline policy and that policy's latency planned at
    # the same capacities, from its own figures (None: it does not fit them)
    baseline: tuple[str, float | None] | None = None

    @property
    def unmodelled(self) -> tuple[str, ...]:
        """What the estimates leave out, each once."""
        return tuple(dict.fromkeys(n for a in self.arrays for n in a.unmodelled))

    def per_memory(self) -> dict[str, int]:
        """Bytes each memory holds, in the order the arrays name them."""
        used: dict[str, int] = {}
        for a in self.arrays:
            if a.memory is not None:
                used[a.memory] = used.get(a.memory, 0) + a.bytes
        return used

    def array(self, role: str) -> Array | None:
        return next((a for a in self.arrays if a.role == role), None)


def figures_of(
    model: Model,
    plan: Plan,
    profile: Profile,
    target: Target | None = None,
    caps: Mapping[str, int] | None = None,
    tiers: TierPlacement | None = None,
    *,
    arena_memory: str | None = None,
    persistent_memory: str | None = None,
    seconds: float | None = None,
) -> Figures:
    """The figures of ``plan`` (of ``model``) for ``profile``. ``seconds``: the
    latency the plan's own search estimated (weights plans); else the tiers', else
    the target's time model with every tensor where the layout puts it."""
    caps = caps or {}
    tail = runtime_of(plan.kernels).tail(model, profile, plan.kernels)  # simulated once, here
    if runtime_of(plan.kernels).pools_per_memory:
        pinned = runtime_of(plan.kernels).pinned_pools(model)
        if pinned and target is not None:
            ids = ", ".join(str(m) for m, _ in pinned)
            raise UsageError(
                f"the program pins tensors to memory id {ids}, in a memory of its own choosing: "
                "plan it without --target (arenaplan plans memory id 1), or export it without pins"
            )
        arrays = _pools(plan, target, caps, tiers, arena_memory, persistent_memory, tail, pinned)
        return _timed(POOLS, model, plan, profile, target, caps, arrays, tail, tiers, seconds)
    if target is None:
        one = _one_arena(model, plan, profile, plan.arena, None, tail)
        return Figures(ONE, plan.arena, tail.bytes, profile, plan.kernels, (one,))
    arena = arena_memory or target.fastest().name
    head = tiers.heights[target.fastest().name] if tiers else plan.arena
    arrays = _arrays(
        model, plan, profile, target, caps, tiers, arena, head, persistent_memory, tail
    )
    layout = SPLIT if arrays[-1].role == "split-persistent" else ONE
    layout = TWO if any(a.role == "persistent" for a in arrays) else layout
    return _timed(layout, model, plan, profile, target, caps, arrays, tail, tiers, seconds)


def _timed(
    layout: str,
    model: Model,
    plan: Plan,
    profile: Profile,
    target: Target | None,
    caps: Mapping[str, int],
    arrays: tuple[Array, ...],
    tail: TailEstimate,
    tiers: TierPlacement | None,
    seconds: float | None,
) -> Figures:
    """The figures of ``arrays``, with the estimated latency when there is a target."""
    if target is None:
        return Figures(layout, plan.arena, tail.bytes, profile, plan.kernels, arrays)
    home, first = persistent_of(arrays), arrays[0].memory
    if seconds is None:
        seconds = placed_seconds(model, target, first, home, tiers)
    elif home != target.fastest("persistent").name:  # the plan's own estimate, with
        # TFLM's persistent data where the arrays put it, not in the fastest memory
        moved = placed_seconds(model, target, first, home, tiers)
        seconds += moved - placed_seconds(model, target, first, None, tiers)
    used = {a.memory for a in arrays}
    rooms = tuple((m.name, caps.get(m.name, m.capacity)) for m in target.memories if m.name in used)
    label = time_model_label(target) + runtime_of(plan.kernels).time_note
    return Figures(
        layout,
        plan.arena,
        tail.bytes,
        profile,
        plan.kernels,
        arrays,
        seconds,
        label,
        rooms,
    )


def _arrays(
    model: Model,
    plan: Plan,
    profile: Profile,
    target: Target,
    caps: Mapping[str, int],
    tiers: TierPlacement | None,
    arena: str,
    head: int,
    chosen: str | None,
    tail: TailEstimate,
) -> tuple[Array, ...]:
    one = _one_arena(model, plan, profile, head, arena, tail)
    room = caps.get(arena, target.memory(arena).capacity)
    if chosen is not None:
        target_memory(target, chosen, "persistent", "--persistent-memory")
    if tiers is not None:
        others = _other_activations(tiers, target)
        if chosen is None and one.bytes <= room:
            return (one, *others)
        return _split(model, profile, target, caps, tiers.heights, chosen, plan.kernels)
    if chosen is None and one.bytes <= room:
        return (one,)
    align = runtime_of(plan.kernels).alignment  # bytes
    aligned = -(-tail.bytes // align) * align
    home = chosen or _persistent_home(target, caps, {arena: head}, arena, aligned)
    if home is None:  # nothing has room for it: the one-arena figure all the same
        return (one,)
    two = _two_arenas(model, plan, profile, head, arena, home, tail)
    if two[0].bytes <= room:
        return two
    # TFLM's planning room does not fit beside the head: the split arena, whose
    # persistent array holds TFLM's temporaries
    return _split(model, profile, target, caps, {arena: head}, chosen, plan.kernels)


def _one_arena(
    model: Model, plan: Plan, profile: Profile, head: int, memory: str | None, tail: TailEstimate
) -> Array:
    """TFLM's one arena: the head, the tail and what TFLM needs beyond them to plan."""
    n_planned = len(plan.tensors) + len(plan.scratch)
    size = runtime_of(plan.kernels).min_arena(model, head, n_planned, profile, plan.kernels)
    room = size.bytes - head - tail.bytes
    parts = (("head", head), ("tail", tail.bytes), ("TFLM's planning room", room))
    kept = tuple(p for p in parts if p[1] > 0)
    return Array("arena", memory, size.bytes, kept, size.unmodelled)


def _two_arenas(
    model: Model, plan: Plan, profile: Profile, head: int, arena: str, home: str, tail: TailEstimate
) -> tuple[Array, ...]:
    """The non-persistent arena (the head, at least TFLM's planning room) in ``arena``
    and the persistent arena (the tail, aligned as the runtime aligns) in ``home``."""
    align = runtime_of(plan.kernels).alignment  # bytes
    n_planned = len(plan.tensors) + len(plan.scratch)
    room = runtime_of(plan.kernels).planning_room(model, len(plan.scratch), n_planned, profile)
    non_persistent = max(head, room)
    return (
        Array("non-persistent", arena, non_persistent, (("head", head),)),
        Array(
            "persistent",
            home,
            -(-tail.bytes // align) * align,
            (("tail", tail.bytes),),
            tail.unmodelled,
        ),
    )


def _persistent_home(
    target: Target, caps: Mapping[str, int], used: Mapping[str, int], arena: str, need: int
) -> str | None:
    """The first memory other than ``arena`` that may hold persistent data and has
    ``need`` bytes beside what ``used`` puts there (capacities as given)."""
    for m in target.memories:
        room = caps.get(m.name, m.capacity) - used.get(m.name, 0)
        if m.name != arena and "persistent" in m.holds and room >= need:
            return m.name
    return None


def _other_activations(tiers: TierPlacement, target: Target) -> tuple[Array, ...]:
    """The activation arrays of a spread plan other than the fastest memory's."""
    fast = target.fastest().name
    names = [m.name for m in target.memories if m.name != fast]
    return tuple(
        Array("activations", n, tiers.heights[n], (("activations", tiers.heights[n]),))
        for n in names
        if tiers.heights.get(n, 0) > 0
    )


def _split(
    model: Model,
    profile: Profile,
    target: Target,
    caps: Mapping[str, int],
    heights: Mapping[str, int],
    chosen: str | None,
    kernels: KernelSet,
) -> tuple[Array, ...]:
    """The split arena: one array per activation memory (``heights``: bytes, the
    arena's memory first), then TFLM's persistent data and temporaries in ``chosen``,
    else the first other memory with room for them beside the activations, else the
    first memory."""
    persistent = runtime_of(kernels).split_persistent(model, profile, kernels)
    names = list(heights)
    acts = tuple(
        Array("activations", n, heights[n], (("activations", heights[n]),))
        for n in names
        if n == names[0] or heights[n] > 0
    )
    need = persistent.bytes
    home = chosen or _persistent_home(target, caps, heights, names[0], need) or names[0]
    parts = (("TFLM's temporaries", persistent.temporary), ("persistent data", persistent.tail))
    last = Array("split-persistent", home, persistent.bytes, parts, persistent.unmodelled)
    return (*acts, last)


def _pools(
    plan: Plan,
    target: Target | None,
    caps: Mapping[str, int],
    tiers: TierPlacement | None,
    arena: str | None,
    chosen: str | None,
    tail: TailEstimate,
    pinned: tuple[tuple[int, int], ...] = (),
) -> tuple[Array, ...]:
    """One pool per memory holding activations (fastest first: memory ids 1, 2, ...;
    one pool in ``arena``, else the fastest memory, when not spread), the ``pinned``
    pools (memory id, bytes: no target) as the model has them, then the persistent
    part in ``chosen``, else the first memory with room for it beside the pools, else
    the first pool's memory."""
    if target is None:
        heights: dict[str | None, int] = {None: plan.arena}
    elif tiers is None:
        heights = {arena or target.fastest().name: plan.arena}
    else:
        used = [m.name for m in target.memories if tiers.heights.get(m.name, 0) > 0]
        heights = {m: tiers.heights[m] for m in used} or {target.fastest().name: 0}
    pools = tuple(
        Array("pool", m, n, ((f"memory id {k}", n),)) for k, (m, n) in enumerate(heights.items(), 1)
    )
    pools += tuple(Array("pool", None, n, ((f"memory id {m}, pinned", n),)) for m, n in pinned)
    home = pools[0].memory
    if target is not None:
        if chosen is not None:
            target_memory(target, chosen, "persistent", "--persistent-memory")
        used_bytes = {m: n for m, n in heights.items() if m is not None}
        home = chosen or _persistent_home(target, caps, used_bytes, "", tail.bytes) or home
    what = f"{runtime_of(plan.kernels).title}'s structures"
    last = Array("method allocator", home, tail.bytes, ((what, tail.bytes),), tail.unmodelled)
    return (*pools, last)


def placed_in(array: Array) -> str:
    """The memory of an array of a plan for a target (figures for a target place every
    array in one of its memories)."""
    if array.memory is None:
        raise PlanValidationError([f"the {array.role} array of a plan for a target has no memory"])
    return array.memory


def persistent_of(arrays: tuple[Array, ...]) -> str | None:
    """The memory of the runtime's persistent data: its own array's, else the one arena's."""
    roles = ("persistent", "split-persistent", "method allocator")
    own = [a.memory for a in arrays if a.role in roles]
    return own[0] if own else arrays[0].memory


def placed_seconds(
    model: Model,
    target: Target,
    arena: str | None,
    persistent: str | None,
    tiers: TierPlacement | None = None,
) -> float:
    """The time model's estimate of one inference: the activations and kernel scratch
    in ``arena`` (or where ``tiers`` put them, scratch in the fastest memory), constants
    where the target keeps them, TFLM's persistent data in ``persistent`` (None: the
    fastest that may hold it)."""

    where: dict = default_memory(model, target, activations=arena)
    if tiers is not None:  # TFLM puts kernel scratch in the head's first region: fastest
        where |= tiers.memory_of
    elif arena is not None:  # one arena, scratch and all, in ``arena``
        where[SCRATCH] = arena
    return sum(t.seconds for t in Timer(model, target, persistent).times(where))


def check_chosen(figures: Figures, target: Target, caps: Mapping[str, int], chosen: str) -> None:
    """The memory ``--persistent-memory`` names must hold what the figures put there
    (its capacity as given): else one line naming the bytes and the room."""
    used = figures.per_memory().get(chosen, 0)
    room = caps.get(chosen, target.memory(chosen).capacity)
    if used > room:
        raise UsageError(
            f"--persistent-memory {chosen}: the plan puts {kib(used)} there "
            f"(TFLM's persistent data and what else it holds), {chosen} has {kib(room)}"
        )


def figures_json(figures: Figures) -> dict[str, object]:
    """The JSON plan's ``firmware``: what the firmware sets and the estimates."""
    arrays = [
        {
            "role": a.role,
            "memory": a.memory,
            "bytes": a.bytes,
            "holds": dict(a.parts),
            "exact": not a.at_least,
        }
        for a in figures.arrays
    ]
    return {
        "layout": figures.layout,
        "profile": str(figures.profile),
        "head": figures.head,
        "tail": figures.tail,
        "arrays": arrays,
        "memories": figures.per_memory(),
        "latency_seconds": figures.latency,
        "latency_model": figures.latency_label or None,
    }


def weights_totals(figures: Figures) -> str:
    """The weights plan's latency and its baseline policy's in the same memories, as
    every surface words them (ms)."""
    if figures.latency is None or figures.baseline is None:  # a weights plan has both
        raise PlanValidationError(["a weights plan's figures without its latency or baseline"])
    name, seconds = figures.baseline
    if seconds is None:
        same = f"all {name} does not fit the same memories"
    else:
        same = f"all {name} in the same memories {seconds * 1e3:,.3f} ms"
    return f"estimated {figures.latency * 1e3:,.3f} ms, {same}"
