"""``arenaplan explore``: sweep models x targets x SRAM sizes x options, and report.

    arenaplan explore zoo/*.tflite --target xcore_ai,imxrt1170 --sram 32KiB..1MiB:16 \\
        --passes none,bands --out results/ [--backend pool|inprocess|ray] [--ray [ADDRESS]]
    arenaplan explore --report results/ -o zoo.html
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from arenaplan.errors import UsageError
from arenaplan.explore.backends import BACKENDS, run
from arenaplan.explore.grid import make_tasks, parse_sizes, policy_words, words
from arenaplan.explore.store import Store
from arenaplan.explore.tasks import NONE
from arenaplan.units import count_arg, seconds_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explore",
        help="sweep models x targets x SRAM sizes x options; or report a sweep",
        description="Plan every combination of models, targets, sizes of the target's "
        "fastest memory, passes and weights policies, writing each result as it finishes "
        "to OUT/results.sqlite (a rerun skips finished tasks); or, with --report, write an "
        "HTML page of a finished sweep. Latencies are estimates of the targets' time models.",
    )
    p.add_argument("models", nargs="*", type=Path, help=".tflite files (never modified)")
    p.add_argument(
        "--target", default="generic", help="built-in targets or TOML files, comma-separated"
    )
    p.add_argument(
        "--sram",
        help="sizes of each target's fastest memory: SMALL..LARGE:N (N sizes on a log "
        "scale, multiples of 16 B) or a comma-separated list",
    )
    p.add_argument("--passes", default=NONE, help="comma-separated: none, or passes joined by +")
    p.add_argument(
        "--weights",
        default=NONE,
        help="comma-separated: none, or plan's --weights policies; a double after "
        "groups[:G] is part of it (none,groups:8,double: none and groups:8,double)",
    )
    p.add_argument("--out", type=Path, help="folder of the sweep's results")
    p.add_argument(
        "--backend", choices=BACKENDS, default="pool", help="where tasks run (default pool)"
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run on a Ray cluster (ADDRESS, or 'auto'; none: start a local one); "
        "needs pip install 'arenaplan[ray]'",
    )
    p.add_argument("--workers", type=count_arg(1, 1024),
                   help="processes, 1 to 1,024 (default: one per core)")  # fmt: skip
    p.add_argument("--time-limit", type=seconds_arg, default=1.0, metavar="S",
                   help="seconds for the exact solver per plan (default 1)")  # fmt: skip
    p.add_argument("--retry-failed", action="store_true", help="run failed tasks again")
    p.add_argument("--report", type=Path, metavar="DIR", help="report the sweep in DIR")
    p.add_argument("-o", "--output", type=Path, help="with --report: the HTML page to write")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run_command)


def run_command(args: argparse.Namespace, console: Console) -> int:
    if args.report is not None:
        return _report(args, console)
    if not args.models or args.out is None or args.sram is None:
        raise UsageError("explore needs MODELS, --sram and --out (or --report DIR -o PAGE)")
    tasks = _tasks(args)
    with Store(args.out) as store:
        if args.retry_failed:
            store.forget_failed()
        done = store.done()
        todo = [t for t in tasks if t.key not in done]
        backend = "ray" if args.ray is not None else args.backend
        start = time.perf_counter()
        rows = run(todo, backend, args.workers, args.ray or None) if todo else iter(())
        busy = _record(rows, store, len(todo), console, args.quiet)
        wall = time.perf_counter() - start
    _summary(console, len(tasks), len(tasks) - len(todo), busy, wall, backend, store.path)
    return 0


def _tasks(args: argparse.Namespace):
    from arenaplan.passes import PASS_CLASSES
    from arenaplan.targets.load import builtin_names
    from arenaplan.weights.policies import parse_weights

    targets = words(args.target, "--target")
    for t in targets:
        if not t.endswith(".toml") and t not in builtin_names():
            raise UsageError(f"unknown target {t!r} (built in: {', '.join(builtin_names())})")
    passes = words(args.passes, "--passes")
    for option in passes:
        for name in option.split("+"):
            if option != NONE and name not in PASS_CLASSES:
                raise UsageError(
                    f"--passes: unknown pass {name!r} (known: {', '.join(PASS_CLASSES)})"
                )
    weights = policy_words(args.weights)
    for w in weights:
        if w != NONE:
            parse_weights(w)
    sizes = parse_sizes(args.sram)
    return make_tasks(args.models, targets, sizes, passes, weights, args.time_limit)


class _Busy:
    """What the finished rows say: how many, failures, seconds of work."""

    def __init__(self) -> None:
        self.rows = self.failed = self.no_fit = 0
        self.seconds = 0.0


def _record(rows, store: Store, total: int, console: Console, quiet: bool) -> _Busy:
    busy = _Busy()
    columns = (
        TextColumn("explore"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=quiet or not total) as bar:
        job = bar.add_task("tasks", total=total, rate="")
        start = time.perf_counter()
        for row in rows:
            store.add(row)
            busy.rows += 1
            busy.failed += row["status"] == "failed"
            busy.no_fit += row["status"] == "no-fit"
            busy.seconds += row["seconds"]
            rate = busy.rows / max(time.perf_counter() - start, 1e-9)
            bar.update(job, advance=1, rate=f"{rate:.1f} tasks/s")
    return busy


def _summary(
    console: Console, total: int, skipped: int, busy: _Busy, wall: float, backend: str, path: Path
) -> None:
    speedup = busy.seconds / wall if wall > 0 else 0.0
    console.print(
        f"{total} tasks: {skipped} already done, {busy.rows} run now ({busy.no_fit} do not fit, "
        f"{busy.failed} failed) in {wall:.1f} s on {backend}; "
        f"{busy.seconds:.1f} s of work: {speedup:.2f}x one process; results in {path}"
    )


def _report(args: argparse.Namespace, console: Console) -> int:
    from arenaplan.explore.report import sweep_report
    from arenaplan.export.files import Outputs

    if args.output is None:
        raise UsageError("--report needs -o PAGE.html")
    outputs = Outputs(())
    outputs.claim(args.output, "-o")
    with Store(args.report, create=False) as store:
        rows = store.rows()
    if not rows:
        raise UsageError(f"{args.report}: the sweep has no results yet")
    outputs.add(args.output, sweep_report(rows, args.report.name).encode())
    for path in outputs.write_all():
        console.print(f"wrote {path}")
    return 0
