"""A second runtime, defined in this file alone, planned for through the one pipeline.

The toy runtime aligns every buffer to 64 bytes, keeps a persistent part of a
constant 1,000 bytes, asks for no kernel scratch, allows no alias, and takes its
plan as a metadata entry of its own ("TOY_PLAN": one little-endian int32 offset per
tensor, -1 where it does not plan the tensor). It checks plans with code of its own
(lifetimes from the producers and consumers of subgraph 0, its own byte counts).
Nothing of arenaplan's pipeline is edited or patched: the runtime is registered,
and ``run_plan`` plans, validates and writes a shared model for it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import replace

import pytest
from testkit import model_path

from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.model import Model
from arenaplan.pipeline import PlanRequest, Wanted, read_source, run_plan
from arenaplan.placement.plan import Plan
from arenaplan.reader import read_model_bytes
from arenaplan.runtime import registry
from arenaplan.runtime.interface import Runtime
from arenaplan.runtime.records import UNSET, Lifetime, Lifetimes, TailEstimate, TensorBytes
from arenaplan.runtime.spec import KernelSet, Profile

ALIGN = 64  # bytes: every offset and size of the toy's arena is a multiple
PERSISTENT = 1000  # bytes the toy keeps beside any plan
KEY = "TOY_PLAN"
KERNELS = KernelSet("toy", "plain", "plain")
PROFILE = Profile("toy", "toy32", 4, 4)
MODEL = "arm-ml-examples__ds_cnn_s_quantized"  # a shared model: conv, depthwise, pool, FC


def _planned(model: Model, s: int, t: int) -> bool:
    tensor = model.subgraphs[s].tensors[t]
    return not (tensor.is_constant or tensor.is_variable) and tensor.nbytes > 0


class Toy(Runtime):
    name = "toy"
    title = "Toy"
    file_format = "tflite"
    alignment = ALIGN

    def kernel_sets(self) -> tuple[KernelSet, ...]:
        return (KERNELS,)

    def profiles(self) -> tuple[Profile, ...]:
        return (PROFILE,)

    def default_kernels(self) -> KernelSet:
        return KERNELS

    def default_profile(self) -> Profile:
        return PROFILE

    def tensor_bytes(self, model: Model) -> TensorBytes:
        return tuple(tuple(t.nbytes for t in sg.tensors) for sg in model.subgraphs)

    def lifetimes(self, model: Model) -> Lifetimes:
        """Step 0 holds the inputs, operator i runs in step i + 1 (subgraph 0 only)."""
        out = []
        for s, sg in enumerate(model.subgraphs):
            first = [UNSET] * len(sg.tensors)
            last = [UNSET] * len(sg.tensors)
            if s == 0:
                for t in sg.inputs:
                    first[t] = last[t] = 0
                for i, op in enumerate(sg.operators):
                    for t in op.outputs:
                        first[t] = i + 1 if first[t] == UNSET else first[t]
                        last[t] = max(last[t], i + 1)
                    for t in op.inputs:
                        if t >= 0:
                            last[t] = max(last[t], i + 1)
                for t in sg.outputs:
                    last[t] = len(sg.operators)
            out.append(tuple(Lifetime(a, b) for a, b in zip(first, last, strict=True)))
        ops = tuple(
            tuple((i + 1, i + 1) if s == 0 else (UNSET, UNSET) for i in range(len(sg.operators)))
            for s, sg in enumerate(model.subgraphs)
        )
        return Lifetimes(tuple(out), ops, len(model.subgraphs[0].operators) + 1)

    def tail(self, model, profile, kernels, sizes=None, with_io=True) -> TailEstimate:
        return TailEstimate(PERSISTENT)

    def min_arena(self, model, head, n_planned, profile, kernels) -> TailEstimate:
        return TailEstimate(head + PERSISTENT)

    def plan_problems(self, model: Model, plan: Plan) -> list[str]:
        """Each planned tensor of subgraph 0 has an aligned offset inside the arena; no
        two whose producer-to-last-consumer steps meet share a byte."""
        found = []
        sg = model.subgraphs[0]
        given = dict(zip(model.tensor_keys(), plan.tensor_offsets, strict=True))
        live: dict[int, tuple[int, int]] = {}
        for i, op in enumerate(sg.operators):
            for t in (*op.inputs, *op.outputs):
                if t >= 0:
                    lo, hi = live.get(t, (i, i))
                    live[t] = (min(lo, i), max(hi, i))
        spans = []
        for t in range(len(sg.tensors)):
            offset = given[(0, t)]
            if not _planned(model, 0, t):
                if offset != -1:
                    found.append(f"tensor {t} is not planned but has offset {offset}")
                continue
            size = -(-sg.tensors[t].nbytes // ALIGN) * ALIGN
            if offset < 0 or offset % ALIGN or offset + size > plan.arena:
                found.append(f"tensor {t}: offset {offset} is not an aligned place in the arena")
            first = -1 if t in sg.inputs else live.get(t, (-1, -1))[0]
            last = len(sg.operators) if t in sg.outputs else live.get(t, (-1, -1))[1]
            spans.append((t, offset, offset + size, first, last))
        for a in spans:
            for b in spans:
                meet = a[0] < b[0] and a[3] <= b[4] and b[3] <= a[4]
                if meet and a[1] < b[2] and b[1] < a[2]:
                    found.append(f"tensors {a[0]} and {b[0]} overlap while both live")
        return found

    def write_plan(self, data: bytes, offsets: Sequence[int], regions: Sequence[int] = ()) -> bytes:
        model = read_model_bytes(data)
        words = struct.pack(f"<{len(offsets)}i", *offsets)
        kept = tuple(m for m in model.metadata if m[0] != KEY)
        entry = (KEY, len(model.buffers))  # the plan in a buffer of its own
        return write_model(replace(model, buffers=(*model.buffers, words), metadata=(*kept, entry)))

    def read_plan(self, model: Model, pools: int = 1) -> tuple[int, ...] | None:
        found = [model.buffers[index] for key, index in model.metadata if key == KEY]
        if not found:
            return None
        return struct.unpack(f"<{len(found[0]) // 4}i", found[0])


@pytest.fixture
def toy() -> Iterator[Toy]:
    runtime = registry.register(Toy())
    yield runtime
    registry.unregister("toy")


def test_the_toy_runtime_plans_validates_and_writes_a_shared_model(toy: Toy) -> None:
    source = read_source(model_path(MODEL))
    request = PlanRequest(
        source,
        kernels=registry.parse_kernels("plain", "toy"),
        profile=registry.parse_profile("toy32", "toy"),
        outputs=Wanted(model=True, json=True),
    )
    done = run_plan(request)
    plan, model = done.plan, done.model
    assert plan.kernels == KERNELS and plan.alignment == ALIGN and plan.scratch == ()
    placed = [t for t in plan.tensors]
    assert placed and all(p.offset % ALIGN == 0 and p.size % ALIGN == 0 for p in placed)
    assert toy.plan_problems(model, plan) == []  # the toy's own check, again
    figures = done.figures
    assert figures.tail == PERSISTENT and figures.arrays[0].bytes == plan.arena + PERSISTENT
    written = read_model_bytes(done.files["model"])
    assert toy.read_plan(written) == plan.tensor_offsets
    assert written.subgraphs == model.subgraphs
    assert b'"kernels": "plain"' in done.files["json"]


def test_a_toy_plan_is_not_a_tflm_plan(toy: Toy) -> None:
    """The same model planned for TFLM: 16-byte alignment, TFLM's own tail, and the
    offline plan in TFLM's metadata; the toy's arena is never below it by alignment."""
    source = read_source(model_path(MODEL))
    tflm = run_plan(PlanRequest(source, outputs=Wanted(model=True)))
    mine = run_plan(PlanRequest(source, kernels=KERNELS, profile=PROFILE))
    assert tflm.plan.alignment == 16 and mine.plan.alignment == ALIGN
    assert mine.figures.tail == PERSISTENT != tflm.figures.tail
    assert mine.plan.arena >= tflm.plan.arena - len(tflm.plan.tensors) * 16
    assert read_model_bytes(tflm.files["model"]).stored_plan == tflm.plan.tensor_offsets


def test_the_toy_validator_catches_an_overlap(toy: Toy) -> None:
    """The check the pipeline runs before writing is the toy's: a plan with every
    tensor at offset 0 is refused, naming a pair."""
    source = read_source(model_path(MODEL))
    done = run_plan(PlanRequest(source, kernels=KERNELS, profile=PROFILE))
    zero = tuple(0 if o >= 0 else o for o in done.plan.tensor_offsets)
    bad = replace(done.plan, tensor_offsets=zero)
    assert any("overlap" in p for p in toy.plan_problems(done.model, bad))


def test_kernels_and_profile_of_different_runtimes_are_refused(toy: Toy) -> None:
    from arenaplan.errors import UsageError
    from arenaplan.runtime.spec import Deployment

    with pytest.raises(ValueError, match="toy"):
        Deployment(KERNELS, registry.default_profile())
    with pytest.raises(UsageError, match="unknown kernels 'fast' \\(known: plain\\)"):
        registry.parse_kernels("fast", "toy")
