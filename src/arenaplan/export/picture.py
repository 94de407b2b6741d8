"""The time x address picture of a plan (matplotlib, an optional extra).

Each tensor is a rectangle over its inclusive scopes ``[first, last]`` (x) and
its bytes ``[offset, offset + size)`` (y, drawn in KiB); kernel scratch buffers
are hatched white. Neighbouring rectangles (touching or overlapping in time and
touching in address) never share a colour; the largest ones carry their tensor
index and KiB. The dashed line is the lower bound, the solid one the arena; TFLM's
persistent arena (its tail), when given, is a dotted block where it goes. Legends
sit outside the plotting area. Output is PNG or SVG, byte-identical for the same
plan (no dates, fixed SVG ids).

    address ^  persistent (tail)  ........    <- above the head, one arena
            |  +--t3--+   +--t7------+
            |  |      |   |          |
            |  +--t1--++--t5--+------+         <- head: tensors and scratch
            +------------------------> scope
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from arenaplan.errors import UsageError
from arenaplan.placement.plan import Plan
from arenaplan.runtime.registry import runtime_of

KIB = 1024
SCRATCH = "kernel scratch (placed by TFLM at run time)"
LABELLED = 8  # the largest rectangles (by area) that get a label, when it fits
LABEL_POINTS = 7.0  # font size of those labels
# A qualitative palette: tab10's ten distinct hues, then the light half of tab20,
# used only where a rectangle has ten or more neighbours (the real models' plans
# have at most 12).
HUES = 10
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#c7c7c7",
    "#dbdb8d",
    "#9edae5",
)
PERSISTENT_COLOUR = "#f2f2f2"


def pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("pictures need matplotlib: pip install 'arenaplan[report]'") from None
    matplotlib.rcParams["svg.hashsalt"] = "arenaplan"
    return plt


def save(plt, fig, fmt: str) -> bytes:
    """The figure as bytes, with no date or version in it (byte-identical reruns)."""
    out = io.BytesIO()
    meta = {"Date": None} if fmt == "svg" else {"Software": None}
    fig.savefig(out, format=fmt, metadata=meta, bbox_inches="tight")
    plt.close(fig)
    return out.getvalue()


@dataclass(frozen=True, slots=True)
class Box:
    """One rectangle of a panel: inclusive scopes ``[first, last]``, bytes
    ``[offset, offset + size)`` from the panel's base. ``label`` is None for scratch."""

    first: int
    last: int
    offset: int  # bytes
    size: int  # bytes
    label: str | None  # "t12 18.0 KiB" for a tensor, None for kernel scratch

    @property
    def area(self) -> int:
        return (self.last - self.first + 1) * self.size


def neighbours(a: Box, b: Box) -> bool:
    """Touching or overlapping in time (scopes) and touching in address."""
    in_time = a.first <= b.last + 1 and b.first <= a.last + 1
    return in_time and a.offset <= b.offset + b.size and b.offset <= a.offset + a.size


def colours(boxes: list[Box]) -> list[int]:
    """Palette index of each box, greedy in (first, offset) order: a colour no
    neighbour has, among the ten distinct hues the least used so far (so the hues
    are spread, not two or three alternating), a light one only when all ten are
    taken; if every colour is taken, the one fewest neighbours have."""
    order = sorted(range(len(boxes)), key=lambda k: (boxes[k].first, boxes[k].offset, k))
    chosen: dict[int, int] = {}
    used = [0] * len(PALETTE)
    for k in order:
        taken = [chosen[j] for j in chosen if neighbours(boxes[k], boxes[j])]
        c = min(range(len(PALETTE)), key=lambda c: (taken.count(c), c >= HUES, used[c], c))
        chosen[k] = c
        used[c] += 1
    return [chosen[k] for k in range(len(boxes))]


def _tensor_label(subgraph: int, index: int, nbytes: int) -> str:
    name = f"t{index}" if subgraph == 0 else f"s{subgraph}:t{index}"
    return f"{name} {nbytes / KIB:.1f} KiB"


