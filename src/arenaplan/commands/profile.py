"""``arenaplan profile MODEL``: the memory traffic of every operator, per tensor.

Predicted by :mod:`arenaplan.cost.traffic` (TFLM's reference kernels, one invoke);
with ``--measure``, also measured: the model run once in TFLM built from source under
the ``arenatraffic`` valgrind tool (``scripts/build_tflm.py``, then
``scripts/build_traffic.py``), every load and store attributed by address, and the
error of the prediction per operator and tensor.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.cost.traffic import (
    HOST_REFERENCE,
    Key,
    OpTraffic,
    Traffic,
    difference,
    total,
    traffic_details,
)
from arenaplan.errors import RuntimeUnavailableError
from arenaplan.export.files import Outputs
from arenaplan.ir.model import Model
from arenaplan.ir.verifier import check_model
from arenaplan.reader import load_model
from arenaplan.runtime.registry import DEFAULT_RUNTIME, get

_OVERHEAD = ("eval_tensor", "node", "framework", "scratch_handles")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="bytes each operator moves, per tensor (predicted, and measured)",
        description="Print, for every operator, the loads and stores its TFLM reference "
        "kernel makes to each tensor (activations, weights and other constants), kernel "
        "scratch buffer and persistent block (operator data, TFLM's bookkeeping) in one "
        "invoke, as the traffic model predicts them. With --measure, run the model once "
        "in TFLM built from source under valgrind and print the measured figures and "
        "the error beside them.",
    )
    p.add_argument("model", type=Path, help="input .tflite (only read)")
    p.add_argument(
        "--json", type=Path, metavar="TRAFFIC.json", help="write the figures ('-': stdout)"
    )
    p.add_argument(
        "--measure",
        action="store_true",
        help="also measure (needs scripts/build_tflm.py and scripts/build_traffic.py)",
    )
    p.add_argument("--variant", default="host-reference", help="the TFLM build to measure with")
    p.add_argument(
        "--all",
        action="store_true",
        help="one row per key, TFLM's bookkeeping (eval tensors, nodes) included",
    )
    p.set_defaults(run=run)


def key_kind(key: Key) -> str:
    """tensor, scratch, persistent, model or other."""
    if isinstance(key[0], int):
        return "tensor"
    return str(key[0])


def key_label(model: Model, key: Key) -> str:
    if isinstance(key[0], int):
        t = model.subgraphs[key[0]].tensors[key[1]]
        sg = f"{key[0]}:" if key[0] else ""
        return f"t{sg}{key[1]} {t.name}"[:48]
    return "/".join(str(k) for k in key)


def _role(model: Model, op: OpTraffic, key: Key) -> str:
    if not isinstance(key[0], int):
        return ""
    sgm = model.subgraphs[op.subgraph]
    o = sgm.operators[op.op]
    t = sgm.tensors[key[1]]
    if key[1] in o.outputs:
        return "output"
    if t.is_constant:
        return "constant"
    if t.is_variable:
        return "variable"
    return "input" if key[1] in o.inputs else "intermediate"


def _order(model: Model, op: OpTraffic, key: Key) -> tuple:
    """Inputs in the operator's order, then outputs, then the rest."""
    if isinstance(key[0], int):
        o = model.subgraphs[op.subgraph].operators[op.op]
        seq = [*o.inputs, *o.intermediates, *o.outputs]
        return (0, seq.index(key[1]) if key[1] in seq else len(seq), "")
    return (1 if key[0] == "scratch" else 2, 0, repr(key))


def _rows(model: Model, op: OpTraffic, show_all: bool) -> list[tuple[Key | str, Traffic]]:
    rows: list[tuple[Key | str, Traffic]] = []
    overhead = []
    for key in sorted(op.traffic, key=lambda k: _order(model, op, k)):
        t = op.traffic[key]
        if not show_all and _is_overhead(key):
            overhead.append(t)
        else:
            rows.append((key, t))
    if overhead:
        rows.append(("bookkeeping", total(overhead)))
    return rows


def _traffic_json(t: Traffic) -> dict:
    return {
        "loads": t.loads,
        "stores": t.stores,
        "load_bytes": t.load_bytes,
        "store_bytes": t.store_bytes,
        "load_widths": {str(w): n for w, n in t.load_widths},
        "store_widths": {str(w): n for w, n in t.store_widths},
    }


def report(model: Model, details: list[OpTraffic], measured: dict | None, name: str) -> dict:
    """The JSON document: every operator, every key, predicted (and measured)."""
    ops = []
    for d in details:
        entries = []
        m = measured.get((d.subgraph, d.op)) if measured is not None else None
        keys = set(d.traffic) | (set(m.traffic) - {("other",)} if m is not None else set())
        for key in sorted(keys, key=repr):
            p = d.traffic.get(key, Traffic())
            entry = {"key": list(key), "kind": key_kind(key), "name": key_label(model, key)}
            entry["predicted"] = _traffic_json(p)
            if m is not None:
                mt = m.traffic.get(key, Traffic())
                entry["measured"] = _traffic_json(mt)
                entry["error"] = _finite(difference(d.subgraph, d.op, key, p, mt).error)
            entries.append(entry)
        ops.append(
            {
                "subgraph": d.subgraph,
                "op": d.op,
                "opcode": d.opcode,
                "kernel": d.kernel,
                "exact": d.exact,
                "traffic": entries,
            }
        )
    return {
        "model": name,
        "build": HOST_REFERENCE.name,
        "units": "loads/stores: accesses; *_bytes: bytes; *_widths: accesses by width in bytes",
        "measured": measured is not None,
        "operators": ops,
    }


