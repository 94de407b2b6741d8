"""Prove a rewritten, planned model against the original in the real TFLM runtime.

A rewrite is proven when TFLM runs it, its outputs are bit-identical to the
original's on random inputs, and the head TFLM measures with its offline plan is
the planned arena. Anything else is a reason not to write it.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenaplan.verify.compare import compare_models
from arenaplan.verify.runner import tflm_available

PROOF_TRIALS = 3  # random inputs per proof
PROOF_SEED = 0


@dataclass(frozen=True, slots=True)
class Proof:
    """``reason`` is None when proven; else one line saying why not."""

    reason: str | None
    trials: int = PROOF_TRIALS
    head: int | None = None  # TFLM's measured head with the plan (bytes)
    tail: int | None = None  # TFLM's measured tail (bytes)

    @property
    def proven(self) -> bool:
        return self.reason is None

    def as_dict(self) -> dict[str, object]:
        return {
            "proven": self.proven,
            "reason": self.reason,
            "trials": self.trials,
            "measured_head": self.head,
            "measured_tail": self.tail,
        }


def prove(original: bytes, planned: bytes, arena: int) -> Proof:
    """Run ``original`` and ``planned`` in TFLM; ``arena``: the planned head (bytes)."""
    if not tflm_available():
        return Proof("the TFLM runtime is not installed (pip install 'arenaplan[tflm]')")
    report = compare_models(original, planned, PROOF_TRIALS, PROOF_SEED)
    why = report.refused or report.failed
    if why is not None:
        return Proof(why)
    m = report.planned
    if not report.identical:
        return Proof(f"outputs differ from the original's: {report.mismatch}", head=m.head)
    if m.head != arena:
        return Proof(f"TFLM's measured head is {m.head:,} B, the plan says {arena:,} B", m.head)
    return Proof(None, head=m.head, tail=m.tail)
