"""Where each operator reads its weights from, and what that costs: a policy per
operator, chosen by estimated time under the RAM the activations leave.

Policies (``Policy``), for an operator whose weights W (``weights.staging``)
live in memory S (the target's weights memory, flash) and are staged into D
(the fastest memory for activations):

  in-place   the operator reads W in S (only if S is memory-mapped, ``read``)
  whole      W copied into D before the operator; alive only there, or also
             over the operator ahead of it when S's copies are made by a DMA
             (prefetched while that operator computes)
  groups:G   one buffer of G output channels' weights; group i+1 is copied
             after group i is used (no overlap)
  groups:G,double
             two buffers: with a DMA the copy of group i+1 overlaps the compute
             of group i and the first group overlaps the operator ahead

Seconds of an operator under a policy (t_S, t_D: its time by the time model of
``cost.timing`` with W in S or in D; c(b, n): S's copy of b bytes in n
transfers, ``Memory.copy_seconds``; N groups; t_prev: the operator ahead):

  in-place  t_S
  whole     t_D + c(B, k)                      blocking copy (k: its weight tensors,
            t_D + max(0, c(B, k) - t_prev)     DMA prefetch   one copy each)
  groups    t_D + c(B, N)
  double    t_D + max(0, c/N - t_prev) + (N - 1) * max(0, c/N - t_D/N)   DMA, c = c(B, N)

RAM in D: whole B, groups the largest group, double twice that (bytes, each
buffer rounded to 16). Estimates, not measurements.

An operator whose weights cannot be copied bit-exactly (``OpWeights.refused``:
INT4 weights) is read in place whatever the policy asked; where S is not mapped it
cannot run at all, and the plan is refused in one line naming it and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenaplan.allocation.packing import align_up
from arenaplan.cost.roofline import default_memory
from arenaplan.cost.timing import Timer
from arenaplan.errors import UnsupportedModelError, UsageError
from arenaplan.ir.model import Model
from arenaplan.runtime.registry import runtime_of
from arenaplan.runtime.spec import KernelSet
from arenaplan.targets.model import Memory, Target
from arenaplan.weights.staging import DEFAULT_GROUP, OpWeights, operator_weights


@dataclass(frozen=True, slots=True)
class Policy:
    """How one operator gets its weights; ``group`` output channels per group."""

    kind: str  # "in-place", "whole", "groups"
    group: int = DEFAULT_GROUP
    double: bool = False

    @property
    def label(self) -> str:
        if self.kind != "groups":
            return self.kind
        return f"groups:{self.group}" + (",double" if self.double else "")


IN_PLACE = Policy("in-place")
WHOLE = Policy("whole")


MAX_GROUP = 65_536  # the largest G of groups:G (output channels; more are one group: whole)


def parse_weights(text: str) -> Policy | None:
    """``--weights``: None for "auto", else the policy forced on every operator."""
    word = text.strip()
    if word == "auto":
        return None
    if word in ("in-place", "whole"):
        return Policy(word)
    head, _, rest = word.partition(",")
    if head.split(":")[0] == "groups" and rest in ("", "double"):
        size = head.partition(":")[2] or str(DEFAULT_GROUP)
        if size.isdigit() and 0 < int(size) <= MAX_GROUP:
            return Policy("groups", int(size), rest == "double")
        if size.isdigit() and int(size) > 0:
            raise UsageError(f"--weights {text!r}: G is at most {MAX_GROUP:,} output channels")
    raise UsageError(
        f"--weights {text!r}: expected auto, in-place, whole, groups[:G] or groups[:G],double"
    )


@dataclass(frozen=True, slots=True)
class OpChoice:
    """One operator's policy: the RAM it takes in D (bytes, 0 in place), from which
    operator the buffer is alive (``first``, an operator index of the model as
    given), and the estimated seconds of the operator with its fetch."""

    weights: OpWeights
    policy: Policy
    ram: int
    first: int
    seconds: float
    in_place_seconds: float  # the same operator reading its weights where they lie
    fetch: float = 0.0  # seconds of copying not hidden behind compute (in ``seconds``)

    @property
    def op(self) -> int:
        return self.weights.op


class WeightCosts:
    """Times and RAM of every policy of every operator reading weights, for one
    target (weights in its last weights memory, staged into its fastest), the
    weights read as ``kernels`` read them (default: the target's)."""

    def __init__(self, model: Model, target: Target, kernels: KernelSet | None = None) -> None:

        self.target = target
        self.source: Memory = target.weights_memory()
        self.dest: Memory = target.fastest()
        self.timer = Timer(model, target)
        self.where = default_memory(model, target)
        self.ops = operator_weights(model, kernels=kernels or target.kernels)
        self.align = runtime_of(kernels or target.kernels).alignment  # bytes
        self.base = [t.seconds for t in self.timer.times(self.where)]  # weights in S
        self._choices: dict[tuple[int, Policy], OpChoice] = {}

    def allowed(self, w: OpWeights) -> list[Policy]:
        """The policies open to ``w``'s operator, in-place first if S is mapped (only
        in place where its weights cannot be copied, ``_uncopied``)."""
        found = [IN_PLACE] if self.source.read == "in-place" else []
        if w.refused:
            return self._uncopied(w)
        found.append(WHOLE)
        if w.groupable and w.groups(DEFAULT_GROUP) > 1:
            found.append(Policy("groups", DEFAULT_GROUP))
            if self.source.copy == "dma":
                found.append(Policy("groups", DEFAULT_GROUP, True))
        return found

    def choice(self, w: OpWeights, p: Policy) -> OpChoice:
        """``w``'s operator under policy ``p`` (any group size), worked out once (the
        search for RAM asks again for the same ones)."""
        key = (w.op, p)
        if key not in self._choices:
            self._choices[key] = self._choice(w, p)
        return self._choices[key]

    def _choice(self, w: OpWeights, p: Policy) -> OpChoice:
        t_s = self.base[w.op]
        if p.kind == "in-place":
            return OpChoice(w, p, 0, w.op, t_s, t_s)
        t_d = self._in_dest(w)
        t_prev = self.base[w.op - 1] if w.op > 0 else 0.0
        clock = self.target.clock_hz
        dma = self.source.copy == "dma"
        if p.kind == "whole":
            c = self.source.copy_seconds(w.bytes, len(w.tensors), clock)  # a copy per tensor
            fetch = max(0.0, c - t_prev) if dma else c
            first = w.op - 1 if dma and w.op > 0 else w.op
            return OpChoice(w, p, align_up(w.bytes, self.align), first, t_d + fetch, t_s, fetch)
        n = w.groups(p.group)
        c = self.source.copy_seconds(w.bytes, n, clock)
        ram = align_up(w.group_bytes(p.group), self.align)

        if not (p.double and dma):
            return OpChoice(w, p, ram * (2 if p.double else 1), w.op, t_d + c, t_s, c)
        g = c / n
        fetch = max(0.0, g - t_prev) + (n - 1) * max(0.0, g - t_d / n)
        return OpChoice(w, p, 2 * ram, max(w.op - 1, 0), t_d + fetch, t_s, fetch)

    def _in_dest(self, w: OpWeights) -> float:
        where = dict(self.where)
        for t in w.tensors:
            where[(0, t)] = self.dest.name
        return self.timer.op_time(w.op, where).seconds

    def forced(self, p: Policy) -> list[OpChoice]:
        """Every operator under ``p`` where it applies; whole where groups cannot;
        in place refused (one line) when S cannot be read in place."""
        if p.kind == "in-place" and self.source.read != "in-place":
            raise UsageError(
                f"--weights in-place: {self.target.name}'s {self.source.name} is not "
                'memory-mapped (read = "copy"); use whole, groups or auto'
            )
        return [
            self.choice(w, p if p.kind != "groups" or w.groupable else WHOLE)
            if not w.refused
            else self.choice(w, self._uncopied(w)[0])
            for w in self.ops
        ]

    def _uncopied(self, w: OpWeights) -> list[Policy]:
        """In place, the one policy of an operator whose weights cannot be copied;
        refused (one line) where S is not mapped."""
        if self.source.read != "in-place":
            raise UnsupportedModelError(
                f"--weights: operator {w.op} {w.opcode} cannot have its weights copied "
                f"({w.refused}), and {self.target.name}'s {self.source.name} is not "
                "memory-mapped: the operator cannot read them"
            )
        return [IN_PLACE]

    def fastest(self) -> list[OpChoice]:
        """Every operator under its fastest policy (ties: the one taking less RAM)."""
        return [
            min((self.choice(w, p) for p in self.allowed(w)), key=lambda c: (c.seconds, c.ram))
            for w in self.ops
        ]

    def cheaper(self, c: OpChoice) -> list[OpChoice]:
        """Policies of ``c``'s operator that take less RAM than ``c``."""
        return [x for p in self.allowed(c.weights) if (x := self.choice(c.weights, p)).ram < c.ram]


def unless_in_place(target: Target, asked: str | None) -> str | None:
    """The ``--weights`` policy a sweep uses: the one ``asked``, else none where the
    target reads its weights in place, else "whole" (they cannot be read where they
    lie: copied before their operator)."""
    if asked is not None or target.weights_memory().read == "in-place":
        return asked
    return WHOLE.kind
