"""Place non-persistent tensors over several memories, within each one's capacity.

Every tensor TFLM plans goes to one memory that may hold activations; kernel
scratch buffers stay in the fastest (TFLM places them at run time in the
first region). Each memory's tensors are then packed for real (offsets,
validated), not just summed.

Ours: start with everything in the fastest memory; while a memory's packing is
over its capacity, move to the next memory the tensor, live where it overflows,
whose move costs the least estimated time per byte freed. Then, from that
placement and from Vela's, move tensors back up while they fit, most time saved
per byte first, and keep the faster of the two. Vela's strategy (the
baseline): keep feature maps in the fast memory, evict those that never fit,
then at each overflowing step keep the subset of the competing live tensors
(at most 20) with the most accesses (operators reading or writing them) that
fits, and evict the rest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from arenaplan.allocation.banks import NoBank, first_fit_banks
from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.heuristics import ORDERS
from arenaplan.allocation.packing import pack
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.registry import get_allocator
from arenaplan.allocation.validate import check_solution
from arenaplan.analysis.buffers import ArenaItems, arena_items
from arenaplan.cost.roofline import default_memory
from arenaplan.cost.timing import Timer
from arenaplan.errors import AllocationError
from arenaplan.ir.model import Model
from arenaplan.runtime.registry import default_kernels, or_default, runtime_of
from arenaplan.runtime.spec import KernelSet
from arenaplan.targets.model import Target

if TYPE_CHECKING:
    from arenaplan.cost.roofline import TensorKey

VELA_GROUP = 20  # Vela searches competing live ranges in groups of at most 20


@dataclass(frozen=True, slots=True)
class TierPlacement:
    """Where every planned tensor lives, its offset there, and the estimated time.

    ``memory_of`` covers planned tensors; ``offsets`` are bytes from the start of
    that memory's arena; ``heights`` the bytes each memory's arena needs;
    ``scratch_offsets`` the kernel scratch buffers' offsets in the fastest memory,
    in TFLM's request order.
    """

    strategy: str
    memory_of: dict[TensorKey, str]
    offsets: dict[TensorKey, int]
    heights: dict[str, int]
    seconds: float
    scratch_offsets: tuple[int, ...] = ()
    pinned_offsets: tuple[int, ...] = ()  # the pinned buffers' offsets in the fastest
    kernels: KernelSet = field(default_factory=default_kernels)  # whose scratch was placed
    pointer_size: int = 8  # bytes: sizes pointer-array scratch (tflm.scratch)


class _State:
    """The model's items, the target, capacities and the cost of placements.
    ``pinned``: more buffers that stay in the fastest memory with the scratch (weight
    staging buffers); ``where``: memories of tensors other than the defaults (weights
    read from where they are staged)."""

    def __init__(
        self,
        model: Model,
        target: Target,
        capacities: Mapping[str, int],
        pinned: tuple[Buffer, ...] = (),
        where: Mapping[TensorKey, str] | None = None,
        kernels: KernelSet | None = None,
        pointer_size: int = 8,
    ) -> None:

        self.model, self.target = model, target
        self.pinned = pinned
        self.kernels, self.pointer_size = or_default(kernels), pointer_size
        self.items: ArenaItems = arena_items(model, pointer_size, kernels)
        self.memories = [m.name for m in target.memories if "activations" in m.holds]
        self.capacity = {m: capacities.get(m, target.memory(m).capacity) for m in self.memories}
        self.timer = Timer(model, target)
        self.touching: dict[TensorKey, list[int]] = defaultdict(list)
        self.op_keys: list[tuple[TensorKey, ...]] = []
        for i, w in enumerate(self.timer.work):
            keys = tuple(dict.fromkeys(k for k, _ in (*w.reads, *w.writes)))
            self.op_keys.append(keys)
            for key in keys:
                self.touching[key].append(i)
        self._neighbours: dict[TensorKey, set[TensorKey]] = {}
        self.base = {**default_memory(model, target), **(where or {})}
        self.buffer = dict(zip(self.items.tensors, self.items.tensor_buffers, strict=True))

    def seconds(self, memory_of: Mapping[TensorKey, str]) -> float:
        where = {**self.base, **memory_of}
        return sum(t.seconds for t in self.timer.times(where))

    def move_cost(self, memory_of: dict[TensorKey, str], key: TensorKey, to: str) -> float:
        """Change of estimated seconds if ``key`` moved to memory ``to``."""
        return self.move_cost_in({**self.base, **memory_of}, key, to)

    def move_cost_in(self, where: dict[TensorKey, str], key: TensorKey, to: str) -> float:
        """``move_cost`` on a full placement ``where`` (left as it was)."""
        was = where[key]
        before = sum(self.timer.op_time(i, where).seconds for i in self.touching[key])
        where[key] = to
        after = sum(self.timer.op_time(i, where).seconds for i in self.touching[key])
        where[key] = was
        return after - before

    def neighbours(self, key: TensorKey) -> set[TensorKey]:
        """Tensors whose move cost may change when ``key`` moves: those of the
        operators ``key`` takes part in (an operator's time depends only on where
        its own tensors are)."""
        found = self._neighbours.get(key)
        if found is None:
            found = {k for i in self.touching[key] for k in self.op_keys[i]}
            self._neighbours[key] = found
        return found

    def problem(self, memory: str, memory_of: Mapping[TensorKey, str]) -> Problem:
        bufs = [self.buffer[k] for k in self.items.tensors if memory_of[k] == memory]
        if memory == self.memories[0]:
            bufs += [*self.items.scratch_buffers, *self.pinned]
        return Problem(tuple(bufs))

    @property
    def fixed_fast(self) -> tuple[Buffer, ...]:
        """What the fastest memory holds whatever the placement: scratch and pinned."""
        return (*self.items.scratch_buffers, *self.pinned)

    @staticmethod
    def pack(problem: Problem, allocator: str = "greedy") -> tuple[int, tuple[int, ...]]:
        """(height, offsets) of one memory's problem (see ``problem``)."""
        if not problem.buffers:
            return 0, ()
        sol = get_allocator(allocator, 0.5).solve(problem)
        return sol.height, sol.offsets