def _finite(x: float) -> float | None:
    return None if x == float("inf") else round(x, 6)


def run(args: argparse.Namespace, console: Console) -> int:
    outputs = Outputs(inputs=(args.model,))
    outputs.claim(args.json, "--json", stdout_ok=True)
    _, model = load_model(args.model)
    check_model(model, str(args.model))  # before any analysis indexes it
    details = traffic_details(model)
    measured = None
    if args.measure:
        runtime = get(DEFAULT_RUNTIME)
        why = runtime.traffic_unavailable(args.variant)
        if why is not None:
            raise RuntimeUnavailableError(f"--measure: {why}")
        try:
            measured = runtime.measure_traffic(args.model, args.variant)

        except RuntimeError as exc:
            raise RuntimeUnavailableError(f"--measure: {exc}") from None
    quiet = args.json is not None and str(args.json) == "-"
    if not quiet:
        _print(console, model, details, measured, args)
    if args.json is not None:
        doc = report(model, details, measured, args.model.name)
        outputs.add(args.json, (json.dumps(doc, indent=1) + "\n").encode())
        outputs.write_all()
    return 0


def _short(key: Key | str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key[0], int):
        return f"t{key[0]}:{key[1]}" if key[0] else f"t{key[1]}"
    if key[0] == "scratch":
        return f"scratch {key[3]}"
    if key[0] == "persistent":
        return str(key[1])
    return str(key[0])


def _print(console: Console, model: Model, details: list[OpTraffic], measured, args) -> None:
    table = Table(title=f"{args.model.name}: bytes moved in one invoke (TFLM reference kernels)")
    cols = ["#", "kernel", "tensor", "role", "read B", "written B"]
    if measured is not None:
        cols = [
            "#",
            "kernel, tensor",
            "read B",
            "written B",
            "measured",
            "measured",
            "err",
        ]
    for col in cols:
        left = col in ("kernel", "tensor", "role", "kernel, tensor")
        wraps = col in ("kernel", "kernel, tensor")
        table.add_column(col, justify="left" if left else "right", no_wrap=not wraps)
    blank = [""] * (len(cols) - 2)
    for d in details:
        m = measured.get((d.subgraph, d.op)) if measured is not None else None
        first = True
        for key, t in _rows(model, d, args.all):
            where = f"{d.subgraph}:{d.op}" if d.subgraph else str(d.op)
            op_name = d.kernel + ("" if d.exact else " (not modelled: at least)")
            if measured is None:
                row = [where if first else "", op_name if first else "", _short(key)]
                row += ["" if isinstance(key, str) else _role(model, d, key)]
            else:
                if first:
                    table.add_row(where, op_name, *blank)
                row = ["", "  " + _short(key)]
            row += [f"{t.load_bytes:,}", f"{t.store_bytes:,}"]
            if m is not None:
                if isinstance(key, str):
                    keys = [k for k in m.traffic if _is_overhead(k)]
                    mt = total(m.traffic[k] for k in keys)
                else:
                    mt = m.traffic.get(key, Traffic())
                err = difference(d.subgraph, d.op, ("x",), t, mt).error
                row += [f"{mt.load_bytes:,}", f"{mt.store_bytes:,}", _pct(err)]
            table.add_row(*row)
            first = False
    console.print(table)
    every = total(total(d.traffic.values()) for d in details)
    by_kind: dict[str, Traffic] = {}
    for d in details:
        for key, t in d.traffic.items():
            kind = key_kind(key)
            if kind == "tensor":
                tensor = model.subgraphs[key[0]].tensors[key[1]]
                kind = "constants" if tensor.is_constant else "activations"
            by_kind[kind] = by_kind.get(kind, Traffic()) + t
    parts = ", ".join(f"{k} {v.bytes:,} B" for k, v in sorted(by_kind.items()))
    console.print(
        f"total: {every.load_bytes:,} B read, {every.store_bytes:,} B written ({parts}); "
        f"{sum(d.exact for d in details)} of {len(details)} operators modelled"
    )
    if measured is not None:
        diffs = [
            difference(d.subgraph, d.op, k, d.traffic.get(k, Traffic()), t)
            for d in details
            for k, t in measured[(d.subgraph, d.op)].traffic.items()
            if k != ("other",)
        ]
        within = sum(x.error <= 0.05 for x in diffs)
        console.print(
            f"measured ({args.variant}): {within} of {len(diffs)} operator/key figures within 5%"
        )


def _is_overhead(key: Key) -> bool:
    return key == ("model",) or (key[0] == "persistent" and key[1] in _OVERHEAD)


def _pct(err: float) -> str:
    return "inf" if err == float("inf") else f"{100 * err:.1f}%"
