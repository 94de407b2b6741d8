"""``arenaplan sweep MODEL --target T``: estimated latency against fast-memory size.

Each size is a capacity of the fastest memory given to ``arenaplan plan`` (its
``--memory FAST=SIZE``, with the same ``--weights``): the row shows that plan's
figures (``export.figures``), what the firmware sets in each memory (activations,
TFLM's persistent data, weight copies) and the estimated latency, beside Vela's
strategy placing the activations in the same size. The sizes run from the top, the
smaller of what the plan puts in the fastest memory when it has all of it and the
memory's real capacity, down to a quarter of the top: exactly ``--points`` distinct
sizes, multiples of 16 bytes after the first when the range allows it, else whole
bytes. A size that cannot be placed is a row saying why.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.commands.common import add_target_options, target_from_args
from arenaplan.commands.weights import add_weights_option
from arenaplan.cost.timing import time_model_label
from arenaplan.errors import AllocationError, UsageError
from arenaplan.export.figures import persistent_of, placed_seconds
from arenaplan.export.files import Outputs
from arenaplan.export.picture import picture_format, pyplot, save
from arenaplan.pipeline import PlanRequest, PlanResult, Source, read_source, run_plan
from arenaplan.placement.tiers import place_tiers
from arenaplan.targets import Target
from arenaplan.units import count_arg
from arenaplan.weights.policies import WHOLE, parse_weights, unless_in_place

ROOM = 1 << 40  # bytes: a fastest memory with room for everything the plan could put there
FLAT = (
    "compute-bound at every size: the fastest memory's size does not change the estimated latency"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="estimated latency against the fast memory's size",
        description="Shrink the target's fastest memory from the smaller of what the "
        "plan puts there and the memory's real capacity down to a quarter of that "
        "(exactly --points sizes, multiples of 16 B when the range allows); plan the "
        "model at each size as 'arenaplan plan --memory FAST=SIZE' would (with the same "
        "--weights) and print, and optionally plot, the estimated latency and what each "
        "memory holds, beside Vela's strategy placing the activations. A size that "
        "cannot be placed is a row saying why.",
    )
    p.add_argument("model", type=Path, help="input .tflite")
    add_target_options(p, default="generic", what="whose fastest memory shrinks")
    p.add_argument(
        "--points",
        type=count_arg(2, 1000),
        default=8,
        metavar="N",
        help="sizes to try, 2 to 1,000 (default 8); one row each",
    )
    add_weights_option(p, outputs=False)
    p.add_argument(
        "--plot", type=Path, metavar="P.png|P.svg", help="also write the curve as a picture"
    )
    p.set_defaults(run=run)


@dataclass(frozen=True, slots=True)
class Row:
    """One size of the fastest memory. Seconds are None where a strategy could not
    place the activations; ``why`` then says why."""

    capacity: int  # bytes
    ours: float | None  # seconds
    vela: float | None  # seconds
    heights: dict[str, int]  # bytes per memory of our placement
    why: str = ""


def sizes(top: int, points: int) -> list[int]:
    """``points`` distinct sizes (bytes) from ``top`` down to a quarter of it, largest
    first; after the first, multiples of 16 when the steps are at least 16 bytes."""
    bottom = top // 4
    span = top - bottom
    if bottom >= 16 and span >= 16 * (points - 1):
        return [top] + [(top - k * span // (points - 1)) // 16 * 16 for k in range(1, points)]
    if span < points - 1:
        raise UsageError(
            f"--points {points}: {top:,} B down to {bottom:,} B has only {span + 1} "
            f"sizes (give --points {span + 1} or fewer)"
        )
    return [top - k * span // (points - 1) for k in range(points)]


def _row(source: Source, target: Target, weights: str | None, capacity: int) -> Row:
    """The plan at ``capacity`` of the fastest memory, and Vela's strategy placing the
    same model's activations there (with the plan's weight copies, if whole)."""
    fast = target.fastest().name
    request = PlanRequest(
        source,
        target,
        {fast: capacity},
        weights=weights,
        prove=False,  # estimates; ``arenaplan plan`` proves the one chosen
        lay_out=False,
        check_memories=False,  # a size too small is a row saying why
    )
    try:
        done = run_plan(request)
    except AllocationError as exc:
        done, ours = None, str(exc)
    vela = _vela(source, done, target, capacity) if weights in (None, WHOLE.kind) else None
    why = {"ours": ours} if done is None else {}
    if isinstance(vela, str):
        why["Vela"] = vela
    if len(why) == 2 and len(set(why.values())) == 1:
        reason = f"cannot place: {why['ours']}"
    else:
        reason = "; ".join(f"{who} cannot place: {text}" for who, text in why.items())
    if done is None:
        return Row(capacity, None, vela if isinstance(vela, float) else None, {}, reason)
    figures = done.figures
    return Row(
        capacity,
        figures.latency,
        vela if isinstance(vela, float) else None,
        figures.per_memory(),
        reason,
    )


def _vela(source: Source, done: PlanResult | None, target: Target, capacity: int) -> float | str:
    """Seconds with the activations placed by Vela's strategy instead of ours, the
    rest as the plan has it (its weight copies and their fetches, TFLM's persistent
    data in its memory; with no plan, the model as given, everything else in the
    fastest memory); or why Vela's strategy cannot place them."""
    fast = target.fastest().name
    model = done.model if done is not None else source.model
    try:
        placed = place_tiers(model, target, {fast: capacity}, "vela", kernels=target.kernels)
    except AllocationError as exc:
        return str(exc)
    if done is None or done.figures.latency is None:
        return placed_seconds(model, target, fast, fast, placed)
    figures = done.figures
    persistent = persistent_of(figures.arrays) or fast
    ours = placed_seconds(model, target, fast, persistent, done.tiers)
    return figures.latency + placed_seconds(model, target, fast, persistent, placed) - ours


