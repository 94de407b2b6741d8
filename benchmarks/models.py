"""Plan every model of ../shared/models and print one table.

Columns: operators, tensors (in the arena / in all), lower bound, TFLM's greedy
planner (our re-implementation), our arena, TFLM's head measured in the real
runtime without and with our plan, planning time (best of --repeat runs).

    python benchmarks/models.py [--models DIR] [--repeat N] [--no-tflm]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.errors import VerificationError
from arenaplan.pipeline import PlanRequest, Source, planned_model_bytes, run_plan
from arenaplan.placement import Plan
from arenaplan.reader import read_model_bytes

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def _best_time(data: bytes, name: str, repeat: int) -> tuple[Plan, float]:
    """The plan of the model (the pipeline, no proof) and the best of ``repeat`` times
    (seconds) to read and plan it."""
    best, plan = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        source = Source(data, read_model_bytes(data), name)
        plan = run_plan(PlanRequest(source, prove=False)).plan
        best = min(best, time.perf_counter() - start)
    assert plan is not None  # repeat >= 1
    return plan, best


def _measured(data: bytes, planned: bytes) -> tuple[str, str]:
    from arenaplan.tflm.verify import measure

    try:
        before = measure(data)
        after = measure(planned)
    except VerificationError:  # TFLM refuses the model (FILL, hybrid, ...)
        return "refused", "refused"
    return f"{before.head:,}", f"{after.head:,}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-tflm", action="store_true", help="skip the runtime measurements")
    args = parser.parse_args()
    paths = sorted(args.models.glob("*.tflite"))
    if not paths:
        print(f"no models in {args.models}", file=sys.stderr)
        return 2
    table = Table(title="arenaplan on real models (bytes; time in ms)")
    for col in (
        "model",
        "ops",
        "tensors",
        "lower bound",
        "TFLM greedy",
        "arenaplan",
        "TFLM head",
        "TFLM head w/ plan",
        "plan ms",
    ):
        table.add_column(col, justify="left" if col == "model" else "right")
    total = 0.0
    for path in paths:
        data = path.read_bytes()
        model = read_model_bytes(data)
        plan, seconds = _best_time(data, path.name, args.repeat)
        total += seconds
        head, head_planned = ("-", "-")
        if not args.no_tflm:
            head, head_planned = _measured(data, planned_model_bytes(data, model, plan))
        mark = "" if plan.optimal else " *"
        table.add_row(
            path.stem,
            str(model.operator_count),
            f"{len(plan.tensors)}/{model.tensor_count}",
            f"{plan.lower_bound:,}",
            f"{plan.tflm_greedy:,}",
            f"{plan.arena:,}{mark}",
            head,
            head_planned,
            f"{seconds * 1000:.1f}",
        )
    console = Console(width=200)
    console.print(table)
    console.print(
        f"total planning time, {len(paths)} models: {total * 1000:.0f} ms "
        "(read + plan + validate; * = not proven optimal)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
