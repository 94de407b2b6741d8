"""``plan``'s options for graph rewrites: which passes, with what options.

``--passes a,b`` runs the named passes in that order; ``--fit SIZE`` alone runs
reorder, inplace and bands, the bands at the least extra MACs that reach SIZE.
A rewritten model (or a plan that lets tensors share memory) is written only if
TFLM proves it: the command falls back to the model as it is, and says why.
"""

from __future__ import annotations

import argparse

from arenaplan.passes import PASS_CLASSES
from arenaplan.passes.bands import OBJECTIVES
from arenaplan.pipeline.rewrite import FIT_PASSES
from arenaplan.units import SIZE_HELP, count_arg, percent_arg, size_arg


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
        "--objective",
        choices=OBJECTIVES,
        default=None,
        help="what bands minimise and --fit bounds: the head alone, or the arena (head + "
        "TFLM's persistent tail for the profile) (default: head with --persistent-memory, "
        "else arena)",
    )
    p.add_argument(
        "--step-pixels",
        type=count_arg(0, 1 << 20),
        default=None,
        metavar="N",
        help="cascade with CMSIS-NN kernels: every convolution and pool a step of at least "
        "N output pixels (whole rows; 0: one row; at most 1,048,576) instead of the "
        "default, each stage's step chosen by the time model: the fastest within --fit, "
        "else within the arena of one row per step",
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
