"""Minimise the height: the lowest capacity at which a packing exists.

Start from the best greedy packing (an upper bound ``ub``) and the live-bytes
lower bound ``lo``. When a packing at ``lo`` would leave no byte free, rebuild
it as a tiling first (``tiling``, half the time). On a large problem (``LARGE``
buffers or more) improve the packing by local search over first-fit orders
(``improve``, a share of the time). Then ask the exact search for a packing at
a capacity between them, first ``lo`` itself (the optimum is often the bound),
then halfway. A packing lowers ``ub`` to its height; a proof of infeasibility
raises ``lo`` above the capacity tried; running out of a time slice proves
nothing, so the next try moves up towards ``ub``. Whatever happens, the best
packing so far is returned with the best proven bound: the gap between them is
honest. Where the exact search cannot run (a part too large for it), the local
search gets the rest of the time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from arenaplan.allocation.bounds import check_fixed, lower_bound
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.exact import (
    Feasibility,
    SearchParams,
    check_capacity,
    fixed_conflict,
    load_conflict,
    prepare,
)
from arenaplan.allocation.heuristics import COLUMN_ORDERS, best_greedy
from arenaplan.allocation.improve import squeaky_wheel
from arenaplan.allocation.packing import DONE, Columns, first_packing
from arenaplan.allocation.problem import Problem, Solution, height_of
from arenaplan.allocation.tiling import is_perfect, perfect_packing
from arenaplan.allocation.validate import check_solution

Progress = Callable[[dict], None]
FIRST_SLICE = 0.15  # share of the time left given to the try at the lower bound
LEAP_SLICE = 0.05  # share for a try halfway between the bounds
DESCENT_SLICE = 0.08  # share for a try below the best packing
LARGE = 2_000  # buffers from which the local search runs before the exact search
IMPROVE_SLICE = 0.3  # share of the time left it gets then
TILING_SLICE = 0.5  # share of the time left for a perfect packing (``tiling``)
LOOSE_TILING_SLICE = 0.25  # the same when the bound would leave bytes free
TILED_FROM, TILED_UP_TO = 200, 20_000  # buffers: a tiling rebuilt then (Python, ~1 s at 1,000)


@dataclass
class _State:
    lo: int  # no packing is lower than this (proven)
    ub: int  # height of the best packing found
    offsets: list[int]
    how: str
    hard: int = 0  # highest capacity where a try ran out of time (proves nothing)
    misses: int = 0  # tries below the best packing that ran out of time in a row
    tries: list[Feasibility] = field(default_factory=list)
    note: str = ""  # why the exact search did not run, if it did not
    unit: int = 1  # bytes: some optimal packing's height is a multiple of it (``_unit``)
    checked: tuple[int, ...] = ()  # the packing last checked (``check_solution``)


def _report(progress: Progress | None, state: _State, attempt: Feasibility) -> None:
    if progress is not None:
        progress(
            {
                "event": "result",
                "capacity": attempt.capacity,
                "status": attempt.status,
                "reason": attempt.reason,
                "seconds": attempt.seconds,
                "nodes": attempt.nodes,
                "best": state.ub,
                "bound": state.lo,
            }
        )


def _next_try(state: _State, last: Feasibility | None) -> tuple[int, float]:
    """(capacity, share of the time left) of the next try.

    First the lower bound itself. Then, while the gap above the hardest
    capacity tried is wide, a cheap leap to its middle. Then descend below the
    best packing: how hard a capacity is varies wildly from one to the next, so
    after a try runs out of time the next one goes a step lower rather than
    stopping (steps of about 1/1024 of the height), until the bound is reached,
    then round again with larger slices.
    """
    if last is None:
        return state.lo, FIRST_SLICE
    u = state.unit  # capacities tried are multiples of it: no two tries the same problem
    floor = max(state.lo, state.hard + 1)
    if state.misses == 0 and state.ub - floor > max(state.ub // 256, 64, 2 * u):
        return max((floor + state.ub) // 2 // u * u, floor), LEAP_SLICE
    step = max(state.ub // 1024 // u, 1) * u
    cap = (state.ub - 1 - step * state.misses) // u * u
    if cap < state.lo:
        state.misses, cap = 0, (state.ub - 1) // u * u
    return cap, DESCENT_SLICE


def _unit(cols: Columns) -> int:
    """The sizes' (and fixed offsets') gcd, when every alignment divides it: then
    letting buffers drop keeps every offset, so the optimal height, a multiple of
    it; else 1."""
    values = np.concatenate((cols.size[cols.size > 0], cols.fixed[cols.fixed > 0]))
    g = int(np.gcd.reduce(values)) if len(values) else 1
    return g if g > 0 and not (g % cols.align).any() else 1


def minimize(
    problem: Problem,
    params: SearchParams | None = None,
    seconds: float | None = None,
    progress: Progress | None = None,
    deadline: Deadline | None = None,
    greedy: tuple[str, list[int]] | None = None,
) -> Solution:
    """The lowest packing found in ``seconds`` (None: until proven optimal).

    ``deadline`` (shared with the caller's earlier phases) overrides ``seconds``;
    ``greedy`` (order name, offsets) is a first packing the caller already has.
    When it passes before any first-fit order finishes, the answer is the
    first packing (``packing.first_packing``), and ``how`` says so."""
    params = params or SearchParams()
    deadline = deadline if deadline is not None else Deadline.after(seconds)
    check_fixed(problem)
    cols = Columns.of(problem)
    state = _start(problem, cols, deadline, greedy)
    state.unit = _unit(cols)
    if state.lo < state.ub:
        _tile(problem, state, params, deadline)
    prepared = prepare(problem, params, deadline) if state.lo < state.ub else None
    if prepared is not None and (prepared.too_large or len(problem.buffers) >= LARGE):
        _improve(cols, state, deadline, 1.0 if prepared.too_large else IMPROVE_SLICE)
    if prepared is not None:
        state.note = prepared.too_large  # said even when the local search took all the time
    last: Feasibility | None = None
    while state.lo < state.ub:
        left = deadline.left()
        if left is not None and left <= 0.01:
            deadline.stop("search")
            break
        if prepared is None or prepared.too_large:
            break
        cap, share = _next_try(state, last)
        left = deadline.left()
        last = check_capacity(
            problem, cap, params, None if left is None else left * share, progress, prepared
        )
        state.tries.append(last)
        if last.status == "feasible" and last.offsets is not None:
            state.offsets, state.how = list(last.offsets), "exact"
            state.ub = height_of(problem, last.offsets)
            state.misses = 0
        elif last.status == "infeasible":
            state.lo = max(state.lo, -(-(cap + 1) // state.unit) * state.unit)
        else:
            state.hard = max(state.hard, cap)
            state.misses += 1
        _report(progress, state, last)
    if tuple(state.offsets) != state.checked:
        check_solution(problem, state.offsets)
    how = state.how if not state.note else f"{state.how} ({state.note})"
    return Solution(tuple(state.offsets), state.ub, min(state.lo, state.ub), how, deadline.ended_by)


def _tile(problem: Problem, state: _State, params: SearchParams, deadline: Deadline) -> None:
    """A packing at the bound rebuilt as a tiling (``tiling``): for half the time
    left when a packing there would leave no byte free; for a quarter when it
    would not but the problem is of tiling size (TILED_FROM to TILED_UP_TO
    buffers: a tiling stacked on part of another, or tilings one after another
    in time, rebuild the same way)."""
    if not params.tiling or deadline.expired("tiling"):
        return
    if is_perfect(problem, state.lo):
        share = TILING_SLICE
    elif TILED_FROM <= len(problem.buffers) <= TILED_UP_TO:
        share = LOOSE_TILING_SLICE
    else:
        return
    left = deadline.left()
    own = deadline if left is None else Deadline.after(left * share)
    offsets = perfect_packing(problem, state.lo, own, params)
    if offsets is not None:
        state.offsets, state.ub, state.how = offsets, state.lo, "tiling"


def _improve(cols: Columns, state: _State, deadline: Deadline, share: float) -> None:
    """Local search from the best packing, for ``share`` of the time left."""
    if state.ub <= state.lo or deadline.expired("improve"):
        return
    left = deadline.left()
    own = deadline if share >= 1.0 or left is None else Deadline.after(left * share)
    name = state.how.removeprefix("greedy:")
    order = COLUMN_ORDERS[name](cols) if name in COLUMN_ORDERS else None
    found = squeaky_wheel(cols, state.offsets, state.lo, own, order)
    if found.height < state.ub:
        state.offsets, state.ub, state.how = found.offsets, found.height, "improve"


def _start(
    problem: Problem, cols: Columns, deadline: Deadline, greedy: tuple[str, list[int]] | None
) -> _State:
    """The bounds and the best greedy packing, or the first packing if time ran out
    first. The starting packing is checked at once: its check's CPU time is what
    the final check costs, kept back on ``deadline`` (and when nothing betters it,
    the final check is this one)."""
    lo = lower_bound(problem)
    if greedy is None:
        name = "sweep" if (cols.fixed >= 0).any() else "start"
        _, first = first_packing(cols)  # no capacity: always done
        assert first is not None
        _timed_check(problem, first, deadline)
        if deadline.expired("preparation"):
            how = "sweep: the time limit passed before any other first-fit order"
            return _State(lo, cols.height(first), first, how, checked=tuple(first))
        greedy = best_greedy(problem, None, deadline, cols, first=(name, first))
        assert greedy is not None  # the first packing is among them
        how, offsets = greedy
        checked = tuple(first)
    else:
        how, offsets = greedy
        _timed_check(problem, offsets, deadline)
        checked = tuple(offsets)
    return _State(lo, cols.height(offsets), offsets, f"greedy:{how}", checked=checked)


def _timed_check(problem: Problem, offsets: list[int], deadline: Deadline) -> None:
    """``check_solution``, its CPU seconds kept back on ``deadline`` for the final check."""
    cpu = time.process_time()
    check_solution(problem, offsets)
    deadline.expect("check", time.process_time() - cpu)


def decide(
    problem: Problem,
    capacity: int,
    params: SearchParams | None = None,
    seconds: float | None = None,
    progress: Progress | None = None,
    deadline: Deadline | None = None,
) -> Feasibility:
    """Is there a packing of ``problem`` within ``capacity`` bytes? Every phase of
    ``minimize``, cheapest first, each ending the decision once it fits:

    1. proofs: fixed buffers that stick out or overlap, more bytes live at one
       step than ``capacity`` (``infeasible``);
    2. the start order's sweep (O(n log n)), then every greedy order;
    3. the tiling rebuild, when a packing at the bound leaves no byte free;
    4. the local search towards the bound (large problems, or parts too large
       for the exact search: then it gets all the time);
    5. the exact search at ``capacity`` itself, for the time left.

    ``deadline`` (shared with the caller's earlier phases) overrides ``seconds``.
    A packing returned is checked against ``capacity``; ``reason`` names the
    phase that found it ("greedy:start", "tiling", "improve", "exact")."""
    params = params or SearchParams()
    deadline = deadline if deadline is not None else Deadline.after(seconds)
    why = fixed_conflict(problem, capacity) or load_conflict(problem, capacity)
    if why:
        return _answer(problem, capacity, deadline, "infeasible", why)
    cols = Columns.of(problem)
    quick = _sweep_within(cols, capacity, deadline)
    if quick is not None:
        return _answer(problem, capacity, deadline, "feasible", "greedy:start", quick)
    state = _start(problem, cols, deadline, None)
    if state.ub > capacity and state.lo < state.ub:
        _tile(problem, state, params, deadline)
    prepared = prepare(problem, params, deadline) if state.ub > capacity else None
    if prepared is not None and (prepared.too_large or len(problem.buffers) >= LARGE):
        # aimed at the bound, as when minimising: blaming only the bytes above
        # the capacity moves too few buffers (measured: stuck at the greedy height)
        _improve(cols, state, deadline, 1.0 if prepared.too_large else IMPROVE_SLICE)
    if state.ub <= capacity:
        return _answer(problem, capacity, deadline, "feasible", state.how, state.offsets)
    if prepared is None:
        deadline.stop("preparation")
        why = "time limit reached while preparing the search"
        return _answer(problem, capacity, deadline, "unknown", why)
    if prepared.too_large:
        return _answer(problem, capacity, deadline, "unknown", prepared.too_large)
    answer = check_capacity(problem, capacity, params, deadline.left(), progress, prepared)
    if answer.status == "unknown":
        deadline.stop("search")
    how = "exact" if answer.status == "feasible" else answer.reason
    return _answer(problem, capacity, deadline, answer.status, how, answer.offsets, answer.nodes)


def _sweep_within(cols: Columns, capacity: int, deadline: Deadline) -> list[int] | None:
    """The first packing (``packing.first_packing``: O(n log n), before any deadline
    check, fixed buffers kept) if it fits ``capacity``; None if not."""
    status, offsets = first_packing(cols, capacity)
    return offsets if status == DONE else None


def _answer(
    problem: Problem,
    capacity: int,
    deadline: Deadline,
    status: str,
    reason: str,
    offsets: tuple[int, ...] | list[int] | None = None,
    nodes: int = 0,
) -> Feasibility:
    """The decision; a packing is checked within ``capacity`` first (never an
    unchecked one)."""
    if offsets is not None:
        check_solution(Problem(problem.buffers, capacity), offsets)
        offsets = tuple(offsets)
    seconds = time.monotonic() - deadline.started
    return Feasibility(status, capacity, offsets, reason, nodes, seconds)


@dataclass(frozen=True, slots=True)
class ExactSolver:
    """The exact solver as an allocator: minimise within ``seconds`` per problem."""

    name: str = "exact"
    seconds: float | None = 10.0
    params: SearchParams = field(default_factory=SearchParams)

    def solve(self, problem: Problem) -> Solution:
        return minimize(problem, self.params, self.seconds)
