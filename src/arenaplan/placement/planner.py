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

With aliases (``PlanOptions.alias_kinds``), the tensors of an alias class are one
buffer for the allocator (``alias_classes``); joint and scratch-low are tried
with every alias the rules allow, then without views (if asked for with
in-place), then with none, so asking for aliases never costs a byte. A layout
whose lower bound cannot beat the best plan found is not tried.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.packing import pack
from arenaplan.allocation.problem import Buffer, Problem, Solution
from arenaplan.allocation.registry import get_allocator
from arenaplan.allocation.tflm_greedy import TflmGreedy, tflm_order
from arenaplan.allocation.validate import check_solution
from arenaplan.analysis.buffers import ArenaItems, arena_items, staging_buffers
from arenaplan.errors import AllocationError, PlanValidationError
from arenaplan.ir.model import Model
from arenaplan.placement.alias_classes import AliasLayout, alias_layout
from arenaplan.placement.check import check_plan
from arenaplan.placement.plan import (
    Plan,
    PlanOptions,
    ScratchPlacement,
    StagingPlacement,
    TensorPlacement,
)
from arenaplan.runtime.registry import runtime_of

_TFLM = TflmGreedy()


@dataclass(frozen=True, slots=True)
class _Candidate:
    """One candidate: its name, alias layout, the allocator's problem and solution
    (one offset per class, then scratch), and the same as TFLM will run it."""

    name: str
    layout: AliasLayout
    problem: Problem
    solution: Solution
    runs: Solution


def plan_model(model: Model, options: PlanOptions | None = None) -> Plan:
    """A validated plan of ``model``'s head; raises if validation fails."""
    options = options or PlanOptions()
    start = time.perf_counter()
    items = arena_items(model, options.pointer_size, options.kernels)
    tflm = _TFLM.solve(Problem(items.buffers))
    allocator = get_allocator(options.allocator, options.time_limit)
    best: _Candidate | None = None
    tried: list[tuple] = []
    for kinds in _alias_tries(options.alias_kinds):
        runtime = runtime_of(options.kernels)
        found = runtime.alias_candidates(model, kinds, options.clobber_inputs, options.kernels)
        found = found.aliases
        layout = alias_layout(items, found)
        if layout.aliases in tried:
            continue
        tried.append(layout.aliases)
        problem = Problem((*layout.buffers, *items.scratch_buffers))
        if best is not None and best.runs.height <= live_bytes_bound(problem):
            continue  # this layout cannot give a lower plan
        solutions = [("joint", allocator.solve(problem))]
        if options.scratch_aware and items.scratch:
            solutions.append(("scratch-low", allocator.solve(_scratch_low(problem, items))))
        if not layout.aliases:
            solutions.append(("tflm", tflm))
        for name, sol in solutions:
            runs = _as_tflm_runs(items, layout.tensor_offsets(sol.offsets[: len(layout.buffers)]))
            if best is None or runs.height < best.runs.height:
                best = _Candidate(name, layout, problem, sol, runs)
    if best is None:  # cannot happen: the first layout tried always gives one
        raise AllocationError("no candidate plan")
    if best.layout.aliases:
        check_solution(best.problem, best.solution.offsets)
    else:
        check_solution(Problem(items.buffers), best.runs.offsets)
    plan = _make_plan(
        model, items, best.layout, best.runs, tflm.height, best.name, options,
        time.perf_counter() - start,
    )  # fmt: skip
    if options.staging:
        plan = _with_staging(model, items, best.runs, plan, options)
    check_plan(model, plan)
    return plan


def _with_staging(
    model: Model,
    items: ArenaItems,
    runs: Solution,
    plan: Plan,
    options: PlanOptions,
) -> Plan:
    """Place weight staging buffers around TFLM's tensors and scratch (fixed where
    TFLM will put them: it does not know of these buffers), lowest top of a few
    first-fit orders, below ``options.staging_ceiling`` when one order fits there;
    the head grows to hold them."""
    requests = options.staging
    bufs = staging_buffers(items.lifetimes, requests, runtime_of(options.kernels).alignment)

    fixed = [_fixed(b, o) for b, o in zip(items.buffers, runs.offsets, strict=True)]
    problem = Problem((*fixed, *bufs))
    n = len(fixed)
    orders = (
        sorted(range(len(bufs)), key=lambda k: -bufs[k].size),
        sorted(range(len(bufs)), key=lambda k: (bufs[k].first, -bufs[k].size)),
    )
    best: list[int] | None = None
    for ceiling in dict.fromkeys((options.staging_ceiling, None)):
        for order in orders:
            offs = pack(problem, [n + k for k in order], ceiling)
            if offs is not None and (best is None or _top(problem, offs) < _top(problem, best)):
                best = offs
        if best is not None:
            break
    if best is None:  # the last try has no capacity: first-fit always places
        raise PlanValidationError(
            [f"staging: first-fit without a ceiling placed none of {len(bufs)} staging buffers"]
        )
    placed = tuple(
        StagingPlacement(r.op, r.first, r.bytes, r.policy, b.size, best[n + k], b.first, b.last)
        for k, (r, b) in enumerate(zip(requests, bufs, strict=True))
    )
    bound = plan.lower_bound
    if not plan.aliases:  # with aliases the merged classes are not at hand: keep theirs
        bound = max(bound, live_bytes_bound(Problem((*items.buffers, *bufs))))
    top = max(plan.arena, _top(problem, best))
    return replace(plan, staging=placed, arena=top, lower_bound=bound)


