"""Graph rewrites for ``plan``: which passes, with what options, and their proof.

``--passes a,b`` runs the named passes in that order; ``--fit SIZE`` alone runs
reorder, inplace and bands, the bands at the least extra MACs that reach SIZE.
A rewritten model (or a plan that lets tensors share memory) is written only if
TFLM proves it: the command falls back to the model as it is, and says why.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from arenaplan.errors import ArenaplanError
from arenaplan.ir.model import Model
from arenaplan.passes import PASS_CLASSES, PassRecord, make_pass, run_passes
from arenaplan.passes.inplace import alias_options
from arenaplan.placement.plan import Plan
from arenaplan.tflm.tail import min_arena_estimate
from arenaplan.units import SIZE_HELP, percent_arg, size_arg

FIT_PASSES = ("reorder", "inplace", "bands")


def pass_list(text: str) -> tuple[str, ...]:
    """``--passes``: comma-separated names of ``arenaplan passes``; ``none``: no pass."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if names == ("none",):
        return ()
    unknown = [n for n in names if n not in PASS_CLASSES]
    if unknown or not names:
        known = ", ".join(PASS_CLASSES)
        bad = unknown[0] if unknown else text
        raise argparse.ArgumentTypeError(f"unknown pass {bad!r} (passes: {known}, or none)")
    return names


def add_pass_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--passes",
        type=pass_list,
        default=(),
        metavar="NAMES",
        help=f"graph rewrites to run, in order, comma-separated ({', '.join(PASS_CLASSES)}; "
        "see `arenaplan passes`); the rewritten model is proven in TFLM before it is written",
    )
    p.add_argument(
        "--max-extra-macs",
        type=percent_arg,
        default=0.10,
        metavar="PCT",
        help="bands: extra multiply-accumulates allowed, as a share of the model's (default 10%%)",
    )
    p.add_argument(
        "--fit",
        type=size_arg(),
        metavar="SIZE",
        help=f"rewrite until the arena (head + tail) is at most SIZE, at the least extra MACs "
        f"found ({SIZE_HELP}); without --passes runs {','.join(FIT_PASSES)}",
    )
    p.add_argument(
        "--clobber-inputs",
        action="store_true",
        help="inplace: let operators write over the model's input tensors",
    )
    p.add_argument(
        "--write-unproven",
        action="store_true",
        help="write a rewrite (or weight copies) that nothing here can prove: no TFLM runtime "
        "or build for the plan's kernels; it is labelled unproven (default: plan the model as "
        "given)",
    )


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


def pass_names(args: argparse.Namespace) -> tuple[str, ...]:
    return args.passes or (FIT_PASSES if args.fit is not None else ())


def rewrite(
    model: Model, args: argparse.Namespace, profile: str, objective: str, kernels: str
) -> Rewrite:
    """Run the passes the options ask for; ``objective``: what bands minimise;
    ``kernels``: the kernels the build runs (whose in-place rules apply)."""
    names = pass_names(args)
    options = {
        "max_extra_macs": args.max_extra_macs,
        "fit": args.fit,
        "clobber_inputs": args.clobber_inputs,
        "profile": profile,
        "objective": objective,
        "kernels": kernels,
    }
    passes = [make_pass(name, options) for name in names]
    new, records = run_passes(model, passes)
    aliases, clobber = alias_options(names, args.clobber_inputs)
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
