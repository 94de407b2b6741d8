"""IF, WHILE and CALL_ONCE, TFLM's control-flow kernels.

Sources: tensorflow/lite/micro/kernels/if.cc, tensorflow/lite/micro/kernels/while.cc,
tensorflow/lite/micro/kernels/call_once.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseIf, ParseWhile, ParseCallOnce).

- tail: each its options and its Init OpData;
- scratch, refusals, in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Kernel, OpRule

BUILTIN = {
    "CALL_ONCE": Kernel(OpRule("TfLiteCallOnceParams", "call_once:OpData")),
    "IF": Kernel(OpRule("TfLiteIfParams", "if:OpData")),
    "WHILE": Kernel(OpRule("TfLiteWhileParams", "while:OpData")),
}
