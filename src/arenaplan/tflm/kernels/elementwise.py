"""Element-wise kernels without arithmetic between tensors: TFLM's elementwise.cc
(ABS, SIN, COS, LOG, SQRT, RSQRT, SQUARE, LOGICAL_NOT), CEIL, FLOOR, ROUND, NEG and
EXP; the comparisons, LOGICAL_AND, LOGICAL_OR and SELECT_V2.

Sources: tensorflow/lite/micro/kernels/elementwise.cc, tensorflow/lite/micro/kernels/ceil.cc,
tensorflow/lite/micro/kernels/floor.cc, tensorflow/lite/micro/kernels/round.cc,
tensorflow/lite/micro/kernels/neg.cc, tensorflow/lite/micro/kernels/exp.cc,
tensorflow/lite/micro/kernels/comparisons.cc, tensorflow/lite/micro/kernels/logical.cc,
tensorflow/lite/micro/kernels/logical_common.cc, tensorflow/lite/micro/kernels/select.cc.

- tail: ABS and RSQRT their OpData (ElementWiseAbsRsqrtInit), the comparisons
  theirs (comparisons.cc Init), SELECT_V2 its own; the others nothing; no
  options struct, no Prepare allocations;
- scratch, refusals, in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Kernel, OpRule

_COMPARISON = Kernel(OpRule(None, "comparisons:OpData"))
_NOTHING = Kernel(OpRule())

BUILTIN = {
    "ABS": Kernel(OpRule(None, "OpDataAbsRsqrt")),
    "RSQRT": Kernel(OpRule(None, "OpDataAbsRsqrt")),
    "SIN": _NOTHING,
    "COS": _NOTHING,
    "LOG": _NOTHING,
    "SQRT": _NOTHING,
    "SQUARE": _NOTHING,
    "LOGICAL_NOT": _NOTHING,
    "CEIL": _NOTHING,
    "FLOOR": _NOTHING,
    "ROUND": _NOTHING,
    "NEG": _NOTHING,
    "EXP": _NOTHING,
    "EQUAL": _COMPARISON,
    "NOT_EQUAL": _COMPARISON,
    "GREATER": _COMPARISON,
    "GREATER_EQUAL": _COMPARISON,
    "LESS": _COMPARISON,
    "LESS_EQUAL": _COMPARISON,
    "LOGICAL_AND": _NOTHING,
    "LOGICAL_OR": _NOTHING,
    "SELECT_V2": Kernel(OpRule(None, "select:OpData")),
}
