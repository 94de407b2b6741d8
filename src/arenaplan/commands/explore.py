"""``arenaplan explore``: sweep models x targets x SRAM sizes x options, and report.

    arenaplan explore zoo/*.tflite --target xcore_ai,imxrt1170 --sram 32KiB..512KiB:16 \\
        --passes none,bands --out results/ [--backend pool|inprocess|ray] [--ray [ADDRESS]]
    arenaplan explore --report results/ -o zoo.html
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import closing
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
from arenaplan.explore.backends import BACKENDS, ray_available, run
from arenaplan.explore.grid import (
    MAX_SIZES,
    MAX_TASKS,
    check_count,
    check_sizes,
    make_tasks,
    parse_sizes,
    policy_words,
    words,
)
from arenaplan.explore.report import sweep_report
from arenaplan.explore.store import Store
from arenaplan.explore.tasks import NONE, Task, load_target
from arenaplan.export.files import Outputs
from arenaplan.passes import PASS_CLASSES
from arenaplan.units import count_arg, seconds_arg
from arenaplan.weights.policies import parse_weights

EXIT_FAILED = 1  # the sweep ran, and some of its tasks failed (see their rows)
EXIT_INTERNAL = 70  # one of the failed tasks is an internal error: a bug in arenaplan


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explore",
        help="sweep models x targets x SRAM sizes x options; or report a sweep",
        description="Plan every combination of models, targets, sizes of the target's "
        "fastest memory, passes and weights policies, writing each result as it finishes "
        "to OUT/results.sqlite (a rerun skips finished tasks); or, with --report, write an "
        "HTML page of a finished sweep. Latencies are estimates of the targets' time models. "
        f"Every input is checked before anything starts (at most {MAX_TASKS:,} tasks). "
        "Exit 0: every task planned or found not to fit; 1: some tasks failed (their errors "
        "are in the results); 2: bad input, nothing run or written; 70: a task hit a bug.",
    )
    p.add_argument("models", nargs="*", type=Path, help=".tflite or .pte files (never modified)")
    p.add_argument(
        "--target", default="generic", help="built-in targets or TOML files, comma-separated"
    )
    p.add_argument(
        "--sram",
        help="sizes of each target's fastest memory, none above its capacity: "
        f"SMALL..LARGE:N (N sizes on a log scale, multiples of 16 B; N from 2 to "
        f"{MAX_SIZES:,}) or a comma-separated list (at most {MAX_SIZES:,})",
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
    backend = "ray" if args.ray is not None else args.backend
    if backend == "ray" and ray_available():
        raise UsageError(str(ray_available()))
    # everything checked: nothing is created before this; the same task once
    tasks = list({t.key: t for t in _tasks(args)}.values())
    with Store(args.out) as store:
        if args.retry_failed:
            store.forget_failed()
        done = store.done()
        todo = [t for t in tasks if t.key not in done]
        start = time.perf_counter()
        busy = _Busy()
        if todo:  # the pool or cluster ends when this block is left, however it is left
            with closing(run(todo, backend, args.workers, args.ray or None)) as rows:
                busy = _record(rows, store, len(todo), console, args.quiet)
        wall = time.perf_counter() - start
        failed = store.failed({t.key for t in tasks})
    _summary(console, len(tasks), len(tasks) - len(todo), busy, wall, backend, store.path)
    return _failures(failed, busy.failed, len(tasks))


def _tasks(args: argparse.Namespace) -> list[Task]:
    """The tasks of the sweep, every input checked first (one line, exit 2): options,
    counts, targets loaded, sizes each target's fastest memory can have, then each
    model read and verified."""

    names = words(args.target, "--target")
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
    check_count(len(args.models), len(names), len(sizes), len(passes), len(weights))
    check_sizes(sizes, {name: load_target(name) for name in dict.fromkeys(names)})
    return make_tasks(args.models, names, sizes, passes, weights, args.time_limit)


def _failures(failed: dict[str, str], now: int, total: int) -> int:
    """Exit status of a finished sweep: 0 when no task of it failed; 1 when some did;
    70 when one of them is an internal error (a bug in arenaplan). One line on stderr
    says how many and one error (an internal one first). A size that does not fit is a
    result, not a failure."""
    if not failed:
        return 0
    errors = sorted(failed.values())
    internal = [e for e in errors if e.startswith("internal error")]
    earlier = len(failed) - now
    before = ""
    if earlier > 0:
        before = f", {earlier} in an earlier run (--retry-failed runs them again)"
    line = (
        f"arenaplan: {len(failed)} of {total} tasks failed{before}; e.g. {(internal or errors)[0]}"
    )
    if internal:
        line += (
            f" ({len(internal)} internal errors: a bug in arenaplan; please report it with "
            "the command line and the input)"
        )
    print(line, file=sys.stderr)
    return EXIT_INTERNAL if internal else EXIT_FAILED


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