def _boxes(plan: Plan, base: int = 0, end: int | None = None) -> list[Box]:
    """The plan's tensors and scratch buffers whose offset is in ``[base, end)``."""
    inside = (lambda off: base <= off < end) if end is not None else (lambda off: True)
    boxes = [
        Box(t.first, t.last, t.offset - base, t.size, _tensor_label(t.subgraph, t.index, t.bytes))
        for t in plan.tensors
        if inside(t.offset)
    ]
    boxes += [
        Box(s.first, s.last, s.offset - base, s.size, None)
        for s in plan.scratch
        if inside(s.offset)
    ]
    return boxes


def _scopes(plan: Plan) -> tuple[int, int]:
    """First and last scope any buffer of the plan is live in."""
    items = [*plan.tensors, *plan.scratch]
    return min([i.first for i in items] + [0]), max([i.last for i in items] + [1])


def _rect(plt, first: float, last: float, offset: int, size: int, **style):
    """Scopes [first, last] (a bar 0.9 wide per scope), bytes (drawn in KiB)."""
    return plt.Rectangle(
        (first - 0.45, offset / KIB), last - first + 0.9, size / KIB, edgecolor="black", **style
    )


def _draw_boxes(ax, plt, boxes: list[Box]) -> bool:
    """Rectangles, coloured apart; returns whether any is kernel scratch."""
    edge = 0.4 if len(boxes) <= 200 else 0.15  # thin edges where there are hundreds
    tensors = [b for b in boxes if b.label is not None]
    for b, c in zip(tensors, colours(tensors), strict=True):
        ax.add_patch(
            _rect(plt, b.first, b.last, b.offset, b.size, facecolor=PALETTE[c], linewidth=edge)
        )
    scratch = [b for b in boxes if b.label is None]
    for b in scratch:
        style = {"facecolor": "white", "hatch": "///", "linewidth": edge}
        ax.add_patch(_rect(plt, b.first, b.last, b.offset, b.size, **style))
    return bool(scratch)


def _fits(ax, x0: float, x1: float, y0: float, y1: float, lines: list[str], turned: bool) -> bool:
    """Would ``lines`` of text (LABEL_POINTS, turned 90 degrees or not) fit inside the
    data box ``[x0, x1] x [y0, y1]``? Measured in display pixels, after the limits."""
    (px0, py0), (px1, py1) = ax.transData.transform([(x0, y0), (x1, y1)])
    pixels = LABEL_POINTS * ax.figure.dpi / 72
    along = max(len(line) for line in lines) * 0.62 * pixels + 4
    across = len(lines) * 1.3 * pixels + 2
    width, height = (across, along) if turned else (along, across)
    return abs(px1 - px0) >= width and abs(py1 - py0) >= height


def _put_label(ax, x0: float, x1: float, y0: float, y1: float, label: str) -> bool:
    """``label`` centred in the box, in the first layout that fits: two lines, one
    line, then the same turned 90 degrees for tall narrow boxes."""
    for turned in (False, True):
        for text in (label.replace(" ", "\n", 1), label):
            if _fits(ax, x0, x1, y0, y1, text.splitlines(), turned):
                ax.text(
                    (x0 + x1) / 2,
                    (y0 + y1) / 2,
                    text,
                    ha="center",
                    va="center",
                    rotation=90 if turned else 0,
                    fontsize=LABEL_POINTS,
                    bbox={"facecolor": "white", "alpha": 0.75, "linewidth": 0, "pad": 1},
                )
                return True
    return False


def _label_largest(ax, boxes: list[Box]) -> None:
    """Tensor index and KiB inside the LABELLED largest tensors (by area), where it
    fits (call after the axis limits are set)."""
    tensors = [(b, b.label) for b in boxes if b.label is not None]
    tensors.sort(key=lambda bl: (-bl[0].area, bl[1]))
    for b, label in tensors[:LABELLED]:
        y0, y1 = b.offset / KIB, (b.offset + b.size) / KIB
        _put_label(ax, b.first - 0.45, b.last + 0.45, y0, y1, label)


def _shown_top(content: int, with_tail: int) -> int:
    """Bytes the y axis shows: everything, unless the persistent arena would squash
    the head below a third of the height; then the block is cut at the top."""
    return with_tail if with_tail <= 3 * max(content, 16) else 3 * max(content, 16)


