"""Shape computations the ``cascade`` pass folds into constants before it chooses chains.

TensorFlow's converter gives a TRANSPOSE_CONV or a RESHAPE its shape through
SHAPE -> STRIDED_SLICE -> PACK of an activation (the batch size read back at run
time). SHAPE reads only its input's dims, which TFLM fixes when the model is read
(``kernels/shape.cc`` copies them), so its value is a constant; so are STRIDED_SLICE
and PACK of constants. Folded, they leave the graph (their operators' persistent
data with them), and the activation they read, which SHAPE kept whole, can become a
ring of a cascade: the operators around it are then one run.

Only int32 values are folded, and only what is computed here exactly: SHAPE with
``out_type`` INT32 of a tensor whose dims are all known; STRIDED_SLICE of a 1-D
constant with stride 1 and begin, end and shrink masks alone (no ellipsis, no new
axis, no offset); PACK of constants. An operator whose output leaves the subgraph stays
(its value still folds the operators reading it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.passes.base import Origin, compose, identity
from arenaplan.passes.edit import SubgraphEdit

SCHEMA_INT32 = 2  # TensorType INT32 (ShapeOptions.out_type)
FOLDED = ("SHAPE", "STRIDED_SLICE", "PACK")


def _constant(sg: Subgraph, buffers: Sequence[bytes], t: int) -> np.ndarray | None:
    """The value of constant int32 tensor ``t`` (None: not one)."""
    tensor = sg.tensors[t]
    if not tensor.is_constant or tensor.dtype is not DType.INT32:
        return None
    data = buffers[tensor.buffer] if tensor.buffer < len(buffers) else b""
    if len(data) != 4 * tensor.elements:
        return None
    return np.frombuffer(data, dtype="<i4").reshape(tensor.shape).astype(np.int64)


def _strided_slice(op: Operator, x: np.ndarray, begin, end, strides) -> np.ndarray | None:
    """reference_ops::StridedSlice of a 1-D ``x`` with stride 1, masks begin, end and
    shrink only: negative indices count from the end, then clamp to [0, len]."""
    o = op.options
    if any(o.get(k, 0) for k in ("ellipsis_mask", "new_axis_mask")) or o.get("offset", False):
        return None
    if x.ndim != 1 or not (begin.shape == end.shape == strides.shape == (1,)) or strides[0] != 1:
        return None
    n = x.shape[0]
    if o.get("shrink_axis_mask", 0) & 1:
        index = int(begin[0]) + n if int(begin[0]) < 0 else int(begin[0])
        return x[index] if 0 <= index < n else None
    b = None if o.get("begin_mask", 0) & 1 else int(begin[0])
    e = None if o.get("end_mask", 0) & 1 else int(end[0])
    return x[slice(b, e, 1)]


def _value(sg: Subgraph, op: Operator, values: dict[int, np.ndarray]) -> np.ndarray | None:
    """The constant ``op`` computes from the values known (None: it is not folded)."""
    if op.opcode == "SHAPE":
        x = sg.tensors[op.inputs[0]]
        if op.options.get("out_type", SCHEMA_INT32) != SCHEMA_INT32 or min(x.shape, default=0) < 0:
            return None
        return np.array(x.shape, dtype=np.int64)
    ins = [values.get(t) for t in op.inputs]
    if not ins or any(v is None for v in ins):
        return None
    if op.opcode == "PACK":
        axis = op.options.get("axis", 0)
        return np.stack(ins, axis=axis) if -ins[0].ndim - 1 <= axis <= ins[0].ndim else None
    return _strided_slice(op, *ins) if len(ins) == 4 else None


def _folded(sg: Subgraph, buffers: Sequence[bytes]) -> dict[int, np.ndarray]:
    """Operator index -> the int32 constant it computes, for every operator folded."""
    values = {t.index: v for t in sg.tensors if (v := _constant(sg, buffers, t.index)) is not None}
    folded: dict[int, np.ndarray] = {}
    for op in sg.operators:
        if op.opcode not in FOLDED or op.is_custom or len(op.outputs) != 1:
            continue
        out = sg.tensors[op.outputs[0]]
        value = _value(sg, op, values) if out.dtype is DType.INT32 else None
        if value is None or value.shape != tuple(max(d, 0) for d in out.shape):
            continue
        if value.min(initial=0) < -(2**31) or value.max(initial=0) >= 2**31:
            continue
        values[op.outputs[0]] = value  # known, for the operators reading it
        if op.outputs[0] not in sg.outputs:  # an output of the subgraph stays computed
            folded[op.index] = value
    return folded


def fold_shapes(model: Model) -> tuple[Model, int, Origin]:
    """``model`` with its shape computations folded into constants, how many
    operators were folded (0: ``model`` itself) and the origin of its operators."""
    count, origin = 0, identity(model)
    for sg in model.subgraphs:
        folded = _folded(sg, model.buffers)
        if not folded:
            continue
        edit = SubgraphEdit(model, sg.index)
        constants = {
            sg.operators[i].outputs[0]: edit.add_int32(f"folded/{sg.operators[i].outputs[0]}", v)
            for i, v in folded.items()
        }
        for op in sg.operators:
            if op.index in folded:
                continue
            inputs = tuple(constants.get(t, t) for t in op.inputs)
            edit.add_op(replace(op, inputs=inputs), op.index)
        origin = compose(origin, edit.origin())
        model = edit.finish()
        count += len(folded)
    return model, count, origin
