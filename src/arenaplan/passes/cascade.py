"""The ``cascade`` pass: run chains of row-local operators as one operator, row by row.

Each chosen chain becomes one ``ARENAPLAN_CASCADE`` operator (docs/cascade.md): its
intermediate tensors shrink to rings of rows in one scratch buffer and its
quantisation data moves from TFLM's persistent arena to constant tensors in flash.

First, shape computations are folded into constants (``cascade_shapes``: SHAPE of
a tensor whose dims are known, and STRIDED_SLICE and PACK of constants, which a
converter writes to give TRANSPOSE_CONV and RESHAPE their shapes): SHAPE reads only
dims, but it kept its input whole and cut the run of operators around it.

The chooser: in model order, the longest runs of operators that can be one cascade
(activations in kept whole, only the last output out, at most 64 operators); each run cut
where its largest piece (input and output whole plus rings) is smallest, in the
fewest pieces (``cuts``), or kept whole, whichever scores lower. The score is what
the search minimises: the estimated head (live activations and kernel scratch at
the peak), plus, for the "arena" objective, TFLM's persistent tail under ``profile``. A chain
whose cascade does not lower the score is left as it was. With ``fit`` (bytes), a
model whose score is already at most ``fit`` is left as it was, and the stats say
what stopped a cascaded model above it (``stopped``: "fit" reached, "tail" the
persistent part alone is above it, "operator" the largest operator left outside
every cascade, named in ``blocker``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from arenaplan.allocation.packing import align_up
from arenaplan.errors import UsageError
from arenaplan.ir.cascade_format import MAX_STAGES, OPCODE
from arenaplan.ir.model import Model, Subgraph
from arenaplan.passes.band_search import head_live, head_peak
from arenaplan.passes.base import Origin, PassResult, by_operator, compose, identity
from arenaplan.passes.cascade_chain import Chain, add_cascade, cascade_kernel, chain_of
from arenaplan.passes.cascade_choice import Chooser, requests
from arenaplan.passes.cascade_shapes import fold_shapes
from arenaplan.passes.cascade_stage import Uncascadable, activation_inputs, stage_of
from arenaplan.passes.edit import SubgraphEdit
from arenaplan.runtime.cascade import CascadeKernel
from arenaplan.runtime.registry import default_kernels, default_profile, runtime_of
from arenaplan.runtime.spec import KernelSet, Profile

OBJECTIVES = ("arena", "head")


def _stageable(sg: Subgraph, buffers: Sequence[bytes]) -> list[bool]:
    out = []
    for op in sg.operators:
        try:
            stage_of(sg, op, buffers)
            out.append(True)
        except Uncascadable:
            out.append(False)
    return out


def _try_chain(
    sg: Subgraph,
    ops: Sequence[int],
    buffers: Sequence[bytes],
    kernels: KernelSet | None = None,
    step_pixels: int = 0,
) -> Chain | None:
    try:
        return chain_of(sg, ops, buffers, kernels, step_pixels)
    except Uncascadable:
        return None


def longest_chains(sg: Subgraph, buffers: Sequence[bytes]) -> list[list[int]]:
    """From each operator on, in order, the longest run (of at most ``MAX_STAGES``)
    that is a cascade."""
    ok = _stageable(sg, buffers)
    chains, a, n = [], 0, len(sg.operators)
    while a < n:
        if not ok[a]:
            a += 1
            continue
        b = a
        while b + 1 < min(n, a + MAX_STAGES) and ok[b + 1]:
            b += 1
        end = next((e for e in range(b, a - 1, -1) if _valid(sg, a, e)), a - 1)
        if end < a:
            a += 1
            continue
        chains.append(list(range(a, end + 1)))
        a = end + 1
    return chains


LEFT_OUT = (
    "a stage, but no run takes it (another activation enters, or its output is read beside the run)"
)


def chain_stops(sg: Subgraph, buffers: Sequence[bytes]) -> list[tuple[int, str]]:
    """Every operator of ``sg`` that no run of ``longest_chains`` takes, and why in a
    few words: the reason it has no stage, or ``LEFT_OUT``."""
    taken = {i for run in longest_chains(sg, buffers) for i in run}
    stops = []
    for op in sg.operators:
        if op.index in taken:
            continue
        try:
            stage_of(sg, op, buffers)
            stops.append((op.index, LEFT_OUT))
        except Uncascadable as exc:
            stops.append((op.index, str(exc)))
    return stops


def _valid(sg: Subgraph, a: int, e: int) -> bool:
    """Operators a..e are one cascade (checked without sizing its rings)."""
    made = {sg.operators[i].outputs[0] for i in range(a, e + 1)}
    entering = set()
    for i in range(a, e + 1):
        acts = activation_inputs(sg, sg.operators[i])
        entering.update(t for t in acts if t not in made)
    if not entering:
        return False
    last = sg.operators[e].outputs[0]
    inside = set(range(a, e + 1))
    for op in sg.operators:
        if op.index in inside:
            continue
        if any(t in made and t != last for t in op.inputs):
            return False
    return not any(t in made and t != last for t in sg.outputs)


@dataclass(frozen=True, slots=True)
class Cascade:
    """Options: ``objective`` ("arena": head + tail, "head": the head alone),
    ``profile`` (TFLM's struct sizes for the tail), ``kernels`` (whose scratch the
    head counts, and with CMSIS-NN kernels how each stage steps: ``cascade_choice``,
    by the time model, within ``fit`` or else within the score of one row per step
    everywhere), ``split`` (cut chains where that lowers the score), ``step_pixels``
    (CMSIS-NN kernels: instead of the choice, every convolution and pool a step of
    at least that many output pixels, 0 a row; each CONV_2D by its fastest path)."""

    name: ClassVar[str] = "cascade"
    summary: ClassVar[str] = (
        "run chains of convolutions, pools, PADs and element-wise operators as one "
        "operator, row by row "
        "(intermediates in rings of rows; quantisation data in flash)"
    )

    objective: str = "arena"
    profile: Profile = field(default_factory=default_profile)
    kernels: KernelSet = field(default_factory=default_kernels)
    split: bool = True
    fit: int | None = None
    step_pixels: int | None = None

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise UsageError(f"cascade: objective must be one of {', '.join(OBJECTIVES)}")
        if self.profile.runtime != self.kernels.runtime:
            raise UsageError(f"cascade: profile {self.profile} is not for kernels {self.kernels}")
        pixels = self.step_pixels
        if pixels is not None and (not isinstance(pixels, int) or pixels < 0):
            raise UsageError("cascade: step_pixels must be an integer >= 0")

    def score(self, model: Model) -> int:
        return head_peak(model, self.kernels, self.profile.pointer_bytes) + self.tail(model)

    def tail(self, model: Model) -> int:
        if self.objective == "head":
            return 0
        return runtime_of(self.kernels).tail(model, self.profile, self.kernels).bytes

    @property
    def kernel(self) -> CascadeKernel:
        return cascade_kernel(self.kernels)

    def run(self, model: Model) -> PassResult:
        before = self.score(model)
        if self.fit is not None and before <= self.fit:
            note = f"the model fits {self.fit:,} B as it is (estimate {before:,} B)"
            return PassResult(model, False, note, {"stopped": "fit", "score_before": before})
        folded_model, folded, fold_origin = fold_shapes(model)
        base = self.score(folded_model) if folded else before
        chosen: list[Chain] = []
        for sg in folded_model.subgraphs:
            for ops in longest_chains(sg, folded_model.buffers):
                chosen.extend(self._choose(folded_model, sg.index, ops, base))
        if not chosen and not (folded and base < before):
            return PassResult(model, False, "no chain to cascade")
        if self.kernel.optimised:
            chosen = self._stepped(folded_model, chosen)
        current, origin = apply(folded_model, chosen)
        origin = compose(fold_origin, origin)
        after = self.score(current)
        stages = sum(len(c.ops) for c in chosen)
        shapes = f", {folded} shape operators folded into constants" if folded else ""
        note = (
            f"{len(chosen)} cascade(s) of {stages} operators{shapes}; estimated "
            f"{'arena' if self.objective == 'arena' else 'head'} {before:,} -> {after:,} B"
        )
        stats = {"cascades": len(chosen), "stages": stages, "score_before": before,
                 "score_after": after, "shapes_folded": folded}  # fmt: skip
        if self.fit is not None:
            stats |= self._stopped(current, after, self.fit)
        if self.kernel.optimised:
            stats |= self._step_stats(chosen)
        return PassResult(current, True, note, stats, origin)

    def _step_stats(self, chains: Sequence[Chain]) -> dict[str, int | float | str]:
        """How the stages step, and the time model's estimate of the instructions the
        cascades run beyond the operators they replaced."""
        extra = sum(self.kernel.extra_instructions(c.records) for c in chains)
        steps = "time model" if self.step_pixels is None else f"{self.step_pixels} pixels"
        out: dict[str, int | float | str] = {"steps": steps, "extra_instructions": round(extra)}
        if self.step_pixels is not None:
            out["step_pixels"] = self.step_pixels
        return out

    def _stepped(self, model: Model, chains: list[Chain]) -> list[Chain]:
        """``chains`` (of one row per step, as cut) stepped with CMSIS-NN kernels: each
        stage the rows per step of ``step_pixels`` when given, else ``Chooser``'s
        fastest within the budget (``fit``, else the score of the least: one row per
        step everywhere)."""
        choosers = [
            Chooser(model.subgraphs[c.subgraph], c.ops, model.buffers, self.kernels) for c in chains
        ]
        if self.step_pixels is not None:
            pixels = self.step_pixels
            return [_uniform(ch, c, pixels) for ch, c in zip(choosers, chains, strict=True)]
        least = [_chain_or(ch.least(), c) for ch, c in zip(choosers, chains, strict=True)]
        current, origin = apply(model, least)
        floor = self.score(current)
        budget = max(self.fit if self.fit is not None else floor, floor)
        rooms = self._rooms(model, least, current, origin, budget)
        fast = [
            _chain_or(ch.fastest(room), c)
            for ch, c, room in zip(choosers, least, rooms, strict=True)
        ]
        return self._within(model, fast, least, budget)

    def _rooms(
        self, model: Model, chains: list[Chain], current: Model, origin: Origin, budget: int
    ) -> list[int]:
        """Bytes each chain's requests may take for the model's score to stay within
        ``budget``: the budget's head less what is live beside the cascade in its
        scopes (``current``: ``model`` with ``chains``, ``origin`` its operators')."""
        live, lifetimes = head_live(current, self.kernels, self.profile.pointer_bytes)
        head = budget - self.tail(current)
        ordered = sorted(range(len(chains)), key=lambda k: (chains[k].subgraph, chains[k].ops[0]))
        ops = [key for key, was in by_operator(current, model, origin).items() if was is None]
        rooms = [0] * len(chains)
        for k, (s, i) in zip(ordered, ops, strict=True):
            first, last = lifetimes.operators[s][i]
            beside = int(live[first : last + 1].max()) - requests(chains[k], self.kernels)
            rooms[k] = head - beside
        return rooms

    def _within(
        self, model: Model, chains: list[Chain], least: list[Chain], budget: int
    ) -> list[Chain]:
        """``chains``, the one of most requests beyond its least put back to the least
        until the model's score is within ``budget`` (the rooms are an estimate:
        the tail and the planner's sweeps may differ by a few bytes)."""
        out = list(chains)
        while self.score(apply(model, out)[0]) > budget:
            grown = [
                (requests(c, self.kernels) - requests(b, self.kernels), k)
                for k, (c, b) in enumerate(zip(out, least, strict=True))
                if c is not b
            ]
            if not grown:
                break
            _, k = max(grown)
            out[k] = least[k]
        return out

    def _stopped(self, model: Model, after: int, fit: int) -> dict[str, int | float | str]:
        """Why ``model`` (cascaded, estimated ``after`` bytes) is above ``fit`` (bytes)."""
        if after <= fit:
            return {"stopped": "fit"}
        tail = self.tail(model)
        if tail >= fit:
            return {"stopped": "tail", "tail": tail}
        return {"stopped": "operator", "blocker": blocker(model)}

    def _chain(self, sg: Subgraph, ops: Sequence[int], buffers: Sequence[bytes]) -> Chain | None:
        """The chain as the cut is chosen: one row per step (``step_pixels``' steps
        when given), the wrapper's path; ``_stepped`` steps the pieces chosen."""
        return _try_chain(sg, ops, buffers, self.kernels, self.step_pixels or 0)

    def _choose(self, model: Model, subgraph: int, ops: list[int], before: int) -> list[Chain]:
        """The chains ``ops`` is cut into (none if cascading it does not pay against
        ``before``, the model's score): the whole run, or the cut ``cuts`` finds,
        whichever scores lower."""
        sg = model.subgraphs[subgraph]
        whole = self._chain(sg, ops, model.buffers)
        if whole is None:
            return []
        candidates = [[whole]]
        if self.split:
            align = runtime_of(self.kernels).alignment
            candidates.append(cuts(sg, ops, model.buffers, self._chain, align))
        scored = [(self.score(apply(model, c)[0]), len(c), c) for c in candidates if c]
        best, _, parts = min(scored, key=lambda x: (x[0], x[1]))
        return parts if best < before else []


def _chain_or(option, chain: Chain) -> Chain:
    """The option's chain, or ``chain`` when the chooser found none."""
    return chain if option is None else option.chain


def _uniform(chooser: Chooser, chain: Chain, pixels: int) -> Chain:
    """Every stage at the rows of ``pixels`` (0: one), each by its fastest path."""
    blocks = [chooser.uniform_block(s, pixels, every=True) for s in range(len(chain.ops))]
    return _chain_or(chooser.option(chooser.steps(blocks)), chain)


def cuts(
    sg: Subgraph,
    ops: Sequence[int],
    buffers: Sequence[bytes],
    make: Callable[[Subgraph, Sequence[int], Sequence[bytes]], Chain | None],
    align: int,
) -> list[Chain]:
    """The run ``ops`` cut into cascades so that the largest of them (its input and
    output tensors whole, plus its rings) is as small as can be, then into as few as
    can be: a bottleneck shortest path over the cut points (each a place where
    one tensor alone crosses). Bytes rounded to ``align`` (the runtime's alignment)
    as its planner does."""
    n = len(ops)
    best: list[tuple[int, int, int] | None] = [None] * (n + 1)  # (peak, parts, from)
    best[0] = (0, 0, -1)
    chains: dict[tuple[int, int], Chain] = {}
    for j in range(1, n + 1):
        for i in range(max(0, j - MAX_STAGES), j):
            if best[i] is None or not _valid(sg, ops[i], ops[j - 1]):
                continue
            c = make(sg, ops[i:j], buffers)
            if c is None:
                continue
            t = sg.tensors
            whole = [*(t[i].nbytes for i in c.inputs), t[c.output].nbytes, c.scratch]
            cost = sum(align_up(n, align) for n in whole)

            peak, parts, _ = best[i]  # type: ignore[misc]
            trial = (max(peak, cost), parts + 1, i)
            if best[j] is None or trial[:2] < best[j][:2]:  # type: ignore[index]
                best[j] = trial
                chains[(i, j)] = c
    if best[n] is None:
        return []
    out, j = [], n
    while j > 0:
        i = best[j][2]  # type: ignore[index]
        out.append(chains[(i, j)])
        j = i
    return out[::-1]


def blocker(model: Model) -> str:
    """The operator outside every cascade with the most activation bytes, in words."""
    sg = model.subgraphs[0]
    best, words = -1, "none"
    for op in sg.operators:
        if op.opcode == OPCODE:
            continue
        acts = [sg.tensors[i] for i in (*op.tensor_inputs(), *op.outputs)]
        live = sum(t.nbytes for t in acts if not t.is_constant)
        if live > best:
            try:
                stage_of(sg, op, model.buffers)
                why = "no cascade through it lowers the estimate"
            except Uncascadable as exc:
                why = str(exc)
            best, words = (
                live,
                f"operator {op.index} {op.opcode} ({live:,} B of activations: {why})",
            )
    return words


def apply(model: Model, chains: Sequence[Chain]) -> tuple[Model, Origin]:
    """The model with each chain replaced by its cascade operator (each a run of
    consecutive operators of its subgraph), and its origin."""
    current, origin = model, identity(model)
    for s in sorted({c.subgraph for c in chains}):
        mine = {c.ops[0]: c for c in chains if c.subgraph == s}
        skip = {i for c in mine.values() for i in c.ops}
        edit = SubgraphEdit(current, s)
        for op in current.subgraphs[s].operators:
            if op.index in mine:
                add_cascade(edit, mine[op.index], f"cascade{op.index}")
            elif op.index not in skip:
                edit.add_op(op, op.index)
        origin = compose(origin, edit.origin())
        current = edit.finish()
    return current, origin