def _persistent_block(
    ax, plt, first: int, last: int, base: int, tail: int, shown_top: int, name: str = "TFLM tail"
) -> None:
    """The runtime's persistent part (``name``: TFLM's tail): ``tail`` bytes from
    ``base`` (bytes in the panel), live over the whole run; cut at ``shown_top``
    bytes, the top of the axis."""
    ax.add_patch(
        _rect(
            plt,
            first,
            last,
            base,
            tail,
            facecolor=PERSISTENT_COLOUR,
            hatch="..",
            linewidth=0.8,
            linestyle="--",
            label=f"persistent ({name}, predicted) {tail:,} B",
        )
    )
    cut = base + tail > shown_top
    text = f"persistent ({name}, predicted)" + (", continues above" if cut else "")
    _put_label(ax, first - 0.45, last + 0.45, base / KIB, min(base + tail, shown_top) / KIB, text)


def _legend(ax, plt, scratch: bool) -> None:
    """The axes' legend outside it, to the right, with the scratch hatching."""
    handles, labels = ax.get_legend_handles_labels()
    if scratch:
        handles.append(
            plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="///")
        )
        labels.append(SCRATCH)
    if handles:
        ax.legend(
            handles,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            borderaxespad=0.0,
            fontsize="small",
        )


def _figure(
    plan: Plan,
    title: str,
    *,
    persistent: tuple[str | None, int] | None = None,
    memory: str | None = None,
    tflm_planner: bool = True,
):
    """(pyplot, figure) of one arena; see ``render``. The caller saves or closes it."""
    plt = pyplot()
    other = persistent[0] if persistent is not None and persistent[0] != memory else None
    if other:
        fig, (ax, side) = plt.subplots(
            2, 1, figsize=(10, 6.5), dpi=100, sharex=True, gridspec_kw={"height_ratios": [4, 1]}
        )
    else:
        fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    first, last = _scopes(plan)
    boxes = _boxes(plan)
    scratch = _draw_boxes(ax, plt, boxes)
    ax.axhline(
        plan.lower_bound / KIB,
        color="grey",
        linestyle="--",
        linewidth=1,
        label=f"lower bound {plan.lower_bound:,} B",
    )
    ax.axhline(plan.arena / KIB, color="black", linewidth=1, label=f"arena {plan.arena:,} B")
    head_top = plan.arena
    runtime = runtime_of(plan.kernels)
    name = f"{runtime.title} {runtime.tail_name}"
    if tflm_planner and runtime.plans_by_greedy and plan.tflm_greedy > plan.arena:
        head_top = plan.tflm_greedy
        ax.axhline(
            plan.tflm_greedy / KIB,
            color="red",
            linestyle=":",
            linewidth=1,
            label=f"TFLM's planner {plan.tflm_greedy:,} B",
        )
    tail = persistent[1] if persistent is not None and not other else 0
    top = _shown_top(head_top, max(head_top, plan.arena + tail))
    ax.set_xlim(first - 1, last + 1)
    ax.set_ylim(0, (top * 1.05 + 1) / KIB)
    if tail:
        _persistent_block(ax, plt, first, last, plan.arena, tail, top, name)
    _label_largest(ax, boxes)
    ax.set_ylabel(f"{memory}: offset in the arena (KiB)" if memory else "offset in the arena (KiB)")
    ax.set_title(title)
    _legend(ax, plt, scratch)
    if other and persistent is not None:
        _persistent_panel(plt, side, other, persistent[1], first, last, name)
        side.set_xlabel(runtime.scope_words)
    else:
        ax.set_xlabel(runtime.scope_words)
    return plt, fig


def _persistent_panel(
    plt, ax, memory: str, tail: int, first: int, last: int, name: str = "TFLM tail"
) -> None:
    """A panel for a memory that holds only the persistent arena (of those drawn)."""
    ax.set_xlim(first - 1, last + 1)
    ax.set_ylim(0, tail * 1.15 / KIB)
    _persistent_block(ax, plt, first, last, 0, tail, tail, name)
    ax.set_ylabel(f"{memory} (KiB)")
    ax.set_title(f"{memory}: persistent arena {tail:,} B (a second arena)", fontsize="small")
    _legend(ax, plt, False)


