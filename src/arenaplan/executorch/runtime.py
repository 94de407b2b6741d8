"""ExecuTorch as a ``Runtime``: the pools of a ``.pte`` program planned again.

What is planned: every tensor the program puts in memory 1 (the default pool) with
its own bytes (not a view: a view follows its base, ``storage``), state included.
Tensors of other memories (pins) keep their places; constants are not planned.
Alignment 16 bytes (``MemoryPlanningPass``'s default). The method allocator (the
runtime's own structures, ExecuTorch's persistent part) is not modelled yet: the
tail is 0 and says so.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from arenaplan.errors import ModelFormatError, PlanValidationError, UsageError
from arenaplan.executorch import native, order, simulate
from arenaplan.executorch.lifetimes import program_lifetimes
from arenaplan.executorch.prove import RUNNER_WORDS, prove_program, verify_programs
from arenaplan.executorch.storage import Storage, storage_of
from arenaplan.executorch.write import with_allocations
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.reader.pte_format import read_program
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
NOT_MODELLED = ("ExecuTorch's method allocator (not modelled: measure it in the runtime)",)

Key = tuple[int, int]
TRANSPOSES = ("aten::permute_copy", "aten::t_copy", "aten::transpose_copy")


def planned_keys(model: Model, storage: Storage) -> set[Key]:
    """The tensors this runtime plans: in the default pool, not views."""
    return {
        key
        for key, (memory, _) in storage.where.items()
        if memory == DEFAULT_POOL and key not in storage.views
    }


class ExecuTorch(Runtime):
    """ExecuTorch 1.5: a ``.pte`` program's ``allocation_info`` and pool sizes."""

    name = NAME
    title = "ExecuTorch"
    alignment = ALIGNMENT
    file_format = "pte"
    rewrites = False  # no weights policy, and of the passes only reorder (``order``)
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
        "The method allocator holds ExecuTorch's own structures: not modelled. A scope "
        "is one instruction of a method; methods are planned in scopes of their own."
    )

    def own_plan(self, model: Model, plan: Plan) -> tuple[str, int]:
        reach = simulate.pool_reach(model, simulate.stored_places(model), DEFAULT_POOL)
        top = -(-reach // ALIGNMENT) * ALIGNMENT  # the pool it declares
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
        return TailEstimate(0, NOT_MODELLED)

    def min_arena(
        self, model: Model, head: int, n_planned: int, profile: Profile, kernels: KernelSet
    ) -> TailEstimate:
        return TailEstimate(head, NOT_MODELLED)

    def plan_problems(self, model: Model, plan: Plan) -> list[str]:
        offsets = plan.tensor_offsets
        misaligned = [
            f"tensor {key} at offset {o} is not {ALIGNMENT}-byte aligned"
            for key, o in zip(model.tensor_keys(), offsets, strict=True)
            if o >= 0 and o % ALIGNMENT
        ]
        return misaligned or simulate.plan_problems(model, new_places(model, offsets))

    def write_rewrite(self, data: bytes, model: Model, offsets: Sequence[int]) -> bytes:
        return self.write_plan(data, offsets, model)

    def write_plan(self, data: bytes, offsets: Sequence[int], model: Model | None = None) -> bytes:
        """``model``: the program ``data`` holds with its instructions in a new order
        (None: as they are), written in that order (``order.with_order``)."""
        program = read_program(data)
        model = program_model(program) if model is None else model
        places = new_places(model, offsets)
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
            sizes = _pools(model, s, places, plan.pools)
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

    def read_plan(self, model: Model) -> tuple[int, ...] | None:
        if model.stored_plan is None:
            return None
        planned = planned_keys(model, storage_of(model))
        return tuple(
            o if key in planned else -1
            for key, o in zip(model.tensor_keys(), model.stored_plan, strict=True)
        )


def new_places(model: Model, offsets: Sequence[int]) -> dict[Key, tuple[int, int]]:
    """Where each pooled tensor goes: planned ones at ``offsets`` (per tensor over all
    subgraphs, -1 where not planned), views ``delta`` into their base, tensors of
    other pools where the program put them."""
    storage = storage_of(model)
    planned = planned_keys(model, storage)
    given = dict(zip(model.tensor_keys(), offsets, strict=True))
    places = {
        key: (DEFAULT_POOL, given[key]) if key in planned else where
        for key, where in storage.where.items()
    }
    for key, (base, delta) in storage.views.items():
        memory, offset = places[base]
        places[key] = (memory, offset + delta)
    return places


def _pools(
    model: Model, s: int, places: dict[Key, tuple[int, int]], sizes: tuple[int, ...]
) -> tuple[int, ...]:
    """Plan ``s``'s pool sizes: the default pool's the bytes its tensors reach,
    rounded up to the alignment; the others as they were."""
    top = simulate.pool_reach(model, places, DEFAULT_POOL, subgraph=s)
    out = list(sizes) if len(sizes) > DEFAULT_POOL else [0, 0]
    out[DEFAULT_POOL] = -(-top // ALIGNMENT) * ALIGNMENT
    return tuple(out)


RUNTIME = ExecuTorch()
