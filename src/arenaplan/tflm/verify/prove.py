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
command that would make it. A model with arenaplan's own kernels (``ARENAPLAN_CASCADE``)
runs only where they are compiled in: TFLM built from source (its reference kernels in
the host build, for a plan of the reference kernels), never the PyPI runtime.
"""

from __future__ import annotations

from arenaplan.runtime.proof import PROOF_TRIALS, Proof
from arenaplan.tflm.kernel_sets import REFERENCE, check_kernels
from arenaplan.tflm.verify.compare import compare_models
from arenaplan.tflm.verify.native import NativeRunner, native_available
from arenaplan.tflm.verify.runner import TflmRunner, tflm_available

PROOF_SEED = 0
PYPI = "TFLM (PyPI tflite-micro, reference kernels)"
# kernels -> the TFLM build from source (verify.native.VARIANTS) that runs that code
# (its ``Variant.kernels``); reference kernels are proven in the PyPI runtime.
PROOF_BUILDS: dict[str, str] = {
    "cmsis_nn": "host-cmsis_nn",
    "cmsis_nn+dsp": "arm32-cmsis_nn",
    "cmsis_nn+mve": "m55-cmsis_nn",
}
OWN_BUILD = "host-reference"  # where a reference-kernels plan with them is proven


def proof_build(kernels: str, own: bool) -> str | None:
    """The TFLM build from source that proves a plan for ``kernels`` (None: PyPI's)."""
    if kernels == REFERENCE:
        return OWN_BUILD if own else None
    return PROOF_BUILDS[check_kernels(kernels)]  # every CMSIS-NN level has one


def proof_runtime(kernels: str = REFERENCE, own: bool = False) -> tuple[str, str | None]:
    """What proves a plan for ``kernels`` (``own``: the model has arenaplan's kernels),
    and why it cannot run here (None: it can)."""
    variant = proof_build(kernels, own)
    if variant is None:
        if tflm_available():
            return PYPI, None
        return PYPI, "the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"

    why = native_available(variant)
    if why is not None and own:
        why = f"arenaplan's cascade kernel runs only in TFLM built from source: {why}"
    return f"TFLM {variant} (built from source)", why


def prove(
    original: bytes, planned: bytes, arena: int, kernels: str = REFERENCE, own: bool = False
) -> Proof:
    """Run ``original`` and ``planned`` in TFLM with ``kernels``; ``arena``: the planned
    head (bytes); ``own``: ``planned`` has arenaplan's kernels (``uses_own_kernels``)."""
    runtime, why = proof_runtime(kernels, own)
    if why is not None:
        return Proof(why, runtime=runtime, unavailable=True)
    runner = _runner(proof_build(kernels, own))
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


def _runner(variant: str | None):  # TflmRunner or NativeRunner: the same run and close
    if variant is None:
        return TflmRunner()

    return NativeRunner(variant)
