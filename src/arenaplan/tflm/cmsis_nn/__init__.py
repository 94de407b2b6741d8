"""TFLM's CMSIS-NN kernels (``kernels/cmsis_nn/``): one module per kernel file.

A TFLM build with ``OPTIMIZED_KERNEL_DIR=cmsis_nn`` runs these kernels for CONV_2D,
DEPTHWISE_CONV_2D, FULLY_CONNECTED, SVDF, UNIDIRECTIONAL_SEQUENCE_LSTM, SOFTMAX,
TRANSPOSE_CONV, ADD, MUL, BATCH_MATMUL, AVERAGE/MAX_POOL_2D, PAD, MAXIMUM, MINIMUM
and TRANSPOSE, and the reference kernels for everything else
(``tools/make/specialize_files.py``: a file of ``kernels/cmsis_nn/`` replaces the
``kernels/`` file of its name). Each module here restates one of those files, as a
``facts.CmsisKernel`` per operator: what differs from the reference kernel.
``buffer_sizes`` restates CMSIS-NN's ``*_get_buffer_size`` functions (CMSIS-NN
``Source/*/*_get_buffer_sizes_*.c``), which the kernels ask in Prepare and request
the answer of when it is above 0 (TRANSPOSE_CONV int8 requests both of its buffers
always); ``common`` what the kernels compute alike before they ask.

arenaplan's own ARENAPLAN_CASCADE kernel calls CMSIS-NN too in these builds; what
it asks for then is in ``cascade`` (``custom_scratch_rule``).

API: ``scratch_rule``, ``custom_scratch_rule`` and ``tail_rule`` (read by
``tflm.scratch`` and ``tflm.tail``), ``is_cmsis_kernel``, ``refusals`` and
``model_refusals``, ``INPLACE_READ`` (read by ``tflm.alias_rules``), and the
buffer-size functions.

**Tail**: the kernels' own OpData structs (``structs``, names ``cmsis_nn:*``), and
what their Prepare allocates. TFLM's Makefile builds with
``KERNELS_OPTIMIZED_FOR_SPEED`` (its default); a build with
``KERNELS_OPTIMIZED_FOR_SIZE`` is not modelled.

**In place** (``INPLACE_READ``): what was read of the CMSIS-NN kernels TFLM runs for
operators on the reference in-place list (``alias_rules.INPLACE_KERNELS``), per feature
level (docs/inplace.md, "CMSIS-NN"). Each writes output byte b only after it has
read the input bytes b covers, and later reads stay above what it wrote, so each is
safe with output memory == input memory under the reference rule's conditions (its
input positions; the input written over has the output's shape). Those hold here
too: the wrappers call CMSIS-NN only when no operand broadcasts
(``MatchingElementsSize``) and run the reference loops otherwise, and for float32
and int32. No function read takes ``restrict`` pointers (CMSIS-NN's
``OPTIONAL_RESTRICT_KEYWORD`` is used by its convolutions only), so the C reading
holds whatever the compiler does. An operator CMSIS-NN replaces whose kernel was not
read gets no in-place rule in a CMSIS-NN plan (``alias_rules.INPLACE_RULES``).

Everything is from the sources at TFLM commit 90b983c2b and the CMSIS-NN its
Makefile downloads (``tools/make/downloads/cmsis_nn``, commit 4ab83cc3). Sizes in bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from arenaplan.ir.cascade_format import OPCODE as CASCADE
from arenaplan.ir.model import Model, Operator
from arenaplan.tflm.cmsis_nn import (
    add,
    batch_matmul,
    cascade,
    conv,
    depthwise_conv,
    fully_connected,
    maximum_minimum,
    mul,
    pad,
    pooling,
    softmax,
    svdf,
    transpose,
    transpose_conv,
    unidirectional_sequence_lstm,
)
from arenaplan.tflm.cmsis_nn.buffer_sizes import (
    Dims,
    Window,
    avgpool_buffer,
    convolve_s8_buffer,
    convolve_wrapper_s8_buffer,
    convolve_wrapper_s16_buffer,
    depthwise_wrapper_s4_buffer,
    depthwise_wrapper_s8_buffer,
    fully_connected_s8_buffer,
    svdf_s8_buffer,
    transpose_conv_reverse_buffer,
    transpose_conv_s8_buffer,
)
from arenaplan.tflm.facts import CmsisKernel, OpRule, OpView
from arenaplan.tflm.sizes import tensor_bytes

__all__ = [
    "FILES",
    "INPLACE_READ",
    "KERNELS",
    "Dims",
    "Window",
    "avgpool_buffer",
    "convolve_s8_buffer",
    "convolve_wrapper_s8_buffer",
    "convolve_wrapper_s16_buffer",
    "custom_scratch_rule",
    "depthwise_wrapper_s4_buffer",
    "depthwise_wrapper_s8_buffer",
    "fully_connected_s8_buffer",
    "is_cmsis_kernel",
    "model_refusals",
    "refusals",
    "scratch_rule",
    "svdf_s8_buffer",
    "tail_rule",
    "transpose_conv_reverse_buffer",
    "transpose_conv_s8_buffer",
]

FEATURES = ("c", "dsp", "mve")  # the levels of ``tflm.kernel_sets``

FILES: tuple[ModuleType, ...] = (
    add,
    batch_matmul,
    conv,
    depthwise_conv,
    fully_connected,
    maximum_minimum,
    mul,
    pad,
    pooling,
    softmax,
    svdf,
    transpose,
    transpose_conv,
    unidirectional_sequence_lstm,
)


def _assemble() -> dict[str, CmsisKernel]:
    table: dict[str, CmsisKernel] = {}
    for module in FILES:
        for name, kernel in module.KERNELS.items():
            if name in table:
                raise ValueError(f"{name} is stated twice (again in {module.__name__})")
            table[name] = kernel
    return table


KERNELS = _assemble()  # builtin name -> the CMSIS-NN kernel a CMSIS-NN build runs for it

# opcode -> feature level -> what was read to let its kernel run in place
INPLACE_READ: dict[str, dict[str, str]] = {
    name: dict(kernel.inplace) for name, kernel in KERNELS.items() if kernel.inplace
}

_TAIL = {
    level: {name: k.tail(level) for name, k in KERNELS.items() if k.tail is not None}
    for level in FEATURES
}


def is_cmsis_kernel(opcode: str) -> bool:
    """Whether a CMSIS-NN build runs its own kernel for builtin ``opcode``."""
    return opcode in KERNELS


def scratch_rule(features: str, opcode: str) -> Callable[[OpView], list[int]] | None:
    """The CMSIS-NN kernel's scratch rule for a builtin ``opcode``; None when the
    kernel is the reference one (or requests nothing, like it)."""
    kernel = KERNELS.get(opcode)
    rule = kernel.scratch if kernel is not None else None
    return None if rule is None else lambda v: rule(features, v)


# custom code -> its kernel's scratch requests in a CMSIS-NN build (arenaplan's own)
CUSTOM_SCRATCH: dict[str, Callable[[str, Operator], list[int]]] = {CASCADE: cascade.scratch}


def custom_scratch_rule(features: str, opcode: str) -> Callable[[OpView], list[int]] | None:
    """The scratch rule of custom ``opcode``'s kernel in a CMSIS-NN build, when it
    differs from the reference build's (None: as there)."""
    rule = CUSTOM_SCRATCH.get(opcode)
    return None if rule is None else lambda v: rule(features, v.op)


def tail_rule(features: str, opcode: str) -> OpRule | None:
    """The CMSIS-NN kernel's tail rule for a builtin ``opcode``; None when the build
    runs the reference kernel (or one that allocates the same)."""
    return _TAIL[features].get(opcode)


def refusals(v: OpView) -> list[str]:
    """Why TFLM's CMSIS-NN kernel for this operator will fail where the reference one
    would not (empty: no known reason)."""
    kernel = KERNELS.get(v.op.opcode)
    if kernel is None or kernel.refuses is None:
        return []
    return kernel.refuses(v)


def model_refusals(model: Model) -> tuple[str, ...]:
    """``refusals`` of every operator of ``model``, each as "operator N OPCODE: why"."""
    sizes = tensor_bytes(model)
    found = []
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.is_custom:
                continue
            for why in refusals(OpView(sg, op, sizes[sg.index], {}, 8)):
                where = f"subgraph {sg.index} " if len(model.subgraphs) > 1 else ""
                found.append(f"{where}operator {op.index} {op.opcode}: {why}")
    return tuple(found)
