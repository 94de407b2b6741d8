"""Operator signatures: the tensors each kernel kind needs, checked once for every model.

The analyses (scratch requests, TFLM's tail, the cost model) read an operator's
tensors by position: the filter of a CONV_2D is input 1 and has four dims, the
state of an LSTM is input 18. A model whose operator lacks such a tensor, or
gives it fewer dims, is refused here with one line naming the operator, before
any analysis indexes past the end. The signatures are TFLM's own Prepare
requirements (``NumInputs``, ``NumDimensions``), stated as minimums so that no
model TFLM accepts is refused. Every operator, whatever its kind, must also not
write a tensor that holds constant data (it lives in flash).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from arenaplan.errors import ModelFormatError
from arenaplan.ir.model import Model, Operator, Subgraph, Tensor


@dataclass(frozen=True, slots=True)
class Signature:
    """``inputs``: least number of input entries; ``required``: positions that must
    name a tensor (not -1); ``ranks``: position -> least number of dims;
    ``outputs``: least number of outputs."""

    inputs: int = 0
    required: tuple[int, ...] = ()
    ranks: dict[int, int] = field(default_factory=dict)
    outputs: int = 1


_CONV = Signature(2, (0, 1), {0: 4, 1: 4})
_REDUCE = Signature(2, (0, 1))
SIGNATURES: dict[str, Signature] = {
    "CONV_2D": _CONV,
    "DEPTHWISE_CONV_2D": _CONV,
    "TRANSPOSE_CONV": Signature(3, (0, 1, 2), {1: 4, 2: 4}),
    "FULLY_CONNECTED": Signature(2, (0, 1), {1: 2}),
    "SVDF": Signature(5, (0, 1, 2, 4), {0: 2, 1: 2, 2: 2, 4: 2}),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": Signature(20, (0, 18, 19), {0: 2, 18: 2}),
    "MEAN": _REDUCE,
    "SUM": _REDUCE,
    "REDUCE_MAX": _REDUCE,
    "REDUCE_MIN": _REDUCE,
    "REDUCE_PROD": _REDUCE,
    "REDUCE_ALL": _REDUCE,
    "REDUCE_ANY": _REDUCE,
    "ADD_N": Signature(1, (0,)),
    "MIRROR_PAD": Signature(2, (0, 1)),
    "PAD": Signature(2, (0, 1)),
    "PADV2": Signature(2, (0, 1)),
    "SOFTMAX": Signature(1, (0,)),
    "RESHAPE": Signature(1, (0,)),
    "TFLite_Detection_PostProcess": Signature(3, (0, 1, 2), {0: 3, 1: 3, 2: 2}, outputs=4),
    "SignalRfft": Signature(1, (0,)),
}


def _writes_constant(sg: Subgraph, op: Operator) -> list[str]:
    """An operator may not write a tensor that holds constant data (in flash)."""
    return [
        f"writes tensor {t} ({sg.tensors[t].name!r}), which holds constant data"
        for t in op.outputs
        if sg.tensors[t].is_constant and not sg.tensors[t].is_variable
    ]


def _op_problems(sg: Subgraph, op: Operator) -> list[str]:
    found = _writes_constant(sg, op)
    sig = SIGNATURES.get(op.opcode)
    if sig is None:
        return found
    if len(op.inputs) < sig.inputs:
        return [*found, f"has {len(op.inputs)} inputs, the kernel needs at least {sig.inputs}"]
    if len(op.outputs) < sig.outputs:
        return [*found, f"has {len(op.outputs)} outputs, the kernel needs at least {sig.outputs}"]
    found += [f"input {k} is missing" for k in sig.required if op.inputs[k] < 0]
    for k, rank in sig.ranks.items():
        tensor = op.inputs[k]
        if tensor >= 0 and len(sg.tensors[tensor].shape) < rank:
            shape = list(sg.tensors[tensor].shape)
            found.append(f"input {k} has shape {shape}, the kernel needs {rank} dims")
    return found


def operator_problems(model: Model) -> list[str]:
    """Every operator whose tensors are not what its kernel kind implies."""
    found = []
    for sg in model.subgraphs:
        for op in sg.operators:
            where = f"subgraph {sg.index} operator {op.index} {op.opcode}"
            found.extend(f"{where}: {why}" for why in _op_problems(sg, op))
    return found


def check_operators(model: Model) -> None:
    """Raise ``ModelFormatError`` naming the first operator that breaks its signature."""
    found = operator_problems(model)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ModelFormatError(f"corrupt model: {found[0]}{more}")


# operators that read weights: opcode -> the input slots holding them (other
# constant inputs, such as shapes, are parameters read once in Prepare)
WEIGHT_SLOTS = {
    "CONV_2D": (1, 2),
    "DEPTHWISE_CONV_2D": (1, 2),
    "FULLY_CONNECTED": (1, 2),
    "TRANSPOSE_CONV": (1, 3),
}


def weight_inputs(tensors: Sequence[Tensor], op: Operator) -> tuple[int, ...]:
    """The constant inputs of ``op`` in its weight slots, each once, in input order."""
    slots = WEIGHT_SLOTS.get(op.opcode, ())
    return tuple(
        dict.fromkeys(
            i for k, i in enumerate(op.inputs) if k in slots and i >= 0 and tensors[i].is_constant
        )
    )
