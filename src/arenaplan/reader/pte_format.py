"""ExecuTorch's ``.pte`` program, read field by field without torch.

A ``.pte`` is a flatbuffer (file identifier ``ET12``, schema ``program.fbs`` of
executorch 1.5) with, when the program has data segments, a 32-byte extended header
spliced in after byte 8 and the segments after the flatbuffer:

    [0:4] root offset  [4:8] "ET12"  [8:12] "eh00"  [12:16] header length (32)
    [16:24] program size (bytes of the flatbuffer, header included)
    [24:32] segment base offset  [32:40] segment data size

Tables are read with ``flatbuffers.table.Table``: field k of a table is vtable slot
``4 + 2 k``; a union takes two fields (its type, then its value). What is kept is
what planning needs: per execution plan (a method) its values (tensors with their
sizes, type, constant data and ``allocation_info``), inputs, outputs, operators,
instructions and pool sizes, and the byte positions a writer patches.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from flatbuffers import number_types as N
from flatbuffers.table import Table

from arenaplan.errors import ModelFormatError, UnsupportedModelError

FILE_IDENTIFIER = b"ET12"
HEADER_MAGIC = b"eh00"
HEADER_BYTES = 32
# what the flatbuffers package raises on bytes that are not a flatbuffer
_PARSE_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError, UnicodeError)

# EValue.val union (program.fbs KernelTypes), by type code
NULL, INT, BOOL, DOUBLE, TENSOR, STRING = 1, 2, 3, 4, 5, 6
INT_LIST, DOUBLE_LIST, BOOL_LIST, TENSOR_LIST, OPTIONAL_TENSOR_LIST = 7, 8, 9, 10, 11
LISTS = (INT_LIST, DOUBLE_LIST, BOOL_LIST, TENSOR_LIST, OPTIONAL_TENSOR_LIST)
# Instruction.instr_args union (InstructionArguments)
KERNEL, DELEGATE, MOVE, JUMP_FALSE, FREE = 1, 2, 3, 4, 5
INSTRUCTION_KINDS = {KERNEL: "kernel", DELEGATE: "delegate", MOVE: "move", JUMP_FALSE: "jump"}
INSTRUCTION_KINDS[FREE] = "free"


@dataclass(frozen=True, slots=True)
class Header:
    """The extended header: bytes of the flatbuffer (header included), where the
    segments start and how many bytes they take."""

    program_size: int
    segment_base: int
    segment_size: int


@dataclass(frozen=True, slots=True)
class PteTensor:
    """A tensor value. ``constant``: its data is in the program (a constant buffer or
        segment, or named external data); ``memory``/``offset``: its ``allocation_info``
        (memory id >= 1, byte offset in that pool), None when the runtime gets its bytes
        elsewhere; ``info_slot``: file position of the Tensor's ``allocation_info`` field
        (a uoffset), None when absent; ``external``: its data is named in an external
    file (tagged EXTERNAL, no ``allocation_info``)."""

    value: int
    scalar_type: int
    sizes: tuple[int, ...]
    constant: bool
    memory: int | None
    offset: int | None
    info_slot: int | None
    dynamic: bool
    external: bool


@dataclass(frozen=True, slots=True)
class Instruction:
    """One instruction: ``kind`` (kernel, delegate, move, jump, free), ``op`` (the
    operator or delegate index; -1 for the others) and the value indices it names in
    order (a kernel's or delegate's args; move: from, to; jump: the condition; free:
    the value)."""

    kind: str
    op: int
    args: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PtePlan:
    """One execution plan (a method). ``values[i]`` is (union type code, payload):
    a ``PteTensor``, a tuple of value indices (tensor lists), or None. ``pools[k]``:
    bytes of memory id k (index 0 unused); ``pools_slot``: file position of the
    plan's ``non_const_buffer_sizes`` field; ``items[i]``: the item count of value i
    when it is a list (of ints, bools, doubles, tensors, optional tensors), else 0;
    ``chains``: the instruction count of each chain, in order."""

    name: str
    values: tuple[tuple[int, object], ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[str, ...]
    delegates: tuple[str, ...]
    instructions: tuple[Instruction, ...]
    pools: tuple[int, ...]
    pools_slot: int | None
    items: tuple[int, ...]
    chains: tuple[int, ...]

    def tensor(self, value: int) -> PteTensor | None:
        kind, payload = self.values[value]
        return payload if kind == TENSOR and isinstance(payload, PteTensor) else None

    def tensors(self) -> list[PteTensor]:
        """The tensor values, in value order (the IR's tensor order)."""
        return [p for k, p in self.values if k == TENSOR and isinstance(p, PteTensor)]

    def tensor_values(self, value: int) -> tuple[int, ...]:
        """The tensor values ``value`` stands for: itself, a list's items, or none."""
        kind, payload = self.values[value]
        if kind == TENSOR:
            return (value,) if isinstance(payload, PteTensor) else ()
        if kind in (TENSOR_LIST, OPTIONAL_TENSOR_LIST) and isinstance(payload, tuple):
            return tuple(i for i in payload if 0 <= i < len(self.values) and self.tensor(i))
        return ()


@dataclass(frozen=True, slots=True)
class Program:
    """A whole ``.pte``: its header (None: the file is the flatbuffer alone) and plans."""

    header: Header | None
    plans: tuple[PtePlan, ...]

    @property
    def program_size(self) -> int:
        return self.header.program_size if self.header else -1


def is_pte(data: bytes) -> bool:
    return len(data) >= 8 and data[4:8] == FILE_IDENTIFIER


def read_program(data: bytes) -> Program:
    """Parse ``data``; a corrupt or truncated file is a one-line ``ModelFormatError``."""
    header = _header(data)
    end = header.program_size if header else len(data)
    try:
        root = Table(data, struct.unpack_from("<I", data, 0)[0])
        _in(root.Pos, end, "program table")
        plans = tuple(_plan(t, end) for t in _tables(root, 1, end))
    except _PARSE_ERRORS as exc:
        raise ModelFormatError(f"corrupt .pte: {type(exc).__name__} while parsing") from None
    if not plans:
        raise ModelFormatError(".pte has no execution plan")
    return Program(header, plans)


def _header(data: bytes) -> Header | None:
    if len(data) < 8:
        raise ModelFormatError(f"truncated file: {len(data)} bytes, a .pte needs at least 8")
    if not is_pte(data):
        raise ModelFormatError(f"not a .pte: file identifier is {data[4:8]!r}, expected b'ET12'")
    if data[8:12] != HEADER_MAGIC:
        return None
    if len(data) < 8 + HEADER_BYTES:
        raise ModelFormatError(".pte truncated inside its extended header")
    length, size, base, seg = struct.unpack_from("<IQQQ", data, 12)
    segments_wrong = seg and (base < size or base + seg > len(data))
    if length < HEADER_BYTES - 8 or size > len(data) or size < 8 + HEADER_BYTES or segments_wrong:
        raise ModelFormatError(
            f"corrupt .pte header: program {size} B, segments {base}+{seg} B, file {len(data)} B"
        )
    return Header(size, base, seg)


def _in(pos: int, end: int, what: str) -> None:
    if not 0 <= pos < end:
        raise ModelFormatError(f"corrupt .pte: {what} at {pos} is outside the program ({end} B)")


def _field(t: Table, k: int) -> int:
    """The vtable offset of field ``k`` of ``t`` (0: absent)."""
    return t.Offset(4 + 2 * k)


def _scalar(t: Table, k: int, flags: type, default: int = 0) -> int:
    o = _field(t, k)
    return t.Get(flags, t.Pos + o) if o else default


def _table(t: Table, k: int, end: int) -> Table | None:
    o = _field(t, k)
    if not o:
        return None
    pos = t.Indirect(t.Pos + o)
    _in(pos, end, "table")
    return Table(t.Bytes, pos)


def _tables(t: Table, k: int, end: int) -> list[Table]:
    o = _field(t, k)
    if not o:
        return []
    start, n = t.Vector(o), t.VectorLen(o)
    _in(start + 4 * n - 1 if n else start, end + 1, "vector")
    out = []
    for i in range(n):
        pos = t.Indirect(start + 4 * i)
        _in(pos, end, "vector element")
        out.append(Table(t.Bytes, pos))
    return out


def _numbers(t: Table, k: int, flags: type, end: int) -> tuple[int, ...]:
    o = _field(t, k)
    if not o:
        return ()
    start, n = t.Vector(o), t.VectorLen(o)
    width = flags.bytewidth
    _in(start + width * n - 1 if n else start, end + 1, "vector")
    return tuple(t.Get(flags, start + width * i) for i in range(n))


def _string(t: Table, k: int) -> str:
    o = _field(t, k)
    return t.String(t.Pos + o).decode("utf-8") if o else ""


def _plan(t: Table, end: int) -> PtePlan:
    tables = _tables(t, 2, end)
    values = tuple(_value(v, i, end) for i, v in enumerate(tables))
    chains = [_instructions(c, end) for c in _tables(t, 5, end)]
    instructions = tuple(i for c in chains for i in c)
    operators = tuple(
        f"{_string(o, 0)}.{_string(o, 1)}" if _string(o, 1) else _string(o, 0)
        for o in _tables(t, 6, end)
    )
    o = _field(t, 8)
    if o:
        _in(t.Pos + o + 3, end, "non_const_buffer_sizes field")
    plan = PtePlan(
        name=_string(t, 0),
        values=values,
        inputs=_numbers(t, 3, N.Int32Flags, end),
        outputs=_numbers(t, 4, N.Int32Flags, end),
        operators=operators,
        delegates=tuple(_string(d, 0) for d in _tables(t, 7, end)),
        instructions=instructions,
        pools=_numbers(t, 8, N.Int64Flags, end),
        pools_slot=t.Pos + o if o else None,
        items=tuple(_items(v, end) for v in tables),
        chains=tuple(len(c) for c in chains),
    )
    _check_indices(plan)
    _check_pools(plan)
    return plan


def _value(t: Table, index: int, end: int) -> tuple[int, object]:
    kind = _scalar(t, 0, N.Uint8Flags)
    body = _table(t, 1, end)
    if body is None:
        return kind, None
    if kind == TENSOR:
        return kind, _tensor(body, index, end)
    if kind in (TENSOR_LIST, OPTIONAL_TENSOR_LIST):
        return kind, _numbers(body, 0, N.Int32Flags, end)
    return kind, None


def _items(t: Table, end: int) -> int:
    """The item count of a list value (its body's vector field 0), else 0."""
    if _scalar(t, 0, N.Uint8Flags) not in LISTS:
        return 0
    body = _table(t, 1, end)
    o = _field(body, 0) if body is not None else 0
    return body.VectorLen(o) if body is not None and o else 0


def _tensor(t: Table, index: int, end: int) -> PteTensor:
    info = _table(t, 6, end)
    extra = _table(t, 9, end)
    o = _field(t, 6)
    if o:
        _in(t.Pos + o + 3, end, "allocation_info field")
    memory = offset = None
    if info is not None:
        memory = _scalar(info, 0, N.Uint32Flags)
        low, high = _scalar(info, 1, N.Uint32Flags), _scalar(info, 2, N.Uint32Flags)
        offset = low | high << 32
    external = extra is not None and _scalar(extra, 2, N.Int8Flags) == 1
    return PteTensor(
        value=index,
        scalar_type=_scalar(t, 0, N.Int8Flags),
        sizes=_numbers(t, 2, N.Int32Flags, end),
        constant=_scalar(t, 5, N.Uint32Flags) > 0 or (external and info is None),
        memory=memory,
        offset=offset,
        info_slot=t.Pos + o if o else None,
        dynamic=_scalar(t, 8, N.Int8Flags) != 0,
        external=external and info is None,
    )


def _instructions(chain: Table, end: int) -> list[Instruction]:
    out = []
    for ins in _tables(chain, 2, end):
        kind = _scalar(ins, 0, N.Uint8Flags)
        body = _table(ins, 1, end)
        if body is None or kind not in INSTRUCTION_KINDS:
            raise ModelFormatError(f"corrupt .pte: an instruction of unknown kind {kind}")
        if kind in (KERNEL, DELEGATE):
            args = _numbers(body, 1, N.Int32Flags, end)
            out.append(Instruction(INSTRUCTION_KINDS[kind], _scalar(body, 0, N.Int32Flags), args))
        elif kind == MOVE:
            pair = (_scalar(body, 0, N.Int32Flags), _scalar(body, 1, N.Int32Flags))
            out.append(Instruction("move", -1, pair))
        else:  # jump: the condition; free: the value
            out.append(Instruction(INSTRUCTION_KINDS[kind], -1, (_scalar(body, 0, N.Int32Flags),)))
    return out


MAX_POOL = 1 << 28  # bytes: the largest pool arenaplan takes (its check keeps 8 B per 16 B)


def _check_pools(plan: PtePlan) -> None:
    """Every planned tensor lies inside a pool the plan declares (ExecuTorch refuses
    the program at load otherwise), and no pool is beyond ``MAX_POOL``."""
    big = next((k for k, size in enumerate(plan.pools) if not 0 <= size <= MAX_POOL), None)
    if big is not None:
        raise UnsupportedModelError(
            f"method {plan.name!r}: pool {big} of {plan.pools[big]:,} B (at most {MAX_POOL:,})"
        )
    for t in plan.tensors():
        if t.memory is None or t.offset is None:
            continue
        if not 1 <= t.memory < len(plan.pools):
            raise ModelFormatError(
                f"corrupt .pte: method {plan.name!r} value {t.value} is in memory {t.memory}, "
                f"which the plan does not declare"
            )
        size = _bytes(t)
        if t.offset + size > plan.pools[t.memory]:
            raise ModelFormatError(
                f"corrupt .pte: method {plan.name!r} value {t.value} ({size:,} B at "
                f"{t.offset:,}) lies beyond its pool of {plan.pools[t.memory]:,} B"
            )


def _bytes(t: PteTensor) -> int:
    """A tensor's bytes (an unknown element type counts 8 bytes an element)."""
    n = ELEMENT_BYTES.get(t.scalar_type, 8)
    for d in t.sizes:
        n *= max(d, 0)
    return n


# ScalarType code -> bytes per element (program.fbs's scalar_type.fbs)
ELEMENT_BYTES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 12: 1, 13: 1, 14: 4}
ELEMENT_BYTES |= {15: 2, 22: 2, 27: 2, 28: 4, 29: 8}


def _check_indices(plan: PtePlan) -> None:
    """Every value index a plan names exists; operators and delegates too."""
    n = len(plan.values)
    named = [*plan.inputs, *plan.outputs]
    for ins in plan.instructions:
        named.extend(ins.args)
        table = plan.operators if ins.kind == "kernel" else plan.delegates
        if ins.kind in ("kernel", "delegate") and not 0 <= ins.op < len(table):
            raise ModelFormatError(f"corrupt .pte: {ins.kind} index {ins.op} out of range")
    for _, payload in plan.values:
        if isinstance(payload, tuple):
            named.extend(i for i in payload if i != -1)
    bad = next((i for i in named if not 0 <= i < n), None)
    if bad is not None:
        raise ModelFormatError(f"corrupt .pte: value index {bad} out of range ({n} values)")
    if any(ins.kind == "jump" for ins in plan.instructions):
        raise UnsupportedModelError(
            f"method {plan.name!r} has control flow (JumpFalseCall): not planned yet"
        )
