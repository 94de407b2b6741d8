"""The smallest arena TFLM can work in (``tflm-arena-reference.md`` B1, B6).

TFLM's tail grows down by a strict sequence of ``AllocatePersistentBuffer(size,
align)`` calls: ``used = round_up(used + size, align)``. The last of them are the
interpreter's I/O views (B1 step 7). During planning (B6) the head holds, at
once: the scratch requests, the subgraph offsets, one AllocationInfo per tensor
and scratch request, then the greedy planner's working arrays (40 B per planned
buffer); the tail then holds everything but the I/O views. Hence

    min_arena = max(head + tail, round16(tail_without_io + X))

All sizes in bytes; ``pointer_size`` is 8 on the 64-bit host runtime, 4 on an MCU.
"""

from __future__ import annotations

from collections.abc import Sequence

from arenaplan.ir.model import Model

ALIGN = 16
TFLITE_TENSOR = {8: 64, 4: 32}  # sizeof(TfLiteTensor), static memory; ARM32 gcc: 32
AFFINE_QUANT = {8: 24, 4: 12}  # sizeof(TfLiteAffineQuantization)
SCRATCH_REQUEST = {8: 16, 4: 12}  # sizeof(ScratchBufferRequest)
ALLOCATION_INFO = {8: 32, 4: 24}  # sizeof(AllocationInfo)
PLANNER_BYTES_PER_BUFFER = 40  # GreedyMemoryPlanner working arrays


def _up(x: int, a: int) -> int:
    return -(-x // a) * a


def _alloc(used: int, size: int, align: int) -> int:
    return _up(used + size, align)


def io_views_after(
    used: int, inputs: Sequence[int | None], outputs: Sequence[int | None], pointer_size: int = 8
) -> int:
    """The tail after the I/O views, from ``used`` bytes before them.

    ``inputs``/``outputs``: per tensor, its number of quantisation scales, or None
    when it has no quantisation (then no TfLiteAffineQuantization is made).
    """
    for group in (inputs, outputs):
        used = _alloc(used, pointer_size * len(group), ALIGN)
        for scales in group:
            used = _alloc(used, TFLITE_TENSOR[pointer_size], pointer_size)
            if scales is not None:
                used = _alloc(used, AFFINE_QUANT[pointer_size], pointer_size)
                used = _alloc(used, 4 + 4 * scales, 4)
    return used


def io_view_bytes(model: Model, pointer_size: int = 8, before: int = 0) -> int:
    """Bytes the I/O views add to a tail of ``before`` bytes."""
    return io_views_after(before, *_io_scales(model), pointer_size) - before


def _io_scales(model: Model) -> tuple[list[int | None], list[int | None]]:
    sg = model.subgraphs[0]

    def scales(i: int) -> int | None:
        q = sg.tensors[i].quantization
        return len(q.scales) if q is not None and q.zero_points else None

    return [scales(i) for i in sg.inputs], [scales(i) for i in sg.outputs]


def tail_without_io(model: Model, tail: int, n_scratch: int, pointer_size: int = 8) -> int:
    """The tail before the I/O views, undone from the measured ``tail``.

    Several values lead to the same tail through the views' padding; the right
    one has the residue mod 16 that the allocation before the views leaves:
    variable tensors and kernel OpData are 16-aligned, so 0, unless the last
    allocation was the array of ``n_scratch`` ScratchBufferHandles (P bytes each,
    P-aligned) with no variable tensor after it.
    """
    ins, outs = _io_scales(model)
    has_variables = any(t.is_variable for sg in model.subgraphs for t in sg.tensors)
    residue = 0 if has_variables or n_scratch == 0 else (pointer_size * n_scratch) % ALIGN
    matches = [
        t
        for t in range(tail, max(tail - 4096, -1), -1)
        if io_views_after(t, ins, outs, pointer_size) == tail
    ]
    exact = [t for t in matches if t % ALIGN == residue]
    if exact:
        return exact[0]
    return matches[0] if matches else tail - io_view_bytes(model, pointer_size)


def planning_bytes(
    n_scratch: int, n_tensors_total: int, n_planned: int, n_subgraphs: int, pointer_size: int = 8
) -> int:
    """X: the head's transient use while TFLM commits its memory plan."""
    x = (n_scratch + 12) * SCRATCH_REQUEST[pointer_size]
    x = _up(x, pointer_size) + pointer_size * n_subgraphs
    x = _up(x, pointer_size) + ALLOCATION_INFO[pointer_size] * (n_tensors_total + n_scratch)
    return _up(x, ALIGN) + PLANNER_BYTES_PER_BUFFER * n_planned


def predict_min_arena(
    head: int,
    tail: int,
    tail_before_io: int,
    n_scratch: int,
    n_tensors_total: int,
    n_planned: int,
    n_subgraphs: int,
    pointer_size: int = 8,
) -> int:
    """Smallest arena (bytes) in which TFLM allocates this model."""
    x = planning_bytes(n_scratch, n_tensors_total, n_planned, n_subgraphs, pointer_size)
    return max(head + tail, _up(tail_before_io + x, ALIGN))
