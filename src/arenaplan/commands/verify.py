"""``arenaplan verify ORIGINAL PLANNED``: run both in the real TFLM runtime."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.reader import load_model

EXIT_DIFFERENT = 1
EXIT_REFUSED = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="run original and planned models in TFLM, compare outputs",
        description="Run both models in the real TFLM runtime (in a child "
        "process) on random inputs; compare every output bit for bit; report "
        "TFLM's measured head and tail and the smallest working arena.",
    )
    p.add_argument("original", type=Path)
    p.add_argument("planned", type=Path)
    p.add_argument("--trials", type=int, default=3, help="random inputs to try (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from arenaplan.verify import compare_models

    original, _ = load_model(args.original)
    planned, _ = load_model(args.planned)
    report = compare_models(original, planned, trials=args.trials, seed=args.seed)
    return print_report(console, report, args.original.name, args.planned.name)


def print_report(console: Console, report, original_name: str, planned_name: str) -> int:
    if report.refused:
        console.print(f"[bold yellow]cannot verify:[/bold yellow] {report.refused}")
        return EXIT_REFUSED
    table = Table(title="measured in the TFLM runtime (bytes)")
    for col in ("model", "head", "tail", "head + tail"):
        table.add_column(col, justify="right" if col != "model" else "left")
    for name, m in ((original_name, report.original), (planned_name, report.planned)):
        table.add_row(name, f"{m.head:,}", f"{m.tail:,}", f"{m.head + m.tail:,}")
    console.print(table)
    console.print(
        f"smallest working arena of the planned model: {report.smallest_arena:,} B "
        f"(predicted {report.predicted_arena:,} B, found by bisection)"
    )
    if report.identical:
        console.print(
            f"[bold green]outputs identical[/bold green] bit for bit on "
            f"{report.trials} random inputs"
        )
        return 0
    console.print(f"[bold red]outputs differ:[/bold red] {report.mismatch}")
    return EXIT_DIFFERENT
