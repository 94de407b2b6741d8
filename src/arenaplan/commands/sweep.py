"""``arenaplan sweep MODEL --target T``: estimated latency against fast-memory size."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.errors import AllocationError, UsageError
from arenaplan.export.files import refuse_overwrite, write_atomic
from arenaplan.export.picture import picture_format, pyplot, save
from arenaplan.placement import plan_model
from arenaplan.placement.tiers import place_tiers
from arenaplan.reader import load_model
from arenaplan.targets import load_builtin, load_target


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="estimated latency against the fast memory's size",
        description="Shrink the target's fastest memory from the whole arena "
        "down to a quarter of it; place the activations at each size (ours and "
        "Vela's strategy) and print, and optionally plot, the estimated latency.",
    )
    p.add_argument("model", type=Path)
    p.add_argument("--target", default="generic", help="built-in target (default generic)")
    p.add_argument("--target-file", type=Path, help="your own target TOML file instead")
    p.add_argument("--points", type=int, default=8, help="capacities to try (default 8)")
    p.add_argument("--plot", type=Path, help="write the curve as .png or .svg")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    if args.points < 2:
        raise UsageError("--points must be at least 2")
    _, model = load_model(args.model)
    if args.plot is not None:
        refuse_overwrite(args.plot, args.model)
        fmt = picture_format(args.plot)
    target = load_target(args.target_file) if args.target_file else load_builtin(args.target)
    fast = target.fastest().name
    arena = plan_model(model).arena
    sizes = sorted(
        {
            max(16, arena * (4 * args.points - 3 * k) // (4 * args.points) // 16 * 16)
            for k in range(args.points + 1)
        },
        reverse=True,
    )
    rows = []
    for size in sizes:
        try:
            ours = place_tiers(model, target, {fast: size})
            vela = place_tiers(model, target, {fast: size}, "vela")
        except AllocationError as exc:
            console.print(f"{fast} {size:,} B: {exc}")
            continue
        rows.append((size, ours.seconds, vela.seconds, ours.heights))
    table = Table(title=f"{args.model.name} on {target.name}: estimated latency (ms)")
    for col in (f"{fast} bytes", "ours", "Vela's strategy", "arenas (ours)"):
        table.add_column(col, justify="left" if col.startswith("arenas") else "right")
    for size, ours_s, vela_s, heights in rows:
        used = ", ".join(f"{k} {v:,}" for k, v in heights.items() if v)
        table.add_row(f"{size:,}", f"{ours_s * 1e3:.3f}", f"{vela_s * 1e3:.3f}", used)
    console.print(table)
    if args.plot is not None and rows:
        write_atomic(args.plot, _plot(rows, f"{args.model.name} on {target.name}", fast, fmt))
        console.print(f"wrote {args.plot}")
    return 0


def _plot(rows: list, title: str, fast: str, fmt: str) -> bytes:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    xs = [r[0] for r in rows]
    ax.plot(xs, [r[1] * 1e3 for r in rows], marker="o", label="arenaplan")
    ax.plot(xs, [r[2] * 1e3 for r in rows], marker="x", linestyle="--", label="Vela's strategy")
    ax.set_xlabel(f"{fast} capacity (bytes)")
    ax.set_ylabel("estimated latency (ms)")
    ax.set_title(title)
    ax.legend()
    return save(plt, fig, fmt)
