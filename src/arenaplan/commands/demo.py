"""``arenaplan demo``: build a small int8 model, plan it, verify it, show the summary."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from arenaplan.commands.plan import planned_model_bytes
from arenaplan.commands.verify import print_report
from arenaplan.export.files import write_atomic
from arenaplan.export.json_plan import plan_to_json
from arenaplan.export.summary import print_summary
from arenaplan.placement import plan_model
from arenaplan.reader import read_model_bytes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="plan and verify a built-in example model end to end",
        description="Build a DS-CNN-like int8 model with a residual branch "
        "(the project's own .tflite writer), plan its arena, write the planned "
        "model and its JSON plan, and verify it in the TFLM runtime.",
    )
    p.add_argument(
        "--out-dir",
        type=Path,
        default=Path("arenaplan-demo"),
        help="where to write the models and plan (default: ./arenaplan-demo)",
    )
    p.add_argument("--no-verify", action="store_true", help="skip the TFLM run")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from arenaplan.builder import demo_model

    data = demo_model()
    model = read_model_bytes(data)
    plan = plan_model(model)
    planned = planned_model_bytes(data, model, plan)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    original_path = args.out_dir / "demo.tflite"
    planned_path = args.out_dir / "demo.planned.tflite"
    json_path = args.out_dir / "demo.plan.json"
    write_atomic(original_path, data)
    write_atomic(planned_path, planned)
    write_atomic(json_path, plan_to_json(model, plan, original_path.name).encode())
    print_summary(console, model, plan, original_path.name)
    console.print(f"wrote {original_path}, {planned_path}, {json_path}")
    if args.no_verify:
        return 0
    from arenaplan.verify import compare_models, tflm_available

    if not tflm_available():
        console.print(
            "verification skipped: the TFLM runtime is not installed "
            "(pip install 'arenaplan[tflm]')"
        )
        return 0
    report = compare_models(data, planned)
    return print_report(console, report, original_path.name, planned_path.name)