def _overflow_keys(state: _State, memory: str, memory_of: Mapping[TensorKey, str]) -> list:
    """Tensors of ``memory`` live at a step where its live bytes (scratch included)
    exceed the capacity, or, if none does, all its tensors."""
    keys = [k for k in state.items.tensors if memory_of[k] == memory]
    if not keys:
        return []
    first = np.array([state.buffer[k].first for k in keys])
    last = np.array([state.buffer[k].last for k in keys])
    size = np.array([state.buffer[k].size for k in keys])
    lo = int(min(first.min(), 0))
    span = int(last.max()) - lo + 2
    load = np.zeros(span, dtype=np.int64)  # live bytes per step, by a difference array
    np.add.at(load, first - lo, size)
    np.add.at(load, last - lo + 1, -size)
    load = np.cumsum(load)
    if memory == state.memories[0]:
        for b in state.fixed_fast:
            load[b.first - lo : b.last - lo + 1] += b.size
    hot = np.concatenate(([0], np.cumsum(load > state.capacity[memory])))
    live_hot = hot[last - lo + 1] - hot[first - lo] > 0
    chosen = [k for k, h in zip(keys, live_hot, strict=True) if h]
    return chosen or keys


def _fits_in(state: _State, memory: str, memory_of: Mapping[TensorKey, str]) -> bool:
    """Does ``memory`` pack within its capacity? The live-bytes bound rules out most
    misses before any packing is tried."""
    problem = state.problem(memory, memory_of)
    cap = state.capacity[memory]
    if live_bytes_bound(problem) > cap:
        return False
    if not problem.buffers or pack(problem, ORDERS["size"](problem), cap) is not None:
        return True  # one first-fit order was enough
    height, _ = state.pack(problem)
    return height <= cap


def _fits(state: _State, memory_of: Mapping[TensorKey, str]) -> str | None:
    """The first memory whose packing is over its capacity, if any."""
    for m in state.memories:
        if not _fits_in(state, m, memory_of):
            return m
    return None


def _finish(state: _State, strategy: str, memory_of: dict[TensorKey, str]) -> TierPlacement:
    offsets: dict[TensorKey, int] = {}
    heights = {}
    scratch: tuple[int, ...] = ()
    pinned: tuple[int, ...] = ()
    for m in state.memories:
        problem = state.problem(m, memory_of)
        height, offs = state.pack(problem, allocator="portfolio")
        if height > state.capacity[m]:
            raise AllocationError(
                f"{strategy}: memory {m} needs {height} bytes, has {state.capacity[m]}"
            )
        check_solution(Problem(problem.buffers, state.capacity[m]), offs)
        heights[m] = height
        keys = [k for k in state.items.tensors if memory_of[k] == m]
        offsets.update(zip(keys, offs[: len(keys)], strict=True))
        if m == state.memories[0]:
            n = len(keys) + len(state.items.scratch_buffers)
            scratch, pinned = tuple(offs[len(keys) : n]), tuple(offs[n:])
    seconds = state.seconds(memory_of)
    return TierPlacement(
        strategy, dict(memory_of), offsets, heights, seconds, scratch, pinned,
        state.kernels, state.pointer_size,
    )  # fmt: skip


