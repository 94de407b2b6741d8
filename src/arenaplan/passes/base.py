"""What a pass is: a named, pure function from a model to a model.

A pass is a frozen dataclass whose fields are its options, with a class-level
``name`` (kebab-case, the word users type in ``--passes``) and ``summary`` (one
line for ``arenaplan passes``). ``run`` returns a new model and what it changed;
it never edits its input (the IR is frozen anyway). The pipeline, not the pass,
verifies the IR afterwards (``ir.verifier.verify_ir``).

Provenance lives beside the IR, not in it: a result's ``origin`` says, for each
operator of the output model, which operator of the input model it came from, or
None for one the pass inserted (a PAD, a copy). Operators are numbered in model
order (subgraph 0's first, then subgraph 1's, ...) on both sides; a pass never
moves an operator to another subgraph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from arenaplan.ir.model import Model

# per operator of a model (model order): the operator of an earlier model it came
# from (model order), or None for an operator inserted since
Origin = tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class PassResult:
    """``changed``: the graph differs from the input; ``note``: one line saying how
    (printed in the summary); ``stats``: figures for the JSON plan (ints, floats);
    ``origin``: for each operator of ``model``, the input's operator it came from
    (None: inserted); left out, the identity (a pass that moves no operator)."""

    model: Model
    changed: bool
    note: str
    stats: dict[str, int | float | str] = field(default_factory=dict)
    origin: Origin | None = None  # never None once made: None becomes the identity

    def __post_init__(self) -> None:
        if self.origin is None:
            object.__setattr__(self, "origin", identity(self.model))


class Pass(Protocol):
    name: ClassVar[str]
    summary: ClassVar[str]

    def run(self, model: Model) -> PassResult: ...


def identity(model: Model) -> Origin:
    """The origin of a model from itself: every operator where it was."""
    return tuple(range(model.operator_count))


def compose(first: Origin, then: Origin) -> Origin:
    """The origin from A to C, given ``first`` (from A to B) and ``then`` (B to C)."""
    return tuple(None if i is None else first[i] for i in then)


def subgraph_starts(model: Model) -> tuple[int, ...]:
    """Where each subgraph's operators start in model order."""
    starts, at = [], 0
    for sg in model.subgraphs:
        starts.append(at)
        at += len(sg.operators)
    return tuple(starts)


def origin_of_subgraphs(before: Model, local: Mapping[int, Sequence[int | None]]) -> Origin:
    """The origin from ``before`` of a model whose subgraph s has operators that came
    from ``local[s]`` (per operator, an index within s of ``before``; None: inserted),
    every subgraph not in ``local`` keeping its operators."""
    starts = subgraph_starts(before)
    out: list[int | None] = []
    for sg in before.subgraphs:
        came = local.get(sg.index, range(len(sg.operators)))
        out += [None if i is None else starts[sg.index] + i for i in came]
    return tuple(out)


def by_operator(after: Model, before: Model, origin: Origin) -> dict[tuple[int, int], int | None]:
    """``origin`` (of ``after`` from ``before``) keyed by (subgraph, index) of each
    operator of ``after``; each value the index within that subgraph of the operator
    of ``before`` it came from (None: inserted)."""
    starts = subgraph_starts(before)
    keys = [(sg.index, op.index) for sg in after.subgraphs for op in sg.operators]
    return {k: None if i is None else i - starts[k[0]] for k, i in zip(keys, origin, strict=True)}
