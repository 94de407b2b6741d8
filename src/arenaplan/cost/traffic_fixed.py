"""The fixed per-invoke terms of TFLM's kernels: measured per kernel path.

What depends on the build: the data terms (``cost.traffic_tflm``: tensors, scratch
buffers, per-element tables) follow the kernels' loops; the fixed per-invoke terms
(eval tensors, node, framework, model, the scalar fields of operator data) are the
counts of one build, :data:`~arenaplan.cost.traffic_counts.HOST_REFERENCE`
(``scripts/build_tflm.py`` host-reference: x86-64, gcc 12, TFLM's ``-O2`` for kernels,
``-Os`` for the framework, 8-byte pointers, the runner's plain memcpy), measured per
kernel path in the package's ``data/traffic_fixed.json`` (:func:`fixed_table`), which
``python scripts/gen_traffic_fixed.py`` writes from those measurements (its header
names the bundle, the compiler and valgrind). Counts are accesses of one invoke, as
estimates for any other build.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from arenaplan.cost.traffic_counts import Item, Traffic, items_traffic, role_text
from arenaplan.cost.traffic_kernel import KernelCounts


@functools.cache
def fixed_table() -> dict[str, dict[str, str]]:
    """Kernel path -> role -> the fixed loads (and stores, after "/") of one invoke:
    inK/outK the eval tensor of input/output K ("in*" every input), node, fw
    (framework), model, opdata (the scalar fields of the operator data), handles
    (scratch handles). Each item is "width:count" (bytes, accesses); a count may use
    rK/qK (rank of input/output K), n (inputs) and the kernel's own variables.
    Measured on HOST_REFERENCE: the package's data/traffic_fixed.json, read once."""
    data = resources.files("arenaplan.cost") / "data" / "traffic_fixed.json"
    return json.loads(data.read_text())["paths"]


def variables(c: KernelCounts) -> dict[str, int]:
    """What a fixed term's count may use: rK/qK the rank of input/output K, n the
    inputs, and the kernel's own variables."""
    names = dict(c.vars)
    for k, i in enumerate(c.op.inputs):
        names[f"r{k}"] = len(c.sg.tensors[i].shape) if i >= 0 else 0
    for k, i in enumerate(c.op.outputs):
        names[f"q{k}"] = len(c.sg.tensors[i].shape)
    names["n"] = sum(1 for i in c.op.inputs if i >= 0)
    return names


def add_fixed(c: KernelCounts, names: dict[str, int]) -> bool:
    spec = fixed_table().get(c.kernel)
    if spec is None:
        return False
    sg, op = c.sg.index, c.op.index
    for role, s in spec.items():
        t = items_traffic(s, names)
        if role == "in*":  # every input
            for i in {i for i in c.op.inputs if i >= 0}:
                c.add(("persistent", "eval_tensor", sg, i), t)
        elif role.startswith(("in", "out")):
            k = int(role[2:] if role.startswith("in") else role[3:])
            idx = c.op.inputs if role.startswith("in") else c.op.outputs
            if k < len(idx) and idx[k] >= 0:
                c.add(("persistent", "eval_tensor", sg, idx[k]), t)
        elif role == "node":
            c.add(("persistent", "node", sg, op), t)
        elif role == "fw":
            c.add(("persistent", "framework"), t)
        elif role == "model":
            c.add(("model",), t)
        elif role == "opdata":
            c.add(c.op_data, t)
        elif role == "handles":
            c.add(("persistent", "scratch_handles"), t)
    return True


ROLE_KEYS = {
    "node": lambda sg, op: ("persistent", "node", sg, op),
    "fw": lambda sg, op: ("persistent", "framework"),
    "model": lambda sg, op: ("model",),
    "opdata": lambda sg, op: ("persistent", "op_data", sg, op),
    "handles": lambda sg, op: ("persistent", "scratch_handles"),
}


def residual(m: Traffic, p: Traffic) -> str:
    items: dict[Item, int] = {}
    for kind, mine, theirs in (
        ("L", m.load_widths, p.load_widths),
        ("S", m.store_widths, p.store_widths),
    ):
        for w, n in mine:
            items[(kind, w)] = items.get((kind, w), 0) + n
        for w, n in theirs:
            items[(kind, w)] = items.get((kind, w), 0) - n
    return role_text({k: str(n) for k, n in items.items() if n})
