"""``plan --weights``: the option, the call, and what it prints and records."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arenaplan.errors import UsageError
from arenaplan.export.figures import weights_totals
from arenaplan.targets import Target
from arenaplan.weights.policies import parse_weights

if TYPE_CHECKING:
    from arenaplan.export.figures import Figures
    from arenaplan.passes.base import Origin
    from arenaplan.runtime.proof import Proof
    from arenaplan.weights.plan import WeightsPlan


def add_weights_option(p: argparse.ArgumentParser, outputs: bool = True) -> None:
    """``--weights``, and with ``outputs`` the files it can write."""
    p.add_argument(
        "--weights",
        metavar="POLICY",
        help="where operators read their weights (needs --target): auto (each operator's "
        "policy chosen by estimated time within the fastest memory's capacity), in-place, "
        "whole (copied into the arena before the operator: RESHAPE copies in the model), "
        "groups[:G] (G output channels at a time, 1 to 65,536, default 16) or groups[:G],double "
        "(two buffers, the next group's copy overlapping compute); group buffers are in "
        "the plan for firmware to fill (TFLM does not copy them)",
    )
    if not outputs:
        return
    p.add_argument(
        "--weights-blob",
        type=Path,
        help="with --weights: write the group-staged operators' weights here, group by "
        "group (depthwise filters in the group-contiguous layout)",
    )
    p.add_argument(
        "--schedule",
        type=Path,
        help="with --weights: write the C table of weight fetches (blob offset and bytes, "
        "destination memory and offset, operator, group, buffer, when) and its copy routine",
    )


def check_weights_args(args: argparse.Namespace, target: Target | None) -> None:
    if args.weights is None:
        for value, option in ((args.weights_blob, "--weights-blob"), (args.schedule, "--schedule")):
            if value is not None:
                raise UsageError(f"{option} needs --weights")
        return

    parse_weights(args.weights)  # one line if malformed
    if target is None:
        raise UsageError("--weights needs --target (how its memories read weights)")
    if args.fit is not None:
        raise UsageError("--weights cannot be combined with --fit yet")


def print_weights(
    console: Console,
    wp: WeightsPlan,
    proof: Proof | None,
    figures: Figures,
    origin: Origin | None = None,
) -> None:
    """Per operator: policy, RAM, estimated time against the baseline; then totals.
    Operators are numbered as in the model planned (the report's operator table,
    fetch.h, the JSON's staging buffers) and, where ``origin`` says the operators
    changed (``PlanResult.origin``), in the model as given too. The totals are the
    plan's ``figures`` (the latency every surface shows)."""
    title = f"weights: from {wp.source}, staged into {wp.dest} (times: {wp.time_model})"
    table = Table(title=title)
    heads = ["op", "opcode", "weights B", "policy", f"{wp.dest} B", "ms", f"vs {wp.baseline} ms"]
    if origin is not None:
        heads.insert(1, "original op")
    for col in heads:
        table.add_column(col, justify="left" if col in ("opcode", "policy") else "right")
    for c, b in zip(wp.choices, wp.baseline_seconds, strict=True):
        op = wp.planned_op(c.op)
        came = [] if origin is None else [_number(origin[op])]
        table.add_row(
            str(op),
            *came,
            c.weights.opcode,
            f"{c.weights.bytes:,}",
            c.policy.label,
            f"{c.ram:,}",
            f"{c.seconds * 1e3:.3f}",
            f"{(c.seconds - b) * 1e3:+.3f}",
        )
    console.print(table)
    kinds = [c.policy.kind for c in wp.choices]
    console.print(
        f"weights: {kinds.count('whole')} operators copied whole (RESHAPE copies in the model), "
        f"{kinds.count('groups')} in groups (buffers in the plan, filled by firmware), "
        f"{kinds.count('in-place')} read in place; {weights_totals(figures)}"
    )
    if proof is not None and not proof.proven:
        console.print(f"[bold]UNPROVEN[/]: {escape(proof.reason or '')}")
    elif proof is not None:
        console.print(
            f"proven in {proof.runtime}: outputs bit-identical to the original model's on "
            f"{proof.trials} random inputs; measured head {proof.head:,} B = the plan's "
            "TFLM part"
        )


def _number(op: int | None) -> str:
    return "new" if op is None else str(op)
