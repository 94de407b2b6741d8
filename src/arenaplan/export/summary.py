"""The terminal summary of a plan: arena vs lower bound vs TFLM, and the peak."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from arenaplan.export.json_plan import persistent_figures
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan


@dataclass(frozen=True, slots=True)
class Peak:
    """The scope where live bytes (tensors and scratch, aligned) are largest."""

    scope: int
    live_bytes: int
    tensors: tuple[tuple[str, int, int], ...]  # (label, size, offset)


def find_peak(model: Model, plan: Plan) -> Peak:
    items = [
        (_label(t.subgraph, t.index, t.name), t.size, t.offset, t.first, t.last)
        for t in plan.tensors
    ]
    items += [
        (f"scratch #{s.order} (op {s.op})", s.size, s.offset, s.first, s.last) for s in plan.scratch
    ]
    scopes = {f for *_, f, _ in items} | {last for *_, last in items}
    best = Peak(0, 0, ())
    for scope in sorted(scopes):
        live = [(label, size, off) for label, size, off, f, last in items if f <= scope <= last]
        total = sum(size for _, size, _ in live)
        if total > best.live_bytes:
            best = Peak(scope, total, tuple(sorted(live, key=lambda x: x[2])))
    return best


def _label(subgraph: int, index: int, name: str, width: int = 48) -> str:
    text = f"t{index} {name}" if subgraph == 0 else f"s{subgraph}:t{index} {name}"
    return text if len(text) <= width else text[: width - 1] + "…"


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}x" if b else "-"


def print_summary(console: Console, model: Model, plan: Plan, name: str) -> None:
    table = Table(title=f"arena plan: {name}", show_header=True, header_style="bold")
    table.add_column("")
    table.add_column("bytes", justify="right")
    table.add_column("vs lower bound", justify="right")
    table.add_row("lower bound (live bytes at the peak)", f"{plan.lower_bound:,}", "1.00x")
    table.add_row(
        "TFLM greedy planner (no plan)",
        f"{plan.tflm_greedy:,}",
        _ratio(plan.tflm_greedy, plan.lower_bound),
    )
    verdict = "optimal (= lower bound)" if plan.optimal else "not proven optimal"
    table.add_row(
        f"[bold]arenaplan ({verdict})[/bold]",
        f"[bold]{plan.arena:,}[/bold]",
        _ratio(plan.arena, plan.lower_bound),
    )
    console.print(table)
    saved = plan.tflm_greedy - plan.arena
    if saved > 0:
        console.print(f"saves {saved:,} B ({saved / plan.tflm_greedy:.1%}) against TFLM's planner")
    console.print(
        f"{model.operator_count} operators, {len(plan.tensors)} tensors in the arena, "
        f"{len(plan.scratch)} kernel scratch buffers; planned in "
        f"{plan.seconds * 1000:.1f} ms ({plan.allocator}, {plan.strategy})"
    )
    figures = persistent_figures(model, plan)
    host, arm = figures["pypi"], figures["arm32"]
    console.print(
        f"TFLM tail (persistent, predicted): {host['tail']:,} B on the 64-bit host, "
        f"{arm['tail']:,} B on 32-bit ARM; smallest working arena with this plan: "
        f"{host['min_arena']:,} B / {arm['min_arena']:,} B"
    )
    _print_peak(console, find_peak(model, plan))


def _print_peak(console: Console, peak: Peak, shown: int = 12) -> None:
    """The largest buffers live at the peak, by offset; the rest summed up."""
    largest = sorted(peak.tensors, key=lambda x: -x[1])[:shown]
    table = Table(title=f"live at the peak (scope {peak.scope}: {peak.live_bytes:,} B)")
    table.add_column("buffer")
    table.add_column("offset", justify="right")
    table.add_column("bytes", justify="right")
    for label, size, off in sorted(largest, key=lambda x: x[2]):
        table.add_row(label, f"{off:,}", f"{size:,}")
    rest = len(peak.tensors) - len(largest)
    if rest:
        rest_bytes = peak.live_bytes - sum(size for _, size, _ in largest)
        table.add_row(f"... {rest} more buffers", "", f"{rest_bytes:,}")
    console.print(table)
