"""Graph rewrites within the pipeline: run the passes asked for, and check ``fit``.

``passes`` run in order; ``fit`` alone runs reorder, inplace and bands, the bands at
the least extra MACs that reach the size. Proving a rewrite in TFLM is the
pipeline's next step (``pipeline.plan``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from arenaplan.errors import ArenaplanError
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.tflm.tail import min_arena_estimate

if TYPE_CHECKING:
    from arenaplan.passes import PassRecord

FIT_PASSES = ("reorder", "inplace", "bands")


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The model after the passes, what each did, and the aliasing to plan with."""

    model: Model
    records: tuple[PassRecord, ...]
    aliases: frozenset[str]
    clobber_inputs: bool

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.records)


def run_rewrite(model: Model, names: tuple[str, ...], options: dict[str, object]) -> Rewrite:
    """Run the passes ``names`` with ``options`` (each pass takes those that are its
    fields: max_extra_macs, fit, clobber_inputs, profile, objective, kernels)."""
    from arenaplan.passes import make_pass, run_passes
    from arenaplan.passes.inplace import alias_options

    new, records = run_passes(model, [make_pass(name, options) for name in names])
    aliases, clobber = alias_options(names, bool(options.get("clobber_inputs", False)))
    return Rewrite(new, tuple(records), aliases, clobber)


def check_fit(fit: int, model: Model, plan: Plan, profile: str, head_only: bool) -> None:
    """``--fit``: the planned arena (head + tail for ``profile``, or the head alone when
    the persistent part lives elsewhere) must be at most ``fit`` bytes."""
    n_planned = len(plan.tensors) + len(plan.scratch)
    need = (
        plan.arena
        if head_only
        else min_arena_estimate(model, plan.arena, n_planned, profile, plan.kernels)
    )
    what = "head" if head_only else f"arena (head {plan.arena:,} B + tail, profile {profile})"
    figure = need if isinstance(need, int) else need.bytes
    if figure > fit:
        raise ArenaplanError(
            f"--fit {fit:,} B: the smallest {what} the passes found is {figure:,} B "
            "(bands up to 4x the model's MACs); fit a larger size"
        )
