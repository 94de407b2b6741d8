"""``arenaplan solve PROBLEM.csv [--capacity N] [--time-limit S] -o SOLUTION.csv``.

Without ``--capacity``: minimise the height (best packing and proven bound at the
time limit). With it: is there a packing within N bytes? The same phases decide
it (``minimize.decide``). Exit status 0 with a packing, 1 when proven
infeasible, 3 when the time ran out first.

One deadline covers every phase (reading, preparation, each greedy order, the
search); the answer names the phase it cut short. Two fixed buffers that
overlap are refused at once, in both modes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from rich.console import Console

from arenaplan.allocation.bounds import check_fixed
from arenaplan.allocation.deadline import TEARDOWN, Deadline
from arenaplan.allocation.exact import Feasibility, SearchParams
from arenaplan.allocation.minimalloc_csv import LIMIT as CSV_LIMIT
from arenaplan.allocation.minimalloc_csv import format_cost, read_problem, solution_bytes
from arenaplan.allocation.minimize import decide, minimize
from arenaplan.allocation.packing import forget_columns
from arenaplan.allocation.problem import Problem, Solution
from arenaplan.errors import UsageError
from arenaplan.export.files import Outputs
from arenaplan.units import SIZE_HELP, seconds_arg, size_arg

EXIT_INFEASIBLE, EXIT_UNKNOWN = 1, 3
SWITCHES = tuple(
    f.name.replace("_", "-") for f in dataclasses.fields(SearchParams) if f.type == "bool"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "solve",
        help="exact offset assignment of a minimalloc CSV problem",
        description="Pack buffers (minimalloc CSV: id,lower,upper,size"
        "[,alignment][,offset]; lifetimes half-open [lower, upper), sizes in bytes, "
        "alignments powers of two) into the least height, or decide a capacity. "
        "Exit status: 0 solved, 1 capacity proven infeasible, 2 bad input, 3 time "
        "limit reached before an answer.",
    )
    p.add_argument("problem", type=Path, help="the problem, a minimalloc CSV file")
    p.add_argument("-o", "--output", type=Path, help="write the solution CSV here")
    p.add_argument(
        "--capacity",
        type=size_arg(minimum=0, maximum=CSV_LIMIT),
        metavar="SIZE",
        help=f"decide this capacity instead of minimising ({SIZE_HELP}; at most 2**62 B, "
        "the limit of the CSV's sizes and offsets)",
    )
    p.add_argument(
        "--time-limit",
        type=seconds_arg,
        default=60.0,
        metavar="S",
        help="seconds before returning the best so far (default 60)",
    )
    p.add_argument(
        "--disable",
        default="",
        metavar="NAMES",
        help=f"comma-separated search heuristics to switch off: {', '.join(SWITCHES)}",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or summary")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON summary (height, bound, how, the phase the time limit ended)",
    )
    p.set_defaults(run=run)


def _params(names: str) -> SearchParams:
    off = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in off if n not in SWITCHES]
    if unknown:
        raise UsageError(f"unknown heuristic(s) {', '.join(unknown)}; known: {', '.join(SWITCHES)}")
    return SearchParams(**{n.replace("-", "_"): False for n in off})


class _Progress:
    """Prints one line per capacity tried, and keeps a spinner while searching."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.console, self.quiet = console, quiet
        self.status = None if quiet else console.status("searching...")
        self.started = time.monotonic()

    def __call__(self, event: dict) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.started
        if event["event"] == "attempt":
            self.status.update(
                f"capacity {event['capacity']:,}: {event['nodes']:,} nodes, {elapsed:.1f} s"
            )
        elif event["event"] == "result":
            gap = (event["best"] - event["bound"]) / max(event["bound"], 1)
            self.console.print(
                f"{elapsed:6.1f}s cap {event['capacity']:>11,} "
                f"{event['status']:<10} best {event['best']:>11,} "
                f"bound {event['bound']:>11,} gap {gap:6.2%}"
            )


