"""TFLM's reference kernels, one module per kernel family, as ``kernels/`` has them.

Each module names, in its docstring, the TFLM source files it restates (paths inside
the TFLM source tree) and states, for each of its operators, one ``facts.Kernel``:
the tail rule, the scratch requests, the refusals and the in-place rule, side by
side. ``common`` holds what several kernels allocate alike. This package assembles
the modules' statements into ``BUILTIN`` (by schema name) and ``CUSTOM`` (by custom
code), which the engines (``tflm.tail``, ``tflm.scratch``, ``tflm.refusals``,
``tflm.alias_rules``) read; an operator stated twice is an error.
"""

from __future__ import annotations

from types import ModuleType

from arenaplan.tflm.facts import Kernel
from arenaplan.tflm.kernels import (
    activations,
    arithmetic,
    cascade,
    circular_buffer,
    concatenation,
    control_flow,
    conv,
    depthwise_conv,
    detection_postprocess,
    elementwise,
    fully_connected,
    lstm,
    pad,
    pooling,
    quantize,
    reduce,
    reshape,
    signal,
    slice,
    softmax,
    spatial,
    svdf,
    transpose_conv,
    variables,
)

FAMILIES: tuple[ModuleType, ...] = (
    conv,
    depthwise_conv,
    transpose_conv,
    fully_connected,
    svdf,
    lstm,
    softmax,
    activations,
    arithmetic,
    elementwise,
    quantize,
    pooling,
    reduce,
    reshape,
    slice,
    concatenation,
    pad,
    spatial,
    control_flow,
    variables,
    detection_postprocess,
    circular_buffer,
    signal,
    cascade,
)


def _assemble(kind: str) -> dict[str, Kernel]:
    """Every family's ``kind`` table ("BUILTIN" or "CUSTOM") in one."""
    table: dict[str, Kernel] = {}
    for family in FAMILIES:
        for name, kernel in getattr(family, kind, {}).items():
            if name in table:
                raise ValueError(f"{name} is stated twice (again in {family.__name__})")
            table[name] = kernel
    return table


BUILTIN = _assemble("BUILTIN")  # schema name -> its reference kernel
CUSTOM = _assemble("CUSTOM")  # custom code -> the kernel TFLM ships for it
