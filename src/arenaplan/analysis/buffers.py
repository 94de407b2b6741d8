"""Turn a model's planned tensors and scratch requests into allocation buffers.

The buffers are added in TFLM's ``CreatePlan`` order: every planned tensor in
tensor-index order across subgraphs, then every scratch request in request order.
A tensor is planned if it has no constant data, is not a variable or a resource
handle, and has bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.allocation.packing import align_up
from arenaplan.allocation.problem import Buffer
from arenaplan.errors import UnsupportedModelError
from arenaplan.ir.model import Model
from arenaplan.runtime.records import Lifetimes, ScratchRequest
from arenaplan.runtime.registry import default_kernels, runtime_of
from arenaplan.runtime.spec import KernelSet


@dataclass(frozen=True, slots=True)
class StagingRequest:
    """A buffer of ``bytes`` for the weights of operator ``op`` (subgraph 0), alive
    from operator ``first`` to ``op``; ``policy`` says what it holds ("groups:16",
    "groups:16,double"): the validator re-derives its size from the model."""

    op: int
    first: int
    bytes: int
    policy: str


INT32_MAX = 2**31 - 1  # TFLM's planner takes sizes and offsets as int (32 bits on MCUs)


@dataclass(frozen=True, slots=True)
class ArenaItems:
    """What goes in the head: tensors (s, t), scratch requests, and their buffers.

    ``buffers[:len(tensors)]`` are the tensors, the rest the scratch requests.
    """

    tensors: tuple[tuple[int, int], ...]
    scratch: tuple[ScratchRequest, ...]
    buffers: tuple[Buffer, ...]
    sizes: tuple[tuple[int, ...], ...]
    lifetimes: Lifetimes

    @property
    def tensor_buffers(self) -> tuple[Buffer, ...]:
        return self.buffers[: len(self.tensors)]

    @property
    def scratch_buffers(self) -> tuple[Buffer, ...]:
        return self.buffers[len(self.tensors) :]


def arena_items(
    model: Model, pointer_size: int = 8, kernels: KernelSet | None = None
) -> ArenaItems:
    """The head's tensors and the scratch requests of a build running ``kernels``
    (None: the default runtime's default kernels; ``pointer_size``: bytes of a
    pointer in that build), aligned as its runtime aligns them."""
    kernels = kernels or default_kernels()
    runtime = runtime_of(kernels)
    align = runtime.alignment
    sizes = runtime.tensor_bytes(model)
    lt = runtime.lifetimes(model)

    requests = runtime.scratch_requests(model, sizes, pointer_size, kernels)
    tensors = tuple(
        (sg.index, t.index)
        for sg in model.subgraphs
        for t in sg.tensors
        if runtime.planned(model, sizes, sg.index, t.index)
    )
    for s, t in tensors:
        _check_size(model, s, t, sizes[s][t])
    buffers = [
        Buffer(
            f"tensor {s}:{t}",
            lt.tensors[s][t].first,
            lt.tensors[s][t].last,
            align_up(sizes[s][t], align),
            align,
        )
        for s, t in tensors
    ]
    for r in requests:
        first, last = lt.operators[r.subgraph][r.op]
        buffers.append(
            Buffer(
                f"scratch {r.order} (subgraph {r.subgraph} op {r.op})",
                first,
                last,
                align_up(r.bytes, align),
                align,
            )
        )
    return ArenaItems(tensors, requests, tuple(buffers), sizes, lt)


def staging_buffers(
    lt: Lifetimes, requests: Sequence[StagingRequest], align: int
) -> tuple[Buffer, ...]:
    """The buffers of weight staging requests: alive from operator ``first`` to ``op``
    (subgraph 0), sizes rounded up to ``align`` (bytes: the runtime's alignment) like
    every head buffer."""
    ops = lt.operators[0]
    return tuple(
        Buffer(
            f"staging for operator {r.op}",
            ops[r.first][0],
            ops[r.op][1],
            align_up(r.bytes, align),
            align,
        )
        for r in requests
    )


def _check_size(model: Model, s: int, t: int, nbytes: int) -> None:
    if nbytes > INT32_MAX:
        name = model.subgraphs[s].tensors[t].name
        raise UnsupportedModelError(
            f"subgraph {s} tensor {t} ({name!r}) takes {nbytes:,} bytes; TFLM's planner "
            f"counts bytes in 32-bit ints (at most {INT32_MAX:,})"
        )
