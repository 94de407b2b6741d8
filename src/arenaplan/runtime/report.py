"""What running a plan in the real runtime showed (``Runtime.verify``): the original
and the planned model's outputs compared, the runtime's measured bytes beside
arenaplan's predictions. Bytes throughout."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Measurement:
    """Bytes the runtime's recording allocator reports: head (non-persistent), tail (persistent)."""

    head: int
    tail: int


@dataclass(frozen=True, slots=True)
class Prediction:
    """arenaplan's figures for the planned model, before running it (bytes).

    ``plan_problems``: what is wrong with the model's offline plan, if anything
    (a runtime runs any plan; a wrong one computes garbage)."""

    head: int
    tail: int
    arena: int  # the smallest working arena
    plan_problems: tuple[str, ...] = ()
    not_modelled: tuple[str, ...] = ()  # tail and arena are estimates when not empty

    @property
    def exact(self) -> bool:
        return not self.not_modelled


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What the runtime showed. ``refused`` says why the original cannot serve as the
    reference (TFLM refuses it, or its outputs change between two runs); ``failed``
    why TFLM would not run the planned model although it ran the original.

    ``smallest_arena``: the smallest arena (bytes, multiple of 16) in which the
    planned model allocates and runs, found by bisection.
    """

    trials: int
    identical: bool
    mismatch: str | None
    original: Measurement | None
    planned: Measurement | None
    smallest_arena: int
    predicted: Prediction | None
    refused: str | None = None
    failed: str | None = None
    original_predicted: Prediction | None = None  # TFLM's own plan of the original

    @property
    def predicted_arena(self) -> int:
        return self.predicted.arena if self.predicted else 0

    def _pairs(self) -> list[tuple[str, int, int, bool]]:
        """(figure, predicted, measured, the prediction claims to be exact)."""
        p, m = self.predicted, self.planned
        if p is None or m is None:
            return []
        pairs = [
            ("head", p.head, m.head, True),
            ("tail", p.tail, m.tail, p.exact),
        ]
        if self.smallest_arena:  # 0: the runtime's arena was not bisected
            pairs.append(("smallest working arena", p.arena, self.smallest_arena, p.exact))
        o, om = self.original_predicted, self.original
        if o is not None and om is not None:
            pairs += [
                ("original's head", o.head, om.head, True),
                ("original's tail", o.tail, om.tail, o.exact),
            ]
        return pairs

    def disagreements(self) -> list[str]:
        """Every figure predicted as exact that the runtime contradicts."""
        problems = self.predicted.plan_problems[:3] if self.predicted else ()
        found = [f"the offline plan is invalid: {why}" for why in problems]
        return found + [
            f"{what}: predicted {want:,} B, measured {got:,} B"
            for what, want, got, exact in self._pairs()
            if exact and want != got
        ]

    def estimate_misses(self) -> list[str]:
        """Figures given as estimates (something not modelled) that the runtime corrects."""
        return [
            f"{what}: estimated {want:,} B, measured {got:,} B"
            for what, want, got, exact in self._pairs()
            if not exact and want != got
        ]