def _next_memory(state: _State, memory: str) -> str:
    k = state.memories.index(memory)
    if k + 1 == len(state.memories):
        need = live_bytes_bound(state.problem(memory, {key: memory for key in state.items.tensors}))
        raise AllocationError(
            f"the activations do not fit: {memory} ({state.capacity[memory]:,} B) is the last "
            f"memory that may hold them; all of them in one memory would need {need:,} B"
        )
    return state.memories[k + 1]


def _scratch_too_big(state: _State, memory: str) -> None:
    need = live_bytes_bound(Problem(state.fixed_fast))
    what = "kernel scratch and weight buffers" if state.pinned else "kernel scratch buffers"
    raise AllocationError(
        f"{memory}: the {what} alone need {need:,} B there, "
        f"more than its {state.capacity[memory]:,} B"
    )


def _evict_cheapest(state: _State) -> dict[TensorKey, str]:
    memory_of = {k: state.memories[0] for k in state.items.tensors}
    where = {**state.base, **memory_of}
    cost: dict[tuple[TensorKey, str], float] = {}  # move costs still valid

    def per_byte(k: TensorKey, to: str) -> tuple[float, TensorKey]:
        if (k, to) not in cost:
            cost[(k, to)] = state.move_cost_in(where, k, to)
        return cost[(k, to)] / max(state.buffer[k].size, 1), k

    while (full := _fits(state, memory_of)) is not None:
        to = _next_memory(state, full)
        candidates = _overflow_keys(state, full, memory_of)
        if not candidates:
            _scratch_too_big(state, full)
        key = min(candidates, key=lambda k: per_byte(k, to))
        memory_of[key] = where[key] = to
        for k in state.neighbours(key):  # their operators' times changed
            for m in state.memories:
                cost.pop((k, m), None)
    return memory_of


def _fastest_that_fits(state: _State) -> dict[TensorKey, str]:
    """ExecuTorch's BankedGreedy rule: largest tensor first, each to the fastest
    memory that still packs within its capacity with it."""
    keys = state.items.tensors
    order = sorted(range(len(keys)), key=lambda i: (-state.buffer[keys[i]].size, keys[i]))

    def fits(k: int, members: list[int]) -> bool:
        memory = state.memories[k]
        memory_of = dict.fromkeys(keys, "")  # "": in no memory yet, packed nowhere
        memory_of.update((keys[i], memory) for i in members)
        return _fits_in(state, memory, memory_of)

    try:
        banks = first_fit_banks(len(keys), len(state.memories), order, fits)
    except NoBank as exc:
        raise AllocationError(f"banked: tensor {keys[exc.index]} fits no memory") from None
    return {key: state.memories[k] for key, k in zip(keys, banks, strict=True)}


def place_ours(state: _State) -> TierPlacement:
    starts = [_evict_cheapest(state), dict(place_vela(state).memory_of)]
    if runtime_of(state.kernels).pools_per_memory:  # its own planner's rule, to beat it
        starts.append(_fastest_that_fits(state))
    for memory_of in starts:
        _move_back(state, memory_of)
    best = min(starts, key=state.seconds)  # ties: the first
    return _finish(state, "arenaplan", best)


def _move_back(state: _State, memory_of: dict[TensorKey, str]) -> None:
    """Bring tensors up one memory while everything still fits, most time saved first.
    A memory only gains tensors here, so a move that did not fit is not tried again."""
    changed = True
    refused: set[tuple[TensorKey, str]] = set()
    while changed:
        changed = False
        gains = []
        where = {**state.base, **memory_of}
        for k, m in memory_of.items():
            i = state.memories.index(m)
            if i > 0 and (k, state.memories[i - 1]) not in refused:
                up = state.memories[i - 1]
                gains.append(
                    (state.move_cost_in(where, k, up) / max(state.buffer[k].size, 1), k, up)
                )
        for gain, k, up in sorted(gains):
            if gain > 0:  # moving up never costs time; equal time still frees slow memory
                break
            old = memory_of[k]
            memory_of[k] = up
            if _fits_in(state, up, memory_of):  # only ``up`` gained a tensor
                changed = True
            else:
                memory_of[k] = old
                refused.add((k, up))


