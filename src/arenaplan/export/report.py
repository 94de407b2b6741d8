"""A self-contained HTML report: the summary figures, the picture (inline SVG) and,
for a target, the per-operator table of estimated times."""

from __future__ import annotations

import html
from collections.abc import Mapping

from arenaplan.analysis.cost import default_memory, estimate
from arenaplan.export.json_plan import persistent_figures
from arenaplan.export.picture import render, render_memories
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.targets.model import Target

_STYLE = """body{font-family:sans-serif;margin:2em;max-width:70em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:first-child,th:first-child,td:nth-child(2){text-align:left}"""


def _row(cells: list[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"


def _figures(model: Model, plan: Plan) -> str:
    p = persistent_figures(model, plan)
    rows = [
        ("lower bound (live bytes at the peak)", plan.lower_bound),
        ("TFLM's greedy planner, no offline plan", plan.tflm_greedy),
        ("arenaplan" + (" (proven optimal)" if plan.optimal else ""), plan.arena),
        ("TFLM tail, 64-bit host (predicted)", p["pypi"]["tail"]),
        ("TFLM tail, 32-bit ARM (predicted)", p["arm32"]["tail"]),
        ("smallest working arena, 64-bit host", p["pypi"]["min_arena"]),
        ("smallest working arena, 32-bit ARM", p["arm32"]["min_arena"]),
    ]
    return (
        "<table>"
        + _row(["", "bytes"], "th")
        + "".join(_row([k, f"{v:,}"]) for k, v in rows)
        + "</table>"
    )


def _where(t, where: Mapping[tuple[int, int], str] | None) -> str:
    """Memories of the activations an operator touches, e.g. "tcm 2, ocram 1"."""
    if where is None:
        return ""
    counts: dict[str, int] = {}
    for key, _ in (*t.work.reads, *t.work.writes):
        if key in where:
            counts[where[key]] = counts.get(where[key], 0) + 1
    return ", ".join(f"{m} {n}" for m, n in counts.items())


def _operators(
    model: Model, target: Target, where: Mapping[tuple[int, int], str] | None = None
) -> str:
    placed = {**default_memory(model, target), **(where or {})}
    times = estimate(model, target, placed)
    total = sum(t.seconds for t in times)
    head = _row(
        [
            "#",
            "operator",
            "MACs / elements",
            "bytes read",
            "bytes written",
            "estimated µs",
            "bound by",
            "activations in",
        ],
        "th",
    )
    body = "".join(
        _row(
            [
                str(t.work.op),
                t.work.opcode,
                f"{t.work.macs:,}",
                f"{sum(b for _, b in t.work.reads):,}",
                f"{sum(b for _, b in t.work.writes):,}",
                f"{t.seconds * 1e6:.1f}",
                t.bound,
                _where(t, where),
            ]
        )
        for t in times
    )
    return (
        f"<h2>Operators on {html.escape(target.name)} "
        f"({'as placed' if where else 'all in the fastest memory'})</h2>"
        f"<p>estimated total {total * 1e3:.2f} ms (roofline: the larger of compute and "
        f"per-memory transfer time)</p><table>{head}{body}</table>"
    )


def html_report(
    model: Model,
    plan: Plan,
    name: str,
    target: Target | None,
    where: Mapping[tuple[int, int], str] | None = None,
    regions: list[tuple[str, int, int, int]] | None = None,
) -> str:
    """``where``/``regions``: a placement over several memories, when there is one."""
    title = f"arena plan: {name}"
    picture = (
        render_memories(plan, regions, title, "svg") if regions else render(plan, title, "svg")
    )
    svg = picture.decode()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog to inline it
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>arenaplan: "
        f"{html.escape(name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>arenaplan: {html.escape(name)}</h1>",
        _figures(model, plan),
        "<h2>Time x address</h2>",
        svg,
    ]
    if target is not None:
        parts.append(_operators(model, target, where))
    parts.append("</body></html>\n")
    return "".join(parts)
