"""The records a runtime answers the planner with (``interface.Runtime``).

They carry no behaviour of any runtime: sizes are bytes, operators and tensors are
indices into the IR's tables.
"""

from __future__ import annotations

from dataclasses import dataclass

TensorBytes = tuple[tuple[int, ...], ...]  # [subgraph][tensor] -> bytes (unaligned)

UNSET = -1  # a scope the runtime never set (a variable only read has first == UNSET)


@dataclass(frozen=True, slots=True)
class Lifetime:
    """Inclusive scope interval ``[first, last]``; UNSET (-1) where the runtime never set it."""

    first: int
    last: int


@dataclass(frozen=True, slots=True)
class OrderFacts:
    """What any order of one subgraph's operators must keep, beyond the data edges
    the IR shows (each tensor's first writer before its readers, variables' touches
    in order). ``before``: pairs (a, b) of operator indices, a runs before b;
    ``bases``: tensor -> the tensor whose bytes it lies in (a view: a touch of it is
    a touch of its base); ``fixed``: why the order may not change at all (None: it
    may)."""

    before: tuple[tuple[int, int], ...] = ()
    bases: tuple[tuple[int, int], ...] = ()  # (tensor, its base), sorted
    fixed: str | None = None


@dataclass(frozen=True, slots=True)
class Lifetimes:
    """Lifetimes of every tensor and the scope span of every operator.

    ``tensors[s][t]`` is the lifetime of tensor t of subgraph s.
    ``operators[s][i]`` is (first, last) scope of operator i of subgraph s: equal
    for a plain operator, wider for a control-flow one (it spans the subgraphs it
    calls). Scratch buffers of an operator live over exactly that span.
    ``scopes`` is the number of scopes used (the last scope is ``scopes - 1``).
    """

    tensors: tuple[tuple[Lifetime, ...], ...]
    operators: tuple[tuple[tuple[int, int], ...], ...]
    scopes: int


@dataclass(frozen=True, slots=True)
class ScratchRequest:
    """One scratch request: ``bytes`` unaligned, made by operator ``op`` of ``subgraph``."""

    subgraph: int
    op: int
    order: int  # position among all requests (the runtime's request order)
    bytes: int


@dataclass(frozen=True, slots=True)
class TailEstimate:
    """Predicted bytes of the persistent part and what the rules could not model.

    ``unmodelled``: one short entry per operator kind (or model feature) whose
    persistent allocations are unknown, e.g. ``"operator 3 FOO"``; empty when
    the prediction is exact. ``bytes`` then leaves those allocations out.
    """

    bytes: int
    unmodelled: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return not self.unmodelled


# The kinds of alias a runtime may allow (``Alias.kind``).
INPLACE = "inplace"  # an output written over an input that dies at its operator
SLICE_VIEW = "slice-view"  # a slice that is one contiguous byte range of its input
CONCAT_VIEW = "concat-view"  # a concatenation's input lying on its range of the output
ALIAS_KINDS = (INPLACE, SLICE_VIEW, CONCAT_VIEW)


@dataclass(frozen=True, slots=True, order=True)
class Alias:
    """``tensor`` lies at ``offset(base) + delta`` (bytes), by rule ``kind`` at
    operator ``op`` of subgraph ``subgraph``.

    inplace: ``tensor`` is the output, ``base`` the input it writes over, delta 0;
    slice-view: ``tensor`` is the slice, ``base`` its input, delta >= 0;
    concat-view: ``tensor`` is one input, ``base`` the output, delta >= 0.
    """

    kind: str
    subgraph: int
    op: int
    tensor: int
    base: int
    delta: int


@dataclass(frozen=True, slots=True)
class Candidates:
    """Aliases the kernels allow, each on its own; ``refused`` says, one line each,
    why an operator of an aliasing kind got none (for the curious and the tests)."""

    aliases: tuple[Alias, ...]
    refused: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SplitPersistent:
    """The persistent array of a split arena (bytes, multiples of the alignment):
    ``temporary`` for the runtime's temporaries, then ``tail`` for its persistent
    data; ``unmodelled`` says what the sizes leave out (empty: exact for the build
    profile); ``kernels``: the spelling of the kernels the sizes are for."""

    temporary: int
    tail: int
    unmodelled: tuple[str, ...] = ()
    kernels: str = ""

    @property
    def bytes(self) -> int:
        return self.temporary + self.tail