def _accesses(state: _State, key: TensorKey) -> int:
    return len(state.touching[key])


def _best_subset(state: _State, live: list[TensorKey], room: int) -> set[TensorKey]:
    """As Vela: the subset of ``live`` (<= 20) that fits ``room`` bytes with the most
    accesses, ties to fewer bytes. Exhaustive, by branch and bound: a branch stops
    when even all the remaining tensors could not beat the best subset found."""
    items = sorted(live, key=lambda k: (-_accesses(state, k), state.buffer[k].size, k))
    scores = [_accesses(state, k) for k in items]
    sizes = [state.buffer[k].size for k in items]
    rest = [0] * (len(items) + 1)  # rest[i]: accesses of items[i:]
    for i in range(len(items) - 1, -1, -1):
        rest[i] = rest[i + 1] + scores[i]
    best: list = [-1, 0, ()]  # score, bytes, chosen
    chosen: list[TensorKey] = []

    def walk(i: int, used: int, score: int) -> None:
        if (score, -used) > (best[0], -best[1]):
            best[:] = [score, used, tuple(chosen)]
        if i == len(items):
            return
        bound = score + rest[i]
        if bound < best[0] or (bound == best[0] and used >= best[1]):
            return
        if used + sizes[i] <= room:
            chosen.append(items[i])
            walk(i + 1, used + sizes[i], score + scores[i])
            chosen.pop()
        walk(i + 1, used, score)

    walk(0, 0, 0)
    return set(best[2])


def place_vela(state: _State) -> TierPlacement:
    fast = state.memories[0]
    cap = state.capacity[fast]
    memory_of = {k: fast for k in state.items.tensors}
    for k in state.items.tensors:  # feature maps that never fit
        if state.buffer[k].size > cap:
            memory_of[k] = _next_memory(state, fast)
    scratch_peak = live_bytes_bound(Problem(state.fixed_fast))
    steps = sorted({state.buffer[k].first for k in state.items.tensors})
    for s in steps:
        live = [
            k
            for k in state.items.tensors
            if memory_of[k] == fast and state.buffer[k].first <= s <= state.buffer[k].last
        ]
        if sum(state.buffer[k].size for k in live) + scratch_peak <= cap:
            continue
        live.sort(key=lambda k: (-_accesses(state, k), k))
        group, rest = live[:VELA_GROUP], live[VELA_GROUP:]
        keep = _best_subset(state, group, cap - scratch_peak)
        for k in (*rest, *(k for k in group if k not in keep)):
            memory_of[k] = _next_memory(state, fast)
    while (full := _fits(state, memory_of)) is not None:  # fragmentation: evict more
        to = _next_memory(state, full)
        keys = [k for k in state.items.tensors if memory_of[k] == full]
        if not keys:
            _scratch_too_big(state, full)
        memory_of[min(keys, key=lambda k: (_accesses(state, k), -state.buffer[k].size))] = to
    return _finish(state, "vela", memory_of)


STRATEGIES: dict[str, Callable[[_State], TierPlacement]] = {
    "arenaplan": place_ours,
    "vela": place_vela,
}


def place_tiers(
    model: Model,
    target: Target,
    capacities: Mapping[str, int] | None = None,
    strategy: str = "arenaplan",
    pinned: tuple[Buffer, ...] = (),
    where: Mapping[TensorKey, str] | None = None,
    kernels: KernelSet | None = None,
    pointer_size: int = 8,
) -> TierPlacement:
    """Place the model's activations over the target's memories (``pinned`` buffers
    and ``where`` overrides: see ``_State``), with the scratch requests of a build
    running ``kernels`` (``pointer_size``: bytes, as ``PlanOptions``)."""
    state = _State(model, target, capacities or {}, pinned, where, kernels, pointer_size)
    return STRATEGIES[strategy](state)


def region_bases(placement: TierPlacement, memories: list[str]) -> dict[str, int]:
    """Where each memory's region starts when the regions are laid end to end (bytes,
    16-aligned), fastest first: how TFLM's single head can carry a multi-memory plan."""
    bases, top = {}, 0
    for m in memories:
        bases[m] = top
        top += -(-placement.heights.get(m, 0) // 16) * 16
    return bases


def laid_out_offsets(placement: TierPlacement, target: Target) -> dict[TensorKey, int]:
    """Offsets in one head: a tensor's region base plus its offset in its memory."""
    order = [m.name for m in target.memories if m.name in placement.heights]
    bases = region_bases(placement, order)
    return {k: bases[m] + placement.offsets[k] for k, m in placement.memory_of.items()}
