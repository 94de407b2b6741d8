"""``plan --weights``: the option, the call, and what it prints and records."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arenaplan.errors import UsageError
from arenaplan.ir.model import Model
from arenaplan.placement import Plan, PlanOptions
from arenaplan.targets import Target
from arenaplan.verify.prove import Proof, prove
from arenaplan.weights.blob import WeightsBlob, weights_blob
from arenaplan.weights.plan import WeightsPlan, plan_weights
from arenaplan.weights.policies import Policy, parse_weights
from arenaplan.weights.schedule import fetch_header, group_fetches


def add_weights_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--weights",
        metavar="POLICY",
        help="where operators read their weights (needs --target): auto (each operator's "
        "policy chosen by estimated time within the fastest memory's capacity), in-place, "
        "whole (copied into the arena before the operator: RESHAPE copies in the model), "
        "groups[:G] (G output channels at a time, default 16) or groups[:G],double "
        "(two buffers, the next group's copy overlapping compute); group buffers are in "
        "the plan for firmware to fill (TFLM does not copy them)",
    )
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


def tflm_head(plan: Plan) -> int:
    """The head TFLM itself reaches with the plan (tensors and scratch, not the
    staging buffers it does not know of)."""
    tops = [p.offset + p.size for p in (*plan.tensors, *plan.scratch)]
    return max(tops, default=0)


def weights_plan(
    model: Model, target: Target, caps: dict[str, int], options: PlanOptions, text: str
) -> WeightsPlan:
    return plan_weights(model, target, parse_weights(text), caps, options)


def prove_copies(data: bytes, planned: bytes, wp: WeightsPlan, needed: bool) -> Proof | None:
    """Prove the model with its copies (and rewrites) in TFLM; None when ``needed`` is
    false (nothing changed)."""
    return prove(data, planned, tflm_head(wp.plan), wp.plan.kernels) if needed else None


def check_proof(proof: Proof | None, write_unproven: bool) -> None:
    """A proof that fails is an error, and so is one that nothing here can run (no
    runtime or build for the kernels) unless ``write_unproven``: then the copies are
    written unproven, said on stderr."""
    if proof is None or proof.proven:
        return
    if proof.unavailable and write_unproven:
        print(f"arenaplan: weight copies written UNPROVEN: {proof.reason}", file=sys.stderr)
        return
    hint = " (--write-unproven writes them unproven)" if proof.unavailable else ""
    raise UsageError(
        f"the model with its weight copies is not proven in TFLM: {proof.reason}{hint}"
    )


def staged_blob(wp: WeightsPlan) -> WeightsBlob:
    """The blob of the group-staged operators, in staging-buffer order."""
    return weights_blob(wp.model, [(s.op, _policy(s.policy).group) for s in wp.plan.staging])


def _policy(label: str) -> Policy:
    """The group policy a staging buffer records (its label, ``Policy.label``)."""
    policy = parse_weights(label)
    assert policy is not None  # staging buffers are only made for group policies
    return policy


def fetch_schedule(wp: WeightsPlan, blob: WeightsBlob, source: str) -> str:
    """The C schedule of the fetches of the group-staged operators from ``blob``."""
    fetches = []
    for s in wp.plan.staging:
        double = _policy(s.policy).double
        stride = s.size // 2 if double else s.size
        fetches += group_fetches(blob.of(s.op), 0, s.offset, stride, double)
    return fetch_header(fetches, blob, [wp.dest], source)


def weights_json(wp: WeightsPlan, proof: Proof | None, blob: WeightsBlob) -> dict[str, object]:
    return {
        "source": wp.source,
        "staged_into": wp.dest,
        "estimated_seconds": wp.seconds,
        "baseline": wp.baseline,
        "estimated_seconds_baseline": wp.baseline_total,
        "estimates": "time model of the target (cost.timing), not measured",
        "tflm_head": tflm_head(wp.plan),
        "proof": proof.as_dict() if proof else None,
        "operators": [
            {
                "operator": c.op,
                "opcode": c.weights.opcode,
                "weight_bytes": c.weights.bytes,
                "policy": c.policy.label,
                "ram_bytes": c.ram,
                "alive_from_operator": c.first,
                "estimated_seconds": c.seconds,
                "estimated_seconds_baseline": b,
            }
            for c, b in zip(wp.choices, wp.baseline_seconds, strict=True)
        ],
        "staging_buffers": [
            {"operator": s.op, "first": s.first, "policy": s.policy, "offset": s.offset}
            | {"size": s.size}
            for s in wp.plan.staging
        ],
        "blob_index": [  # the blocks of --weights-blob, in its order
            {"operator": b.op, "group": b.group, "first_channel": b.first}
            | {"channels": b.channels, "offset": b.offset, "bytes": b.size}
            | {"parts": [{"offset": o, "bytes": n} for o, n in b.parts]}
            for b in blob.blocks
        ],
    }


def print_weights(console: Console, wp: WeightsPlan, proof: Proof | None) -> None:
    """Per operator: policy, RAM, estimated time against the baseline; then totals."""
    title = f"weights: from {wp.source}, staged into {wp.dest} (times estimated)"
    table = Table(title=title)
    heads = ("op", "opcode", "weights B", "policy", f"{wp.dest} B", "ms", f"vs {wp.baseline} ms")
    for col in heads:
        table.add_column(col, justify="left" if col in ("opcode", "policy") else "right")
    for c, b in zip(wp.choices, wp.baseline_seconds, strict=True):
        table.add_row(
            str(c.op),
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
        f"{kinds.count('in-place')} read in place; estimated {wp.seconds * 1e3:.2f} ms, "
        f"all {wp.baseline}: {wp.baseline_total * 1e3:.2f} ms"
    )
    if proof is not None and not proof.proven:
        console.print(f"[bold]UNPROVEN[/]: {escape(proof.reason or '')}")
    elif proof is not None:
        console.print(
            f"proven in {proof.runtime}: outputs bit-identical to the original model's on "
            f"{proof.trials} random inputs; measured head {proof.head:,} B = the plan's "
            "TFLM part"
        )
