"""The forms in which ``tflm.kernels`` and ``tflm.cmsis_nn`` state what a kernel does.

One ``Kernel`` per operator holds its four kinds of fact side by side:

- ``tail``: an ``OpRule``, what the operator adds to the persistent arena: the
  options struct its builtin parser allocates, the OpData its Init allocates, and
  what its Prepare allocates (``tflm.tail`` runs them in TFLM's order);
- ``scratch``: the sizes its Prepare asks ``RequestScratchBufferInArena`` for, in
  order (``tflm.scratch``);
- ``refuses``: the checks its Prepare and Eval make that refuse a model
  (``tflm.refusals``);
- ``inplace``/``view``: the in-place rule read for it, or the view rule it allows
  (``tflm.alias_rules``).

``CmsisKernel`` holds the same for a kernel of ``kernels/cmsis_nn/``, each fact
given only where it differs from the reference kernel's. The views the rules read
(``OpView``, ``ScratchView``) and the refusal checks are here too. Sizes in bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from arenaplan.ir.custom import custom_options, int_option
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Operator, Subgraph, Tensor

# ---- tail --------------------------------------------------------------------------


class Unmodelled(Exception):
    """A rule cannot predict this operator's allocations (the message says why)."""


@dataclass(frozen=True, slots=True)
class OpView:
    """What a rule reads: the operator in its subgraph, the tensors' byte sizes,
    the profile's kernel-state sizes and pointer width, and ``variables``, the
    resource variables given a buffer so far (shared over one simulation)."""

    sg: Subgraph
    op: Operator
    sizes: tuple[int, ...]  # bytes of each tensor of ``sg`` after Prepare
    state: Mapping[str, int]  # kernel state struct -> bytes
    pointer: int  # bytes
    variables: set[str] = field(default_factory=set)

    def input(self, k: int) -> Tensor | None:
        """The k-th input (None if absent or omitted)."""
        return self.sg.operand(self.op, k)

    def output(self, k: int = 0) -> Tensor | None:
        return self.sg.operand(self.op, k, output=True)

    def dtype(self, k: int) -> DType | None:
        t = self.input(k)
        return t.dtype if t is not None else None

    def custom(self) -> dict:
        return custom_options(self.op)

    def int_option(self, key: str, default: int = 0) -> int:
        """An integer custom option (a value of another kind is a corrupt model)."""
        return int_option(self.op, key, default)


Allocations = Callable[[OpView], list[int]]  # bytes of each 16-aligned allocation


@dataclass(frozen=True, slots=True)
class OpRule:
    """What an operator adds to the tail, at three moments (``tflm.tail``):
    ``options``: name in ``structs.OPTIONS`` (its parser's struct); ``init``: name in
    ``structs.STATE`` (its Init's OpData); ``init_extra``/``prepare``: further
    allocations of its Init and Prepare. ``OpRule()``: nothing at all."""

    options: str | None = None
    init: str | None = None
    init_extra: Allocations | None = None
    prepare: Allocations | None = None


# ---- scratch -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScratchView:
    """What a reference kernel's scratch rule reads."""

    sg: Subgraph
    op: Operator
    sizes: tuple[int, ...]  # bytes of each tensor of ``sg`` after Prepare
    pointer_size: int  # bytes

    def t(self, k: int):  # the k-th input tensor (None if omitted)
        return self.sg.operand(self.op, k)

    def out(self, k: int = 0):
        return self.sg.tensors[self.op.outputs[k]]

    def elems(self, tensor) -> int:
        return self.sizes[tensor.index] // tensor.dtype.itemsize if tensor else 0

    def custom(self, key: str) -> int:
        return int_option(self.op, key)

    def view(self) -> OpView:
        """The operator as the CMSIS-NN rules read it."""
        return OpView(self.sg, self.op, self.sizes, {}, self.pointer_size)


ScratchRule = Callable[[ScratchView], list[int]]  # bytes of each request, in order


# ---- in place ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InPlaceRule:
    """A kernel safe with output memory == input memory (``docs/inplace.md``).

    ``inputs``: positions of the inputs the output may take over. ``same_shape``:
    that input must have the output's shape, leading 1s aside (no broadcasting
    of it); otherwise only the element counts must match (reshapes). ``source``:
    the code read for it, file and loop.
    """

    inputs: tuple[int, ...]
    same_shape: bool
    source: str


# ---- refusals ----------------------------------------------------------------------
# Tensor positions are written "input K" / "output K" (K-th entry of the operator's
# list); a position that is omitted (-1) or beyond the list is absent, and a check
# about an absent tensor does not fire unless it is a ``Present`` check.


def _tensor(sg: Subgraph, op: Operator, slot: str) -> Tensor | None:
    """The tensor at ``slot`` ("input 2", "output 0"), None if omitted or absent."""
    kind, k = slot.split()
    return sg.operand(op, int(k), output=kind == "output")


_INTEGER_WEIGHTS = frozenset({DType.INT4, DType.INT8, DType.UINT8, DType.INT16})


def _names(dtypes: frozenset[DType]) -> str:
    return ", ".join(sorted(t.name for t in dtypes))


@dataclass(frozen=True, slots=True)
class Accepts:
    """The kernel's type switch at ``slot`` takes only ``dtypes``."""

    slot: str
    dtypes: frozenset[DType]

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        t = _tensor(sg, op, self.slot)
        if t is not None and t.dtype not in self.dtypes:
            yield f"{self.slot} is {t.dtype.name}; the kernel takes {_names(self.dtypes)}"