def _top(problem: Problem, offsets: list[int]) -> int:
    return max((o + b.size for o, b in zip(offsets, problem.buffers, strict=True)), default=0)


def _alias_tries(kinds: frozenset[str]) -> list[frozenset[str]]:
    """Alias kinds to try, most sharing first; always ends with none."""
    tries = [frozenset(kinds)]
    if "views" in kinds and len(kinds) > 1:
        tries.append(frozenset(kinds - {"views"}))
    tries.append(frozenset())
    return list(dict.fromkeys(tries))


def layout_plan(
    model: Model,
    tensor_offsets: Mapping[tuple[int, int], int],
    strategy: str,
    options: PlanOptions | None = None,
) -> Plan:
    """A validated plan from given tensor offsets (e.g. memories laid end to end);
    TFLM's own placement of the scratch buffers around them is simulated. The
    offsets are taken as they are: no aliases (``options.alias_kinds`` is not used)."""
    options = options or PlanOptions()
    start = time.perf_counter()
    items = arena_items(model, options.pointer_size, options.kernels)
    problem = Problem(items.buffers)
    tflm = _TFLM.solve(problem)
    laid = _as_tflm_runs(items, tuple(tensor_offsets[k] for k in items.tensors))
    check_solution(problem, laid.offsets)
    plan = _make_plan(
        model, items, alias_layout(items, ()), laid, tflm.height, strategy, options,
        time.perf_counter() - start,
    )  # fmt: skip
    if options.staging:
        plan = _with_staging(model, items, laid, plan, options)
    check_plan(model, plan)
    return plan


def _scratch_low(problem: Problem, items: ArenaItems) -> Problem:
    """Fix each operator's scratch buffers (the last ones of ``problem``) at the
    bottom, stacked in TFLM's order."""
    by_op: dict[tuple[int, int], list[int]] = defaultdict(list)
    n_tensors = len(problem.buffers) - len(items.scratch)
    for k, r in enumerate(items.scratch):
        by_op[(r.subgraph, r.op)].append(n_tensors + k)
    buffers = list(problem.buffers)
    for members in by_op.values():
        sub = Problem(tuple(problem.buffers[i] for i in members))
        top = 0
        for j in tflm_order(sub):
            i = members[j]
            buffers[i] = _fixed(buffers[i], top)
            top += buffers[i].size
    return Problem(tuple(buffers))


def _fixed(b: Buffer, offset: int) -> Buffer:
    return Buffer(b.id, b.first, b.last, b.size, b.alignment, offset)


def _as_tflm_runs(items: ArenaItems, tensor_offsets: tuple[int, ...]) -> Solution:
    """Fix the tensors at these offsets (aliased ones may overlap: TFLM takes offline
    offsets unchecked); place scratch the way TFLM's runtime will."""
    fixed = [_fixed(b, o) for b, o in zip(items.tensor_buffers, tensor_offsets, strict=True)]
    return _TFLM.solve(Problem((*fixed, *items.scratch_buffers)))


def _make_plan(
    model: Model,
    items: ArenaItems,
    layout: AliasLayout,
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
    offline = model.plan_layout({(p.subgraph, p.index): p.offset for p in tensors})
    merged = Problem((*layout.buffers, *items.scratch_buffers))  # no alias: items.buffers
    return Plan(
        tensors=tensors,
        scratch=scratch,
        arena=sol.height,
        lower_bound=live_bytes_bound(merged),
        tensor_lower_bound=live_bytes_bound(Problem(layout.raw)),
        tflm_greedy=tflm_head,
        alignment=runtime_of(options.kernels).alignment,
        allocator=options.allocator,
        strategy=strategy,
        tensor_offsets=offline,
        seconds=seconds,
        aliases=layout.aliases,
        clobber_inputs=options.clobber_inputs,
        kernels=options.kernels,
    )
