"""The record of a proof: a planned model run in the real runtime against the original."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

PROOF_TRIALS = 3  # random inputs per proof


@dataclass(frozen=True, slots=True)
class Proof:
    """``reason`` is None when proven; else one line saying why not. ``unavailable``:
    nothing could run the proof (no runtime or build for the kernels), as opposed
    to a run that failed or differed; ``refused``: the runtime refused the original
    model itself, so nothing made from it can be proven."""

    reason: str | None
    _: KW_ONLY
    runtime: str  # what ran (or would have run) the proof, in words
    trials: int = PROOF_TRIALS
    head: int | None = None  # the runtime's measured head with the plan (bytes)
    tail: int | None = None  # the runtime's measured tail (bytes)
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
