"""``arenaplan demo``: build a small int8 model, plan it, verify it, show the summary."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from arenaplan.commands.verify import print_report
from arenaplan.errors import UsageError
from arenaplan.export.files import Outputs
from arenaplan.export.json_plan import plan_to_json
from arenaplan.export.memories_summary import target_arena_line
from arenaplan.export.summary import print_summary
from arenaplan.pipeline import PlanRequest, Source, run_plan
from arenaplan.reader import read_model_bytes

INSTALL_HINT = "pip install 'arenaplan[tflm]'"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="plan and verify a built-in example model end to end",
        description="Build a DS-CNN-like int8 model with a residual branch "
        "(the project's own .tflite writer), plan its arena, write the model, the "
        "planned model and its JSON plan, and verify it in the TFLM runtime.",
    )
    p.add_argument(
        "--out-dir",
        type=Path,
        default=Path("arenaplan-demo"),
        help="folder for demo.tflite, demo.planned.tflite, demo.plan.json "
        "(created if missing; default ./arenaplan-demo)",
    )
    p.add_argument("--no-verify", action="store_true", help="skip the TFLM run")
    p.set_defaults(run=run)


def _out_dir(path: Path) -> Path:
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out-dir {path}: is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out-dir {path}: cannot create it: {exc.strerror}") from None
    return path


def run(args: argparse.Namespace, console: Console) -> int:
    from arenaplan.builder import demo_model

    out_dir = _out_dir(args.out_dir)
    outputs = Outputs()
    original_path = outputs.claim(out_dir / "demo.tflite", "--out-dir")
    planned_path = outputs.claim(out_dir / "demo.planned.tflite", "--out-dir")
    json_path = outputs.claim(out_dir / "demo.plan.json", "--out-dir")
    data = demo_model()
    model = read_model_bytes(data)
    done = run_plan(PlanRequest(Source(data, model, "demo.tflite")))
    plan, planned = done.plan, done.planned
    outputs.add(original_path, data)
    outputs.add(planned_path, planned)
    outputs.add(json_path, plan_to_json(model, plan, "demo.tflite").encode())
    outputs.write_all()
    print_summary(console, model, plan, "demo.tflite")
    console.print(f"wrote {original_path}, {planned_path}, {json_path}")
    console.print(target_arena_line(done.checked_figures()), style="bold")
    if args.no_verify:
        return 0
    from arenaplan.verify import compare_models, tflm_available

    if not tflm_available():
        console.print(
            f"verification skipped: the TFLM runtime is not installed ({escape(INSTALL_HINT)})"
        )
        return 0
    report = compare_models(data, planned)
    return print_report(console, report, original_path.name, planned_path.name)
