"""``arenaplan plan MODEL -o OUT.tflite --json PLAN.json``.

Order of work: check every option and output path, read the model, plan
(``pipeline.run_plan``: every output rendered in memory), write them all, print
the summary. A failure at any point leaves no file behind.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from arenaplan.allocation.registry import ALLOCATORS
from arenaplan.commands.common import (
    add_kernels_option,
    add_profile_option,
    add_target_options,
    kernels_asked,
    parse_memories,
    profile_asked,
    target_from_args,
)
from arenaplan.commands.rewrite import add_pass_options
from arenaplan.commands.weights import add_weights_option, check_weights_args, print_weights
from arenaplan.errors import UsageError
from arenaplan.export.files import Outputs
from arenaplan.export.kernel_source import firmware_lines, kernel_files, needs_kernel
from arenaplan.export.memories_summary import print_memories, target_arena_line
from arenaplan.export.picture import picture_format, pyplot
from arenaplan.export.summary import print_rewrite, print_summary
from arenaplan.pipeline import PlanRequest, PlanResult, Wanted, read_source, run_plan
from arenaplan.pipeline.run import objective_of
from arenaplan.targets import Target
from arenaplan.units import SIZE_HELP, seconds_arg

# (Wanted field, ``args`` attribute, option) of every file ``plan`` writes
_OUTPUTS = (
    ("model", "output", "-o"),
    ("json", "json", "--json"),
    ("picture", "picture", "--picture"),
    ("report", "report", "--report"),
    ("header", "header", "--header"),
    ("planner_cpp", "planner_cpp", "--planner-cpp"),
    ("weights_blob", "weights_blob", "--weights-blob"),
    ("schedule", "schedule", "--schedule"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="plan the arena and write it into the model",
        description="Plan the non-persistent arena (TFLM's head) of a model, "
        "validate the plan, and write it as TFLM's offline plan. Every output is "
        "written only when all of them succeed; the input is never modified.",
    )
    p.add_argument("model", type=Path, help="input .tflite (never modified)")
    p.add_argument("-o", "--output", type=Path, help="planned .tflite to write")
    p.add_argument("--json", type=Path, help="write the plan as JSON here ('-': standard output)")
    p.add_argument("--picture", type=Path, help="write the time x address picture (.png/.svg)")
    p.add_argument("--report", type=Path, help="write a self-contained HTML report")
    add_target_options(
        p,
        None,
        "fits the plan to its memories (spreading activations when the fastest is too "
        "small), sizes the header for its TFLM build profile, and estimates times in "
        "the report",
    )
    p.add_argument(
        "--memory",
        action="append",
        default=[],
        metavar="NAME=SIZE",
        help="capacity of a target memory for activations, e.g. sram=256KiB "
        f"({SIZE_HELP}; repeatable; at most the memory's real size); when the plan does "
        "not fit the fastest, activations spread over the memories",
    )
    p.add_argument("--header", type=Path, help="write C/C++ arena definitions (.h)")
    p.add_argument(
        "--planner-cpp",
        type=Path,
        help="write a C++ MicroMemoryPlanner with the "
        "offset table of a placement over the target's memories (needs --target)",
    )
    p.add_argument(
        "--kernel-source",
        type=Path,
        metavar="DIR",
        help="write the C++ of arenaplan's cascade kernel (arenaplan_cascade.h/.cc) and "
        "the lines that register it (register_cascade.txt) into this existing folder",
    )
    add_profile_option(
        p, "TFLM build profile that sizes the header's tail (default: the target's, else arm32)"
    )
    add_kernels_option(p, "the target's, else reference")
    p.add_argument(
        "--arena-memory",
        help="target memory of the (non-persistent) arena, which then holds every "
        "activation (in its linker section, refused in one line if it has no room); "
        "default: the target's fastest, spreading over the next memories when too small",
    )
    p.add_argument(
        "--persistent-memory",
        help="put TFLM's persistent arena in this target memory: two arenas (needs --target)",
    )
    p.add_argument(
        "--allocator",
        choices=sorted(ALLOCATORS),
        default="portfolio",
        help="offset allocator (default: portfolio)",
    )
    p.add_argument(
        "--time-limit",
        type=seconds_arg,
        default=2.0,
        metavar="S",
        help="seconds for the exact solver when the greedy orders stop above "
        "the lower bound (default 2)",
    )
    add_pass_options(p)
    add_weights_option(p)
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(run=run)


def _claim_outputs(args: argparse.Namespace) -> Outputs:
    """Check every output path (and what rendering it needs) before any work."""
    outputs = Outputs((args.model,))
    for _, attr, option in _OUTPUTS:
        outputs.claim(getattr(args, attr), option, stdout_ok=attr == "json")
    if args.picture is not None:
        picture_format(args.picture)
    if args.picture is not None or args.report is not None:
        pyplot()  # matplotlib is there, or one line saying how to install it

    _claim_kernel_source(outputs, args.kernel_source)
    return outputs


def _claim_kernel_source(outputs: Outputs, folder: Path | None) -> None:
    """``--kernel-source DIR``: its files claimed and staged (they are the package's)."""
    if folder is None:
        return

    if not folder.is_dir():
        what = "is not a directory" if folder.exists() else "does not exist"
        raise UsageError(f"--kernel-source {folder}: {what}")
    for name, data in kernel_files().items():
        path = folder / name
        outputs.claim(path, "--kernel-source")
        outputs.add(path, data)


def _check_target_options(args: argparse.Namespace, target: Target | None) -> None:
    if target is not None:
        return
    for value, option in (
        (args.planner_cpp, "--planner-cpp"),
        (args.arena_memory, "--arena-memory"),
        (args.persistent_memory, "--persistent-memory"),
    ):
        if value is not None:
            raise UsageError(f"{option} needs --target")


def _wanted(args: argparse.Namespace) -> Wanted:
    picture = None
    if args.picture is not None:
        picture = picture_format(args.picture)
    return Wanted(
        model=args.output is not None,
        json=args.json is not None,
        picture=picture,
        report=args.report is not None,
        header=args.header is not None,
        planner_cpp=args.planner_cpp is not None,
        weights_blob=args.weights_blob is not None,
        schedule=args.schedule is not None,
    )


def request_from_args(args: argparse.Namespace) -> PlanRequest:
    """Check the options in order (each failure one line) and read the model."""
    target = target_from_args(args)
    _check_target_options(args, target)
    check_weights_args(args, target)
    source = read_source(args.model)
    caps = parse_memories(args.memory, target)
    return PlanRequest(
        source,
        target,
        caps,
        profile=profile_asked(args),
        kernels=kernels_asked(args),
        allocator=args.allocator,
        time_limit=args.time_limit,
        passes=args.passes,
        max_extra_macs=args.max_extra_macs,
        fit=args.fit,
        clobber_inputs=args.clobber_inputs,
        objective=args.objective,
        step_pixels=args.step_pixels,
        weights=args.weights,
        arena_memory=args.arena_memory,
        persistent_memory=args.persistent_memory,
        write_unproven=args.write_unproven,
        outputs=_wanted(args),
    )


def _warn(line: str) -> None:
    print(line, file=sys.stderr)


def run(args: argparse.Namespace, console: Console) -> int:
    outputs = _claim_outputs(args)
    request = request_from_args(args)
    done = run_plan(request, notify=_warn)
    attrs = {field: attr for field, attr, _ in _OUTPUTS}
    for field, data in done.files.items():  # in the order the pipeline rendered them
        outputs.add(getattr(args, attrs[field]), data)
    written = outputs.write_all()
    if args.quiet or outputs.to_stdout:
        return 0
    _print(console, request, done)
    for path in written:
        console.print(f"wrote {path}")

    console.print(target_arena_line(done.figures), style="bold")
    if args.output is not None and needs_kernel(done.model):
        folder = str(args.kernel_source) if args.kernel_source is not None else None
        for line in firmware_lines(folder):
            console.print(line, style="bold")
    return 0


def _print(console: Console, request: PlanRequest, done: PlanResult) -> None:
    """The summary: the plan, the passes and their proof (or the weights), the memories."""
    model, plan, tiers, name = done.model, done.plan, done.tiers, done.source.name
    records = done.rewrite.records if done.rewrite else ()
    rewritten = done.rewrite is not None and done.rewrite.changed
    spread = tiers is not None
    print_summary(console, model, plan, name, spread, done.refusals, rewritten)
    if done.weights is not None:
        print_rewrite(console, records, None)
        print_weights(console, done.weights, done.proof, done.figures, done.origin)
    else:
        what = "head" if objective_of(request) == "head" else "whole arena"
        print_rewrite(console, records, done.proof, done.effect, done.compared, what)
    if request.target is not None:
        print_memories(console, request.target, request.caps, plan, tiers, done.figures)
