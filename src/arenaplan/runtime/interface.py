"""The one interface the pipeline talks to a runtime through.

A runtime package (``arenaplan.tflm`` today) implements ``Runtime`` and is found by
name in ``registry``; the planner's core (analysis, passes, allocation, placement,
weights, cost, export) asks it, and imports none of its modules. Sizes are bytes;
models are the IR's ``Model``; kernel sets and profiles are this runtime's own values
(``spec``).

What a runtime must say: its values (kernel sets, profiles), its buffers' bytes and
alignment, the persistent part it keeps beside the plan (the tail) and the smallest
arena it runs in, how a plan is written into its format and read back. What it may
say (the defaults say "nothing"): kernel scratch, refusals, in-place and view
aliases, the proof of a plan in the real runtime, the cascade kernel.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from arenaplan.errors import UsageError
from arenaplan.ir.dtypes import DType
from arenaplan.runtime.cascade import CascadeKernel
from arenaplan.runtime.proof import Proof
from arenaplan.runtime.records import (
    Candidates,
    Lifetimes,
    OrderFacts,
    ScratchRequest,
    SplitPersistent,
    TailEstimate,
    TensorBytes,
)
from arenaplan.runtime.report import VerifyReport
from arenaplan.runtime.spec import KernelSet, Profile

if TYPE_CHECKING:
    from pathlib import Path

    from arenaplan.ir.model import Model, Operator, Subgraph
    from arenaplan.placement.plan import Plan
    from arenaplan.placement.tiers import TierPlacement
    from arenaplan.targets.model import Target


class Runtime(ABC):
    """A runtime the planner plans for. Subclasses set the class attributes."""

    name: str  # registry name ("tflm"): KernelSet.runtime and Profile.runtime
    title: str  # how messages name it ("TFLM")
    file_format: str  # the model files it runs, as ``Model.file_format`` names them
    alignment: int  # bytes: every planned buffer's offset is a multiple of this

    # ---- its values --------------------------------------------------------------
    @abstractmethod
    def kernel_sets(self) -> tuple[KernelSet, ...]:
        """Every kernel set a build of this runtime runs."""

    @abstractmethod
    def profiles(self) -> tuple[Profile, ...]:
        """Every build profile a plan may be sized for."""

    @abstractmethod
    def default_kernels(self) -> KernelSet:
        """The kernels a plan is for when nobody says."""

    @abstractmethod
    def default_profile(self) -> Profile:
        """The build profile a plan is sized for when nobody says."""

    def kernel_words(self, kernels: KernelSet) -> str:
        """``kernels`` in words (help texts, headers)."""
        return kernels.name

    def profile_words(self, profile: Profile) -> str:
        """``profile`` in words (summaries)."""
        return f"{profile.pointer_bytes * 8}-bit pointers"

    # ---- the buffers it plans ----------------------------------------------------
    @abstractmethod
    def tensor_bytes(self, model: Model) -> TensorBytes:
        """Bytes of every tensor of every subgraph, as the runtime sizes them (unaligned)."""

    def planned(self, model: Model, sizes: TensorBytes, s: int, t: int) -> bool:
        """Whether the runtime plans tensor ``t`` of subgraph ``s`` in its arena
        (``sizes``: ``tensor_bytes``); default: its data is not set before planning
        (no constant data, not a variable, not a resource handle) and it has bytes."""
        tensor = model.subgraphs[s].tensors[t]
        if tensor.is_constant or tensor.is_variable or tensor.dtype is DType.RESOURCE:
            return False
        return sizes[s][t] > 0

    @abstractmethod
    def lifetimes(self, model: Model) -> Lifetimes:
        """When each tensor and operator is live, in the runtime's steps (inclusive)."""

    def order_facts(self, model: Model, s: int) -> OrderFacts:
        """What any order of subgraph ``s``'s operators must keep beyond the IR's data
        edges (``reorder``); default: nothing more."""
        return OrderFacts()

    def scratch_requests(
        self, model: Model, sizes: TensorBytes, pointer_bytes: int, kernels: KernelSet
    ) -> tuple[ScratchRequest, ...]:
        """The kernels' scratch buffers, in the runtime's request order (default: none)."""
        return ()

    def wide_biases(self, sg: Subgraph, op: Operator, kernels: KernelSet) -> list[int]:
        """The bias inputs of ``op`` that ``kernels`` read wider than their type
        (whose copies must hold the wider bytes); default: none."""
        return []

    def alias_candidates(
        self, model: Model, kinds: Iterable[str], clobber_inputs: bool, kernels: KernelSet
    ) -> Candidates:
        """The aliases the kernels allow in ``model`` (the rules of ``kinds``:
        "inplace", "views"), each on its own; default: none."""
        return Candidates((), ())

    # ---- what the summary says -----------------------------------------------------
    summary_words = ""  # how to read a plan's summary for this runtime ("": the default)
    rewrites = True  # the graph passes and the weights policies take its models
    # one pool per memory: a plan spread over memories is written as pools of their
    # own (``write_plan``'s ``regions``), not as one head laid end to end (TFLM)
    pools_per_memory = False
    plans_by_greedy = True  # its own planner is the greedy ``Plan.tflm_greedy`` computes
    tail_name = "tail"  # what its persistent part is called, after its title
    scope_words = "scope (TFLM: 0 = inputs, operator i runs in scope i+1)"  # pictures' x axis
    time_note = ""  # said after the time model's label: what its estimate assumes of this runtime
    keeps_stored_plan = False  # a rewrite keeps the plan the file carries (not dropped)

    def takes_pass(self, name: str) -> bool:
        """Whether ``plan --passes`` may run pass ``name`` on its models."""
        return self.rewrites

    def advice(self, model: Model, plan: Plan) -> tuple[str, ...]:
        """One line per way the model's export wastes arena that a user can fix
        (default: none)."""
        return ()

    def own_plan(self, model: Model, plan: Plan) -> tuple[str, int]:
        """The runtime's own plan of ``model`` in words, and its head (bytes), for the
        summary to compare with; default: TFLM's greedy planner on the same buffers."""
        return f"{self.title}'s own planner (no offline plan)", plan.tflm_greedy

    # ---- the persistent part -----------------------------------------------------
    @abstractmethod
    def tail(
        self,
        model: Model,
        profile: Profile,
        kernels: KernelSet,
        sizes: TensorBytes | None = None,
        with_io: bool = True,
    ) -> TailEstimate:
        """The persistent bytes the runtime keeps beside a plan of ``model``."""

    def pinned_pools(self, model: Model) -> tuple[tuple[int, int], ...]:
        """(memory id, bytes) of each pool the model keeps as it is, besides the ones
        planned (with ``pools_per_memory``: tensors pinned to another memory id)."""
        return ()

    def tail_words(self, model: Model, kernels: KernelSet) -> str:
        """The summary's line on the tail ("": the predicted tail per profile)."""
        return ""

    @abstractmethod
    def min_arena(
        self, model: Model, head: int, n_planned: int, profile: Profile, kernels: KernelSet
    ) -> TailEstimate:
        """The smallest arena the runtime works in with a head of ``head`` bytes and
        ``n_planned`` planned buffers."""

    def planning_room(self, model: Model, n_scratch: int, n_planned: int, profile: Profile) -> int:
        """Bytes the runtime needs in a separate arena while it commits a plan (default 0)."""
        return 0

    def persistent_extents(
        self, model: Model, profile: Profile | None, kernels: KernelSet
    ) -> dict[tuple, int]:
        """Bytes of each block of the persistent part a kernel reads, by traffic key
        (``cost.traffic``), in build ``profile`` (None: the build the runtime's traffic
        tables were measured on); default: none modelled."""

        return {}

    def refusals(self, model: Model) -> tuple[str, ...]:
        """One line per reason the runtime refuses ``model`` (default: none)."""
        return ()

    def refusal_reason(self, model: Model, error: str | None) -> str:
        """Why the runtime refused ``model`` (its error ``error``), in one line."""
        return error or "refused"

    def split_persistent(
        self, model: Model, profile: Profile, kernels: KernelSet
    ) -> SplitPersistent:
        """The persistent array of a plan spread over memories whose head is split
        from the persistent part (``export.figures``' split arena)."""
        raise UsageError(f"{self.title} runs no split arena")

    # ---- checking ----------------------------------------------------------------
    @abstractmethod
    def plan_problems(self, model: Model, plan: Plan) -> list[str]:
        """Every problem of ``plan`` (a ``placement.plan.Plan`` of ``model`` for this
        runtime), one line each, found by code that shares none with the planner:
        which buffers the runtime plans, their bytes, lifetimes and alignment, that
        none overlap in time and space but the aliases its kernels allow."""

    # ---- writing and proving -----------------------------------------------------
    @abstractmethod
    def write_plan(self, data: bytes, offsets: Sequence[int], regions: Sequence[int] = ()) -> bytes:
        """The model ``data`` with a plan (one offset per planned buffer) written in.
        ``regions``: with ``pools_per_memory``, where each memory's region starts in the
        head of a plan spread over memories (bytes, ascending; empty: one memory)."""

    def write_rewrite(
        self, data: bytes, model: Model, offsets: Sequence[int], regions: Sequence[int] = ()
    ) -> bytes:
        """``model``, a pass's rewrite of the model ``data`` holds, in the runtime's
        format with a plan written in (a ``.tflite`` rewrite is written by arenaplan's
        TFLite writer, then ``write_plan``: a runtime of another format says how);
        ``regions`` as ``write_plan``'s."""
        raise UsageError(f"{self.title} cannot write a rewritten model")

    @abstractmethod
    def read_plan(self, model: Model, pools: int = 1) -> tuple[int, ...] | None:
        """The plan ``write_plan`` wrote, as ``model`` (read back) carries it (None: none;
        with ``pools_per_memory``, its first ``pools`` pools laid end to end, as
        ``regions``)."""

    def uses_own_kernels(self, model: Model) -> bool:
        """``model`` runs a kernel only arenaplan's build of the runtime has."""
        return False

    def proof_available(self, kernels: KernelSet, own: bool) -> tuple[str, str | None]:
        """(what would prove a plan, why it cannot here or None)."""
        return self.title, f"{self.title} has no prover"

    def prove(
        self, original: bytes, planned: bytes, arena: int, kernels: KernelSet, own: bool
    ) -> Proof:
        """Run the planned model in the real runtime against the original."""
        what, why = self.proof_available(kernels, own)
        return Proof(why or "no prover", runtime=what, unavailable=True)

    # ---- running models in the runtime (``verify``, ``profile``) --------------------
    def builds(self) -> tuple[str, ...]:
        """The builds of the runtime from source that ``verify --build`` can name."""
        return ()

    def default_build(self, model: Model) -> str | None:
        """The build ``verify`` runs ``model`` in when none is named (None: the
        runtime as installed)."""
        return None

    def check_runs_here(self, model: Model, name: str) -> None:
        """UsageError if ``model`` (file ``name``) cannot run on this machine."""
        return None

    def verify(
        self, original: bytes, planned: bytes, trials: int, seed: int, build: str | None
    ) -> VerifyReport:
        """Both models run on the same random inputs: outputs and measured bytes."""
        raise UsageError(f"{self.title} cannot run models here")

    def traffic_unavailable(self, build: str) -> str | None:
        """Why the memory traffic of ``build`` cannot be measured here (None: it can)."""
        return f"{self.title} has no traffic measurement"

    def measure_traffic(self, path: Path, build: str) -> dict:
        """Bytes each operator reads and writes, measured in ``build``."""
        raise UsageError(f"{self.title} has no traffic measurement")

    # ---- the runtime's own outputs ---------------------------------------------
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
        """The C header that sizes the arenas of ``plan`` for firmware: ``sections``
        (linker sections of the arena and of a separate persistent arena, None: one
        arena; with ``pools_per_memory``: each pool's, then the persistent part's);
        ``head``: the fastest memory's share of a spread plan (None: all)."""
        raise UsageError(f"--header: {self.title} has no arena header")

    def planner_source(
        self,
        model: Model,
        placement: TierPlacement,
        target: Target,
        name: str,
        profile: Profile,
        persistent_memory: str | None,
    ) -> str:
        """Source that hands the runtime a plan spread over memories."""
        raise UsageError(f"--planner-cpp: {self.title} has no planner source")

    def counts_measured(self, kernels: KernelSet, compiled_for: str) -> bool:
        """Whether ``kernel_counts`` measures ``kernels`` compiled for ``compiled_for``."""
        return False

    def kernel_counts(
        self, model: Model, kernels: KernelSet, compiled_for: str = "speed"
    ) -> list[dict[str, float] | None] | None:
        """Each operator's instructions by class in ``kernels`` compiled for
        ``compiled_for`` ("speed" or "size") on a Cortex-M, in the
        order of ``cost.roofline.operator_work`` (classes of ``targets.cores``, plus
        ``weight_bytes`` and ``weight_accesses``: the constants' bytes read and the
        loads that takes; None for an operator it does not measure); None when the
        runtime has no such measurements (the target's compute rates time the model
        instead)."""
        return None

    def cascade(self, kernels: KernelSet) -> CascadeKernel | None:
        """The facts of arenaplan's cascade kernel for ``kernels`` (None: the runtime
        has no such kernel: cascades are not offered)."""
        return None