def run(args: argparse.Namespace, console: Console) -> int:
    try:
        return _run(args, console)
    finally:
        forget_columns()  # the buffers freed now, not at the exit (kept back: TEARDOWN)


def _run(args: argparse.Namespace, console: Console) -> int:
    deadline = Deadline.after(args.time_limit, since_start=args.whole_process)
    outputs = Outputs((args.problem,))
    outputs.claim(args.output, "-o")
    params = _params(args.disable)
    cpu = time.process_time()
    problem = read_problem(args.problem, deadline=deadline)
    deadline.expect("exit", TEARDOWN * (time.process_time() - cpu))
    if args.output is not None:
        deadline.expect("write", format_cost(problem))
    if args.capacity is None:
        check_fixed(problem)  # with --capacity: "infeasible", with the two named
    progress = _Progress(console, args.quiet)
    if progress.status is not None:
        progress.status.start()
    try:
        if args.capacity is not None:
            return _decide(args, console, problem, params, progress, outputs, deadline)
        solution = minimize(problem, params, progress=progress, deadline=deadline)
    finally:
        if progress.status is not None:
            progress.status.stop()
    if args.output is not None:
        outputs.add(args.output, solution_bytes(problem, solution.offsets))
        outputs.write_all()
    seconds = time.monotonic() - deadline.started
    if args.json:
        print(json.dumps(_summary(problem, solution, seconds)))
    if not args.quiet:
        console.print(_verdict(problem, solution, seconds))
    return 0


def _summary(problem: Problem, solution: Solution, seconds: float) -> dict:
    return {
        "buffers": len(problem.buffers),
        "height": solution.height,
        "lower_bound": solution.lower_bound,
        "optimal": solution.optimal,
        "gap": (solution.height - solution.lower_bound) / max(solution.lower_bound, 1),
        "how": solution.allocator,
        "stopped": solution.stopped,
        "seconds": round(seconds, 3),
    }


def _verdict(problem: Problem, solution: Solution, seconds: float) -> str:
    if solution.optimal:
        verdict = "proven optimal"
    else:
        gap = (solution.height - solution.lower_bound) / max(solution.lower_bound, 1)
        verdict = f"gap {gap:.2%} to the proven bound"
    ended = f"; the time limit ended {solution.stopped}" if solution.stopped else ""
    return (
        f"height {solution.height:,} (bound {solution.lower_bound:,}, {verdict}; "
        f"{solution.allocator}{ended}); {len(problem.buffers)} buffers in {seconds:.2f} s"
    )


def _decision(problem: Problem, answer: Feasibility, deadline: Deadline, seconds: float) -> dict:
    return {
        "buffers": len(problem.buffers),
        "capacity": answer.capacity,
        "status": answer.status,
        "reason": answer.reason,
        "stopped": deadline.ended_by,
        "seconds": round(seconds, 3),
    }


def _decide(
    args,
    console: Console,
    problem: Problem,
    params: SearchParams,
    progress: _Progress,
    outputs: Outputs,
    deadline: Deadline,
) -> int:
    """Every phase of minimising, on one deadline (``minimize.decide``)."""
    answer = decide(problem, args.capacity, params, progress=progress, deadline=deadline)
    seconds = time.monotonic() - deadline.started
    if args.json:
        print(json.dumps(_decision(problem, answer, deadline, seconds)))
    if answer.status == "feasible" and answer.offsets is not None:
        if args.output is not None:
            outputs.add(args.output, solution_bytes(problem, answer.offsets))
            outputs.write_all()
        if not args.quiet:
            console.print(f"feasible at {args.capacity:,} ({answer.reason}; {seconds:.2f} s)")
        return 0
    if not args.quiet:
        ended = f" (the time limit ended {deadline.ended_by})" if deadline.ended_by else ""
        console.print(f"{answer.status} at {args.capacity:,}: {answer.reason}{ended}")
    return EXIT_INFEASIBLE if answer.status == "infeasible" else EXIT_UNKNOWN
