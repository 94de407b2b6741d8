"""Arena bytes of each tensor, as TFLM counts them after Prepare.

TFLM sizes a tensor from its dims after the kernels' Prepare, so a RESHAPE output
stored with a -1 dim takes the byte count of the RESHAPE's input. Any other
unknown dim cannot be sized ahead of time and is reported.
"""

from __future__ import annotations

from arenaplan.errors import UnsupportedModelError
from arenaplan.ir.model import Model, Subgraph
from arenaplan.runtime.records import TensorBytes

TFLM_ALIGNMENT = 16  # bytes: MicroArenaBufferAlignment(); sizes and offsets are multiples


def tensor_bytes(model: Model) -> TensorBytes:
    """Bytes of every tensor of every subgraph (unaligned, element size from the dtype)."""
    return tuple(_subgraph_bytes(sg) for sg in model.subgraphs)


def _subgraph_bytes(sg: Subgraph) -> tuple[int, ...]:
    sizes = [t.nbytes for t in sg.tensors]
    for t in sg.tensors:
        if -1 in t.shape and not t.is_constant:
            sizes[t.index] = _resolved_bytes(sg, t.index)
    return tuple(sizes)


def _resolved_bytes(sg: Subgraph, index: int) -> int:
    tensor = sg.tensors[index]
    for op in sg.operators:
        if index in op.outputs and op.opcode == "RESHAPE" and op.inputs:
            source = sg.tensors[op.inputs[0]]
            if -1 not in source.shape:
                return source.elements * tensor.dtype.itemsize
    raise UnsupportedModelError(
        f"subgraph {sg.index} tensor {index} ({tensor.name!r}) has an unknown dimension "
        f"{tensor.shape}; its size cannot be known before the model runs"
    )
