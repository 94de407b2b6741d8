"""``arenaplan targets [NAME] [--file TARGET.toml]``: the memories of a target."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.cost.timing import time_model_label
from arenaplan.errors import UsageError
from arenaplan.targets import Target, builtin_names, load_builtin, load_target


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "targets",
        help="list the built-in targets, or show one",
        description="Targets are TOML files: memories (capacity, bandwidth, "
        "latency, what they hold) and compute rates. Without arguments, list "
        "the built-in ones; with a name or --file, show (and check) one.",
    )
    p.add_argument("name", nargs="?", help="a built-in target to show")
    p.add_argument("--file", type=Path, help="check and show your own target file")
    p.set_defaults(run=run)


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def _rate(bps: float) -> str:
    return "-" if bps == 0 else f"{bps / 1e9:.3g} GB/s" if bps >= 1e9 else f"{bps / 1e6:.3g} MB/s"


def _show(console: Console, t: Target) -> None:
    table = Table(title=f"{t.name}: {t.description}")
    for col in ("memory", "capacity", "read", "write", "latency (cycles)", "holds", "section"):
        table.add_column(col)
    for m in t.memories:
        table.add_row(
            m.name,
            _size(m.capacity),
            _rate(m.read_bandwidth),
            _rate(m.write_bandwidth),
            f"{m.latency:g}",
            ", ".join(m.holds),
            m.section,
        )
    console.print(table)
    rates = ", ".join(f"{k} {v:g}" for k, v in t.macs_per_cycle.items())
    if t.core:
        console.print(
            f"clock {t.clock_hz / 1e6:g} MHz; compute: {time_model_label(t)}; "
            f"MACs per cycle for operators without instruction counts: {rates}"
        )
    else:
        console.print(f"clock {t.clock_hz / 1e6:g} MHz; MACs per cycle: {rates}")
    for source in t.sources:
        console.print(f"source: {source}", highlight=False)


def run(args: argparse.Namespace, console: Console) -> int:
    if args.file is not None and args.name:
        raise UsageError("give a target NAME or --file, not both")
    if args.file is not None:
        _show(console, load_target(args.file))
        return 0
    if args.name:
        _show(console, load_builtin(args.name))
        return 0
    table = Table(title="built-in targets (arenaplan targets NAME for details)")
    table.add_column("name")
    table.add_column("description")
    table.add_column("memories")
    for name in builtin_names():
        t = load_builtin(name)
        table.add_row(
            name, t.description, ", ".join(f"{m.name} {_size(m.capacity)}" for m in t.memories)
        )
    console.print(table)
    return 0
