"""``arenaplan passes``: what each graph rewrite does and its options."""

from __future__ import annotations

import argparse
import dataclasses

from rich.console import Console
from rich.table import Table

from arenaplan.passes import PASS_CLASSES, pass_class
from arenaplan.passes.pipeline import plain_option


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "passes",
        help="list the graph rewrites (--passes of plan)",
        description="The graph rewrites `plan --passes` runs, in the order given; each is "
        "verified after it runs, and the rewritten model is proven in TFLM before it "
        "is written.",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    table = Table(title="passes (plan --passes a,b,...)", show_lines=True)
    table.add_column("name")
    table.add_column("what it does")
    table.add_column("options (default)")
    for name in PASS_CLASSES:
        cls = pass_class(name)
        options = ", ".join(f"{f.name}={_default(f)!r}" for f in dataclasses.fields(cls))
        table.add_row(name, cls.summary, options or "-")
    console.print(table)
    return 0


def _default(f: dataclasses.Field) -> object:
    """An option's default as a user types it (a kernel set or profile: its spelling)."""
    if f.default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
        return plain_option(f.default_factory())
    return plain_option(f.default)