@dataclass(frozen=True, slots=True)
class Same:
    """Each of ``slots`` ("every input" for all) must have the dtype of ``like``."""

    slots: tuple[str, ...]
    like: str

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        ref = _tensor(sg, op, self.like)
        every = tuple(f"input {k}" for k in range(len(op.inputs)))
        slots = (s for name in self.slots for s in (every if name == "every input" else (name,)))
        for slot in slots:
            t = _tensor(sg, op, slot)
            if ref is not None and t is not None and t.dtype is not ref.dtype:
                yield f"{slot} is {t.dtype.name} but {self.like} is {ref.dtype.name}"


@dataclass(frozen=True, slots=True)
class Pairs:
    """(``first``, ``second``) dtypes must be one of ``pairs``. ``hybrid``: the refused
    pair of a FLOAT32 ``first`` and integer ``second`` is reported as hybrid."""

    first: str
    second: str
    labels: tuple[str, str]  # what the kernel calls the two tensors
    pairs: frozenset[tuple[DType, DType]]
    hybrid: bool = False

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        a, b = _tensor(sg, op, self.first), _tensor(sg, op, self.second)
        if a is None or b is None or (a.dtype, b.dtype) in self.pairs:
            return
        both = f"{a.dtype.name} {self.labels[0]}, {b.dtype.name} {self.labels[1]}"
        if self.hybrid and a.dtype is DType.FLOAT32 and b.dtype in _INTEGER_WEIGHTS:
            yield f"hybrid ({both}): TFLM's kernels have no hybrid path"
        else:
            takes = ", ".join(sorted(f"{x.name}/{y.name}" for x, y in self.pairs))
            yield f"{both}: the kernel takes {self.labels[0]}/{self.labels[1]} {takes}"


@dataclass(frozen=True, slots=True)
class Constant:
    """``slot`` (``name`` in the kernel) must have data in the flatbuffer (IsConstantTensor)."""

    slot: str
    name: str

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        t = _tensor(sg, op, self.slot)
        if t is not None and not t.is_constant:
            yield f"{self.name} ({self.slot}) is not constant: TFLM needs it in the flatbuffer"


@dataclass(frozen=True, slots=True)
class Variable:
    """``slot`` (``name`` in the kernel) must be a variable tensor."""

    slot: str
    name: str

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        t = _tensor(sg, op, self.slot)
        if t is not None and not t.is_variable:
            yield f"{self.name} ({self.slot}) is not a variable tensor"


@dataclass(frozen=True, slots=True)
class Present:
    """Each of ``slots`` must be given (``present``) or omitted (not ``present``)."""

    slots: tuple[str, ...]
    present: bool
    what: str  # why, in the kernel's terms

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        for slot in self.slots:
            if (_tensor(sg, op, slot) is not None) != self.present:
                state = "missing" if self.present else "given"
                yield f"{slot} is {state}: TFLM's kernel {self.what}"


@dataclass(frozen=True, slots=True)
class Option:
    """Builtin option ``name`` must be one of ``values``; TFLM reads an absent one as
    ``default`` (its parsers zero the parameters when the options table is missing)."""

    name: str
    values: frozenset[str]
    default: str

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        value = op.options.get(self.name, self.default)
        if value not in self.values:
            yield f"{self.name} is {value}; the kernel takes {', '.join(sorted(self.values))}"


Check = Accepts | Same | Pairs | Constant | Variable | Present | Option


def inputs(*ks: int) -> tuple[str, ...]:
    """The slots "input K" of ``ks``."""
    return tuple(f"input {k}" for k in ks)


def types(text: str) -> frozenset[DType]:
    """The dtypes named in ``text`` ("FLOAT32 INT8")."""
    return frozenset(DType[name] for name in text.split())


def pairs(text: str) -> frozenset[tuple[DType, DType]]:
    """The (first, second) dtype pairs named in ``text`` ("FLOAT32/FLOAT32 INT8/INT4")."""
    return frozenset((DType[a], DType[b]) for a, b in (w.split("/") for w in text.split()))


def weights(first: str, second: str, text: str, label: str = "weights") -> Pairs:
    """An (input, weights) pair check: a FLOAT32 input with integer weights is hybrid."""
    return Pairs(first, second, ("input", label), pairs(text), hybrid=True)


def in_out(text: str) -> Pairs:
    """An (input 0, output 0) dtype pair check."""
    return Pairs("input 0", "output 0", ("input", "output"), pairs(text))


OUT_LIKE_IN = Same(("output 0",), "input 0")


# ---- one kernel --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kernel:
    """What TFLM's reference kernel for one operator does to memory. ``tail`` None:
    not modelled; ``view``: the view rule (``SLICE_VIEW``, ``CONCAT_VIEW``) read for
    it."""

    tail: OpRule | None
    scratch: ScratchRule | None = None
    refuses: tuple[Check, ...] = ()
    inplace: InPlaceRule | None = None
    view: str | None = None
    # its Prepare holds one temporary TfLiteTensor at a time (else all of them)
    one_temporary: bool = False


@dataclass(frozen=True, slots=True)
class CmsisKernel:
    """What a kernel of ``kernels/cmsis_nn/`` does, each at a CMSIS-NN feature level
    ("c", "dsp", "mve"). ``scratch`` None: the reference kernel's requests (none, for
    every CMSIS-NN kernel without one); ``tail`` None: the reference kernel's rule;
    ``refuses``: why it fails where the reference kernel would not; ``inplace``:
    feature level -> what was read to let it write its output over an input (a
    level missing: no in-place rule)."""

    scratch: Callable[[str, OpView], list[int]] | None = None
    tail: Callable[[str], OpRule] | None = None
    refuses: Callable[[OpView], list[str]] | None = None
    inplace: Mapping[str, str] = field(default_factory=dict)
