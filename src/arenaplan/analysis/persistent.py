"""TFLM's tail (persistent arena), predicted from the model alone.

The tail grows down by a strict sequence of ``AllocatePersistentBuffer(size,
align)`` calls, each ``used = round_up(used + size, align)`` (the padding depends
on what came before, so sizes are simulated, not summed). The sequence and the
sizes are those of ``tflm-arena-reference.md`` part B, per build profile:

1. allocator objects;  2. model allocation: builtin-data allocator, subgraph
allocations, eval tensors and node structs per subgraph;  3. builtin options
per operator;  4. kernel Init (OpData, signal state);  5. kernel Prepare
(per-channel arrays, lookup tables, writable dims);  6. scratch handles and
variable tensors;  7. the interpreter's I/O views.
All sizes in bytes. Only the reference kernels are modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arenaplan.analysis.scratch import scratch_requests
from arenaplan.analysis.sizes import TensorBytes, tensor_bytes
from arenaplan.ir.custom import int_option
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph

ALIGN = 16  # kernels' persistent buffers and variables are 16-aligned


@dataclass(frozen=True, slots=True)
class BuildProfile:
    """Struct sizes of one TFLM build. ``options``: op -> (size, align) of its parsed
    builtin options; ``op_data``: op -> Init OpData bytes (16-aligned)."""

    name: str
    pointer: int
    allocator_objects: tuple[int, ...]
    builtin_data_allocator: int
    subgraph_allocations: int
    eval_tensor: int
    node_and_registration: int
    tflite_tensor: int
    affine_quantization: int
    scratch_handle: int
    options: dict[str, tuple[int, int]] = field(default_factory=dict)
    op_data: dict[str, int] = field(default_factory=dict)


_OPTIONS_64 = {
    "CONV_2D": (28, 4),
    "DEPTHWISE_CONV_2D": (28, 4),
    "FULLY_CONNECTED": (16, 4),
    "SVDF": (12, 4),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (16, 4),
    "SOFTMAX": (4, 4),
    "TRANSPOSE_CONV": (20, 4),
    "CONCATENATION": (8, 4),
    "ADD": (8, 4),
    "SUB": (8, 4),
    "MUL": (4, 4),
    "DIV": (4, 4),
    "STRIDED_SLICE": (24, 4),
    "MEAN": (1, 1),
    "SUM": (1, 1),
    "REDUCE_MAX": (1, 1),
    "REDUCE_MIN": (1, 1),
    "AVERAGE_POOL_2D": (40, 4),
    "MAX_POOL_2D": (40, 4),
    "RESHAPE": (36, 4),
    "CAST": (8, 4),
    "SHAPE": (4, 4),
    "SPLIT": (4, 4),
    "PACK": (8, 4),
    "UNPACK": (8, 4),
}
_OPTIONS_ARM32 = {
    **_OPTIONS_64,
    "FULLY_CONNECTED": (5, 1),
    "SVDF": (8, 4),
    "TRANSPOSE_CONV": (16, 4),
    "ADD": (2, 1),
    "SUB": (2, 1),
    "MUL": (1, 1),
    "DIV": (1, 1),
    "CAST": (2, 1),
    "SHAPE": (1, 1),
}
_OP_DATA_64C = {
    "CONV_2D": 80,
    "DEPTHWISE_CONV_2D": 80,
    "FULLY_CONNECTED": 72,
    "SVDF": 36,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": 688,
    "SOFTMAX": 80,
    "TRANSPOSE_CONV": 64,
    "CONCATENATION": 80,
    "ADD": 60,
    "SUB": 52,
    "MUL": 36,
    "DIV": 28,
    "STRIDED_SLICE": 84,
    "MEAN": 44,
    "SUM": 44,
    "REDUCE_MAX": 44,
    "REDUCE_MIN": 44,
    "LOGISTIC": 16,
    "TANH": 16,
    "QUANTIZE": 32,
    "DEQUANTIZE": 32,
    "AVERAGE_POOL_2D": 32,
    "MAX_POOL_2D": 32,
    "SignalWindow": 8,
    "SignalEnergy": 8,
    "SignalFilterBankLog": 8,
    "SignalPCAN": 4,
    "SignalFilterBank": 64,
    "SignalFilterBankSpectralSubtraction": 56,
    "SignalRfft": 48,
}
_OP_DATA_ARM32 = {
    **_OP_DATA_64C,
    "CONV_2D": 56,
    "DEPTHWISE_CONV_2D": 56,
    "FULLY_CONNECTED": 48,
    "SOFTMAX": 56,
    "TRANSPOSE_CONV": 72,
    "CONCATENATION": 24,
    "SignalFilterBank": 36,
    "SignalFilterBankSpectralSubtraction": 44,
    "SignalRfft": 32,
}

PROFILES = {
    # the PyPI wheel: 64-bit, compression on, recording allocators; its FC options
    # are 32/8 (read from the wheel), not the source's 16/4
    "pypi": BuildProfile(
        "pypi",
        8,
        (104, 72, 272),
        16,
        24,
        24,
        64,
        64,
        24,
        8,
        {**_OPTIONS_64, "FULLY_CONNECTED": (32, 8)},
        _OP_DATA_64C,
    ),
    # arm-none-eabi-gcc: 32-bit, one-byte enums, plain MicroAllocator
    "arm32": BuildProfile(
        "arm32", 4, (36, 44, 36), 8, 8, 12, 32, 32, 12, 4, _OPTIONS_ARM32, _OP_DATA_ARM32
    ),
    # other 32-bit targets (int-sized enums): RISC-V, Xtensa, i386
    "int32": BuildProfile(
        "int32",
        4,
        (36, 44, 36),
        8,
        8,
        12,
        32,
        40,
        12,
        4,
        {**_OPTIONS_ARM32, "FULLY_CONNECTED": (16, 4)},
        _OP_DATA_ARM32,
    ),
}


class _Tail:
    def __init__(self) -> None:
        self.used = 0

    def alloc(self, size: int, align: int) -> None:
        self.used = -(-(self.used + size) // align) * align


def _init_extras(op: Operator, sg: Subgraph, p: BuildProfile) -> list[int]:
    """Bytes a signal kernel's Init allocates after its OpData (16-aligned each)."""
    if op.opcode == "SignalFilterBank":
        return [(int_option(op, "num_channels") + 1) * 8]
    if op.opcode == "SignalFilterBankSpectralSubtraction":
        return [4 * int_option(op, "num_channels")]
    if op.opcode == "SignalRfft":
        n = int_option(op, "fft_length")
        half = n // 2
        c = 4 if sg.tensors[op.inputs[0]].dtype is DType.INT16 else 8
        return [3 * p.pointer + (8 + 256 + c) + c * (half - 1) + c * (3 * half // 2)]
    return []


def _prepare_extras(op: Operator, sg: Subgraph) -> list[int]:
    """Bytes a kernel's Prepare allocates (16-aligned each)."""
    t = sg.tensors
    if op.opcode == "CONV_2D":
        return [4 * t[op.inputs[1]].shape[0]] * 2
    if op.opcode == "DEPTHWISE_CONV_2D":
        return [4 * t[op.inputs[1]].shape[3]] * 2
    if op.opcode == "TRANSPOSE_CONV":
        return [4 * t[op.inputs[1]].shape[0]] * 2
    if op.opcode == "FULLY_CONNECTED":
        q = t[op.inputs[1]].quantization
        if t[op.inputs[0]].dtype in (DType.INT8, DType.INT16) and q and len(q.scales) > 1:
            return [4 * len(q.scales)] * 2
    if op.opcode == "SOFTMAX" and t[op.inputs[0]].dtype is DType.INT16:
        return [1026, 1026]
    if op.opcode == "RESHAPE" and -1 in t[op.outputs[0]].shape:
        return [4 + 4 * len(t[op.outputs[0]].shape)]
    return []


def io_views(tail: _Tail, model: Model, p: BuildProfile) -> None:
    """Step 7: pointer arrays, then one TfLiteTensor (+ quantisation) per input/output."""
    sg = model.subgraphs[0]
    for group in (sg.inputs, sg.outputs):
        tail.alloc(p.pointer * len(group), ALIGN)
        for i in group:
            tail.alloc(p.tflite_tensor, p.pointer)
            q = sg.tensors[i].quantization
            if q is not None and q.zero_points:
                tail.alloc(p.affine_quantization, p.pointer)
                tail.alloc(4 + 4 * len(q.scales), 4)


def predict_tail(
    model: Model,
    profile: str | BuildProfile = "pypi",
    sizes: TensorBytes | None = None,
    with_io: bool = True,
) -> int:
    """Bytes of TFLM's tail for ``model`` under ``profile`` (variables not offline)."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    sizes = sizes or tensor_bytes(model)
    tail = _Tail()
    for size in p.allocator_objects:
        tail.alloc(size, p.pointer)
    tail.alloc(p.builtin_data_allocator, p.pointer)
    tail.alloc(p.subgraph_allocations * len(model.subgraphs), p.pointer)
    for sg in model.subgraphs:
        tail.alloc(p.eval_tensor * len(sg.tensors), p.pointer)
    for sg in model.subgraphs:
        tail.alloc(p.node_and_registration * len(sg.operators), p.pointer)
    ops = [(sg, op) for sg in model.subgraphs for op in sg.operators]
    for _, op in ops:
        if op.opcode in p.options:
            tail.alloc(*p.options[op.opcode])
    for sg, op in ops:
        if op.opcode in p.op_data:
            tail.alloc(p.op_data[op.opcode], ALIGN)
        for extra in _init_extras(op, sg, p):
            tail.alloc(extra, ALIGN)
    for sg, op in ops:
        for extra in _prepare_extras(op, sg):
            tail.alloc(extra, ALIGN)
    n_scratch = len(scratch_requests(model, sizes, p.pointer))
    if n_scratch:
        tail.alloc(p.scratch_handle * n_scratch, p.pointer)
    for sg in model.subgraphs:
        for t in sg.tensors:
            if t.is_variable:
                tail.alloc(sizes[sg.index][t.index], ALIGN)
    if with_io:
        io_views(tail, model, p)
    return tail.used


# ---- the smallest working arena (reference B6) --------------------------------------

SCRATCH_REQUEST = {8: 16, 4: 12}  # sizeof(ScratchBufferRequest), by pointer size
ALLOCATION_INFO = {8: 32, 4: 24}  # sizeof(AllocationInfo)
PLANNER_BYTES_PER_BUFFER = 40  # GreedyMemoryPlanner working arrays per planned buffer
MAX_SCRATCH_PER_OP = 12


def _up(x: int, a: int) -> int:
    return -(-x // a) * a


def planning_bytes(
    n_scratch: int, n_tensors: int, n_planned: int, n_subgraphs: int, pointer: int
) -> int:
    """X: what the head holds at once while TFLM commits its memory plan.

    The scratch requests (room for 12 more), the subgraph offsets, one
    AllocationInfo per tensor and request, then 40 B per planned buffer.
    """
    x = (n_scratch + MAX_SCRATCH_PER_OP) * SCRATCH_REQUEST[pointer]
    x = _up(x, pointer) + pointer * n_subgraphs
    x = _up(x, pointer) + ALLOCATION_INFO[pointer] * (n_tensors + n_scratch)
    return _up(x, ALIGN) + PLANNER_BYTES_PER_BUFFER * n_planned


def min_arena(model: Model, head: int, n_planned: int, profile: str = "pypi") -> int:
    """Smallest arena (bytes) TFLM works in: max(head + tail, tail before I/O + X).

    ``head``: the non-persistent bytes (our plan's arena); ``n_planned``: tensors
    plus scratch requests TFLM's planner holds.
    """
    p = PROFILES[profile]
    sizes = tensor_bytes(model)
    n_scratch = len(scratch_requests(model, sizes, p.pointer))
    tail = predict_tail(model, p, sizes)
    before_io = predict_tail(model, p, sizes, with_io=False)
    x = planning_bytes(n_scratch, model.tensor_count, n_planned, len(model.subgraphs), p.pointer)
    return max(head + tail, _up(before_io + x, ALIGN))
