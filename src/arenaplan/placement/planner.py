"""Plan the head of a model, aware of the scratch buffers TFLM places at run time.

TFLM places kernel scratch buffers online, first-fit around our offline tensors
(``tflm-arena-reference.md`` A1). So a plan is judged by the head TFLM *will*
reach with it: we fix the tensor offsets of a candidate and let our faithful
re-implementation of TFLM's planner place the scratch buffers, exactly as the
runtime will. Candidates, best kept (ties to the earlier):
  joint         tensors and scratch packed together by the chosen allocator;
  scratch-low   each operator's scratch stacked from offset 0 in TFLM's order
                (where TFLM's first-fit will put them), tensors packed around;
  tflm          TFLM's own online plan, so we are never worse than TFLM.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Buffer, Problem, Solution
from arenaplan.allocation.registry import get_allocator
from arenaplan.allocation.tflm_greedy import TflmGreedy, tflm_order
from arenaplan.allocation.validate import check_solution
from arenaplan.ir.model import Model
from arenaplan.placement.buffers import ArenaItems, arena_items
from arenaplan.placement.plan import (
    TFLM_ALIGNMENT,
    Plan,
    PlanOptions,
    ScratchPlacement,
    TensorPlacement,
)
from arenaplan.placement.validate import check_plan

_TFLM = TflmGreedy()


def plan_model(model: Model, options: PlanOptions | None = None) -> Plan:
    """A validated plan of ``model``'s head; raises if validation fails."""
    options = options or PlanOptions()
    start = time.perf_counter()
    items = arena_items(model, options.pointer_size)
    problem = Problem(items.buffers)
    tflm = _TFLM.solve(problem)
    allocator = get_allocator(options.allocator, options.time_limit)
    candidates = [("joint", allocator.solve(problem))]
    if options.scratch_aware and items.scratch:
        candidates.append(("scratch-low", allocator.solve(_scratch_low(items))))
    candidates.append(("tflm", tflm))
    best_name, best = min(
        ((name, _as_tflm_runs(items, sol)) for name, sol in candidates), key=lambda c: c[1].height
    )
    check_solution(problem, best.offsets)
    plan = _make_plan(
        model, items, best, tflm.height, best_name, options, time.perf_counter() - start
    )
    check_plan(model, plan)
    return plan


def layout_plan(
    model: Model,
    tensor_offsets: Mapping[tuple[int, int], int],
    strategy: str,
    options: PlanOptions | None = None,
) -> Plan:
    """A validated plan from given tensor offsets (e.g. memories laid end to end);
    TFLM's own placement of the scratch buffers around them is simulated."""
    options = options or PlanOptions()
    start = time.perf_counter()
    items = arena_items(model, options.pointer_size)
    problem = Problem(items.buffers)
    tflm = _TFLM.solve(problem)
    offsets = tuple(tensor_offsets[k] for k in items.tensors) + (0,) * len(items.scratch)
    laid = _as_tflm_runs(items, Solution(offsets, 0, 0, strategy))
    check_solution(problem, laid.offsets)
    plan = _make_plan(
        model, items, laid, tflm.height, strategy, options, time.perf_counter() - start
    )
    check_plan(model, plan)
    return plan


def _scratch_low(items: ArenaItems) -> Problem:
    """Fix each operator's scratch buffers at the bottom, stacked in TFLM's order."""
    by_op: dict[tuple[int, int], list[int]] = defaultdict(list)
    n_tensors = len(items.tensors)
    for k, r in enumerate(items.scratch):
        by_op[(r.subgraph, r.op)].append(n_tensors + k)
    buffers = list(items.buffers)
    for members in by_op.values():
        sub = Problem(tuple(items.buffers[i] for i in members))
        top = 0
        for j in tflm_order(sub):
            i = members[j]
            buffers[i] = _fixed(buffers[i], top)
            top += buffers[i].size
    return Problem(tuple(buffers))


def _fixed(b: Buffer, offset: int) -> Buffer:
    return Buffer(b.id, b.first, b.last, b.size, b.alignment, offset)


def _as_tflm_runs(items: ArenaItems, sol: Solution) -> Solution:
    """Fix the tensors at ``sol``'s offsets; place scratch the way TFLM's runtime will."""
    n = len(items.tensors)
    fixed = [_fixed(b, o) for b, o in zip(items.tensor_buffers, sol.offsets[:n], strict=True)]
    return _TFLM.solve(Problem((*fixed, *items.scratch_buffers)))


def _make_plan(
    model: Model,
    items: ArenaItems,
    sol: Solution,
    tflm_head: int,
    strategy: str,
    options: PlanOptions,
    seconds: float,
) -> Plan:
    n = len(items.tensors)
    tensors = tuple(
        TensorPlacement(
            s,
            t,
            model.subgraphs[s].tensors[t].name,
            items.sizes[s][t],
            b.size,
            sol.offsets[k],
            b.first,
            b.last,
        )
        for k, ((s, t), b) in enumerate(zip(items.tensors, items.tensor_buffers, strict=True))
    )
    scratch = tuple(
        ScratchPlacement(
            r.subgraph, r.op, r.order, r.bytes, b.size, sol.offsets[n + k], b.first, b.last
        )
        for k, (r, b) in enumerate(zip(items.scratch, items.scratch_buffers, strict=True))
    )
    offline = model.offline_layout({(p.subgraph, p.index): p.offset for p in tensors})
    raw = Problem(
        tuple(
            Buffer(b.id, b.first, b.last, items.sizes[s][t])
            for (s, t), b in zip(items.tensors, items.tensor_buffers, strict=True)
        )
    )
    return Plan(
        tensors=tensors,
        scratch=scratch,
        arena=sol.height,
        lower_bound=live_bytes_bound(Problem(items.buffers)),
        tensor_lower_bound=live_bytes_bound(raw),
        tflm_greedy=tflm_head,
        alignment=TFLM_ALIGNMENT,
        allocator=options.allocator,
        strategy=strategy,
        offline_offsets=offline,
        seconds=seconds,
    )
