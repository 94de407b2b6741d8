"""Prove a rewritten, planned model against the original in the real TFLM runtime,
with the kernels the plan is for.

A rewrite is proven when TFLM runs it, its outputs are bit-identical to the
original's on random inputs, and the head TFLM measures with its offline plan is
the planned arena. Anything else is a reason not to write it.

The proof runs where the plan's kernels run (``PROOF_BUILDS``): the PyPI runtime for
TFLM's reference kernels, else the TFLM build from source that compiles the same
kernel code: CMSIS-NN in plain C on the host, CMSIS-NN with the DSP extension as
Cortex-M4 code under qemu-arm, CMSIS-NN with MVE as Cortex-M55 code on
qemu-system-arm's Corstone-300 board. When that build (or its emulator) is absent
here the proof is *unavailable*: nothing was run, and the reason names the build
command that would make it.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from arenaplan.tflm.kernel_sets import REFERENCE, check_kernels
from arenaplan.verify.compare import compare_models
from arenaplan.verify.runner import TflmRunner, tflm_available

PROOF_TRIALS = 3  # random inputs per proof
PROOF_SEED = 0
PYPI = "TFLM (PyPI tflite-micro, reference kernels)"
# kernels -> the TFLM build from source (verify.native.VARIANTS) that runs that code
# (its ``Variant.kernels``); reference kernels are proven in the PyPI runtime.
PROOF_BUILDS: dict[str, str] = {
    "cmsis_nn": "host-cmsis_nn",
    "cmsis_nn+dsp": "arm32-cmsis_nn",
    "cmsis_nn+mve": "m55-cmsis_nn",
}


@dataclass(frozen=True, slots=True)
class Proof:
    """``reason`` is None when proven; else one line saying why not. ``unavailable``:
    nothing could run the proof (no runtime or build for the kernels), as opposed
    to a run that failed or differed; ``refused``: TFLM refused the original model
    itself, so nothing made from it can be proven."""

    reason: str | None
    _: KW_ONLY
    runtime: str = PYPI  # what ran (or would have run) the proof
    trials: int = PROOF_TRIALS
    head: int | None = None  # TFLM's measured head with the plan (bytes)
    tail: int | None = None  # TFLM's measured tail (bytes)
    unavailable: bool = False
    refused: bool = False

    @property
    def proven(self) -> bool:
        return self.reason is None

    def as_dict(self) -> dict[str, object]:
        return {
            "proven": self.proven,
            "reason": self.reason,
            "runtime": self.runtime,
            "trials": self.trials,
            "measured_head": self.head,
            "measured_tail": self.tail,
        }


def proof_runtime(kernels: str = REFERENCE) -> tuple[str, str | None]:
    """What proves a plan for ``kernels``, and why it cannot run here (None: it can)."""
    if kernels == REFERENCE:
        if tflm_available():
            return PYPI, None
        return PYPI, "the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    from arenaplan.verify.native import native_available

    variant = PROOF_BUILDS[check_kernels(kernels)]  # every CMSIS-NN level has one
    return f"TFLM {variant} (built from source)", native_available(variant)


def prove(original: bytes, planned: bytes, arena: int, kernels: str = REFERENCE) -> Proof:
    """Run ``original`` and ``planned`` in TFLM with ``kernels``; ``arena``: the planned
    head (bytes)."""
    runtime, why = proof_runtime(kernels)
    if why is not None:
        return Proof(why, runtime=runtime, unavailable=True)
    runner = _runner(kernels)
    try:
        report = compare_models(
            original, planned, PROOF_TRIALS, PROOF_SEED, runner=runner, figures=False
        )
    finally:
        runner.close()
    if report.refused is not None:
        return Proof(report.refused, runtime=runtime, refused=True)
    if report.failed is not None:
        return Proof(report.failed, runtime=runtime)
    m = report.planned
    if not report.identical:
        reason = f"outputs differ from the original's: {report.mismatch}"
        return Proof(reason, runtime=runtime, head=m.head)
    if m.head != arena:
        reason = f"TFLM's measured head is {m.head:,} B, the plan says {arena:,} B"
        return Proof(reason, runtime=runtime, head=m.head)
    return Proof(None, runtime=runtime, head=m.head, tail=m.tail)


def _runner(kernels: str):  # TflmRunner or NativeRunner: the same ``run`` and ``close``
    if kernels == REFERENCE:
        return TflmRunner()
    from arenaplan.verify.native import NativeRunner

    return NativeRunner(PROOF_BUILDS[kernels])
