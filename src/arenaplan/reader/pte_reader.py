"""An ExecuTorch ``.pte`` program as the IR.

Each execution plan (method) is a subgraph; its tensors are the plan's tensor values
in value order (``tensor_values`` maps back); its operators are the instructions in
chain order: a kernel call is the operator it names (``aten::convolution.out``), a
delegate call ``delegate:<id>``, a move ``move``, a free ``free``; every one is a
custom operator to the IR (no TFLite semantics).

A kernel call is an out-variant: ``args = [inputs..., outs..., returns]`` where the
returns repeat the outs, or ``[inputs..., out list]`` when it returns nothing
(``outs_of``); what it writes is its outputs, the rest its inputs. A value written
again (a mutable buffer by ``copy_``) is an input there, and an output the first time.
A delegate writes the tensors among its args not defined before it.

Each operator's ``source`` is its instruction's index in the plan's chain. A kernel
call that writes a tensor it also reads (defined before it: read-modify-write) says
so in its options: ``written_inputs``, those tensors (absent when there are none).

A tensor read before any instruction writes it that is not a method input is marked
``is_variable``: either a mutable buffer (state kept across calls) or a view (a
second name for bytes of another tensor, which ExecuTorch writes no instruction
for). ``Model.stored_plan`` holds each tensor's ``allocation_info`` offset (-1:
none) and ``Model.stored_memory`` its memory id (0: none).
"""

from __future__ import annotations

from dataclasses import replace

from arenaplan.errors import UnsupportedModelError
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Options, Subgraph, Tensor
from arenaplan.reader.pte_format import Instruction, Program, PtePlan, read_program

WRITTEN_INPUTS = "written_inputs"  # option: the inputs an instruction writes too

# ExecuTorch ScalarType code -> the IR's element type (bytes per element as stored)
SCALAR_TYPES = {
    0: DType.UINT8,  # Byte
    1: DType.INT8,  # Char
    2: DType.INT16,  # Short
    3: DType.INT32,  # Int
    4: DType.INT64,  # Long
    5: DType.FLOAT16,  # Half
    6: DType.FLOAT32,  # Float
    7: DType.FLOAT64,  # Double
    11: DType.BOOL,
    12: DType.INT8,  # QInt8
    13: DType.UINT8,  # QUInt8
    14: DType.INT32,  # QInt32
    15: DType.BFLOAT16,
    22: DType.UINT16,  # Bits16
    27: DType.UINT16,
    28: DType.UINT32,
    29: DType.UINT64,
}


def read_pte_bytes(data: bytes) -> Model:
    """Parse a ``.pte`` held in memory into the IR (its bytes kept: ``Model.source``)."""
    return replace(program_model(read_program(data)), source=data)


def program_model(program: Program) -> Model:
    subgraphs = tuple(_subgraph(s, plan) for s, plan in enumerate(program.plans))
    offsets: list[int] = []
    memories: list[int] = []
    for plan in program.plans:
        for t in plan.tensors():
            offsets.append(-1 if t.offset is None else t.offset)
            memories.append(t.memory or 0)
    return Model(
        subgraphs=subgraphs,
        version=0,
        description="ExecuTorch program",
        stored_plan=tuple(offsets),
        stored_memory=tuple(memories),
        file_format="pte",
    )


def tensor_values(plan: PtePlan) -> dict[int, int]:
    """Value index -> the IR's tensor index, for the plan's tensor values."""
    return {t.value: i for i, t in enumerate(plan.tensors())}


def outs_of(plan: PtePlan, ins: Instruction) -> tuple[int, ...]:
    """The value indices a kernel call writes: the trailing returns that repeat an
    earlier arg (a returned tensor list: its items); () for other instructions."""
    return _tail(plan, ins)[0]


def _tail(plan: PtePlan, ins: Instruction) -> tuple[tuple[int, ...], int]:
    """(the outs of a kernel call, how many args at its end are out args and returns)."""
    args = ins.args
    if ins.kind != "kernel" or not args:
        return (), 0
    items = plan.values[args[-1]][1]
    if plan.tensor(args[-1]) is None and isinstance(items, tuple) and items:
        outs = tuple(i for i in items if i >= 0)
        if all(i in args[:-1] for i in items):  # the outs one by one, the list returned
            return outs, len(items) + 1
        if len(args) > 1 and plan.values[args[-2]][1] == items:  # the out list, returned
            return outs, 2
        return outs, 1  # an out list that returns nothing (split_with_sizes_copy.out)
    k, outs = len(args) - 1, []
    while k > 0 and args[k] in args[:k] and plan.tensor(args[k]) is not None:
        outs.append(args[k])
        k -= 1
    return tuple(reversed(outs)), 2 * len(outs)


