"""Order operators to lower the peak of live bytes: the search behind ``reorder``.

It knows nothing about TFLite. A problem is operators 0..n-1 with the operators
each must follow, and buffers with a size: the buffers an operator *makes*, the
ones it *uses*, the ones *held* from the start (subgraph inputs) and the ones
*pinned* to the end (subgraph outputs), and scratch bytes live during its step.

Time is counted in steps, as TFLM counts scopes: step 0 holds the held buffers
alone; the operator at position p runs in step p+1. A buffer is live over the
inclusive steps [first, last]: first = 0 if held, else the step of the operator
that makes it (n if it is only pinned); last = the latest step of an operator
that makes or uses it, n if pinned. The cost of an order is its peak: the largest
sum over one step of live buffers and that step's scratch.

The search (``best_order``), all of it deterministic:
  1. candidates: the given order, a greedy that adds at each step the ready
     operator that frees most for what it allocates, and the same greedy run
     backwards (from the outputs, which computes each value just in time);
  2. moves of the best so far, while a quarter of the budget lasts: an operator
     taken to the front with all its ancestors (each set kept in its order), or to
     the back with all its descendants; a move is kept when it lowers the peak,
     and the moves are tried again until none does (a big transient operator
     whose inputs are ready early runs before what would stay live across it);
  3. if the best is above the lower bound, Serenity's dynamic programme
     (Ahn et al., arXiv 2003.02369): the states after k steps are the sets of
     operators run (bitmasks); the bytes held after a set do not depend on the
     order within it, so each set keeps only its lowest peak; states at or above
     the best peak known are dropped. If it finishes within its work budget its
     answer is optimal;
  4. if it does not finish within half the budget, the same programme as a beam:
     each step keeps the ``width`` states with the lowest (peak, bytes held), for
     widths 4, 16, 64 and 256 while the budget lasts.
The budget counts state expansions, not seconds, so the answer never depends on
the speed of the machine. A problem whose ``preds`` form a cycle has no order: it
is refused (``ModelFormatError`` naming the operators of one cycle), never searched.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.errors import ModelFormatError


@dataclass(frozen=True, slots=True)
class OrderProblem:
    """Operators 0..n-1 to order. Per operator: ``preds`` (operators that must come
    before it), ``makes``/``uses`` (buffer ids), ``scratch`` (bytes, its step only).
    Per buffer: ``sizes`` (bytes, already rounded). ``held``: buffers live from step
    0; ``pinned``: buffers live until step n."""

    preds: tuple[frozenset[int], ...]
    makes: tuple[tuple[int, ...], ...]
    uses: tuple[tuple[int, ...], ...]
    scratch: tuple[int, ...]
    sizes: tuple[int, ...]
    held: frozenset[int]
    pinned: frozenset[int]

    @property
    def n(self) -> int:
        return len(self.preds)


@dataclass(frozen=True, slots=True)
class Found:
    """An order and its peak (bytes). ``optimal``: no order has a lower peak (the
    lower bound is reached, or the exact search finished). ``method`` names the
    step of the search that found it; ``work``: state expansions spent."""

    order: tuple[int, ...]
    peak: int
    lower_bound: int
    optimal: bool
    method: str
    work: int


def is_topological(problem: OrderProblem, order: Sequence[int]) -> bool:
    """Every operator exactly once, each after all its ``preds``."""
    if sorted(order) != list(range(problem.n)):
        return False
    position = {v: k for k, v in enumerate(order)}
    return all(position[u] < position[v] for v in order for u in problem.preds[v])


def step_bytes(problem: OrderProblem, order: Sequence[int]) -> list[int]:
    """Live bytes at each step 0..n of ``order`` (a topological order)."""
    n = problem.n
    step = {v: k + 1 for k, v in enumerate(order)}
    first: dict[int, int] = {b: 0 for b in problem.held}
    last: dict[int, int] = {b: 0 for b in problem.held}
    for v in range(n):
        for b in problem.makes[v]:
            first[b] = min(first.get(b, n), step[v])
        for b in (*problem.makes[v], *problem.uses[v]):
            last[b] = max(last.get(b, 0), step[v])
    for b in problem.pinned:
        first.setdefault(b, n)
        last[b] = n
    delta = [0] * (n + 2)
    for b, start in first.items():
        delta[start] += problem.sizes[b]
        delta[last.get(b, start) + 1] -= problem.sizes[b]
    live, out = 0, []
    for k in range(n + 1):
        live += delta[k]
        out.append(live + (problem.scratch[order[k - 1]] if k else 0))
    return out


def peak_bytes(problem: OrderProblem, order: Sequence[int]) -> int:
    return max(step_bytes(problem, order))


def lower_bound(problem: OrderProblem) -> int:
    """No order does better than step 0, nor than any operator's step: whatever the
    order, a buffer is live there if it is held or made by the operator or one of its
    ancestors, and pinned or touched by the operator or one of its descendants."""
    n = problem.n
    before = [0] * n  # v -> bitmask of v and its ancestors
    for v in _topological(problem):
        before[v] = 1 << v
        for u in problem.preds[v]:
            before[v] |= before[u]
    after = [1 << v for v in range(n)]  # v -> bitmask of v and its descendants
    for v in reversed(_topological(problem)):
        for u in problem.preds[v]:
            after[u] |= after[v]
    makers: dict[int, int] = {}
    touchers: dict[int, int] = {}
    for v in range(n):
        for b in problem.makes[v]:
            makers[b] = makers.get(b, 0) | 1 << v
        for b in (*problem.makes[v], *problem.uses[v]):
            touchers[b] = touchers.get(b, 0) | 1 << v
    best = sum(problem.sizes[b] for b in problem.held)
    for v in range(n):
        live = problem.scratch[v]
        for b, mask in touchers.items():
            born = b in problem.held or makers.get(b, 0) & before[v]
            if born and (b in problem.pinned or mask & after[v]):
                live += problem.sizes[b]
        live += sum(problem.sizes[b] for b in problem.held & problem.pinned if b not in touchers)
        best = max(best, live)
    return best


def find_cycle(problem: OrderProblem) -> tuple[int, ...] | None:
    """Operators ``v0, v1, ..., v0`` of one cycle of ``preds`` (each must follow the
    next), or None when the operators have an order."""
    left = set(range(problem.n)) - set(_topological(problem))
    if not left:
        return None
    # every operator Kahn's order leaves out waits for another left out: walking
    # from one to a waited-for one must come back to an operator already seen
    walk, seen = [min(left)], {min(left): 0}
    while True:
        v = min(u for u in problem.preds[walk[-1]] if u in left)
        if v in seen:
            return (*walk[seen[v] :], v)
        seen[v] = len(walk)
        walk.append(v)


def check_acyclic(problem: OrderProblem) -> None:
    """Raise ``ModelFormatError`` if no order runs every operator after its preds."""
    cycle = find_cycle(problem)
    if cycle is None:
        return
    chain = " -> ".join(map(str, cycle))
    raise ModelFormatError(
        f"operators {chain} form a cycle (each must run after the next): no order runs them"
    )


def _topological(problem: OrderProblem) -> list[int]:
    """Kahn's order, lowest index first among the ready (on a cycle, only the
    operators outside it and not after it)."""
    waiting = [len(p) for p in problem.preds]
    succs: list[list[int]] = [[] for _ in range(problem.n)]
    for v, ps in enumerate(problem.preds):
        for u in ps:
            succs[u].append(v)
    ready = [v for v in range(problem.n) if not waiting[v]]
    heapq.heapify(ready)
    order = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for w in succs[v]:
            waiting[w] -= 1
            if not waiting[w]:
                heapq.heappush(ready, w)
    return order


WIDTHS = (4, 16, 64, 256)  # states kept per step by the beams, tried in turn


def best_order(
    problem: OrderProblem,
    start: Sequence[int],
    budget: int,
    widths: Sequence[int] = WIDTHS,
    moves: bool = True,
) -> Found:
    """The order of lowest peak found (never above ``start``'s); see the module text.
    ``budget``: work for the moves (``moves``: whether to try them), the exact
    programme and then the beams.
    A cycle in ``preds``: ``ModelFormatError``."""
    check_acyclic(problem)
    bound = lower_bound(problem)
    candidates = (
        (tuple(start), "given"),
        (_greedy(problem, 1), "greedy"),
        (_greedy(_mirror(problem), -1)[::-1], "greedy backwards"),
    )
    peak, order, method = min(  # ties to the earlier: the given order first
        ((peak_bytes(problem, order), order, method) for order, method in candidates),
        key=lambda c: c[0],
    )
    if peak <= bound:
        return Found(order, peak, bound, True, method, 0)
    moved, moved_peak, spent = _moves(problem, order, peak, budget // 4 if moves else 0)
    if moved_peak < peak:
        order, peak, method = moved, moved_peak, f"{method}, moved"
    if peak <= bound:
        return Found(order, peak, bound, True, method, spent)
    search = _Search(problem)
    search.work = spent
    found, complete = search.run(peak, budget // 2, width=None)
    if complete:
        if found is not None:
            order, peak, method = found[0], found[1], "exact"
        return Found(order, peak, bound, True, method, search.work)
    for width in widths:
        if search.work >= budget:
            break
        found, _ = search.run(peak, budget, width)
        if found is not None:
            order, peak, method = found[0], found[1], f"beam {width}"
    return Found(order, peak, bound, peak <= bound, method, search.work)


# ---- moves ------------------------------------------------------------------------


def _moves(
    problem: OrderProblem, order: tuple[int, ...], peak: int, budget: int
) -> tuple[tuple[int, ...], int, int]:
    """(order, its peak, work) after the moves of the module text; each order tried
    costs ``n`` work and none is tried past ``budget``."""
    n = problem.n
    ancestors, descendants = _closures(problem)
    work, better = 0, True
    while better:
        better = False
        for v in order:
            for group, front in ((ancestors[v], True), (descendants[v], False)):
                if work + n > budget:
                    return order, peak, work
                work += n
                mine = [u for u in order if group >> u & 1]
                rest = [u for u in order if not group >> u & 1]
                tried = tuple(mine + rest if front else rest + mine)
                tried_peak = peak_bytes(problem, tried)
                if tried_peak < peak:
                    order, peak, better = tried, tried_peak, True
    return order, peak, work


def _closures(problem: OrderProblem) -> tuple[list[int], list[int]]:
    """Per operator, bitmasks of itself with its ancestors, and with its descendants."""
    n = problem.n
    topo = _topological(problem)
    before = [1 << v for v in range(n)]
    for v in topo:
        for u in problem.preds[v]:
            before[v] |= before[u]
    after = [1 << v for v in range(n)]
    for v in reversed(topo):
        for u in problem.preds[v]:
            after[u] |= after[v]
    return before, after


# ---- greedy -----------------------------------------------------------------------


def _mirror(problem: OrderProblem) -> OrderProblem:
    """The problem run backwards: what an operator touches is born at its last
    toucher and dies at its first; outputs are held, inputs pinned."""
    n = problem.n
    succs: list[set[int]] = [set() for _ in range(n)]
    for v in range(n):
        for u in problem.preds[v]:
            succs[u].add(v)
    return OrderProblem(
        preds=tuple(frozenset(s) for s in succs),
        makes=tuple((*m, *u) for m, u in zip(problem.makes, problem.uses, strict=True)),
        uses=tuple(() for _ in range(n)),
        scratch=problem.scratch,
        sizes=problem.sizes,
        held=problem.pinned,
        pinned=problem.held,
    )


def _greedy(problem: OrderProblem, tie: int) -> tuple[int, ...]:
    """List scheduling: at each step the ready operator with the smallest growth of
    the bytes held, then the smallest allocation, then the lowest ``tie * index``."""
    state = _State.start(_Tables(problem))
    order = []
    while len(order) < problem.n:
        v = min(state.ready(), key=lambda v: (*state.growth(v), tie * v))
        state = state.after(v)
        order.append(v)
    return tuple(order)


# ---- the dynamic programme over sets of operators run ---------------------------


class _Tables:
    """Bitmasks of a problem, for the search: operators and buffers by bit."""

    def __init__(self, problem: OrderProblem) -> None:
        self.n = n = problem.n
        self.pred_mask = [sum(1 << u for u in problem.preds[v]) for v in range(n)]
        touchers: dict[int, int] = {}
        makers: dict[int, int] = {}
        for v in range(n):
            for b in problem.makes[v]:
                makers[b] = makers.get(b, 0) | 1 << v
            for b in (*problem.makes[v], *problem.uses[v]):
                touchers[b] = touchers.get(b, 0) | 1 << v
        sizes = problem.sizes
        # per operator: (size, makers) of what it makes (held buffers are live already)
        self.makes = [
            tuple(
                (sizes[b], makers[b])
                for b in dict.fromkeys(problem.makes[v])
                if b not in problem.held
            )
            for v in range(n)
        ]
        # per operator: (size, touchers) of what it touches that may die with it
        self.dies = [
            tuple(
                (sizes[b], touchers[b])
                for b in dict.fromkeys((*problem.makes[v], *problem.uses[v]))
                if b not in problem.pinned
            )
            for v in range(n)
        ]
        self.scratch = problem.scratch
        self.step0 = sum(sizes[b] for b in problem.held)
        self.held0 = sum(sizes[b] for b in problem.held if b in problem.pinned or b in touchers)
        self.tail = sum(  # pinned, never held nor made: live in step n only
            sizes[b] for b in problem.pinned if b not in problem.held and b not in makers
        )


@dataclass(frozen=True, slots=True)
class _State:
    """Operators run (``done``, a bitmask), bytes held after them, peak so far."""

    t: _Tables
    done: int
    held: int
    peak: int
    count: int

    @classmethod
    def start(cls, t: _Tables) -> _State:
        return cls(t, 0, t.held0, t.step0 if t.n else t.step0 + t.tail, 0)

    def ready(self) -> list[int]:
        done, pred = self.done, self.t.pred_mask
        return [v for v in range(self.t.n) if not done >> v & 1 and pred[v] & ~done == 0]

    def step(self, v: int) -> tuple[int, int]:
        """(live bytes in v's step, bytes held after it) if v runs next."""
        done, t = self.done, self.t
        new = sum(size for size, makers in t.makes[v] if makers & done == 0)
        live = self.held + new + t.scratch[v] + (t.tail if self.count == t.n - 1 else 0)
        after = done | 1 << v
        freed = sum(size for size, touchers in t.dies[v] if touchers & ~after == 0)
        return live, self.held + new - freed

    def growth(self, v: int) -> tuple[int, int]:
        live, held = self.step(v)
        return held - self.held, live - self.held

    def after(self, v: int) -> _State:
        live, held = self.step(v)
        return _State(self.t, self.done | 1 << v, held, max(self.peak, live), self.count + 1)


class _Search:
    """Serenity's programme, exact (``width`` None) or as a beam; ``work`` counts
    state expansions over all runs."""

    def __init__(self, problem: OrderProblem) -> None:
        self.t = _Tables(problem)
        self.work = 0

    def run(
        self, upper: int, budget: int, width: int | None
    ) -> tuple[tuple[tuple[int, ...], int] | None, bool]:
        """(order, peak) of the best order below ``upper`` (None if there is none),
        and whether the run finished within the budget."""
        layer = {0: _State.start(self.t)}  # operators run -> the best state
        history: list[dict[int, tuple[int, int]]] = []  # per step: state -> (parent, op)
        for _ in range(self.t.n):
            nxt: dict[int, _State] = {}
            links: dict[int, tuple[int, int]] = {}
            for done, state in layer.items():
                for v in state.ready():
                    self.work += 1
                    live, held = state.step(v)
                    peak = max(state.peak, live)
                    if peak >= upper:
                        continue
                    key = done | 1 << v
                    old = nxt.get(key)
                    if old is None or peak < old.peak:
                        nxt[key] = _State(self.t, key, held, peak, state.count + 1)
                        links[key] = (done, v)
                if self.work > budget:
                    return None, False
            if not nxt:
                return None, True
            if width is not None and len(nxt) > width:
                kept = sorted(nxt.items(), key=lambda kv: (kv[1].peak, kv[1].held, kv[0]))
                nxt = dict(kept[:width])
            layer = nxt
            history.append(links)
        ((end, state),) = layer.items()
        return (self._order(history, end), state.peak), True

    @staticmethod
    def _order(history: list[dict[int, tuple[int, int]]], end: int) -> tuple[int, ...]:
        order = []
        key = end
        for links in reversed(history):
            key, v = links[key]
            order.append(v)
        return tuple(reversed(order))
