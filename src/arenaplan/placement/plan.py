"""The result of planning a model: offsets beside the IR, never inside it."""

from __future__ import annotations

from dataclasses import dataclass, field

from arenaplan.analysis.buffers import StagingRequest
from arenaplan.runtime.records import Alias
from arenaplan.runtime.registry import default_kernels
from arenaplan.runtime.spec import KernelSet


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """How to plan. ``pointer_size`` (bytes) sizes pointer-array scratch (8 on the host).

    ``kernels``: the kernels the runtime's build runs, which decide the scratch
    requests planned and the alignment (default: the default runtime's default).

    ``alias_kinds``: which tensors may share bytes, by kind (``Runtime.alias_candidates``):
    "inplace" (an operator's output over an input that dies there, for the kernels
    of docs/inplace.md) and "views" (STRIDED_SLICE outputs inside their input,
    CONCATENATION inputs inside their output). ``clobber_inputs``: an in-place
    output may also write over a graph input (the caller refills inputs before
    every invoke).
    """

    allocator: str = "portfolio"
    scratch_aware: bool = True
    pointer_size: int = 8
    time_limit: float = 2.0  # seconds for the exact search, when greedy stops above the bound
    alias_kinds: frozenset[str] = frozenset()
    clobber_inputs: bool = False
    kernels: KernelSet = field(default_factory=default_kernels)
    # weight staging buffers that firmware fills and TFLM does not know of
    # (``weights.policies``): placed around TFLM's tensors and scratch
    staging: tuple[StagingRequest, ...] = ()
    # bytes: place the staging buffers below this offset when first-fit can (the
    # fastest memory's region of a plan spread over several); None: lowest top
    staging_ceiling: int | None = None


@dataclass(frozen=True, slots=True)
class StagingPlacement:
    """A staging buffer in the head: ``[offset, offset + size)`` over operators
    ``first..op`` (scopes ``scope_first..scope_last``)."""

    op: int
    first: int
    bytes: int
    policy: str
    size: int
    offset: int
    scope_first: int
    scope_last: int


@dataclass(frozen=True, slots=True)
class TensorPlacement:
    """A tensor TFLM plans in the head. ``bytes`` unaligned, ``size`` rounded up to 16.

    Live over the inclusive scopes ``[first, last]``; occupies ``[offset, offset+size)``.
    """

    subgraph: int
    index: int
    name: str
    bytes: int
    size: int
    offset: int
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class ScratchPlacement:
    """A kernel scratch request; TFLM places it at run time, we predict where.

    ``order`` is its place in TFLM's request order; live over ``[first, last]``.
    """

    subgraph: int
    op: int
    order: int
    bytes: int
    size: int
    offset: int
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class Plan:
    """A validated plan of the non-persistent arena (TFLM's head).

    ``arena``: head bytes TFLM will use with this plan (tensors and scratch).
    ``lower_bound``: peak over scopes of live aligned bytes, scratch included;
    no plan of this model in this operator order can use less (with aliases: no
    plan that keeps each alias class in one block).
    ``tflm_greedy``: head TFLM's own online planner reaches on the unmodified model.
    ``tensor_offsets``: one per tensor over all subgraphs, -1 where the runtime plans
    it: what ``Runtime.write_plan`` writes into the model (TFLM: its offline plan).
    ``aliases``: every pair of tensors that share bytes, with the rule that allows
    it (the validator re-derives each); with aliases, ``lower_bound`` is that of
    the merged buffers (one per alias class). ``clobber_inputs``: whether the plan
    was allowed to write over graph inputs. ``kernels``: the kernels whose scratch
    requests were planned (``PlanOptions.kernels``); TFLM's tail depends on them too.
    """

    tensors: tuple[TensorPlacement, ...]
    scratch: tuple[ScratchPlacement, ...]
    arena: int
    lower_bound: int
    tensor_lower_bound: int
    tflm_greedy: int
    alignment: int
    allocator: str
    strategy: str
    tensor_offsets: tuple[int, ...]
    seconds: float
    aliases: tuple[Alias, ...] = ()
    clobber_inputs: bool = False
    kernels: KernelSet = field(default_factory=default_kernels)
    staging: tuple[StagingPlacement, ...] = ()  # weight buffers TFLM does not know of

    @property
    def optimal(self) -> bool:
        return self.arena <= self.lower_bound
