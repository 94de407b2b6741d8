"""ExecuTorch as a ``Runtime``: the pools of a ``.pte`` program planned again.

What is planned: every tensor the program puts in memory 1 (the default pool) with
its own bytes (not a view: a view follows its base, ``storage``), state included.
Tensors of other memories (pins) keep their places; constants are not planned.
Alignment 16 bytes (``MemoryPlanningPass``'s default). The tail (the persistent part
beside the plan) is the method allocator: ExecuTorch's own structures, predicted
from the program (``method_bytes``) for the largest method: the firmware loads a
method at a time into one allocator.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache

from arenaplan.allocation.packing import align_up
from arenaplan.errors import ModelFormatError, PlanValidationError, UsageError
from arenaplan.executorch import native, order, simulate
from arenaplan.executorch.header import pools_header
from arenaplan.executorch.lifetimes import program_lifetimes
from arenaplan.executorch.method_bytes import largest_method
from arenaplan.executorch.prove import RUNNER_WORDS, prove_program, verify_programs
from arenaplan.executorch.storage import Storage, storage_of
from arenaplan.executorch.write import with_allocations
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.reader.pte_format import Program, read_program
from arenaplan.reader.pte_reader import program_model
from arenaplan.runtime.interface import Runtime
from arenaplan.runtime.proof import Proof
from arenaplan.runtime.records import Lifetimes, OrderFacts, TailEstimate, TensorBytes
from arenaplan.runtime.report import VerifyReport
from arenaplan.runtime.spec import KernelSet, Profile

NAME = "executorch"
ALIGNMENT = 16  # bytes: MemoryPlanningPass(alignment=16), ExecuTorch's default
DEFAULT_POOL = 1  # memory id of the pool arenaplan plans
PORTABLE = KernelSet(NAME, "portable", "portable")
PROFILES = (Profile(NAME, "arm32", 4, 4), Profile(NAME, "host64", 8, 4))
NO_SOURCE = ("ExecuTorch's method allocator (the program's bytes were not kept)",)

Key = tuple[int, int]
TRANSPOSES = ("aten::permute_copy", "aten::t_copy", "aten::transpose_copy")


def planned_keys(model: Model, storage: Storage, pools: int = 1) -> set[Key]:
    """The tensors this runtime plans: in the default pool (pools 1..``pools``: a
    plan written over several memories), not views."""
    return {
        key
        for key, (memory, _) in storage.where.items()
        if DEFAULT_POOL <= memory < DEFAULT_POOL + pools and key not in storage.views
    }


class ExecuTorch(Runtime):
    """ExecuTorch 1.5: a ``.pte`` program's ``allocation_info`` and pool sizes."""

    name = NAME
    title = "ExecuTorch"
    alignment = ALIGNMENT
    file_format = "pte"
    rewrites = False  # no weights policy, and of the passes only reorder (``order``)
    pools_per_memory = True  # memory ids 1, 2, ...: one pool per memory, fastest first
    plans_by_greedy = False  # its plan is the program's own (``own_plan``)
    tail_name = "method allocator"
    scope_words = "step (instruction i of a method runs in step i; methods one after another)"
    time_note = ", standing in for ExecuTorch's portable kernels (not measured)"
    keeps_stored_plan = True  # the program's own plan says its views and state

    def takes_pass(self, name: str) -> bool:
        return name == "reorder"

    def order_facts(self, model: Model, s: int) -> OrderFacts:
        return order.order_facts(model, s)

    def kernel_sets(self) -> tuple[KernelSet, ...]:
        return (PORTABLE,)

    def profiles(self) -> tuple[Profile, ...]:
        return PROFILES

    def default_kernels(self) -> KernelSet:
        return PORTABLE

    def default_profile(self) -> Profile:
        return PROFILES[0]

    summary_words = (
        "How to read this: an ExecuTorch program's planned memory is its pools (one per "
        "memory id); arenaplan plans pool 1, the arena above: every tensor that is not "
        "a constant, a view (it lies in its base's bytes) or pinned to another pool. "
        "The method allocator holds ExecuTorch's own structures (predicted from the "
        "program). A scope is one instruction of a method; methods are planned in "
        "scopes of their own."
    )

    def pinned_pools(self, model: Model) -> tuple[tuple[int, int], ...]:
        reaches = simulate.pool_reaches(model, storage_of(model).where)
        return tuple((m, align_up(n, ALIGNMENT)) for m, n in reaches.items() if m != DEFAULT_POOL)

    def tail_words(self, model: Model, kernels: KernelSet) -> str:
        if not model.source:
            return f"method allocator: not modelled ({NO_SOURCE[0]})"
        by = {p.pointer_bytes: self.tail(model, p, kernels) for p in PROFILES}
        least = "at least " if by[8].unmodelled else ""
        return (
            f"method allocator: {least}{by[4].bytes:,} B predicted for 32-bit ARM (no 32-bit "
            f"build has measured it), {least}{by[8].bytes:,} B on a 64-bit host (as "
            "ExecuTorch's runtime measures it here)"
        )

    def own_plan(self, model: Model, plan: Plan) -> tuple[str, int]:
        reach = simulate.pool_reach(model, simulate.stored_places(model), DEFAULT_POOL)
        top = align_up(reach, ALIGNMENT)  # the pool it declares
        return "ExecuTorch's plan in the program (as exported)", top

    def advice(self, model: Model, plan: Plan) -> tuple[str, ...]:
        """Weights transposed at run time: plain ``to_edge`` splits ``linear`` into a
        transpose of the (constant) weight and a matmul, and the transposed weight is
        planned as an activation."""
        moved = [
            p.bytes
            for p in plan.tensors
            for op in model.subgraphs[p.subgraph].operators
            if p.index in op.outputs
            and op.opcode.split(".")[0] in TRANSPOSES
            and all(model.subgraphs[p.subgraph].tensors[t].is_constant for t in op.inputs)
        ]
        if not moved:
            return ()
        what = "weight transpose is" if len(moved) == 1 else "weight transposes are"
        return (
            f"{len(moved)} {what} planned as activations ({sum(moved):,} B, transposed at "
            "every call): export with EdgeCompileConfig(preserve_ops="
            "[torch.ops.aten.linear.default]) to keep linear whole",
        )

    def tensor_bytes(self, model: Model) -> TensorBytes:
        planned = planned_keys(model, storage_of(model))
        return tuple(
            tuple(t.nbytes if (sg.index, t.index) in planned else 0 for t in sg.tensors)
            for sg in model.subgraphs
        )

    def planned(self, model: Model, sizes: TensorBytes, s: int, t: int) -> bool:
        return sizes[s][t] > 0

    def lifetimes(self, model: Model) -> Lifetimes:
        return program_lifetimes(model, storage_of(model))

    def tail(
        self,
        model: Model,
        profile: Profile,
        kernels: KernelSet,
        sizes: TensorBytes | None = None,
        with_io: bool = True,
    ) -> TailEstimate:
        """The method allocator's bytes for the largest method (``method_bytes``)."""
        if not model.source:
            return TailEstimate(0, NO_SOURCE)
        return TailEstimate(*largest_method(_program(model.source), profile.pointer_bytes))

    def min_arena(
        self, model: Model, head: int, n_planned: int, profile: Profile, kernels: KernelSet
    ) -> TailEstimate:
        return TailEstimate(head, ())  # the pools: the method allocator is an array apart

    def header(
        self,
        model: Model,
        plan: Plan,
        name: str,
        profile: Profile,
        sections: tuple[str | None, ...],
        head: int | None,
        planned_model: bytes | None,
    ) -> str:
        """The pools and the method allocator (``executorch.header``); ``sections``:
        each pool's linker section, then the method allocator's."""
        if planned_model is None:
            raise UsageError("--header: the program's pools are sized from the planned program")
        tail = self.tail(model, profile, PORTABLE)
        words = f"predicted from the program for {self.profile_words(profile)}"
        if tail.unmodelled:
            words += f"; at least: it leaves out {'; '.join(tail.unmodelled)}"
        *pools, own = [s or "" for s in sections] or [""]
        return pools_header(name, planned_model, profile.name, pools, (tail.bytes, own, words))

    def plan_problems(self, model: Model, plan: Plan) -> list[str]:
        offsets = plan.tensor_offsets
        misaligned = [
            f"tensor {key} at offset {o} is not {ALIGNMENT}-byte aligned"
            for key, o in zip(model.tensor_keys(), offsets, strict=True)
            if o >= 0 and o % ALIGNMENT
        ]
        return misaligned or simulate.plan_problems(model, new_places(model, offsets))

    def write_rewrite(
        self, data: bytes, model: Model, offsets: Sequence[int], regions: Sequence[int] = ()
    ) -> bytes:
        return self.write_plan(data, offsets, regions, model)

    def write_plan(
        self,
        data: bytes,
        offsets: Sequence[int],
        regions: Sequence[int] = (),
        model: Model | None = None,
    ) -> bytes:
        """``model``: the program ``data`` holds with its instructions in a new order
        (None: as they are), written in that order (``order.with_order``)."""
        program = read_program(data)
        model = program_model(program) if model is None else model
        places = new_places(model, offsets, regions)
        problems = simulate.plan_problems(model, places)
        if problems:
            raise PlanValidationError(problems)
        own = simulate.stored_places(model)
        moved, pools = {}, {}
        for s, plan in enumerate(program.plans):
            tensors = plan.tensors()
            for t, tensor in enumerate(tensors):
                if (s, t) in own and places[(s, t)] != own[(s, t)]:
                    moved[(s, tensor.value)] = places[(s, t)]
            sizes = _pools(model, s, places, plan.pools, max(len(regions), 1))
            if sizes != plan.pools:
                pools[s] = sizes
        try:
            orders = {sg.index: order.chain_order(sg) for sg in model.subgraphs}
            new_order = {s: o for s, o in orders.items() if o != tuple(range(len(o)))}
            out = with_allocations(order.with_order(data, new_order), program, moved, pools)
            again = program_model(read_program(out))
        except (struct.error, ValueError, ModelFormatError) as exc:
            raise ModelFormatError(f"corrupt .pte: its plan cannot be written ({exc})") from None
        if again.subgraphs != model.subgraphs:  # it reaches past its declared size
            raise ModelFormatError("corrupt .pte: its program does not survive a new plan")
        return out

    def proof_available(self, kernels: KernelSet, own: bool) -> tuple[str, str | None]:
        return RUNNER_WORDS, native.unavailable()

    def prove(
        self, original: bytes, planned: bytes, arena: int, kernels: KernelSet, own: bool
    ) -> Proof:
        return prove_program(original, planned)

    def verify(
        self, original: bytes, planned: bytes, trials: int, seed: int, build: str | None
    ) -> VerifyReport:
        if build is not None:
            raise UsageError(f"--build: {self.title} runs in its installed runtime only")
        return verify_programs(original, planned, trials, seed)

    def read_plan(self, model: Model, pools: int = 1) -> tuple[int, ...] | None:
        """Offsets of the tensors of pools 1..``pools`` laid end to end (pool k+1 after
        pool k, as many bytes as its tensors reach in any method, aligned), as
        ``write_plan``'s ``regions``; the other pools' tensors are pins (-1)."""
        if model.stored_plan is None:
            return None
        storage = storage_of(model)
        planned = planned_keys(model, storage, pools)
        places = {key: storage.where[key] for key in planned}
        bases, top = {}, 0
        for memory, reach in simulate.pool_reaches(model, places).items():
            bases[memory], top = top, top + align_up(reach, ALIGNMENT)
        return tuple(
            bases[places[key][0]] + places[key][1] if key in planned else -1
            for key in model.tensor_keys()
        )


