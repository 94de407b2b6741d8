"""``arenaplan verify ORIGINAL PLANNED``: run both in the real TFLM runtime.

Exit status: 0 when the outputs are identical and every figure arenaplan
predicted (head, tail, smallest working arena) is what TFLM measures; 1 when
the outputs differ, TFLM fails on the planned model, or a prediction is wrong
(one line on stderr says which); 3 when TFLM refuses the original model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arenaplan.errors import UsageError, VerificationError
from arenaplan.ir.verifier import check_model
from arenaplan.reader import load_model
from arenaplan.runtime.registry import get, runtime_name_for
from arenaplan.runtime.report import VerifyReport
from arenaplan.units import count_arg

EXIT_DIFFERENT = 1
EXIT_REFUSED = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="run original and planned models in TFLM, compare outputs and figures",
        description="Run both models in the real TFLM runtime (PyPI tflite-micro, in a "
        "child process) on the same random inputs; compare every output bit for bit; "
        "measure TFLM's head and tail and find the smallest working arena by bisection; "
        "check each against what arenaplan predicts for the planned model.",
    )
    p.add_argument("original", type=Path, help="the model as it was before planning")
    p.add_argument(
        "planned", type=Path, help="the planned model (arenaplan plan -o) to prove against it"
    )
    p.add_argument(
        "--trials",
        type=count_arg(1, 10_000),
        default=3,
        help="random inputs to try, 1 to 10,000 (default 3)",
    )
    p.add_argument(
        "--seed",
        type=count_arg(0, 2**32 - 1),
        default=0,
        help="seed of the random inputs, 0 to 2**32-1 (default 0)",
    )
    p.add_argument(
        "--build",
        metavar="VARIANT",
        help="run both models in this TFLM build from source (python scripts/build_tflm.py: "
        "host-reference, arm32-reference, host-cmsis_nn, ...) instead of the PyPI runtime; "
        "outputs and measured head and tail only. A model with arenaplan's cascade kernel "
        "needs one: host-reference unless given",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    original, original_ir = load_model(args.original)
    planned, planned_ir = load_model(args.planned)
    if original_ir.file_format != planned_ir.file_format:
        raise UsageError(f"{args.original} and {args.planned} are not models of one format")
    runtime = get(runtime_name_for(planned_ir))
    check_model(original_ir, str(args.original))  # both verified before any run
    check_model(planned_ir, str(args.planned))
    for ir, path in ((original_ir, args.original), (planned_ir, args.planned)):
        runtime.check_runs_here(ir, str(path))
    build = args.build or runtime.default_build(planned_ir)
    report = runtime.verify(original, planned, args.trials, args.seed, build)
    if build is not None:
        return _print_native(console, build, report, args.original.name, args.planned.name)
    return print_report(console, report, args.original.name, args.planned.name, runtime.title)


def _print_native(
    console: Console, build: str, report: VerifyReport, original_name: str, planned_name: str
) -> int:
    """Both models run in a build of the runtime from source: outputs and measured
    figures."""
    if report.refused:
        console.print(f"[bold yellow]cannot verify:[/bold yellow] {report.refused}")
        return EXIT_REFUSED
    if report.failed:
        return _fail(console, report.failed)
    table = Table(title=f"measured in TFLM {build}, built from source (bytes)")
    for col in ("model", "head", "tail"):
        table.add_column(col, justify="right" if col != "model" else "left")
    for name, m in ((original_name, report.original), (planned_name, report.planned)):
        if m is None:  # not reached: a run without a measurement is refused or failed
            raise VerificationError(f"TFLM {build} ran {name} but measured no head and tail")
        table.add_row(name, f"{m.head:,}", f"{m.tail:,}")
    console.print(table)
    if not report.identical:
        return _fail(console, f"outputs differ: {report.mismatch}")
    console.print(
        f"[bold green]outputs identical[/bold green] bit for bit on {report.trials} random inputs"
    )
    return 0


def _fail(console: Console, message: str) -> int:
    console.print(f"[bold red]{message}[/bold red]")
    print(f"arenaplan: verify failed: {message}", file=sys.stderr)
    return EXIT_DIFFERENT


def print_report(
    console: Console,
    report: VerifyReport,
    original_name: str,
    planned_name: str,
    title: str = "TFLM",
) -> int:
    if report.refused:
        console.print(f"[bold yellow]cannot verify:[/bold yellow] {report.refused}")
        return EXIT_REFUSED
    if report.failed:
        return _fail(console, report.failed)
    table = Table(title=f"measured in the {title} runtime (bytes)")
    for col in ("model", "head", "tail", "predicted head", "predicted tail"):
        table.add_column(col, justify="right" if col != "model" else "left")
    o, m, p = report.original, report.planned, report.predicted
    op = report.original_predicted
    table.add_row(
        original_name,
        f"{o.head:,}",
        f"{o.tail:,}",
        f"{op.head:,}" if op else "",
        f"{op.tail:,}" if op else "",
    )
    table.add_row(planned_name, f"{m.head:,}", f"{m.tail:,}", f"{p.head:,}", f"{p.tail:,}")
    console.print(table)
    if report.smallest_arena:
        console.print(
            f"smallest working arena of the planned model: {report.smallest_arena:,} B "
            f"(found by bisection; predicted {p.arena:,} B)"
        )
    if not report.identical:
        return _fail(console, f"outputs differ: {report.mismatch}")
    console.print(
        f"[bold green]outputs identical[/bold green] bit for bit on {report.trials} random inputs"
    )
    wrong = report.disagreements()
    if wrong:
        return _fail(console, "arenaplan's figures are wrong: " + "; ".join(wrong))
    misses = report.estimate_misses()
    if misses:
        console.print(
            "estimates (arenaplan does not model "
            f"{escape('; '.join(p.not_modelled))}) corrected by the runtime: " + "; ".join(misses)
        )
        return 0
    console.print("[bold green]every predicted figure measured exactly[/bold green]")
    return 0
