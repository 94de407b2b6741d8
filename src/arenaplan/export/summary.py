"""The terminal summary of a plan: arena vs lower bound vs TFLM, the peak, in plain words.

The line a firmware engineer needs (the arena to set) is the plan's figures'
(``export.memories_summary.target_arena_line``). Claims are made only where
they hold: no "saves N B against TFLM's planner" when TFLM will refuse the model,
or when the plan spreads over memories (TFLM's own planner has one arena only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.runtime.registry import runtime_of
from arenaplan.runtime.spec import KernelSet

if TYPE_CHECKING:  # types only: the summary prints what the passes and the proof say
    from arenaplan.export.rewrite_effect import RewriteEffect
    from arenaplan.passes.pipeline import PassRecord
    from arenaplan.runtime.proof import Proof

WORDS = (
    "How to read this: TFLM's tensor arena has two parts. The head holds what lives "
    "only while the model runs (activations and kernel scratch buffers): arenaplan "
    "plans it. The tail holds what lives as long as the interpreter (TFLM's own "
    "structures, operator data, variable tensors): it is predicted for a build profile. "
    "A scope is one step of TFLM's schedule: scope 0 holds the model's inputs, "
    "operator i runs in scope i+1."
)


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


def print_summary(
    console: Console,
    model: Model,
    plan: Plan,
    name: str,
    spread: bool = False,
    refusals: Sequence[str] = (),
    rewritten: bool = False,
) -> None:
    """The plan against its bounds, the claims that hold, the peak and the tail.
    ``rewritten``: passes changed the graph, so the bounds are the rewritten graph's
    (the rows say so; ``print_rewrite`` compares it with the model as given)."""
    table = Table(title=f"arena plan: {escape(name)}", show_header=True, header_style="bold")
    table.add_column("head (non-persistent arena)")
    table.add_column("bytes", justify="right")
    table.add_column("vs lower bound", justify="right")
    graph = " of the rewritten graph" if rewritten else ""
    table.add_row(f"lower bound{graph} (live bytes at the peak)", f"{plan.lower_bound:,}", "1.00x")
    own, own_bytes = runtime_of(plan.kernels).own_plan(model, plan)
    table.add_row(
        own.replace(" (", " on the rewritten graph (", 1) if rewritten else own,
        f"{own_bytes:,}",
        _ratio(own_bytes, plan.lower_bound),
    )
    verdict = "optimal (= lower bound)" if plan.optimal else "not proven optimal"
    what = "memories laid end to end" if spread else verdict
    table.add_row(
        f"[bold]arenaplan ({what})[/bold]",
        f"[bold]{plan.arena:,}[/bold]",
        _ratio(plan.arena, plan.lower_bound),
    )
    console.print(table)
    _print_claims(console, model, plan, spread, refusals)
    console.print(
        f"{model.operator_count} operators, {len(plan.tensors)} tensors in the arena, "
        f"{len(plan.scratch)} kernel scratch buffers; planned in "
        f"{plan.seconds * 1000:.1f} ms ({plan.allocator}, {plan.strategy})"
    )
    _print_peak(console, find_peak(model, plan))
    console.print(runtime_of(plan.kernels).summary_words or WORDS, style="dim")
    console.print(tail_line(model, plan.kernels))


def estimate_words(notes: Sequence[str], shown: int = 2) -> str:
    """What an estimate leaves out, in a few words."""
    more = f" (and {len(notes) - shown} more)" if len(notes) > shown else ""
    return "; ".join(notes[:shown]) + more


def tail_line(model: Model, kernels: KernelSet | None = None) -> str:
    """The predicted tail per profile of the runtime (narrowest pointers and enums
    first) for ``kernels``; 'at least' and why where it is an estimate."""
    runtime = runtime_of(kernels)
    kernels = kernels or runtime.default_kernels()
    own = runtime.tail_words(model, kernels)
    if own:
        return own
    profiles = sorted(runtime.profiles(), key=lambda p: (p.pointer_bytes, p.enum_bytes))
    estimates = {p.name: runtime.tail(model, p, kernels) for p in profiles}
    figures = ", ".join(f"{e.bytes:,} B ({p})" for p, e in estimates.items())

    notes = sorted({n for e in estimates.values() for n in e.unmodelled})
    if not notes:
        return f"tail (persistent, predicted exactly): {figures}"
    return (
        f"tail (persistent): at least {figures}; an estimate: not modelled: {estimate_words(notes)}"
    )


def _print_claims(
    console: Console, model: Model, plan: Plan, spread: bool, refusals: Sequence[str]
) -> None:
    if refusals:
        more = f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else ""
        console.print(
            f"[bold yellow]TFLM's reference kernels will refuse this model:[/bold yellow] "
            f"{escape(refusals[0])}{more}. The figures hold for a TFLM build whose kernels "
            "run it; `arenaplan verify` cannot prove it."
        )
        return
    if spread:
        console.print(
            "the activations are spread over several memories; TFLM's own planner has one "
            "arena, so there is no like-for-like saving to report"
        )
        return
    label, own = runtime_of(plan.kernels).own_plan(model, plan)
    saved = max(own - plan.arena, 0)
    if saved:
        console.print(f"saves {saved:,} B ({saved / own:.1%}) against {label.split(' (')[0]}")


def saving(plan: Plan, spread: bool, refused: bool) -> int:
    """Bytes saved against TFLM's own planner, where that claim holds: TFLM runs the
    model and the plan is one arena like TFLM's; else 0."""
    if refused or spread:
        return 0
    return max(plan.tflm_greedy - plan.arena, 0)


