"""``arenaplan plan MODEL -o OUT.tflite --json PLAN.json``."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from arenaplan.allocation.registry import ALLOCATORS
from arenaplan.analysis.persistent import PROFILES
from arenaplan.commands.memories import (
    fit_to_target,
    memory_regions,
    parse_memories,
    persistent_memory,
    print_memories,
)
from arenaplan.errors import PlanValidationError, UsageError
from arenaplan.export.files import refuse_overwrite, write_atomic
from arenaplan.export.firmware import firmware_header
from arenaplan.export.json_plan import plan_to_json
from arenaplan.export.offline_plan import with_offline_plan
from arenaplan.export.picture import picture_format, render, render_memories
from arenaplan.export.planner_cpp import planner_source
from arenaplan.export.report import html_report
from arenaplan.export.summary import print_summary
from arenaplan.ir.model import Model
from arenaplan.placement import Plan, PlanOptions, plan_model
from arenaplan.placement.tiers import TierPlacement, place_tiers
from arenaplan.reader import load_model, read_model_bytes
from arenaplan.targets import Target, load_builtin, load_target


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="plan the arena and write it into the model",
        description="Plan the non-persistent arena (TFLM's head) of a model, "
        "validate the plan, and write it as TFLM's offline plan.",
    )
    p.add_argument("model", type=Path, help="input .tflite (never modified)")
    p.add_argument("-o", "--output", type=Path, help="planned .tflite to write")
    p.add_argument("--json", type=Path, help="write the plan as JSON here")
    p.add_argument("--picture", type=Path, help="write the time x address picture (.png/.svg)")
    p.add_argument("--report", type=Path, help="write a self-contained HTML report")
    p.add_argument(
        "--target", help="built-in target for the report's operator table (see arenaplan targets)"
    )
    p.add_argument("--target-file", type=Path, help="your own target TOML file instead")
    p.add_argument(
        "--memory",
        action="append",
        default=[],
        metavar="NAME=SIZE",
        help="capacity of a target memory, e.g. sram=256KiB (repeatable); when the "
        "plan does not fit the fastest, activations spread over the memories",
    )
    p.add_argument("--header", type=Path, help="write C/C++ arena definitions (.h)")
    p.add_argument(
        "--planner-cpp",
        type=Path,
        help="write a C++ MicroMemoryPlanner with the "
        "offset table of a placement over the target's memories (needs --target)",
    )
    p.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="arm32",
        help="TFLM build profile for the header's tail (default arm32)",
    )
    p.add_argument(
        "--arena-memory",
        help="target memory of the (non-persistent) arena: "
        "its linker section is used (default: the target's fastest)",
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
        type=float,
        default=2.0,
        metavar="S",
        help="seconds for the exact solver when the greedy orders stop above "
        "the lower bound (default 2)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(run=run)


def planned_model_bytes(data: bytes, model: Model, plan: Plan) -> bytes:
    """The model with the plan's offline metadata, checked by reading it back."""
    out = with_offline_plan(data, plan.offline_offsets)
    again = read_model_bytes(out)
    if again.subgraphs != model.subgraphs or again.offline_plan != plan.offline_offsets:
        raise PlanValidationError(
            ["the written model does not read back as the input plus the plan"]
        )
    return out


def _target(args: argparse.Namespace) -> Target | None:
    if args.target_file is not None:
        return load_target(args.target_file)
    return load_builtin(args.target) if args.target else None


def _header(
    args: argparse.Namespace,
    model: Model,
    plan: Plan,
    target: Target | None,
    caps: dict[str, int],
    tiers: TierPlacement | None,
) -> str:
    if target is None and (args.arena_memory or args.persistent_memory):
        raise UsageError("--arena-memory and --persistent-memory need --target")
    arena_section, persistent_section, head = "", None, None
    if target is not None:
        arena_section = _memory(target, args.arena_memory, "activations").section
        chosen = args.persistent_memory
        if chosen is None:  # as advised: two arenas only when one does not fit
            chosen = persistent_memory(model, plan, target, caps, tiers)[0] or None
        if chosen:
            persistent_section = _memory(target, chosen, "persistent").section
        if tiers is not None:
            fast = target.fastest().name
            head = tiers.heights[fast]
    return firmware_header(
        model, plan, args.model.name, args.profile, arena_section, persistent_section, head
    )


def _memory(target: Target, name: str | None, holds: str):
    if name is None:
        return target.fastest(holds)
    try:
        memory = target.memory(name)
    except KeyError:
        known = ", ".join(m.name for m in target.memories)
        raise UsageError(f"target {target.name} has no memory {name!r} ({known})") from None
    if holds not in memory.holds:
        raise UsageError(f"memory {name!r} of {target.name} may not hold {holds} data")
    return memory


def run(args: argparse.Namespace, console: Console) -> int:
    data, model = load_model(args.model)
    for out in (args.output, args.json, args.picture, args.report, args.header, args.planner_cpp):
        if out is not None:
            refuse_overwrite(out, args.model)
    target = _target(args)
    fmt = picture_format(args.picture) if args.picture is not None else None
    if args.time_limit <= 0:
        raise UsageError("--time-limit must be positive")
    options = PlanOptions(allocator=args.allocator, time_limit=args.time_limit)
    caps = parse_memories(args.memory, target)
    plan = plan_model(model, options)
    tiers = None
    if target is not None:
        plan, tiers = fit_to_target(model, plan, target, caps, options)
    outputs: list[tuple[Path, bytes]] = []
    if args.output is not None:
        outputs.append((args.output, planned_model_bytes(data, model, plan)))
    if args.json is not None:
        outputs.append((args.json, plan_to_json(model, plan, args.model.name).encode()))
    regions = memory_regions(target, caps, plan, tiers) if tiers and target else None
    if args.picture is not None and fmt is not None:
        title = f"arena plan: {args.model.name}"
        picture = (
            render_memories(plan, regions, title, fmt) if regions else render(plan, title, fmt)
        )
        outputs.append((args.picture, picture))
    if args.header is not None:
        outputs.append((args.header, _header(args, model, plan, target, caps, tiers).encode()))
    if args.planner_cpp is not None:
        if target is None:
            raise UsageError("--planner-cpp needs --target")
        placement = tiers or place_tiers(model, target, caps)
        outputs.append(
            (args.planner_cpp, planner_source(model, placement, target, args.model.name).encode())
        )
    if args.report is not None:
        where = tiers.memory_of if tiers else None
        report = html_report(model, plan, args.model.name, target, where, regions)
        outputs.append((args.report, report.encode()))
    for path, payload in outputs:
        write_atomic(path, payload)
    if not args.quiet:
        print_summary(console, model, plan, args.model.name)
        if target is not None:
            print_memories(console, model, target, caps, plan, tiers)
        for path, _ in outputs:
            console.print(f"wrote {path}")
    return 0
