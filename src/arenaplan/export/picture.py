"""The time x address picture of a plan (matplotlib, an optional extra).

Each tensor is a rectangle over its inclusive scopes ``[first, last]`` (x) and
its bytes ``[offset, offset + size)`` (y); scratch buffers are hatched. The
dashed line is the lower bound, the solid one the arena. Output is PNG or SVG,
byte-identical for the same plan (no dates, fixed SVG ids).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from arenaplan.errors import UsageError
from arenaplan.placement.plan import Plan


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


def _box(ax, plt, item, **style) -> None:
    """One buffer: scopes [first, last] (x, a bar 0.9 wide per scope), bytes (y)."""
    width = item.last - item.first + 0.9
    ax.add_patch(
        plt.Rectangle(
            (item.first - 0.45, item.offset),
            width,
            item.size,
            edgecolor="black",
            linewidth=0.4,
            **style,
        )
    )


def render(plan: Plan, title: str, fmt: str) -> bytes:
    """The picture as ``fmt`` ("png" or "svg") bytes."""
    if fmt not in ("png", "svg"):
        raise UsageError(f"unknown picture format {fmt!r} (png or svg)")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    for k, t in enumerate(plan.tensors):
        _box(ax, plt, t, facecolor=plt.cm.tab20(k % 20))
    for sc in plan.scratch:
        _box(ax, plt, sc, facecolor="white", hatch="///")
    last = max([t.last for t in plan.tensors] + [s.last for s in plan.scratch] + [1])
    first = min([t.first for t in plan.tensors] + [0])
    ax.axhline(
        plan.lower_bound,
        color="grey",
        linestyle="--",
        linewidth=1,
        label=f"lower bound {plan.lower_bound:,} B",
    )
    ax.axhline(plan.arena, color="black", linewidth=1, label=f"arena {plan.arena:,} B")
    if plan.tflm_greedy > plan.arena:
        ax.axhline(
            plan.tflm_greedy,
            color="red",
            linestyle=":",
            linewidth=1,
            label=f"TFLM's planner {plan.tflm_greedy:,} B",
        )
    ax.set_xlim(first - 1, last + 1)
    ax.set_ylim(0, max(plan.arena, plan.tflm_greedy) * 1.05 + 1)
    ax.set_xlabel("scope (TFLM: 0 = inputs, operator i runs in scope i+1)")
    ax.set_ylabel("offset in the arena (bytes)")
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize="small")
    return save(plt, fig, fmt)


def render_memories(
    plan: Plan, regions: list[tuple[str, int, int, int]], title: str, fmt: str
) -> bytes:
    """One time x address panel per memory. ``regions``: (memory, base, bytes used,
    capacity) where each memory's region sits in the plan's laid-out head."""
    plt = pyplot()
    fig, axes = plt.subplots(
        len(regions), 1, figsize=(10, 2.6 * len(regions)), dpi=100, squeeze=False
    )
    last = max([t.last for t in plan.tensors] + [s.last for s in plan.scratch] + [1])
    for ax, (memory, base, used, capacity) in zip(axes[:, 0], regions, strict=True):
        inside = [t for t in plan.tensors if base <= t.offset < base + max(used, 1)]
        inside += [s for s in plan.scratch if base <= s.offset < base + max(used, 1)]
        for k, item in enumerate(inside):
            shifted = dataclasses.replace(item, offset=item.offset - base)
            scratch = not hasattr(item, "name")
            _box(
                ax,
                plt,
                shifted,
                facecolor="white" if scratch else plt.cm.tab20(k % 20),
                **({"hatch": "///"} if scratch else {}),
            )
        ax.axhline(
            capacity, color="red", linestyle=":", linewidth=1, label=f"capacity {capacity:,} B"
        )
        ax.set_xlim(-1, last + 1)
        top = max(used, 16) * 1.15
        ax.set_ylim(0, max(top, capacity * 1.05) if capacity < 2 * top else top)
        ax.set_ylabel(f"{memory} (bytes)")
        ax.set_title(f"{memory}: {used:,} B used", fontsize="small")
        ax.legend(loc="upper right", fontsize="small")
    axes[0, 0].figure.suptitle(title)
    axes[-1, 0].set_xlabel("scope (TFLM: 0 = inputs, operator i runs in scope i+1)")
    return save(plt, fig, fmt)


def picture_format(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise UsageError(f"{path}: a picture must end in .png or .svg")
    return fmt