def _print_peak(console: Console, peak: Peak, shown: int = 12) -> None:
    """The largest buffers live at the peak, by offset; the rest summed up."""
    largest = sorted(peak.tensors, key=lambda x: -x[1])[:shown]
    table = Table(title=f"live at the peak (scope {peak.scope}: {peak.live_bytes:,} B)")
    table.add_column("buffer")
    table.add_column("offset", justify="right")
    table.add_column("bytes", justify="right")
    for label, size, off in sorted(largest, key=lambda x: x[2]):
        table.add_row(escape(label), f"{off:,}", f"{size:,}")
    rest = len(peak.tensors) - len(largest)
    if rest:
        rest_bytes = peak.live_bytes - sum(size for _, size, _ in largest)
        table.add_row(f"... {rest} more buffers", "", f"{rest_bytes:,}")
    console.print(table)


def print_rewrite(
    console: Console,
    records: Sequence[PassRecord],
    proof: Proof | None,
    effect: RewriteEffect | None = None,
    compared: Sequence[tuple[tuple[str, ...], int]] = (),
    what: str = "whole arena",
) -> None:
    """One line per pass that ran, the pass lists compared (``compared``: each with
    its ``what`` figure, best first), the proof of the rewritten model, and what the
    rewrite changed against the model as given (``effect``)."""
    for r in records:
        console.print(f"pass {r.name}: {escape(r.note)}")
    if len(compared) > 1:
        lists = "; ".join(f"{','.join(names) or 'none'} {figure:,} B" for names, figure in compared)
        kept = ",".join(r.name for r in records) or "none"
        console.print(f"pass lists planned ({what}): {lists}; kept {kept}")
    if proof is None:
        return
    if not proof.proven:
        if records and proof.unavailable:  # written all the same (--write-unproven)
            console.print(f"[bold]UNPROVEN[/]: {escape(proof.reason or '')}")
        return
    console.print(
        f"proven in {proof.runtime}: outputs bit-identical to the original model's on "
        f"{proof.trials} random inputs; measured head {proof.head:,} B = the plan"
    )
    if effect is None:
        return
    b, a = effect.before, effect.after
    console.print(
        f"against the model as given: head {b.head:,} -> {a.head:,} B, "
        f"tail {b.tail:,} -> {a.tail:,} B, whole arena {b.whole:,} -> {a.whole:,} B "
        f"(profile {effect.profile})"
    )
    if b.latency_seconds is not None and a.latency_seconds is not None:
        change = 100 * (a.latency_seconds / b.latency_seconds - 1) if b.latency_seconds else 0.0
        console.print(
            f"estimated latency {1e3 * b.latency_seconds:.3f} -> {1e3 * a.latency_seconds:.3f} "
            f"ms ({change:+.1f}%; {effect.latency_model}, activations in the fastest memory)"
        )
