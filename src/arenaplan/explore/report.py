"""The HTML page of a finished sweep: self-contained (SVG inline), tables behind plots.

Per model: estimated latency against the size of the fastest memory, one curve per
(target, passes, weights), only where the plan fits; its Pareto points (no smaller
size is as fast) in the table below the plot. Across the models: for each
(target, passes, weights), the smallest swept size whose memory holds the whole
plan of N% of the models by itself (no activation spread to slower memories).
Latencies are estimates of the targets' time models.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from arenaplan.export.picture import pyplot, save

SHARES = (50, 75, 90, 100)  # % of the models
_STYLE = """body{font-family:sans-serif;margin:2em;max-width:80em}
table{border-collapse:collapse;margin-bottom:1em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}"""

Row = dict[str, Any]


def _series(row: Row) -> str:
    return f"{row['target']} / passes {row['passes']} / weights {row['weights']}"


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cells(values, tag):
        return "".join(f"<{tag}>{html.escape(str(v))}</{tag}>" for v in values)

    body = "".join(f"<tr>{cells(r, 'td')}</tr>" for r in rows)
    return f"<table><tr>{cells(head, 'th')}</tr>{body}</table>"


def pareto(points: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """(size, latency) points no smaller size beats or matches, by size."""
    front: list[tuple[int, float]] = []
    for size, latency in sorted(points):
        if not front or latency < front[-1][1]:
            front.append((size, latency))
    return front


def smallest_fitting(rows: Sequence[Row], share: int) -> dict[str, int | None]:
    """Per series: the smallest swept size that holds the plan of ``share``% of the
    models in the fastest memory alone."""
    by: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    sizes: dict[str, set[int]] = defaultdict(set)
    models = {r["model_hash"] for r in rows}
    for r in rows:
        sizes[_series(r)].add(r["sram"])
        if r["fits"] and not r["spread"]:
            by[_series(r)][r["model_hash"]].add(r["sram"])
    out: dict[str, int | None] = {}
    for series in sorted(sizes):
        out[series] = None
        for size in sorted(sizes[series]):
            fit = sum(1 for fits in by[series].values() if any(s <= size for s in fits))
            if 100 * fit >= share * len(models):
                out[series] = size
                break
    return out


def _model_section(name: str, rows: Sequence[Row]) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    table = []
    by: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by[_series(r)].append(r)
    for series in sorted(by):
        points = [(r["sram"], r["latency"] * 1e3) for r in by[series] if r["fits"]]
        if points:
            xs, ys = zip(*sorted(points), strict=True)
            ax.plot([x / 1024 for x in xs], ys, marker=".", label=series)
        for size, ms in pareto(points):
            mem = next(r["memories"] for r in by[series] if r["sram"] == size and r["fits"])
            table.append([series, f"{size:,}", f"{ms:.3f}", _memories(mem)])
        failed = [r for r in by[series] if not r["fits"]]
        if failed:
            smallest = min(r["sram"] for r in failed)
            table.append([series, f"below {smallest + 1:,}", "-", failed[0]["error"] or ""])
    ax.set_xscale("log")
    ax.set_xlabel("fastest memory (KiB)")
    ax.set_ylabel("estimated latency (ms)")
    ax.legend(fontsize=6)
    svg = save(plt, fig, "svg").decode()
    svg = svg[svg.index("<svg") :]
    head = ["series", "fastest memory B (Pareto)", "ms (estimate)", "bytes per memory / why not"]
    return f"<h2>{html.escape(name)}</h2>{svg}{_table(head, table)}"


def _memories(text: str) -> str:
    return ", ".join(f"{m} {b:,}" for m, b in json.loads(text).items())


def sweep_report(rows: Sequence[Row], title: str) -> str:
    """The page for the rows of one sweep (ordered by key: the same rows give the
    same page)."""
    models: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        models[f"{r['model']} ({r['model_hash'][:8]})"].append(r)
    zoo = []
    fits = {share: smallest_fitting(rows, share) for share in SHARES}
    for series in sorted(fits[SHARES[0]]):
        zoo.append([series, *(_size(fits[s][series]) for s in SHARES)])
    failed = [r for r in rows if r["status"] == "failed"]
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>arenaplan sweep: "
        f"{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>arenaplan sweep: {html.escape(title)}</h1>",
        f"<p>{len(rows)} results, {len(models)} models, {len(failed)} failed tasks; "
        "latencies are estimates of the targets' time models.</p>",
        "<h2>Across the models: the smallest fastest memory that holds the whole plan of N% "
        "of them, with no activation spread (bytes; - : no swept size does)</h2>",
        _table(["series", *(f"{s}%" for s in SHARES)], zoo),
    ]
    if failed:
        parts.append("<h2>Failed tasks</h2>")
        rows_failed = [[r["model"], _series(r), r["sram"], r["error"]] for r in failed]
        parts.append(_table(["model", "series", "size", "error"], rows_failed))
    for name in sorted(models):
        parts.append(_model_section(name, models[name]))
    parts.append("</body></html>\n")
    return "".join(parts)


def _size(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
