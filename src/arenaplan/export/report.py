"""A self-contained HTML report: the summary figures, the picture (inline SVG), what
is live at the peak, the memories of a spread plan, every planned tensor and, for
a target, the per-operator table of estimated times.

Self-contained: no external resource (style inline, picture inline); every piece of
text from the model or the caller is escaped. Claims are made only where they
hold: no saving against TFLM's planner when TFLM refuses the model (``refusal``),
or when the plan spreads over memories (TFLM's own planner has one arena; the page
says why the laid-out head is larger than one arena would be).

Operators are numbered as in the model planned. When a rewrite or weight copies
changed its operators (``origin``), the operator and weights tables also give each
operator's number in the model as given, and say which numbering what uses.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING

from arenaplan.cost.roofline import default_memory
from arenaplan.cost.timing import estimate, time_model_label
from arenaplan.export.figures import ONE, POOLS, SPLIT, TWO, Figures, weights_totals
from arenaplan.export.picture import render, render_memories
from arenaplan.export.summary import find_peak, saving
from arenaplan.ir.model import Model
from arenaplan.passes import INSERTED
from arenaplan.placement.plan import Plan
from arenaplan.runtime.registry import runtime_of
from arenaplan.targets.model import Target
from arenaplan.weights.plan import WeightsPlan

if TYPE_CHECKING:
    from arenaplan.cost.roofline import TensorKey
    from arenaplan.export.rewrite_effect import RewriteEffect

Region = tuple[str, int, int, int]  # (memory, base in the laid-out head, bytes used, capacity)
# (subgraph, operator) of the model planned -> the operator of the model as given it
# came from (its index in that subgraph), None for one a rewrite inserted
OriginMap = Mapping[tuple[int, int], int | None]

_STYLE = """body{font-family:sans-serif;margin:2em;max-width:70em}
table{border-collapse:collapse;margin-bottom:1em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td.text,th.text{text-align:left}
.refusal{border:2px solid #c00;background:#fee;padding:0.5em 1em;font-size:1.1em}
caption{text-align:left;font-weight:bold;padding:4px 0}"""


def _row(cells: list[str], tag: str = "td", text: tuple[int, ...] = ()) -> str:
    """One table row; every cell escaped. ``text``: columns aligned left."""
    out = []
    for k, c in enumerate(cells):
        cls = " class='text'" if k in text else ""
        out.append(f"<{tag}{cls}>{html.escape(c)}</{tag}>")
    return "<tr>" + "".join(out) + "</tr>"


def _table(head: list[str], rows: list[list[str]], text: tuple[int, ...] = ()) -> str:
    body = "".join(_row(r, text=text) for r in rows)
    return f"<table>{_row(head, 'th', text)}{body}</table>"


def _weights(wp: WeightsPlan, origin: OriginMap | None, name: str, figures: Figures) -> str:
    """Per operator: its weights policy, the RAM it takes, its estimated time; its
    number in the model planned and, where operators changed, in the model as given."""
    rows, numbering = [], ""
    for c, b in zip(wp.choices, wp.baseline_seconds, strict=True):
        row = [str(c.op), c.weights.opcode, f"{c.weights.bytes:,}", c.policy.label,
               f"{c.ram:,}", f"{c.seconds * 1e3:.3f}", f"{(c.seconds - b) * 1e3:+.3f}"]  # fmt: skip
        if origin is not None:
            op = wp.planned_op(c.op)
            row[:1] = [str(op), _original(origin.get((0, op)), c.weights.opcode)]
        rows.append(row)
    head = ["operator", "opcode", "weights B", "policy", f"{wp.dest} B", "ms (estimate)",
            f"vs {wp.baseline} ms"]  # fmt: skip
    text = (1, 3)
    if origin is not None:
        head[1:1], text = ["original op"], (1, 2, 4)
        numbering = (
            "<p>“operator” numbers the operators of the model as planned (the operator "
            "table's “#”, fetch.h's op, the JSON's staging buffers and blob index); "
            f"“original op” numbers those of {html.escape(name)} as given.</p>"
        )
    return (
        f"<h2>Weights</h2><p>from {html.escape(wp.source)}, staged into "
        f"{html.escape(wp.dest)}; {html.escape(weights_totals(figures))} (the target's time model "
        "plus copy times)</p>" + numbering + _table(head, rows, text=text)
    )


def _original(came: int | None, opcode: str) -> str:
    """An operator's number in the model as given, or why it is new."""
    return str(came) if came is not None else f"new: {INSERTED.get(opcode, 'inserted')}"


def _figures(
    plan: Plan, refusal: str | None, figures: Figures, regions: list[Region] | None = None
) -> str:
    """The head against the bounds and TFLM's planner, and the tail of the plan's
    build profile (the figures every other surface shows); for a plan spread over
    memories, why its head is larger than one arena."""
    runtime = runtime_of(plan.kernels)
    rows = [("lower bound (live bytes at the peak)", plan.lower_bound)]
    if refusal is None and runtime.plans_by_greedy:
        rows.append(("TFLM's greedy planner, no offline plan", plan.tflm_greedy))
    ours = "arenaplan head" + (" (proven optimal)" if plan.optimal else "")
    if regions:
        ours = "arenaplan head, memories laid end to end (below)"
    rows.append((ours, figures.head))
    how = "estimate, at least" if figures.unmodelled else "predicted"
    tail = f"{runtime.title} {runtime.tail_name}"
    rows.append((f"{tail}, profile {figures.profile} ({how})", figures.tail))
    table = _table(["", "bytes"], [[k, f"{v:,}"] for k, v in rows], text=(0,))
    if regions and runtime.pools_per_memory:
        return table + _pools(regions)
    return table + (_spread(plan, regions, refusal) if regions else "")


def _pools(regions: list[Region]) -> str:
    """A plan over several memories of a runtime with a pool per memory: the memories
    that hold tensors are its pools, memory ids 1, 2, ... (an empty fastest memory,
    which ``regions`` lists all the same, is none)."""
    pools = [(m, used) for m, _, used, _ in regions if used > 0]
    parts = ", ".join(
        f"memory id {k}: {html.escape(m)} {used:,} B" for k, (m, used) in enumerate(pools, 1)
    )
    return (
        f"<p>This plan spreads the tensors over {len(pools)} memories, each a pool of its "
        f"own ({parts}); the head figure above is their sum.</p>"
    )


def _effect(effect: RewriteEffect | None, rewritten: str) -> str:
    """Head, tail, whole arena and estimated time before and after a proven rewrite."""
    if effect is None:
        return ""
    rows = []
    for label, side in (("the model as given", effect.before), (rewritten, effect.after)):
        seconds = side.latency_seconds
        latency = f"{1e3 * seconds:.3f}" if seconds is not None else "-"
        rows.append([label, f"{side.head:,}", f"{side.tail:,}", f"{side.whole:,}", latency])
    head = ["model", "head (B)", "tail (B)", "whole arena (B)", "estimated latency (ms)"]
    note = f"profile {effect.profile}"
    if effect.latency_model:
        note += f"; latency: {effect.latency_model}, activations in the fastest memory"
    return (
        "<h2>Against the model as given</h2>"
        + _table(head, rows, text=(0,))
        + f"<p>{html.escape(note)}</p>"
    )


def _firmware(figures: Figures) -> str:
    """What the firmware sets: each array, its memory and bytes, and the latency."""
    rows = [
        [
            a.role,
            a.memory or "-",
            ("at least " if a.at_least else "") + f"{a.bytes:,}",
            ", ".join(f"{what} {n:,} B" for what, n in a.parts),
        ]
        for a in figures.arrays
    ]
    words = {ONE: "one arena", TWO: "two arenas", SPLIT: "the split arena (--planner-cpp)"}
    words[POOLS] = "a pool per memory and the method allocator"
    title = runtime_of(figures.kernels).title
    text = (
        f"<h2>What the firmware sets</h2><p>{words[figures.layout]}, sized for {title} build "
        f"profile {html.escape(str(figures.profile))}"
    )
    if figures.latency is not None:
        text += (
            f"; estimated latency {figures.latency * 1e3:,.3f} ms "
            f"({html.escape(figures.latency_label)})"
        )
    text += "</p>" + _table(["array", "memory", "bytes", "holds"], rows, text=(0, 1, 3))
    if figures.unmodelled:
        notes = html.escape("; ".join(figures.unmodelled))
        text += f"<p>Not modelled (the estimates leave it out): {notes}</p>"
    return text


def _spread(plan: Plan, regions: list[Region], refusal: str | None) -> str:
    """Why the head of a plan over several memories is larger than one arena: it is
    the memories' regions end to end (``regions``: the fastest memory's first)."""
    fast, _, fast_used, fast_capacity = regions[0]
    parts = ", ".join(f"{html.escape(m)} {used:,} B" for m, _, used, _ in regions)
    tflm = "" if refusal is not None else f" (its greedy planner's {plan.tflm_greedy:,} B above)"
    return (
        f"<p>This plan spreads the activations over {len(regions)} memories: "
        f"{parts}. The offline plan lays those memories end to end in TFLM's one head, so "
        f"that TFLM can check it; the head figure above, {plan.arena:,} B, is therefore the "
        "sum of the regions, and it is not comparable with TFLM's single arena"
        f"{tflm}: no saving or loss against TFLM's planner is claimed. The fastest memory, "
        f"{html.escape(fast)}, holds only {fast_used:,} B: that is the figure to compare, "
        f"with the {fast_capacity:,} B capacity asked for it; what the firmware sets in "
        "each memory is below.</p>"
    )


def _claim(plan: Plan, refusal: str | None, spread: bool) -> str:
    """The saving against TFLM's planner, only where it holds."""
    if not runtime_of(plan.kernels).plans_by_greedy:
        return ""
    saved = saving(plan, spread, refusal is not None)
    if not saved:
        return ""
    return f"<p>saves {saved:,} B ({saved / plan.tflm_greedy:.1%}) against TFLM's planner</p>"


def _refusal(refusal: str) -> str:
    return (
        "<p class='refusal'><strong>TFLM's reference kernels will refuse this model:</strong> "
        f"{html.escape(refusal)}. The plan is still valid planner output; no comparison "
        "with TFLM's own planner is made.</p>"
    )


def _peak(model: Model, plan: Plan) -> str:
    peak = find_peak(model, plan)
    rows = [[label, f"{off:,}", f"{size:,}"] for label, size, off in peak.tensors]
    return (
        f"<h2>Live at the peak</h2><p>scope {peak.scope}: {peak.live_bytes:,} B live "
        f"in {len(peak.tensors)} buffers (tensors and kernel scratch), by offset</p>"
        + _table(["buffer", "offset", "bytes"], rows, text=(0,))
    )


def _bases(regions: list[Region] | None) -> dict[str, int]:
    return {memory: base for memory, base, _, _ in regions or []}


def _memory_of(key: TensorKey, offset: int, where, regions) -> str:
    """The memory a tensor lives in: from ``where``, else from its region."""
    if where is not None and key in where:
        return where[key]
    for memory, base, used, _ in regions or []:
        if base <= offset < base + used:
            return memory
    return ""


def _memories(plan: Plan, where, regions: list[Region]) -> str:
    counts: dict[str, int] = {}
    for t in plan.tensors:
        m = _memory_of((t.subgraph, t.index), t.offset, where, regions)
        counts[m] = counts.get(m, 0) + 1
    rows = [
        [memory, f"{capacity:,}", f"{used:,}", str(counts.get(memory, 0)), _region(base, used)]
        for memory, base, used, capacity in regions
    ]
    return "<h2>Memories</h2>" + _table(
        ["memory", "capacity", "bytes used", "tensors", "region in the head"], rows, text=(0,)
    )


def _region(base: int, used: int) -> str:
    return f"{base:,}..{base + used:,}" if used else "-"


def _tensors(plan: Plan, where, regions: list[Region] | None) -> str:
    spread = bool(regions)
    bases = _bases(regions)
    head = ["subgraph", "index", "name", "bytes", "offset", "lifetime [first, last]"]
    if spread:
        head += ["memory", "offset in memory"]
    rows = []
    for t in sorted(plan.tensors, key=lambda t: (t.subgraph, t.index)):
        row = [
            str(t.subgraph),
            str(t.index),
            t.name,
            f"{t.bytes:,}",
            f"{t.offset:,}",
            f"[{t.first}, {t.last}]",
        ]
        if spread:
            m = _memory_of((t.subgraph, t.index), t.offset, where, regions)
            row += [m, f"{t.offset - bases[m]:,}" if m in bases else ""]
        rows.append(row)
    return (
        f"<h2>Tensors ({len(rows)} planned)</h2><p>offsets in the head (bytes); "
        "lifetimes in TFLM's scopes, inclusive (scope 0 = inputs, operator i runs in "
        "scope i+1)</p>" + _table(head, rows, text=(2, 6))
    )


def _where(t, where: Mapping[TensorKey, str] | None) -> str:
    """Memories of the activations an operator touches, e.g. "tcm 2, ocram 1"."""
    if where is None:
        return ""
    counts: dict[str, int] = {}
    for key, _ in (*t.work.reads, *t.work.writes):
        if key in where:
            counts[where[key]] = counts.get(where[key], 0) + 1
    return ", ".join(f"{m} {n}" for m, n in counts.items())


def _operators(
    model: Model,
    target: Target,
    where: Mapping[TensorKey, str] | None = None,
    origin: OriginMap | None = None,
    numbering: str = "",
) -> str:

    placed = {**default_memory(model, target), **(where or {})}
    times = estimate(model, target, placed)
    total = sum(t.seconds for t in times)
    head = [
        "#",
        "operator",
        "MACs / elements",
        "bytes read",
        "bytes written",
        "estimated µs",
        "bound by",
        "activations in",
    ]
    rows = [
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
        for t in times
    ]
    text = (1, 6, 7)
    if origin is not None:
        head[1:1], text = ["original op"], (1, 2, 7, 8)
        for t, row in zip(times, rows, strict=True):
            came = origin.get((t.work.subgraph, t.work.op))
            row[1:1] = [_original(came, t.work.opcode)]
    return (
        f"<h2>Operators on {html.escape(target.name)} "
        f"({'as placed' if where else 'all in the fastest memory'})</h2>"
        f"<p>estimated total {total * 1e3:.2f} ms ({time_model_label(target)})</p>"
        + numbering
        + _table(head, rows, text=text)
    )


def _origins(model: Model, origin: OriginMap, numbering: str) -> str:
    """Without a target (no times): each operator and where it came from."""
    rows = [
        [str(op.index), _original(origin.get((sg.index, op.index)), op.opcode), op.opcode]
        for sg in model.subgraphs
        for op in sg.operators
    ]
    return "<h2>Operators</h2>" + numbering + _table(["#", "original op", "operator"], rows, (1, 2))


def _numbering(name: str, rewritten: str, weights: bool) -> str:
    """Which numbering what uses, when the operators are not those of the model given."""
    also = ", the weights table's “operator” and fetch.h's op (--schedule)" if weights else ""
    return (
        "<p>This table numbers the operators of the model as planned "
        f"({html.escape(rewritten)} changed them), as do the scopes in this report{also}. "
        f"“original op” is the operator's number in {html.escape(name)} as given (“new”: "
        "an operator the rewrite inserted); the JSON plan's operator_origin holds the same "
        "map.</p>"
    )


def html_report(
    model: Model,
    plan: Plan,
    name: str,
    target: Target | None,
    where: Mapping[TensorKey, str] | None = None,
    regions: list[Region] | None = None,
    *,
    refusal: str | None = None,
    persistent: tuple[str | None, int] | None = None,
    weights: WeightsPlan | None = None,
    figures: Figures,
    origin: OriginMap | None = None,
    rewritten: str = "a rewrite",
    effect: RewriteEffect | None = None,
) -> str:
    """The page. ``where``/``regions``: a placement over several memories, when there
    is one (``regions``: (memory, base in the laid-out head, bytes used, capacity)).

    ``refusal``: a one-line reason TFLM's reference kernels will refuse the model, or
    None; shown at the top, and then the page claims no saving against TFLM's
    planner (its figure and its line in the picture are left out).
    ``persistent``: TFLM's persistent arena for the picture, (memory or None for one
    arena, bytes), as ``picture.render`` / ``render_memories`` take it; None leaves
    it out of the picture. ``weights``: the weights policies (``plan --weights``).
    ``figures``: the plan's figures (``export.figures``), as every surface shows them.
    ``origin``: where each operator came from in the model as given, when a rewrite
    or weight copies changed the operators (None: they are the model's own);
    ``rewritten``: what changed them, in words ("passes reorder, bands"); ``effect``:
    what a proven rewrite changed against the model as given.
    """
    title = f"arena plan: {name}"
    picture = (
        render_memories(plan, regions, title, "svg", persistent=persistent)
        if regions
        else render(plan, title, "svg", persistent=persistent, tflm_planner=refusal is None)
    )
    svg = picture.decode()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog to inline it
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>arenaplan: "
        f"{html.escape(name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>arenaplan: {html.escape(name)}</h1>",
    ]
    if refusal is not None:
        parts.append(_refusal(refusal))
    parts += [
        _figures(plan, refusal, figures, regions),
        _claim(plan, refusal, bool(regions)),
        _firmware(figures),
        _effect(effect, rewritten),
        "<h2>Time x address</h2>",
        svg,
    ]
    if regions:
        parts.append(_memories(plan, where, regions))
    parts.append(_peak(model, plan))
    if weights is not None:
        parts.append(_weights(weights, origin, name, figures))
    numbering = _numbering(name, rewritten, weights is not None) if origin is not None else ""
    if target is not None:
        parts.append(_operators(model, target, where, origin, numbering))
    elif origin is not None:
        parts.append(_origins(model, origin, numbering))
    parts.append(_tensors(plan, where, regions))
    parts.append("</body></html>\n")
    return "".join(parts)