def render(
    plan: Plan,
    title: str,
    fmt: str,
    *,
    persistent: tuple[str | None, int] | None = None,
    memory: str | None = None,
    tflm_planner: bool = True,
) -> bytes:
    """The picture of one arena as ``fmt`` ("png" or "svg") bytes.

    ``persistent``: TFLM's persistent arena (its tail) as (memory, bytes), or None
    to leave it out. Memory None (or "", or ``memory``) means one arena: the block
    sits at the top of the arena, above the head. Another memory's name means two
    arenas: it gets a panel of its own, below the arena's. ``memory``: the memory
    that holds the arena, named in the axis label. ``tflm_planner``: draw TFLM's own
    planner's head as a line; False when TFLM refuses the model, so the picture
    claims nothing against it.
    """
    if fmt not in ("png", "svg"):
        raise UsageError(f"unknown picture format {fmt!r} (png or svg)")
    plt, fig = _figure(plan, title, persistent=persistent, memory=memory, tflm_planner=tflm_planner)
    return save(plt, fig, fmt)


def _figure_memories(
    plan: Plan,
    regions: list[tuple[str, int, int, int]],
    title: str,
    *,
    persistent: tuple[str | None, int] | None = None,
):
    """(pyplot, figure) of a plan spread over memories; see ``render_memories``."""
    plt = pyplot()
    panels = list(regions)
    holder = persistent[0] if persistent is not None and persistent[0] else regions[0][0]
    if persistent is not None and holder not in [r[0] for r in regions]:
        panels.append((holder, 0, 0, 0))  # a memory holding only the persistent arena
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(10, 2.6 * len(panels)), dpi=100, sharex=True, squeeze=False
    )
    fig.subplots_adjust(hspace=0.35)
    first, last = _scopes(plan)
    runtime = runtime_of(plan.kernels)
    for ax, (name, base, used, capacity) in zip(axes[:, 0], panels, strict=True):
        boxes = _boxes(plan, base, base + used) if used else []
        scratch = _draw_boxes(ax, plt, boxes)
        tail = persistent[1] if persistent is not None and name == holder else 0
        if capacity:
            ax.axhline(
                capacity / KIB,
                color="red",
                linestyle=":",
                linewidth=1,
                label=f"capacity {capacity:,} B",
            )
        content = _shown_top(used, used + tail) if used else tail
        top = max(content, 16) * 1.15
        if 0 < capacity < 2 * top:  # the capacity line when it is near the content
            top = max(top, capacity * 1.05)
        ax.set_xlim(first - 1, last + 1)
        ax.set_ylim(0, top / KIB)
        if tail:
            what = f"{runtime.title} {runtime.tail_name}"
            _persistent_block(ax, plt, first, last, used, tail, content, what)
        _label_largest(ax, boxes)
        ax.set_ylabel(f"{name} (KiB)")
        of = f" of {capacity:,} B" if capacity else ""
        ax.set_title(f"{name}: {used:,} B used{of}", fontsize="small")
        _legend(ax, plt, scratch)
    fig.suptitle(title)
    axes[-1, 0].set_xlabel(runtime.scope_words)
    return plt, fig


def render_memories(
    plan: Plan,
    regions: list[tuple[str, int, int, int]],
    title: str,
    fmt: str,
    *,
    persistent: tuple[str | None, int] | None = None,
) -> bytes:
    """One time x address panel per memory, as ``fmt`` bytes. ``regions``: (memory,
    base, bytes used, capacity) where each memory's region sits in the plan's
    laid-out head, fastest first.

    ``persistent``: TFLM's persistent arena (its tail) as (memory, bytes), or None to
    leave it out. It is drawn above the activations in that memory's panel (a panel
    of its own when the memory holds no activations); memory None (or "") means the
    first region's memory (one arena with the fastest memory's share of the head).
    """
    if fmt not in ("png", "svg"):
        raise UsageError(f"unknown picture format {fmt!r} (png or svg)")
    plt, fig = _figure_memories(plan, regions, title, persistent=persistent)
    return save(plt, fig, fmt)


def picture_format(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise UsageError(f"{path}: a picture must end in .png or .svg")
    return fmt
