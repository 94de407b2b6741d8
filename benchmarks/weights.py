"""Weights in place, copied whole, per group, double-buffered, or chosen: SRAM and time.

    python benchmarks/weights.py [--models DIR] [--targets xcore_ai,imxrt1170,esp32s3]
                                 [--no-mobilenets]

Per model and target, each cell ``arenaplan plan --target T --weights W`` without the
proof (``run_plan``, for the target's kernels): the head (activations plus weight
buffers, planned and validated; bytes; the memories end to end when the plan spreads
the activations, marked *) and the estimated latency (ms, the plan's figures: the
target's time model with copy times, an estimate) of each policy forced on every
operator, and of ``auto`` with no capacity limit and with the fastest memory's
capacity set to the least head of the policies (it must then give up time where the
fastest policies take more). Models: every model of ../shared/models, and MobileNetV1/V2
models written by ``arenaplan.builder.mobilenet``. Last, the SRAM groups save
against whole copies on the MobileNets, and our arenas against xformer's
flash-weights arenas reported in xmos/ai_tools (cnn_s 46,968 B, ad01 86,608 B).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.builder.mobilenet import mobilenet_v1, mobilenet_v2
from arenaplan.errors import ArenaplanError
from arenaplan.pipeline import PlanRequest, PlanResult, Source, run_plan
from arenaplan.reader import read_model_bytes
from arenaplan.targets import Target, load_builtin

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
POLICIES = (  # column, --weights
    ("in-place", "in-place"),
    ("whole", "whole"),
    ("groups", "groups"),
    ("double", "groups,double"),
    ("auto", "auto"),
)
XFORMER = {"cnn_s_quantized": 46_968, "ad01_int8": 86_608}  # flash weights, xformer arenas
MOBILENETS = (
    ("mobilenet_v1_1.0_224", lambda: mobilenet_v1(1.0, 224)),
    ("mobilenet_v1_1.0_128", lambda: mobilenet_v1(1.0, 128)),
    ("mobilenet_v1_0.25_128", lambda: mobilenet_v1(0.25, 128)),
    ("mobilenet_v2_1.0_224", lambda: mobilenet_v2(1.0, 224)),
    ("mobilenet_v2_0.35_96", lambda: mobilenet_v2(0.35, 96)),
)


def _cell(
    source: Source, target: Target, weights: str, capacity: dict[str, int] | None = None
) -> tuple[PlanResult | None, str]:
    """``arenaplan plan --target T --weights W`` without the proof: the plan and its
    cell (head / estimated ms), or None and the error's first words."""
    request = PlanRequest(
        source, target, caps=capacity or {}, weights=weights, time_limit=0.5, prove=False
    )
    try:
        done = run_plan(request)
    except ArenaplanError as exc:
        return None, str(exc).split(":")[0][:18]
    latency = done.figures.latency or 0.0
    spread = " *" if done.tiers is not None else ""
    return done, f"{done.plan.arena:,} / {latency * 1e3:.2f}{spread}"


def _models(folder: Path, mobilenets: bool):
    for path in sorted(folder.glob("*.tflite")) if folder.is_dir() else []:
        data = path.read_bytes()
        try:
            yield Source(data, read_model_bytes(data), path.name)
        except ArenaplanError:
            continue
    if mobilenets:
        for name, build in MOBILENETS:
            data = build()
            yield Source(data, read_model_bytes(data), name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    ap.add_argument("--targets", default="xcore_ai,imxrt1170,esp32s3")
    ap.add_argument("--no-mobilenets", action="store_true")
    args = ap.parse_args(argv)
    console = Console(width=200)
    if not args.models.is_dir():
        print(f"{args.models}: no such folder; the shared models are skipped", file=sys.stderr)
    table = Table(title="head bytes / estimated ms per weights policy")
    for col in ("model", "target", *(name for name, _ in POLICIES), "auto at the least"):
        table.add_column(col, justify="left" if col in ("model", "target") else "right")
    saved, versus = [], []
    for source in _models(args.models, not args.no_mobilenets):
        name = source.name.removesuffix(".tflite")
        for tname in args.targets.split(","):
            target = load_builtin(tname)
            cells, plans = [], {}
            for label, weights in POLICIES:
                done, text = _cell(source, target, weights)
                plans[label] = done.weights if done is not None else None
                cells.append(text)
            best = min((p.plan.arena for p in plans.values() if p), default=0)
            cells.append(_cell(source, target, "auto", {target.fastest().name: best})[1])
            table.add_row(name, tname, *cells)
            whole, groups = plans["whole"], plans["groups"]
            if name.startswith("mobilenet") and whole and groups and tname == "xcore_ai":
                saved.append((name, whole, groups))
            short = name.split("__")[-1]
            if short in XFORMER and tname == "xcore_ai" and plans["auto"]:
                versus.append((short, XFORMER[short], plans["auto"].plan.arena))
    console.print(table)
    console.print(
        "* the head does not fit the fastest memory: the plan spreads the activations over "
        "the target's memories (as `arenaplan plan --target` does); the head is the "
        "memories laid end to end, the time that of the spread plan"
    )
    for name, whole, groups in saved:
        big_w = max(c.ram for c in whole.choices)
        big_g = max(c.ram for c in groups.choices)
        console.print(
            f"{name} on xcore_ai: groups against whole copies: head {whole.plan.arena:,} -> "
            f"{groups.plan.arena:,} B (saves {whole.plan.arena - groups.plan.arena:,}); largest "
            f"weight buffer {big_w:,} -> {big_g:,} B (saves {big_w - big_g:,})"
        )
    for name, theirs, ours in versus:
        console.print(f"{name} on xcore_ai, weights from flash: xformer's arena {theirs:,} B, "
                      f"ours (auto, head only) {ours:,} B")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
