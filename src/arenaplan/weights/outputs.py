"""What a weights plan gives firmware and the JSON: the staged blob, the C fetch
schedule, the record of each operator's policy, and the head TFLM itself reaches."""

from __future__ import annotations

from arenaplan.errors import PlanValidationError
from arenaplan.placement.plan import Plan
from arenaplan.weights.blob import WeightsBlob, weights_blob
from arenaplan.weights.plan import WeightsPlan
from arenaplan.weights.policies import Policy, parse_weights
from arenaplan.weights.schedule import fetch_header, group_fetches


def tflm_head(plan: Plan) -> int:
    """The head TFLM itself reaches with the plan (tensors and scratch, not the
    staging buffers it does not know of)."""
    tops = [p.offset + p.size for p in (*plan.tensors, *plan.scratch)]
    return max(tops, default=0)


def staged_blob(wp: WeightsPlan) -> WeightsBlob:
    """The blob of the group-staged operators, in staging-buffer order."""
    groups = [(s.op, _policy(s.policy).group) for s in wp.plan.staging]
    return weights_blob(wp.model, groups, wp.plan.kernels)


def _policy(label: str) -> Policy:
    """The group policy a staging buffer records (its label, ``Policy.label``)."""
    policy = parse_weights(label)
    if policy is None or policy.kind != "groups":  # only group policies make them
        raise PlanValidationError([f"a staging buffer records policy {label!r}, not groups"])
    return policy


def fetch_schedule(wp: WeightsPlan, blob: WeightsBlob, source: str) -> str:
    """The C schedule of the fetches of the group-staged operators from ``blob``."""
    fetches = []
    for s in wp.plan.staging:
        double = _policy(s.policy).double
        stride = s.size // 2 if double else s.size
        fetches += group_fetches(blob.of(s.op), 0, s.offset, stride, double)
    return fetch_header(fetches, blob, [wp.dest], source)


def weights_json(
    wp: WeightsPlan,
    proof: dict[str, object] | None,
    blob: WeightsBlob,
    seconds: tuple[float, float | None],
) -> dict[str, object]:
    """The JSON's ``weights`` record; ``proof``: the proof's record, if any;
    ``seconds``: the plan's latency and its baseline's at the same capacities (None:
    it does not fit them), as the plan's figures give them."""
    return {
        "source": wp.source,
        "staged_into": wp.dest,
        "estimated_seconds": seconds[0],
        "baseline": wp.baseline,
        "estimated_seconds_baseline": seconds[1],
        "estimates": "time model of the target (cost.timing), not measured",
        "tflm_head": tflm_head(wp.plan),
        "proof": proof,
        "operators": [
            {
                "operator": c.op,  # in the model the weights were planned for
                "planned_operator": wp.planned_op(c.op),  # as staging_buffers, fetch.h
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
