"""``arenaplan plan MODEL -o OUT.tflite --json PLAN.json``.

Order of work: check every option and output path, read the model, plan, render
every output in memory, write them all, print the summary. A failure at any
point leaves no file behind.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from arenaplan.allocation.registry import ALLOCATORS
from arenaplan.commands.common import (
    add_kernels_option,
    add_target_options,
    kernels_from_args,
    target_from_args,
)
from arenaplan.commands.memories import (
    check_arena_memory,
    check_capacities,
    fit_to_target,
    memory_regions,
    parse_memories,
    persistent_memory,
    print_memories,
    target_arena_line,
    target_memory,
)
from arenaplan.commands.rewrite import (
    Rewrite,
    add_pass_options,
    check_fit,
    pass_names,
    rewrite,
)
from arenaplan.commands.weights import (
    add_weights_option,
    check_proof,
    check_weights_args,
    fetch_schedule,
    print_weights,
    prove_copies,
    staged_blob,
    weights_json,
    weights_plan,
)
from arenaplan.errors import PlanValidationError, UsageError
from arenaplan.export.files import Outputs
from arenaplan.export.firmware import firmware_header
from arenaplan.export.json_plan import plan_to_json
from arenaplan.export.offline_plan import with_offline_plan
from arenaplan.export.picture import picture_format, pyplot, render, render_memories
from arenaplan.export.planner_cpp import planner_source
from arenaplan.export.report import html_report
from arenaplan.export.summary import arena_line, print_rewrite, print_summary
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.model import Model
from arenaplan.placement import Plan, PlanOptions, plan_model
from arenaplan.placement.tiers import TierPlacement, place_tiers
from arenaplan.reader import load_model, read_model_bytes
from arenaplan.targets import Memory, Target
from arenaplan.tflm.refusals import tflm_refusals
from arenaplan.tflm.tail import PROFILES, predict_tail
from arenaplan.units import SIZE_HELP, seconds_arg
from arenaplan.verify.prove import Proof, prove
from arenaplan.weights.blob import WeightsBlob
from arenaplan.weights.plan import WeightsPlan

_OUTPUTS = (
    ("output", "-o"),
    ("json", "--json"),
    ("picture", "--picture"),
    ("report", "--report"),
    ("header", "--header"),
    ("planner_cpp", "--planner-cpp"),
    ("weights_blob", "--weights-blob"),
    ("schedule", "--schedule"),
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
        "--profile",
        choices=sorted(PROFILES),
        default=None,
        help="TFLM build profile that sizes the header's tail (default: the target's, else arm32)",
    )
    add_kernels_option(p, "the target's, else reference")
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


def planned_model_bytes(data: bytes, model: Model, plan: Plan) -> bytes:
    """The model with the plan's offline metadata, checked by reading it back."""
    out = with_offline_plan(data, plan.offline_offsets)
    again = read_model_bytes(out)
    if again.subgraphs != model.subgraphs or again.offline_plan != plan.offline_offsets:
        raise PlanValidationError(
            ["the written model does not read back as the input plus the plan"]
        )
    return out


def _claim_outputs(args: argparse.Namespace) -> Outputs:
    """Check every output path (and what rendering it needs) before any work."""
    outputs = Outputs((args.model,))
    for attr, option in _OUTPUTS:
        outputs.claim(getattr(args, attr), option, stdout_ok=attr == "json")
    if args.picture is not None:
        picture_format(args.picture)
    if args.picture is not None or args.report is not None:
        pyplot()  # matplotlib is there, or one line saying how to install it
    return outputs


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


def _header(
    args: argparse.Namespace,
    model: Model,
    plan: Plan,
    planned: bytes,
    target: Target | None,
    caps: dict[str, int],
    tiers: TierPlacement | None,
    profile: str,
    arena: Memory | None,
) -> str:
    arena_section, persistent_section, head = "", None, None
    if target is not None and arena is not None:
        arena_section = arena.section
        chosen = args.persistent_memory
        if chosen is None:  # as advised: two arenas only when one does not fit
            chosen = persistent_memory(model, plan, target, caps, tiers)[0] or None
        if chosen:
            persistent_section = target_memory(
                target, chosen, "persistent", "--persistent-memory"
            ).section
        if tiers is not None:
            head = tiers.heights[target.fastest().name]
        if tiers is not None and chosen:
            raise UsageError(
                f"--header: the plan spreads the activations over several memories and the "
                f"persistent arena goes to {chosen}: one arena header cannot hold that; write "
                "--planner-cpp planner.h and define ARENAPLAN_SPLIT_ARENA (its arrays and "
                "arenaplan::CreateAllocator() run it on stock TFLM), or give the fastest memory "
                "room for the persistent arena (--memory)"
            )
    return firmware_header(
        model,
        plan,
        args.model.name,
        profile,
        arena_section,
        persistent_section,
        head,
        planned_model=planned,
    )


