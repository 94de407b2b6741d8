"""TFLM as a ``runtime.interface.Runtime``: the one object the planner talks to.

Each method reads the module of this package that holds the fact (``sizes``,
``scratch``, ``tail``, ``refusals``, ``alias_candidates``, ``offline_plan``,
``verify.prove``, ``cmsis_nn.cascade``, ``cascade_steps``); the kernel sets and build
profiles are TFLM's (``kernel_sets``, ``tail.PROFILES``), as ``runtime.spec`` values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache, partial
from pathlib import Path

from arenaplan.errors import RuntimeUnavailableError, UsageError
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.placement.plan import Plan
from arenaplan.placement.tiers import TierPlacement
from arenaplan.reader.overread import wide_biases
from arenaplan.runtime.cascade import CascadeKernel
from arenaplan.runtime.interface import Runtime
from arenaplan.runtime.proof import Proof
from arenaplan.runtime.records import (
    Candidates,
    Lifetimes,
    ScratchRequest,
    SplitPersistent,
    TailEstimate,
    TensorBytes,
)
from arenaplan.runtime.report import VerifyReport
from arenaplan.runtime.spec import KernelSet, Profile
from arenaplan.targets.model import Target
from arenaplan.tflm import cascade_steps, firmware, planner_cpp, refusals, scratch, tail, validate
from arenaplan.tflm.alias_candidates import alias_candidates
from arenaplan.tflm.cmsis_nn.buffer_sizes import PIXEL_GROUP
from arenaplan.tflm.cmsis_nn.cascade import chain_work_bytes, windowed
from arenaplan.tflm.kernel_counts import build_name, op_counts
from arenaplan.tflm.kernel_sets import KERNEL_WORDS, KERNELS, REFERENCE, cmsis_features
from arenaplan.tflm.lifetimes import compute_lifetimes
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.sizes import TFLM_ALIGNMENT, tensor_bytes
from arenaplan.tflm.verify import prove, traffic_measure
from arenaplan.tflm.verify.compare import compare_models
from arenaplan.tflm.verify.host_limit import check_runs_here
from arenaplan.tflm.verify.native import VARIANTS, NativeRunner, native_available
from arenaplan.tflm.verify.prove import OWN_BUILD
from arenaplan.tflm.verify.runner import require_tflm

NAME = "tflm"
ENUM_BYTES = {"pypi": 4, "arm32": 1, "int32": 4}  # sizeof an enum per profile (bytes)
DEFAULT_PROFILE = "arm32"  # a Cortex-M build with arm-none-eabi-gcc
PROFILE_WORDS = {
    "arm32": "32-bit ARM, arm-none-eabi-gcc",
    "int32": "other 32-bit targets",
    "pypi": "64-bit host, the PyPI runtime",
}


KERNEL_SETS = tuple(KernelSet(NAME, k, k.split("+")[0], cmsis_features(k) or "") for k in KERNELS)
PROFILES = tuple(
    Profile(NAME, name, p.pointer, ENUM_BYTES[name]) for name, p in tail.PROFILES.items()
)


def _no_work(_chain: object) -> int:
    return 0


class Tflm(Runtime):
    """TensorFlow Lite Micro: the offline plan in the ``.tflite``, proven in TFLM."""

    name = NAME
    title = "TFLM"
    file_format = "tflite"
    alignment = TFLM_ALIGNMENT

    def kernel_sets(self) -> tuple[KernelSet, ...]:
        return KERNEL_SETS

    def profiles(self) -> tuple[Profile, ...]:
        return PROFILES

    def default_kernels(self) -> KernelSet:
        return KERNEL_SETS[KERNELS.index(REFERENCE)]

    def default_profile(self) -> Profile:
        return next(p for p in PROFILES if p.name == DEFAULT_PROFILE)

    def kernel_words(self, kernels: KernelSet) -> str:
        return KERNEL_WORDS[kernels.name]

    def profile_words(self, profile: Profile) -> str:
        return PROFILE_WORDS[profile.name]

    def tensor_bytes(self, model: Model) -> TensorBytes:
        return tensor_bytes(model)

    def lifetimes(self, model: Model) -> Lifetimes:
        return compute_lifetimes(model)

    def scratch_requests(
        self, model: Model, sizes: TensorBytes, pointer_bytes: int, kernels: KernelSet
    ) -> tuple[ScratchRequest, ...]:
        return scratch.scratch_requests(model, sizes, pointer_bytes, kernels.name)

    def wide_biases(self, sg: Subgraph, op: Operator, kernels: KernelSet) -> list[int]:
        return wide_biases(sg, op, cmsis_nn=kernels.name != REFERENCE)

    def alias_candidates(
        self, model: Model, kinds: Iterable[str], clobber_inputs: bool, kernels: KernelSet
    ) -> Candidates:
        return alias_candidates(model, kinds, clobber_inputs, kernels.name)

    def tail(
        self,
        model: Model,
        profile: Profile,
        kernels: KernelSet,
        sizes: TensorBytes | None = None,
        with_io: bool = True,
    ) -> TailEstimate:
        return tail.tail_estimate(model, profile.name, sizes, with_io, kernels.name)

    def min_arena(
        self, model: Model, head: int, n_planned: int, profile: Profile, kernels: KernelSet
    ) -> TailEstimate:
        return tail.min_arena_estimate(model, head, n_planned, profile.name, kernels.name)

    def planning_room(self, model: Model, n_scratch: int, n_planned: int, profile: Profile) -> int:
        return tail.planning_room(model, n_scratch, n_planned, profile.name)

    def persistent_extents(
        self, model: Model, profile: Profile | None, kernels: KernelSet
    ) -> dict[tuple, int]:
        # None: the 64-bit host build the traffic tables were measured on (tail's default)
        if profile is None:
            return tail.persistent_extents(model, kernels=kernels.name)
        return tail.persistent_extents(model, profile.name, kernels.name)

    def refusals(self, model: Model) -> tuple[str, ...]:
        return refusals.tflm_refusals(model)

    def refusal_reason(self, model: Model, error: str | None) -> str:
        return refusals.refusal_reason(model, error)

    def split_persistent(
        self, model: Model, profile: Profile, kernels: KernelSet
    ) -> SplitPersistent:
        return planner_cpp.split_persistent(model, profile.name, kernels.name)

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
        arena, persistent = sections
        return firmware.firmware_header(
            model, plan, name, profile.name, arena, persistent, head, planned_model=planned_model
        )

    def planner_source(
        self,
        model: Model,
        placement: TierPlacement,
        target: Target,
        name: str,
        profile: Profile,
        persistent_memory: str | None,
    ) -> str:
        return planner_cpp.planner_source(
            model, placement, target, name, profile.name, persistent_memory
        )

    def plan_problems(self, model: Model, plan: Plan) -> list[str]:
        return validate.plan_problems(model, plan)

    def write_plan(self, data: bytes, offsets: Sequence[int], regions: Sequence[int] = ()) -> bytes:
        return with_offline_plan(data, offsets)  # one head, the regions laid end to end

    def read_plan(self, model: Model, pools: int = 1) -> tuple[int, ...] | None:
        return model.stored_plan

    def uses_own_kernels(self, model: Model) -> bool:
        return refusals.uses_own_kernels(model)

    def proof_available(self, kernels: KernelSet, own: bool) -> tuple[str, str | None]:
        return prove.proof_runtime(kernels.name, own)

    def prove(
        self, original: bytes, planned: bytes, arena: int, kernels: KernelSet, own: bool
    ) -> Proof:
        return prove.prove(original, planned, arena, kernels.name, own)

    def builds(self) -> tuple[str, ...]:
        return tuple(VARIANTS)

    def default_build(self, model: Model) -> str | None:
        return OWN_BUILD if refusals.uses_own_kernels(model) else None

    def check_runs_here(self, model: Model, name: str) -> None:
        check_runs_here(model, name)

    def verify(
        self, original: bytes, planned: bytes, trials: int, seed: int, build: str | None
    ) -> VerifyReport:
        if build is None:
            require_tflm()
            return compare_models(original, planned, trials=trials, seed=seed)
        if build not in VARIANTS:
            raise UsageError(f"--build: no TFLM build {build} (one of {', '.join(VARIANTS)})")
        why = native_available(build)
        if why is not None:
            raise RuntimeUnavailableError(f"cannot verify in TFLM {build}: {why}")
        with NativeRunner(build) as runner:
            return compare_models(original, planned, trials, seed, runner=runner, figures=False)

    def traffic_unavailable(self, build: str) -> str | None:
        return traffic_measure.traffic_available(build)

    def measure_traffic(self, path: Path, build: str) -> dict:
        return traffic_measure.measure_traffic(path, build)

    def counts_measured(self, kernels: KernelSet, compiled_for: str) -> bool:
        return kernels.library == "cmsis_nn" and build_name(kernels.level, compiled_for) is not None

    def kernel_counts(
        self, model: Model, kernels: KernelSet, compiled_for: str = "speed"
    ) -> list[dict[str, float] | None] | None:
        if not self.counts_measured(kernels, compiled_for):
            return None
        return op_counts(model, kernels.level, compiled_for)

    def cascade(self, kernels: KernelSet) -> CascadeKernel:
        return _cascade(kernels)


@cache
def _cascade(kernels: KernelSet) -> CascadeKernel:
    """The cascade kernel's facts for ``kernels``, made once per kernel set (the passes
    ask for them per stage)."""
    features = cmsis_features(kernels.name)
    k = kernels.name
    return CascadeKernel(
        optimised=features is not None,
        pixel_group=PIXEL_GROUP[features] if features is not None else 1,
        paired=features is not None and features != "mve",
        windowed=windowed,
        work_bytes=partial(chain_work_bytes, features) if features is not None else _no_work,
        instructions=lambda records: cascade_steps.cascade_instructions(records, k),
        extra_instructions=lambda records: cascade_steps.extra_instructions(records, k),
        extra_work=lambda records: cascade_steps.extra_work(records, k),
    )


RUNTIME = Tflm()
