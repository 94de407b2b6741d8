"""Measured against predicted memory traffic, per model, operator and tensor.

Every model of ../shared/models that TFLM runs (and with --opmodels the small models of
tests/kits/opmodels.py, one or a few operators of each kernel) is run once in TFLM
built from source under the arenatraffic valgrind tool; every operator's loads and
stores per tensor, scratch buffer and persistent block are compared with
arenaplan.cost.traffic. An error is the largest relative error over loads,
stores, their bytes and the accesses by width; a figure misses when it is above 5%.

    python benchmarks/traffic.py [--models DIR] [--opmodels] [--variant host-reference]
                                 [--misses N] [--fixed] [--json OUT.json]

Prints: per model (operators, how many modelled, figures within 5%, bytes measured and
predicted), per kernel path the worst error on data (tensors, scratch buffers,
operator data) and on bookkeeping (eval tensors, nodes, framework, flatbuffer), and
the N worst figures. --fixed prints the fixed per-invoke terms each kernel path
measured (what cost/data/traffic_fixed.json holds), with the variants where they
differ. Needs: python scripts/build_tflm.py --variants host-reference &&
python scripts/build_traffic.py.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.cost.traffic import Difference, compare, fixed_terms, total, traffic_details
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.verify.traffic_measure import measure_traffic, traffic_available

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = ROOT.parent / "shared" / "models"
LIMIT = 0.05
_BOOKKEEPING = ("eval_tensor", "node", "framework", "scratch_handles")


def key_class(key: tuple) -> str:
    if isinstance(key[0], int):
        return "data"
    if key[0] == "scratch" or key[:2] == ("persistent", "op_data"):
        return "data"
    return "bookkeeping"


def _inputs(args) -> list[tuple[str, bytes]]:
    models = [(p.stem, p.read_bytes()) for p in sorted(args.models.glob("*.tflite"))]
    if args.opmodels:
        sys.path.insert(0, str(ROOT / "tests"))
        from kits.opmodels import OP_MODELS, SHAPED

        models += [(f"op:{name}", make()) for name, make in {**OP_MODELS, **SHAPED}.items()]
    return models


def _pct(x: float) -> str:
    return "inf" if math.isinf(x) else f"{100 * x:.2f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--opmodels", action="store_true", help="also the test suite's op models")
    parser.add_argument("--variant", default="host-reference")
    parser.add_argument("--misses", type=int, default=25, help="how many worst figures to list")
    parser.add_argument("--fixed", action="store_true", help="print the measured fixed terms")
    parser.add_argument("--json", type=Path, help="write every figure compared")
    args = parser.parse_args()
    why = traffic_available(args.variant)
    if why is not None:
        print(f"traffic: {why}", file=sys.stderr)
        return 2
    console = Console()
    per_model = Table(title=f"memory traffic, measured ({args.variant}) against the model")
    for col in (
        "model",
        "ops",
        "modelled",
        "figures",
        "within 5%",
        "worst",
        "bytes measured",
        "bytes predicted",
        "s",
    ):
        per_model.add_column(col, justify="left" if col == "model" else "right")
    worst: dict[tuple[str, str], tuple[float, str]] = {}
    misses: list[tuple[Difference, str, str]] = []
    fixed: dict[str, dict[tuple, set[str]]] = defaultdict(lambda: defaultdict(set))
    dump = []
    for name, data in _inputs(args):
        model = read_model_bytes(data)
        start = time.perf_counter()
        try:
            measured = measure_traffic(data, args.variant)
        except RuntimeError as exc:
            per_model.add_row(name, str(model.operator_count), "-", "-", "-", "-", "-", "-", "-")
            console.print(f"{name}: not measured: {str(exc)[:120]}")
            continue
        seconds = time.perf_counter() - start
        details = traffic_details(model)
        kernels = {(d.subgraph, d.op): d.kernel for d in details}
        exact = {(d.subgraph, d.op): d.exact for d in details}
        pred = {(d.subgraph, d.op): d.traffic for d in details}
        meas = {k: v.traffic for k, v in measured.items()}
        diffs = compare(pred, meas)
        for d in diffs:
            where = (d.subgraph, d.op)
            kernel = kernels[where] + ("" if exact[where] else " (not modelled)")
            cls = key_class(d.key)
            if d.error >= worst.get((kernel, cls), (-1.0, ""))[0]:
                worst[(kernel, cls)] = (d.error, name)
            if d.error > LIMIT:
                misses.append((d, name, kernel))
            dump.append(
                {
                    "model": name,
                    "subgraph": d.subgraph,
                    "op": d.op,
                    "kernel": kernels[where],
                    "key": list(d.key),
                    "predicted": [d.predicted.loads, d.predicted.stores, d.predicted.bytes],
                    "measured": [d.measured.loads, d.measured.stores, d.measured.bytes],
                    "error": None if math.isinf(d.error) else d.error,
                }
            )
        if args.fixed:
            for kernel, roles, _ in fixed_terms(model, meas):
                fixed[kernel][tuple(sorted(roles.items()))].add(name)
        mb = sum(t.bytes for m in meas.values() for k, t in m.items() if k != ("other",))
        pb = sum(total(m.values()).bytes for m in pred.values())
        within = sum(d.error <= LIMIT for d in diffs)
        top = max((d.error for d in diffs), default=0.0)
        per_model.add_row(
            name,
            str(len(details)),
            str(sum(exact.values())),
            str(len(diffs)),
            str(within),
            _pct(top),
            f"{mb:,}",
            f"{pb:,}",
            f"{seconds:.1f}",
        )
    console.print(per_model)
    kinds = Table(title="worst error per kernel path (data: tensors, scratch, op data)")
    for col in ("kernel path", "data", "where", "bookkeeping", "where"):
        kinds.add_column(col, justify="left" if col in ("kernel path", "where") else "right")
    for kernel in sorted({k for k, _ in worst}):
        d_err, d_where = worst.get((kernel, "data"), (0.0, ""))
        b_err, b_where = worst.get((kernel, "bookkeeping"), (0.0, ""))
        kinds.add_row(kernel, _pct(d_err), d_where, _pct(b_err), b_where)
    console.print(kinds)
    misses.sort(key=lambda m: -m[0].error)
    if misses:
        table = Table(title=f"the {min(args.misses, len(misses))} worst of {len(misses)} misses")
        for col in ("model", "op", "kernel", "key", "predicted L/S/B", "measured L/S/B", "error"):
            table.add_column(col)
        for d, name, kernel in misses[: args.misses]:
            p, m = d.predicted, d.measured
            table.add_row(
                name,
                f"{d.subgraph}:{d.op}",
                kernel,
                "/".join(map(str, d.key)),
                f"{p.loads}/{p.stores}/{p.bytes}",
                f"{m.loads}/{m.stores}/{m.bytes}",
                _pct(d.error),
            )
        console.print(table)
    else:
        console.print("no figure misses 5%")
    if args.fixed:
        for kernel, variants in sorted(fixed.items()):
            tag = "" if len(variants) == 1 else f"  # {len(variants)} variants"
            for roles, names in variants.items():
                where = ", ".join(sorted(names)[:3])
                console.print(f'"{kernel}": {dict(roles)},{tag}  # {where}', highlight=False)
    if args.json is not None:
        args.json.write_text(json.dumps(dump, indent=0) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