def _persistent(
    model: Model,
    plan: Plan,
    target: Target | None,
    caps: dict[str, int],
    tiers: TierPlacement | None,
    profile: str,
) -> tuple[str | None, int]:
    """Where the pictures draw TFLM's tail: (memory, or None for beside the head; bytes)."""
    memory = persistent_memory(model, plan, target, caps, tiers)[0] if target else None
    return memory or None, predict_tail(model, profile, kernels=plan.kernels)


def _picture(
    args: argparse.Namespace,
    plan: Plan,
    name: str,
    regions: list | None,
    target: Target | None,
    persistent: tuple[str | None, int],
    refusals: tuple[str, ...],
) -> bytes:
    fmt = picture_format(args.picture)
    title = f"arena plan: {name}"
    if regions:
        return render_memories(plan, regions, title, fmt, persistent=persistent)
    memory = target.fastest().name if target else None
    return render(plan, title, fmt, persistent=persistent, memory=memory, tflm_planner=not refusals)


@dataclass(frozen=True, slots=True)
class _Planned:
    """The model planned (rewritten if proven), its plan and the bytes to write."""

    model: Model
    plan: Plan
    tiers: TierPlacement | None
    arena: Memory | None
    planned: bytes
    rewrite: Rewrite | None  # None: no pass ran, or the rewrite was not proven
    proof: Proof | None
    before: Plan | None = None  # the plan of the model as given, when rewritten
    weights: WeightsPlan | None = None  # with --weights: the policies and their copies


def _fit(
    args: argparse.Namespace,
    model: Model,
    options: PlanOptions,
    target: Target | None,
    caps: dict[str, int],
) -> tuple[Plan, TierPlacement | None, Memory | None]:
    plan = plan_model(model, options)
    if target is None:
        return plan, None, None
    plan, tiers = fit_to_target(model, plan, target, caps, options)
    return plan, tiers, check_arena_memory(args.arena_memory, plan, target, caps, tiers)


def _plan(
    args: argparse.Namespace,
    data: bytes,
    original: Model,
    target: Target | None,
    caps: dict[str, int],
    profile: str,
) -> _Planned:
    """Rewrite and plan; a rewrite TFLM does not prove falls back to the model as is."""
    base = PlanOptions(
        allocator=args.allocator,
        time_limit=args.time_limit,
        kernels=kernels_from_args(args, target),
    )
    if args.weights is not None and target is not None:
        weighed = _plan_weights(args, data, original, target, caps, base, profile)
        if weighed is not None:
            return weighed
    proof = None
    if pass_names(args):
        rw = rewrite(original, args, profile, _objective(args), base.kernels)
        plan, tiers, arena = _fit(args, rw.model, _with_aliases(base, rw), target, caps)
        if not rw.changed and not plan.aliases:  # the plan of the model as given
            planned = planned_model_bytes(data, original, plan)
            return _Planned(original, plan, tiers, arena, planned, rw, None)
        source = write_model(rw.model) if rw.changed else data
        planned = planned_model_bytes(source, rw.model, plan)
        proof = prove(data, planned, plan.arena, plan.kernels)
        if proof.proven or (proof.unavailable and args.write_unproven):
            before = plan_model(original, base)
            if not proof.proven:
                print(f"arenaplan: rewrite written UNPROVEN: {proof.reason}", file=sys.stderr)
            return _Planned(rw.model, plan, tiers, arena, planned, rw, proof, before)
        print(
            f"arenaplan: the rewrite is not proven in TFLM ({proof.reason}); "
            "planned the model as it is",
            file=sys.stderr,
        )
    plan, tiers, arena = _fit(args, original, base, target, caps)
    return _Planned(
        original, plan, tiers, arena, planned_model_bytes(data, original, plan), None, proof
    )


def _plan_weights(
    args: argparse.Namespace,
    data: bytes,
    original: Model,
    target: Target,
    caps: dict[str, int],
    options: PlanOptions,
    profile: str,
) -> _Planned | None:
    """Weights policies and activations in one plan of the fastest memory, after the
    passes if any; the model's copies and rewrites proven in TFLM. A rewrite that is
    not proven falls back (said on stderr) to the weights of the model as given;
    copies that nothing here can prove (no runtime or build for the kernels), to the
    model as given without them (None), unless ``--write-unproven``."""
    if pass_names(args):
        rw = rewrite(original, args, profile, _objective(args), options.kernels)
        done = _weights_of(args, data, original, rw.model, target, caps, _with_aliases(options, rw))
        proven = done.proof is None or done.proof.proven
        unavailable = done.proof is not None and done.proof.unavailable
        rewritten = rw.changed or bool(done.plan.aliases)
        if proven or (unavailable and args.write_unproven) or not (unavailable or rewritten):
            check_proof(done.proof, args.write_unproven)  # the copies: as without --passes
            return replace(done, rewrite=rw)
        print(
            f"arenaplan: the rewrite is not proven in TFLM ({done.proof.reason}); "
            "planned the weights of the model as it is",
            file=sys.stderr,
        )
    done = _weights_of(args, data, original, original, target, caps, options)
    if done.proof is not None and done.proof.unavailable and not args.write_unproven:
        print(
            f"arenaplan: the weight copies cannot be proven here ({done.proof.reason}); "
            "planned the model as given, without --weights (--write-unproven writes them "
            "unproven)",
            file=sys.stderr,
        )
        return None
    check_proof(done.proof, args.write_unproven)
    return done