def new_places(
    model: Model, offsets: Sequence[int], regions: Sequence[int] = ()
) -> dict[Key, tuple[int, int]]:
    """Where each pooled tensor goes: planned ones at ``offsets`` (per tensor over all
    subgraphs, -1 where not planned; in region k of ``regions``, pool k+1 at the
    offset from the region's start), views ``delta`` into their base, tensors of
    other pools where the program put them."""
    storage = storage_of(model)
    planned = planned_keys(model, storage)
    given = dict(zip(model.tensor_keys(), offsets, strict=True))
    starts = list(regions) or [0]
    if len(starts) > 1:
        _no_pins(storage)
    places = {
        key: _in_region(starts, given[key]) if key in planned else where
        for key, where in storage.where.items()
    }
    for key, (base, delta) in storage.views.items():
        memory, offset = places[base]
        places[key] = (memory, offset + delta)
    return places


@lru_cache(maxsize=4)
def _program(data: bytes) -> Program:
    return read_program(data)


def _in_region(starts: list[int], offset: int) -> tuple[int, int]:
    """(memory id, offset in its pool) of head offset ``offset``: region k is pool k+1."""
    k = bisect_right(starts, offset) - 1
    return DEFAULT_POOL + k, offset - starts[k]


def _no_pins(storage: Storage) -> None:
    pinned = sorted({m for m, _ in storage.where.values() if m != DEFAULT_POOL})
    if pinned:
        ids = ", ".join(map(str, pinned))
        raise UsageError(
            f"the program pins tensors to memory id {ids}: a plan over several memories "
            "writes its own pools (ids 1, 2, ...); export it without pins, or plan it "
            "for one memory"
        )


def _pools(
    model: Model,
    s: int,
    places: dict[Key, tuple[int, int]],
    sizes: tuple[int, ...],
    planned: int,
) -> tuple[int, ...]:
    """Plan ``s``'s pool sizes: pools 1..``planned`` the bytes their tensors reach,
    rounded up to the alignment; the others as they were (index 0 unused)."""
    out = list(sizes) + [0] * max(planned + 1 - len(sizes), 0)
    for memory in range(DEFAULT_POOL, DEFAULT_POOL + planned):
        out[memory] = align_up(simulate.pool_reach(model, places, memory, subgraph=s), ALIGNMENT)
    return tuple(out)


RUNTIME = ExecuTorch()
