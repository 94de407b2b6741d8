"""New ``allocation_info`` and pool sizes written into a ``.pte``, the rest untouched.

A flatbuffer field left at its default is not stored, so an offset cannot be patched
where it lies. Instead each tensor that moves gets a new ``AllocationDetails`` table
(memory id, offset low, offset high: all three stored) appended to the flatbuffer,
and the tensor's ``allocation_info`` field (a forward offset) is pointed at it; the
pool sizes are patched in place, or appended as a new vector when there are more
pools. The old tables stay, unreferenced. The flatbuffer grows, so the extended
header's program size and the segments' base move; the segments themselves are
copied byte for byte, their base keeping its alignment.
"""

from __future__ import annotations

import struct

from arenaplan.allocation.packing import align_up
from arenaplan.reader.pte_format import Program

Place = tuple[int, int]  # (memory id, offset)
VTABLE = struct.pack("<5H", 10, 16, 4, 8, 12)  # 3 fields, a 16-byte table
SEGMENT_ALIGN_MAX = 4096  # bytes: the segments' base keeps its alignment up to this


def with_allocations(
    data: bytes,
    program: Program,
    moved: dict[tuple[int, int], Place],
    pools: dict[int, tuple[int, ...]],
) -> bytes:
    """``data`` with value ``(plan, value)`` of ``moved`` at its new place and plan
    k's pool sizes ``pools[k]`` (index 0 unused, as in the file)."""
    end = program.header.program_size if program.header else len(data)
    out = bytearray(data[:end])
    out.extend(b"\0" * (align_up(len(out), 8) - len(out)))
    vtable = len(out)
    if moved:
        out.extend(VTABLE + b"\0\0")  # 12 bytes: the tables after it stay 4-aligned
    for (p, value), (memory, offset) in sorted(moved.items()):
        slot = program.plans[p].tensor(value).info_slot  # type: ignore[union-attr]
        if slot is None:
            raise ValueError(f"value {value} of plan {p} has no allocation_info to move")
        table = len(out)
        out.extend(struct.pack("<iIII", table - vtable, memory, offset & 0xFFFFFFFF, offset >> 32))
        struct.pack_into("<I", out, slot, table - slot)
    for p, sizes in sorted(pools.items()):
        _pools(out, program, p, sizes)
    return _with_segments(data, program, bytes(out))


def _pools(out: bytearray, program: Program, p: int, sizes: tuple[int, ...]) -> None:
    plan = program.plans[p]
    slot = plan.pools_slot
    if slot is None:
        raise ValueError(f"plan {p} has no non_const_buffer_sizes to write")
    if len(sizes) == len(plan.pools):
        start = slot + struct.unpack_from("<I", out, slot)[0] + 4
        struct.pack_into(f"<{len(sizes)}q", out, start, *sizes)
        return
    out.extend(b"\0" * ((4 - len(out) % 8) % 8))  # elements 8-aligned after the length
    vector = len(out)
    out.extend(struct.pack(f"<I{len(sizes)}q", len(sizes), *sizes))
    struct.pack_into("<I", out, slot, vector - slot)


def _with_segments(data: bytes, program: Program, flat: bytes) -> bytes:
    header = program.header
    if header is None:
        return flat
    out = bytearray(flat)
    base = header.segment_base
    if header.segment_size == 0:
        struct.pack_into("<QQ", out, 16, len(out), 0)
        return bytes(out)
    keep = min(base & -base, SEGMENT_ALIGN_MAX)
    new_base = base + align_up(max(len(out) - base, 0), keep)
    struct.pack_into("<QQ", out, 16, len(out), new_base)
    out.extend(b"\0" * (new_base - len(out)))
    out.extend(data[base : base + header.segment_size])
    return bytes(out)
