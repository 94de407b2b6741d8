"""``reorder``: run the operators of each subgraph in an order of lower peak.

The peak is the one the planner cannot go below (``allocation.bounds``): the
largest sum, over TFLM's scopes, of the live planned tensors and scratch buffers
of ``analysis.buffers.arena_items``, each rounded up to 16 bytes. The order is
searched by ``passes.schedule`` on the subgraph's own scopes (inputs in scope 0,
operator i in scope i+1, outputs alive to the last scope); the model is rewritten
only if the whole model's peak goes down, so the pass is never worse than the
order it was given.

An order keeps, besides every data edge:
  - operators that touch the same variable tensor, in their order (its state);
  - operators on resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE,
    or any operator with a resource tensor), in their order;
  - CALL_ONCE where it is: what came before it stays before, the rest after.
Subgraphs with other control flow (IF, WHILE, CALL), and subgraphs that control
flow calls, are left alone: their scopes interleave with their callers'.

The model's runtime (``Runtime.order_facts``) adds what its format says beyond the
IR: pairs of operators to keep in order, tensors that lie in another's bytes (a
touch of a view is a touch of its base: its data edges and its base's lifetime),
and subgraphs it does not let move. A variable tensor the runtime plans holds state
across calls: live over the whole subgraph. A runtime whose file's plan describes
the program's storage (``keeps_stored_plan``) keeps it; otherwise it is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise
from typing import ClassVar

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.analysis.buffers import ArenaItems, arena_items
from arenaplan.errors import ModelFormatError
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Subgraph
from arenaplan.passes.base import PassResult, origin_of_subgraphs
from arenaplan.passes.schedule import Found, OrderProblem, best_order, peak_bytes
from arenaplan.reader.tflite_reader import OFFLINE_PLAN_NAME
from arenaplan.runtime.records import OrderFacts
from arenaplan.runtime.registry import default_kernels, get, runtime_name_for

# state expansions of the search per second of ``time_limit`` (a count of work, not
# a clock, so that the result is the same on every machine; about a second's worth
# of expansions in CPython on a 2020s laptop)
WORK_PER_SECOND = 400_000

_RESOURCE_OPS = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"})


@dataclass(frozen=True, slots=True)
class Reorder:
    """``time_limit``: seconds of search (as a budget of work) for the whole model."""

    name: ClassVar[str] = "reorder"
    summary: ClassVar[str] = (
        "operator order of least peak of live activation bytes (exact search where it fits "
        "the time limit, the best found otherwise)"
    )

    time_limit: float = 2.0

    def run(self, model: Model) -> PassResult:
        runtime = get(runtime_name_for(model))
        kernels = default_kernels(runtime.name)
        items = arena_items(model, kernels=kernels)
        before, raw_before = _peaks(items)
        budget = max(int(self.time_limit * WORK_PER_SECOND), 0)
        subgraphs, found = [], []
        orders: dict[int, tuple[int, ...]] = {}  # subgraph -> its old operators in the new order
        for sg in model.subgraphs:
            facts = runtime.order_facts(model, sg.index)
            if facts.fixed is not None or not _may_reorder(model, sg):
                subgraphs.append(sg)
                continue
            problem = order_problem(model, items, sg, facts)
            given = tuple(range(len(sg.operators)))
            try:
                result = best_order(problem, given, max(budget - _work(found), 0))
            except ModelFormatError as exc:  # a cycle: the model has no order
                raise ModelFormatError(f"subgraph {sg.index}: {exc}") from None
            found.append(result)
            if result.peak < peak_bytes(problem, given):
                orders[sg.index] = result.order
            subgraphs.append(with_order(sg, orders[sg.index]) if sg.index in orders else sg)
        # an offline plan fits the old lifetimes only: dropped, as TFLM would trust it
        reordered = replace(
            model,
            subgraphs=tuple(subgraphs),
            metadata=tuple((k, b) for k, b in model.metadata if k != OFFLINE_PLAN_NAME),
            stored_plan=model.stored_plan if runtime.keeps_stored_plan else None,
        )
        after, raw_after = _peaks(arena_items(reordered, kernels=kernels))
        if after >= before:
            note = f"operator order kept: peak {before:,} B"
            if _proven(found, before):
                note += " (no order does better)"
            stats = _stats(before, before, raw_before, raw_before, found)
            return PassResult(model, False, note, stats)
        note = f"operator order: peak {before:,} -> {after:,} B"
        if _proven(found, after):
            note += " (optimal)"
        stats = _stats(before, after, raw_before, raw_after, found)
        origin = origin_of_subgraphs(model, orders)
        return PassResult(reordered, True, note, stats, origin)


def _work(found: list[Found]) -> int:
    return sum(f.work for f in found)


def _peaks(items: ArenaItems) -> tuple[int, int]:
    """The planner's lower bound (sizes rounded to 16, scratch included) and the same
    over the planned tensors' bytes as they are (the models README's LB column)."""
    raw = [
        Buffer(b.id, b.first, b.last, items.sizes[s][t])
        for (s, t), b in zip(items.tensors, items.tensor_buffers, strict=True)
    ]
    return live_bytes_bound(Problem(items.buffers)), live_bytes_bound(Problem(tuple(raw)))


def _proven(found: list[Found], peak: int) -> bool:
    """No order does better than ``peak``: each searched subgraph is at its optimum
    and the model's peak is one of theirs (another subgraph's tensors only add)."""
    return bool(found) and all(f.optimal for f in found) and peak == max(f.peak for f in found)


def _stats(
    before: int, after: int, raw_before: int, raw_after: int, found: list[Found]
) -> dict[str, int | float | str]:
    return {
        "peak_before": before,  # bytes: the planner's lower bound
        "peak_after": after,
        "tensor_bytes_before": raw_before,  # bytes: planned tensors, not rounded
        "tensor_bytes_after": raw_after,
        "lower_bound": max((f.lower_bound for f in found), default=after),
        "optimal": int(_proven(found, after)),
        "search": ", ".join(f.method for f in found),
        "work": _work(found),  # state expansions
    }


def with_order(sg: Subgraph, order: tuple[int, ...]) -> Subgraph:
    """``sg`` with its operators in ``order`` (old indices), renumbered."""
    ops = tuple(replace(sg.operators[v], index=k) for k, v in enumerate(order))
    return replace(sg, operators=ops)


def _calls(model: Model) -> dict[int, set[int]]:
    """Subgraph -> the subgraphs its control-flow operators call."""
    calls: dict[int, set[int]] = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            for key, value in op.options.items:
                if key.endswith("subgraph_index") and isinstance(value, int):
                    calls.setdefault(sg.index, set()).add(value)
    return calls


def _may_reorder(model: Model, sg: Subgraph) -> bool:
    """Not called by control flow, and no control flow but CALL_ONCE in it."""
    if any(sg.index in called for called in _calls(model).values()):
        return False
    return not any(
        op.opcode != "CALL_ONCE" and any(k.endswith("subgraph_index") for k, _ in op.options.items)
        for op in sg.operators
    )


def order_problem(
    model: Model, items: ArenaItems, sg: Subgraph, facts: OrderFacts | None = None
) -> OrderProblem:
    """The subgraph as an ordering problem: its planned tensors (ids = tensor indices,
    sizes rounded as the planner rounds them) and its operators' scratch; ``facts``:
    what its runtime adds (views touched as their bases, operators kept in order)."""
    facts = facts or OrderFacts()
    base = dict(facts.bases)
    sizes = [0] * len(sg.tensors)
    for (s, t), buffer in zip(items.tensors, items.tensor_buffers, strict=True):
        if s == sg.index:
            sizes[t] = buffer.size
    scratch = [0] * len(sg.operators)
    for request, buffer in zip(items.scratch, items.scratch_buffers, strict=True):
        if request.subgraph == sg.index:
            scratch[request.op] += buffer.size
    planned = {t for t, size in enumerate(sizes) if size > 0}

    def kept(ts) -> tuple[int, ...]:  # the planned tensors whose bytes ``ts`` touch
        return tuple(dict.fromkeys(b for b in (base.get(t, t) for t in ts) if b in planned))

    makes = tuple(kept(op.outputs) for op in sg.operators)
    uses = tuple(kept(op.tensor_inputs()) for op in sg.operators)
    made = {t for ts in makes for t in ts}
    read = {t for ts in uses for t in ts}
    state = {t for t in planned if sg.tensors[t].is_variable}  # live over the whole subgraph
    preds = [set(p) for p in _dependencies(sg)]
    for a, b in facts.before:
        preds[b].add(a)
    return OrderProblem(
        preds=tuple(frozenset(p) for p in preds),
        makes=makes,
        uses=uses,
        scratch=tuple(scratch),
        sizes=tuple(sizes),
        held=frozenset(set(kept(sg.inputs)) | (read - made) | state),
        pinned=frozenset(set(kept(sg.outputs)) | state),
    )


def _dependencies(sg: Subgraph) -> tuple[frozenset[int], ...]:
    """For each operator, the operators that must run before it. A data edge comes
    from an earlier producer only: an operator that reads a variable tensor before
    a later one writes it reads the variable's state (kept in order by its chain),
    not the later write."""
    n = len(sg.operators)
    preds: list[set[int]] = [set() for _ in range(n)]
    producer: dict[int, int] = {}
    for op in sg.operators:
        for t in op.outputs:
            producer.setdefault(t, op.index)
    for op in sg.operators:
        preds[op.index] |= {
            producer[t] for t in op.tensor_inputs() if producer.get(t, op.index) < op.index
        }
    chains: dict[object, list[int]] = {}  # a variable or "resources" -> its operators in order
    for op in sg.operators:
        touched = [sg.tensors[t] for t in (*op.tensor_inputs(), *op.outputs)]
        for t in touched:
            if t.is_variable:
                chains.setdefault(t.index, []).append(op.index)
        if op.opcode in _RESOURCE_OPS or any(t.dtype is DType.RESOURCE for t in touched):
            chains.setdefault("resources", []).append(op.index)
        if op.opcode == "CALL_ONCE":
            preds[op.index] |= set(range(op.index))
            for later in range(op.index + 1, n):
                preds[later].add(op.index)
    for ops in chains.values():
        for a, b in pairwise(ops):
            preds[b].add(a)
    for v in range(n):
        preds[v].discard(v)
    return tuple(frozenset(p) for p in preds)