def _objective(args: argparse.Namespace) -> str:
    """What bands minimise: the head alone when the tail lives elsewhere."""
    return "head" if args.persistent_memory else "arena"


def _with_aliases(options: PlanOptions, rw: Rewrite) -> PlanOptions:
    return replace(options, aliases=rw.aliases, clobber_inputs=rw.clobber_inputs)


def _weights_of(
    args: argparse.Namespace,
    data: bytes,
    original: Model,
    model: Model,
    target: Target,
    caps: dict[str, int],
    options: PlanOptions,
) -> _Planned:
    wp = weights_plan(model, target, caps, options, args.weights)
    changed = wp.model is not original
    planned = planned_model_bytes(write_model(wp.model) if changed else data, wp.model, wp.plan)
    proof = prove_copies(data, planned, wp, changed or bool(wp.plan.aliases))
    arena = check_arena_memory(args.arena_memory, wp.plan, target, caps, wp.tiers)
    return _Planned(wp.model, wp.plan, wp.tiers, arena, planned, None, proof, weights=wp)


def _extra_json(p: _Planned, blob: WeightsBlob | None) -> dict[str, object]:
    """The JSON's ``passes``, ``proof`` and, with --weights, ``weights`` (whose own
    ``proof`` is that of the model with its copies)."""
    records = p.rewrite.records if p.rewrite else ()
    passes = [
        {"name": r.name, "options": r.options, "changed": r.changed, "note": r.note}
        | {"stats": r.stats}
        for r in records
    ]
    if p.weights is not None and blob is not None:
        return {"passes": passes, "proof": None, "weights": weights_json(p.weights, p.proof, blob)}
    return {"passes": passes, "proof": p.proof.as_dict() if p.proof else None}


def run(args: argparse.Namespace, console: Console) -> int:
    outputs = _claim_outputs(args)
    target = target_from_args(args)
    _check_target_options(args, target)
    check_weights_args(args, target)
    data, original = load_model(args.model)
    caps = parse_memories(args.memory, target)
    if target is not None:
        check_capacities(original, target, caps)
    profile = args.profile or (target.tflm_profile if target else "arm32")
    done = _plan(args, data, original, target, caps, profile)
    model, plan, tiers, arena, planned = done.model, done.plan, done.tiers, done.arena, done.planned
    if args.fit is not None:
        check_fit(args.fit, model, plan, profile, head_only=args.persistent_memory is not None)
    refusals = tflm_refusals(model)
    name = args.model.name
    where = tiers.memory_of if tiers else None  # each tensor's memory, when spread
    regions = memory_regions(target, caps, plan, tiers) if tiers and target else None
    persistent = _persistent(model, plan, target, caps, tiers, profile)
    if args.output is not None:
        outputs.add(args.output, planned)
    wanted = args.json or args.weights_blob or args.schedule
    blob = staged_blob(done.weights) if done.weights is not None and wanted else None
    if args.json is not None:
        text = plan_to_json(model, plan, name, where, refusals, _extra_json(done, blob))
        outputs.add(args.json, text.encode())
    if args.picture is not None:
        outputs.add(args.picture, _picture(args, plan, name, regions, target, persistent, refusals))
    if args.header is not None:
        header = _header(args, model, plan, planned, target, caps, tiers, profile, arena)
        outputs.add(args.header, header.encode())
    if args.planner_cpp is not None and target is not None:
        placement = tiers or place_tiers(model, target, caps, kernels=plan.kernels)
        source = planner_source(model, placement, target, name, profile)
        outputs.add(args.planner_cpp, source.encode())
    if done.weights is not None and blob is not None:
        if args.weights_blob is not None:
            outputs.add(args.weights_blob, blob.data)
        if args.schedule is not None:
            outputs.add(args.schedule, fetch_schedule(done.weights, blob, name).encode())
    if args.report is not None:
        report = html_report(
            model,
            plan,
            name,
            target,
            where,
            regions,
            refusal="; ".join(refusals) or None,
            persistent=persistent,
            weights=done.weights,
        )
        outputs.add(args.report, report.encode())
    written = outputs.write_all()
    if args.quiet or outputs.to_stdout:
        return 0
    print_summary(console, model, plan, name, spread=tiers is not None, refusals=refusals)
    records = done.rewrite.records if done.rewrite else ()
    before = (original, done.before) if done.before else None
    if done.weights is not None:
        print_rewrite(console, records, None)
        print_weights(console, done.weights, done.proof)
    else:
        print_rewrite(console, records, done.proof, before, (model, plan), profile)
    if target is not None:
        print_memories(console, model, target, caps, plan, tiers)
    for path in written:
        console.print(f"wrote {path}")
    console.print(
        target_arena_line(model, plan, target, caps, tiers, profile)
        if target is not None
        else arena_line(model, plan, profile),
        style="bold",
    )
    return 0