def _subgraph(s: int, plan: PtePlan) -> Subgraph:
    index = tensor_values(plan)
    tensors = [_tensor(i, t) for i, t in enumerate(plan.tensors())]
    inputs = {index[v] for v in plan.inputs if v in index}
    defined = inputs | {i for i, t in enumerate(tensors) if t.is_constant}
    produced: set[int] = set()
    operators = []
    for k, ins in enumerate(plan.instructions):
        reads, writes = _operands(plan, ins, index, defined)
        writes += [t for t in _rewritten(plan, ins, index, defined) if t not in produced | inputs]
        produced |= set(writes)
        early = [t for t in reads if t not in defined]
        for t in early:  # read before anything writes it: state, or a view
            tensors[t] = _variable(tensors[t])
            defined.add(t)
        defined |= set(writes)
        opcode = _opcode(plan, ins)
        again = tuple(t for t in reads if t in _written(plan, ins, index))
        options = Options(((WRITTEN_INPUTS, again),), "ExecuTorch") if again else Options()
        operators.append(
            Operator(k, opcode, True, tuple(reads), tuple(writes), options=options, source=k)
        )
    name = plan.name or f"method {s}"
    inputs = tuple(index[v] for v in plan.inputs if v in index)
    outputs = tuple(index[v] for v in plan.outputs if v in index)
    return Subgraph(s, name, tuple(tensors), tuple(operators), inputs, outputs)


def _operands(
    plan: PtePlan, ins: Instruction, index: dict[int, int], defined: set[int]
) -> tuple[list[int], list[int]]:
    """(tensors read, tensors written) by ``ins``, as IR tensor indices, each once."""
    if ins.kind == "move":
        return _tensors(plan, index, ins.args[:1]), _tensors(plan, index, ins.args[1:])
    if ins.kind == "delegate":
        named = _tensors(plan, index, ins.args)
        return [t for t in named if t in defined], [t for t in named if t not in defined]
    outs, tail = _tail(plan, ins)
    reads = _tensors(plan, index, ins.args[: len(ins.args) - tail])
    writes = _tensors(plan, index, list(outs))
    again = [t for t in writes if t in defined]  # written again: read-modify-write
    return _once(reads + again), [t for t in writes if t not in defined]


def _written(plan: PtePlan, ins: Instruction, index: dict[int, int]) -> set[int]:
    """Every tensor a kernel call writes (its outs)."""
    return set(_tensors(plan, index, outs_of(plan, ins))) if ins.kind == "kernel" else set()


def _rewritten(
    plan: PtePlan, ins: Instruction, index: dict[int, int], defined: set[int]
) -> list[int]:
    """The tensors a kernel call writes that were defined before it (a mutable
    buffer written by ``copy_``): an output too, the first time one is written."""
    if ins.kind != "kernel":
        return []
    return [t for t in _tensors(plan, index, outs_of(plan, ins)) if t in defined]


def _tensors(plan: PtePlan, index: dict[int, int], values) -> list[int]:
    return _once([index[t] for v in values for t in plan.tensor_values(v)])


def _once(items: list[int]) -> list[int]:
    return list(dict.fromkeys(items))


def _opcode(plan: PtePlan, ins: Instruction) -> str:
    if ins.kind == "kernel":
        return plan.operators[ins.op]
    if ins.kind == "delegate":
        return f"delegate:{plan.delegates[ins.op]}"
    return ins.kind


def _tensor(i: int, t) -> Tensor:
    dtype = SCALAR_TYPES.get(t.scalar_type)
    if dtype is None:
        raise UnsupportedModelError(
            f"value {t.value}: ExecuTorch scalar type {t.scalar_type} is not supported"
        )
    return Tensor(
        index=i,
        name=f"value {t.value}",
        shape=tuple(t.sizes),
        dtype=dtype,
        buffer=0,
        is_constant=t.constant,
        is_variable=False,
        has_rank=True,
    )


def _variable(t: Tensor) -> Tensor:
    return Tensor(t.index, t.name, t.shape, t.dtype, t.buffer, t.is_constant, True, has_rank=True)
