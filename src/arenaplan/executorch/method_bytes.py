"""The bytes ExecuTorch's method allocator gives a method, predicted from its ``.pte``.

``Program::load_method`` hands ``Method::init`` the ``MemoryManager``'s method
allocator, a bump allocator (``runtime/core/memory_allocator.h``): each
``allocateList<T>(n)`` / ``allocateInstance<T>()`` moves its cursor up to a multiple
of ``alignof(T)``, then by ``n * sizeof(T)`` (a list of none still pays the
alignment), and ``used_size()`` is the cursor's distance from the start, padding
included. ``Method::init`` (ExecuTorch 1.5, ``runtime/executor/method.cpp`` and
``tensor_parser_*.cpp``) allocates, in this order:

* ``parse_values``: the ``EValue`` array (one per value); a ``bool`` per input (when
  the method has inputs); a ``NamedData`` per external constant tensor (when any);
  then per value: a tensor's ``sizes``/``dim_order`` copies (int32 and uint8 per
  dimension, only when its shape is dynamic), its ``strides`` (int32 per dimension)
  and its ``TensorImpl``; an int list's ``EValue*`` and ``int64_t`` per item and its
  ``BoxedEvalueList``; a tensor list's ``Tensor`` and ``EValue*`` per item and its
  ``BoxedEvalueList``; an optional tensor list's ``EValue*`` and
  ``optional<Tensor>`` per item and its ``BoxedEvalueList``; a bool list, a double
  list or a string one ``ArrayRef``; a scalar or None nothing.
* the ``BackendDelegate`` array (one per delegate; each delegate's backend then
  allocates from it too: compile specs and its own state, not predicted here).
* the ``Chain`` array; per chain an ``OpFunction`` and an ``InstructionArgs``
  (``Span<EValue*>``) per instruction; per kernel or delegate call an ``EValue*``
  per argument, in instruction order.

Assumed as in arenaplan's runner (``runner/et_runner.cc``): a temporary allocator is
given with room for each kernel's ``TensorMeta`` (else ``resolve_operator`` takes
them from the method allocator too), no external data map, the method allocator's
start aligned to 8 bytes, and nothing allocated from it before ``load_method``.

Sizes per ABI were taken from ExecuTorch 1.5.1's headers compiled for x86-64 (LP64,
``g++``) and for a Cortex-M (ILP32 AAPCS, ``arm-none-eabi-g++``): ``sizeof`` and
``alignof`` of each structure. The 64-bit table is checked against the runner's
measurement; the 32-bit table is a prediction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arenaplan.errors import ModelFormatError
from arenaplan.reader.pte_format import (
    BOOL,
    BOOL_LIST,
    DOUBLE,
    DOUBLE_LIST,
    INT,
    INT_LIST,
    NULL,
    OPTIONAL_TENSOR_LIST,
    STRING,
    TENSOR,
    TENSOR_LIST,
    Program,
    PtePlan,
    PteTensor,
)

# (sizeof, alignof) in bytes of each structure the method allocator holds, by
# pointer width. Facts behind each, from ExecuTorch's headers:
#   EValue: a union of 8-byte payloads (int64_t, double, pointers) and a 4-byte Tag;
#     int64_t/double are 8-aligned on LP64 and on ARM's AAPCS alike: 16 / 8 on both.
#   TensorImpl: sizes_, dim_order_, strides_, data_ (4 pointers), dim_ and numel_
#     (ssize_t), numel_bound_ (size_t), then ScalarType, TensorShapeDynamism (1 byte
#     each) and a Device (2 bytes): 7 words + 4 bytes, padded to the word: 64 / 32.
#   Tensor: one TensorImpl*.  optional<Tensor>: the pointer and a bool, padded.
#   BoxedEvalueList<T>: an ArrayRef<EValue*> (pointer, size_t) and a T*: 3 words.
#   ArrayRef<T>: a pointer and a size_t: 2 words.
#   NamedData: a key pointer and a FreeableBuffer (a variant of {pointer, pointer}
#     and {uint64_t, pointer} with its index, a context pointer, a size_t).
#   BackendDelegate: a FreeableBuffer, a backend pointer and a handle pointer.
#   Chain: a flatbuffer pointer, a Span<InstructionArgs> (pointer, size_t) and an
#     OpFunction*: 4 words.
#   OpFunction: a function pointer.  InstructionArgs: Span<EValue*>: 2 words.
#   SizesType, StridesType: int32_t; DimOrderType: uint8_t.
Layout = dict[str, tuple[int, int]]

LAYOUTS: dict[int, Layout] = {
    8: {
        "EValue": (16, 8),
        "TensorImpl": (64, 8),
        "Tensor": (8, 8),
        "optional<Tensor>": (16, 8),
        "BoxedEvalueList": (24, 8),
        "ArrayRef": (16, 8),
        "NamedData": (48, 8),
        "BackendDelegate": (56, 8),
        "Chain": (32, 8),
        "OpFunction": (8, 8),
        "InstructionArgs": (16, 8),
        "EValue*": (8, 8),
        "int64_t": (8, 8),
        "bool": (1, 1),
        "SizesType": (4, 4),
        "DimOrderType": (1, 1),
        "StridesType": (4, 4),
    },
    4: {
        "EValue": (16, 8),
        "TensorImpl": (32, 4),
        "Tensor": (4, 4),
        "optional<Tensor>": (8, 4),
        "BoxedEvalueList": (12, 4),
        "ArrayRef": (8, 4),
        "NamedData": (40, 8),  # FreeableBuffer's variant holds a uint64_t: 8-aligned
        "BackendDelegate": (40, 8),
        "Chain": (16, 4),
        "OpFunction": (4, 4),
        "InstructionArgs": (8, 4),
        "EValue*": (4, 4),
        "int64_t": (8, 8),
        "bool": (1, 1),
        "SizesType": (4, 4),
        "DimOrderType": (1, 1),
        "StridesType": (4, 4),
    },
}
PARTS = ("values", "tensors", "lists", "external", "delegates", "instructions")
# what the bytes leave out when a method has a delegate
DELEGATES = ("what each delegate's backend allocates from the method allocator",)


@dataclass(slots=True)
class MethodBytes:
    """A method's predicted method-allocator bytes: ``total`` (the cursor's final
    distance, alignment padding included), ``parts`` (bytes by what they hold, each
    with the padding its allocations caused; they sum to ``total``) and
    ``lower_bound`` (True when delegates allocate more than predicted)."""

    total: int = 0
    parts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PARTS, 0))
    lower_bound: bool = False


class _Bump:
    """ExecuTorch's ``MemoryAllocator::allocate`` as a counter: align, then add."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.out = MethodBytes()

    def take(self, part: str, kind: str, count: int = 1) -> None:
        """``allocateList<kind>(count)``; ``allocateInstance<kind>()`` when count 1."""
        size, align = self.layout[kind]
        start = -(-self.out.total // align) * align
        end = start + size * count
        self.out.parts[part] += end - self.out.total
        self.out.total = end


def method_allocator_bytes(program: Program, plan_index: int, pointer_bytes: int = 8) -> int:
    """The bytes ``load_method`` takes from the method allocator for plan
    ``plan_index`` on a target with ``pointer_bytes``-byte pointers (8: LP64, as
    measured on x86-64; 4: a 32-bit ARM, a prediction)."""
    return method_allocator_breakdown(program, plan_index, pointer_bytes).total


def largest_method(program: Program, pointer_bytes: int = 8) -> tuple[int, tuple[str, ...]]:
    """The bytes of the method allocator that loads any one method of ``program`` (the
    largest method's), and what they leave out (``DELEGATES`` when a method has a
    delegate: the figure is then a lower bound)."""
    sizes = [
        method_allocator_breakdown(program, s, pointer_bytes) for s in range(len(program.plans))
    ]
    unmodelled = DELEGATES if any(b.lower_bound for b in sizes) else ()
    return max((b.total for b in sizes), default=0), unmodelled


def method_allocator_breakdown(
    program: Program, plan_index: int, pointer_bytes: int = 8
) -> MethodBytes:
    """``method_allocator_bytes`` with its parts (see ``MethodBytes``)."""
    if pointer_bytes not in LAYOUTS:
        raise ValueError(f"pointer_bytes is 8 or 4, not {pointer_bytes}")
    plan = program.plans[plan_index]
    bump = _Bump(LAYOUTS[pointer_bytes])
    _values(bump, plan)
    bump.take("delegates", "BackendDelegate", len(plan.delegates))
    bump.out.lower_bound = bool(plan.delegates)
    _instructions(bump, plan)
    return bump.out


def _values(bump: _Bump, plan: PtePlan) -> None:
    """``Method::parse_values``: the value array, input flags, external constants,
    then each value's own structures in value order."""
    bump.take("values", "EValue", len(plan.values))
    if plan.inputs:
        bump.take("values", "bool", len(plan.inputs))
    external = sum(1 for t in plan.tensors() if t.external)
    if external:
        bump.take("external", "NamedData", external)
    for (kind, payload), items in zip(plan.values, plan.items, strict=True):
        if kind == TENSOR and isinstance(payload, PteTensor):
            _tensor(bump, payload)
        else:
            _list(bump, kind, items)


def _tensor(bump: _Bump, tensor: PteTensor) -> None:
    """``deserialization::parseTensor``: a dynamic shape's own sizes and dim order,
    the strides, the ``TensorImpl``."""
    dim = len(tensor.sizes)
    if tensor.dynamic:
        bump.take("tensors", "SizesType", dim)
        bump.take("tensors", "DimOrderType", dim)
    bump.take("tensors", "StridesType", dim)
    bump.take("tensors", "TensorImpl")


def _list(bump: _Bump, kind: int, items: int) -> None:
    """A list's or string's structures; a scalar or None has none."""
    if kind == INT_LIST:
        bump.take("lists", "EValue*", items)
        bump.take("lists", "int64_t", items)
        bump.take("lists", "BoxedEvalueList")
    elif kind == TENSOR_LIST:  # parseTensorList: the tensors first, then the pointers
        bump.take("lists", "Tensor", items)
        bump.take("lists", "EValue*", items)
        bump.take("lists", "BoxedEvalueList")
    elif kind == OPTIONAL_TENSOR_LIST:  # parseListOptionalType: pointers first
        bump.take("lists", "EValue*", items)
        bump.take("lists", "optional<Tensor>", items)
        bump.take("lists", "BoxedEvalueList")
    elif kind in (BOOL_LIST, DOUBLE_LIST, STRING):  # an ArrayRef onto the program
        bump.take("lists", "ArrayRef")
    elif kind not in (NULL, INT, BOOL, DOUBLE):  # a scalar is held in its EValue
        raise ModelFormatError(f"corrupt .pte: a value of unknown kind {kind}")


def _instructions(bump: _Bump, plan: PtePlan) -> None:
    """The chain array; per chain its kernels and argument spans, and per kernel or
    delegate call the pointers to its arguments."""
    bump.take("instructions", "Chain", len(plan.chains))
    start = 0
    for count in plan.chains:
        bump.take("instructions", "OpFunction", count)
        bump.take("instructions", "InstructionArgs", count)
        for ins in plan.instructions[start : start + count]:
            if ins.kind in ("kernel", "delegate"):
                bump.take("instructions", "EValue*", len(ins.args))
        start += count