def _latency_format(rows: list[Row]) -> tuple[str, float, int]:
    """(unit, seconds per unit, decimals): five significant digits for the largest."""
    placed = [s for r in rows for s in (r.ours, r.vela) if s is not None]
    largest = max(placed, default=0.0)
    unit, scale = ("ms", 1e-3) if largest >= 1e-3 else ("µs", 1e-6)
    value = largest / scale
    decimals = max(0, 4 - math.floor(math.log10(value))) if value > 0 else 3
    return unit, scale, decimals


def is_flat(rows: list[Row], scale: float, decimals: int) -> bool:
    """Was every size placed, and does every latency (ours and Vela's) print the same?"""
    if any(r.ours is None or r.vela is None for r in rows):
        return False
    shown = {f"{s / scale:.{decimals}f}" for r in rows for s in (r.ours, r.vela) if s is not None}
    return len(shown) == 1


def _kib(n: int) -> str:
    kib = n / 1024
    return f"{kib:,.1f}" if kib >= 10 else f"{kib:.2f}"


def run(args: argparse.Namespace, console: Console) -> int:
    outputs = Outputs(inputs=(args.model,))
    if args.plot is not None:  # every check that needs no computing, first
        outputs.claim(args.plot, "--plot")
        fmt = picture_format(args.plot)
        pyplot()
    target = target_from_args(args)
    if target is None:  # not reached: the default is generic
        raise UsageError("sweep needs --target or --target-file")
    if args.weights is not None:
        parse_weights(args.weights)  # one line if malformed
    weights = unless_in_place(target, args.weights)
    source = read_source(args.model)
    fast = target.fastest()
    # what the plan puts in the fastest memory when it has room for all: where sizes start
    room = {fast.name: ROOM}
    request = PlanRequest(source, target, room, weights=weights, prove=False)
    whole = run_plan(request).figures
    arena = whole.per_memory().get(fast.name, 0)
    top = min(arena, fast.capacity)
    rows = [_row(source, target, weights, size) for size in sizes(top, args.points)]

    unit, scale, decimals = _latency_format(rows)
    title = f"{args.model.name} on {target.name}: estimated latency ({unit})"
    table = Table(title=title)
    for col in (
        f"{fast.name} bytes",
        "KiB",
        "ours",
        "Vela's strategy",
        "arenas (ours), or why not",
    ):
        table.add_column(col, justify="left" if col.startswith("arenas") else "right")
    for r in rows:
        cells = [f"{s / scale:.{decimals}f}" if s is not None else "-" for s in (r.ours, r.vela)]
        used = ", ".join(f"{k} {v:,}" for k, v in r.heights.items() if v)
        table.add_row(
            f"{r.capacity:,}", _kib(r.capacity), *cells, "; ".join(filter(None, (used, r.why)))
        )
    console.print(table)
    start = "what the plan puts there" if top == arena else f"{fast.name}'s capacity"
    console.print(
        f"{fast.name} from {start} ({top:,} B) down to {rows[-1].capacity:,} B; latencies: "
        f"{time_model_label(target)}"
    )
    if weights is not None and args.weights is None:
        console.print(
            f"weights: {weights} ({target.name} cannot read them where they lie; "
            "--weights chooses another policy)"
        )
    flat = is_flat(rows, scale, decimals)
    if flat:
        console.print(FLAT)
    if args.plot is not None:
        picture = _plot(rows, f"{args.model.name} on {target.name}", fast.name, fmt, unit, flat)
        outputs.add(args.plot, picture)
        outputs.write_all()
        console.print(f"wrote {args.plot}")
    return 0


def _plot(rows: list[Row], title: str, fast: str, fmt: str, unit: str, flat: bool) -> bytes:
    plt = pyplot()
    scale = 1e-3 if unit == "ms" else 1e-6
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    xs = [r.capacity / 1024 for r in rows]

    def ys(pick) -> list[float]:
        return [pick(r) / scale if pick(r) is not None else math.nan for r in rows]

    ax.plot(xs, ys(lambda r: r.ours), marker="o", label="arenaplan")
    ax.plot(xs, ys(lambda r: r.vela), marker="x", linestyle="--", label="Vela's strategy")
    margin = (max(xs) - min(xs)) * 0.05
    ax.set_xlim(min(xs) - margin, max(xs) + margin)  # also when no size was placed
    ax.set_xlabel(f"{fast} capacity (KiB)")
    ax.set_ylabel(f"estimated latency ({unit})")
    if all(r.ours is None and r.vela is None for r in rows):
        title += "\nno size could be placed (the table says why)"
    ax.set_title(title + (f"\n{FLAT}" if flat else ""), fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    return save(plt, fig, fmt)
