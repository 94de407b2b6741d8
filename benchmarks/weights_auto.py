"""``--weights auto`` against every fixed policy, under memory pressure.

    python benchmarks/weights_auto.py [--models DIR] [--targets imxrt1170,xcore_ai,...]
                                      [--points 4] [--mobilenets]

For every CNN of ../shared/models (a model with a CONV_2D or DEPTHWISE_CONV_2D), every
built-in target (or those given) and capacities of the target's fastest memory from a
quarter of the model's arena to all of it (``--points`` sizes), plans the weights with
``auto`` and with each fixed policy (in place, whole, groups, groups double-buffered)
forced on every operator, the activations spreading over the target's memories when
they must, and prints the estimated latency (ms: the target's time model, an estimate)
of each as ``plan`` shows it (TFLM's persistent data where it goes), and auto's ratio
to the fastest fixed policy that fits. The last line is the worst ratio over every
row (the goal: 1.000: auto is never slower than a fixed policy).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.builder.mobilenet import mobilenet_v2
from arenaplan.errors import ArenaplanError
from arenaplan.ir.model import Model
from arenaplan.pipeline import PlanRequest, Source, run_plan
from arenaplan.placement import PlanOptions, plan_model
from arenaplan.reader import read_model, read_model_bytes
from arenaplan.targets import Target, load_builtin
from arenaplan.targets.load import builtin_names
from arenaplan.weights.plan import FIXED, fixed_policies

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
CNN_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D")


def _cnns(folder: Path, mobilenets: bool):
    """(name, model) of every CNN in ``folder`` that reads, then the MobileNet."""
    for path in sorted(folder.glob("*.tflite")) if folder.is_dir() else []:
        try:
            model = read_model(path)
        except ArenaplanError:
            continue
        if any(op.opcode in CNN_OPS for sg in model.subgraphs for op in sg.operators):
            yield path.stem.split("__")[-1], model
    if mobilenets:
        yield "mobilenet_v2_0.35_96", read_model_bytes(mobilenet_v2(0.35, 96))


def _seconds(model: Model, target: Target, policy, capacity: int) -> float | None:
    """The latency ``plan`` shows for the weights plan (its figures: TFLM's persistent
    data where it goes), or None when it does not fit."""
    caps = {target.fastest().name: capacity}
    label = "auto" if policy is None else policy.label
    request = PlanRequest(Source(b"", model, "model"), target, caps, weights=label, prove=False)
    try:
        figures = run_plan(request).figures
    except ArenaplanError:
        return None
    return figures.latency


def _row(model: Model, target: Target, capacity: int) -> tuple[list[str], float | None]:
    """The cells of one capacity, and auto's ratio to the best fixed policy."""
    auto = _seconds(model, target, None, capacity)
    fixed = []
    open_to = fixed_policies(target)
    for policy in FIXED:  # a column each; "-" where the target does not allow it
        fixed.append(_seconds(model, target, policy, capacity) if policy in open_to else None)
    fits = [s for s in fixed if s is not None]
    ratio = None  # no fixed policy fits: nothing to compare with
    if fits:  # auto finding no fit where a fixed policy does is an infinite ratio
        ratio = auto / min(fits) if auto is not None else float("inf")
    cells = [f"{s * 1e3:.2f}" if s is not None else "-" for s in (auto, *fixed)]
    return [*cells, f"{ratio:.3f}" if ratio is not None else "-"], ratio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    ap.add_argument("--targets", default=",".join(builtin_names()))
    ap.add_argument("--points", type=int, default=4, help="capacities per model and target")
    ap.add_argument("--mobilenets", action="store_true", help="also a MobileNetV2 0.35 96")
    args = ap.parse_args(argv)
    targets = [load_builtin(n) for n in args.targets.split(",")]
    table = Table(title="--weights auto against each fixed policy (estimated ms)")
    heads = ("model", "target", "fast B", "auto", *(p.label for p in FIXED), "auto/best")
    for col in heads:
        table.add_column(col, justify="left" if col in ("model", "target") else "right")
    worst: float | None = None
    for name, model in _cnns(args.models, args.mobilenets):
        for target in targets:
            arena = plan_model(model, PlanOptions(kernels=target.kernels)).arena
            for k in range(args.points):
                frac = 0.25 + 0.75 * k / max(1, args.points - 1)
                capacity = max(16, int(arena * frac) // 16 * 16)
                cells, ratio = _row(model, target, capacity)
                table.add_row(name, target.name, f"{capacity:,}", *cells)
                if ratio is not None:
                    worst = ratio if worst is None else max(worst, ratio)
    console = Console(width=160)
    console.print(table)
    console.print(f"worst auto/best fixed: {worst:.3f}" if worst is not None else "no row fits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
