"""CONCATENATION, PACK, UNPACK, SPLIT and SPLIT_V, TFLM's reference kernels: tensors
joined along an axis, or cut along one.

Sources: tensorflow/lite/micro/kernels/concatenation.cc, tensorflow/lite/micro/kernels/pack.cc,
tensorflow/lite/micro/kernels/unpack.cc, tensorflow/lite/micro/kernels/split.cc,
tensorflow/lite/micro/kernels/split_v.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseConcatenation, ParsePack,
ParseUnpack, ParseSplit, ParseSplitV).

- tail: each its options; CONCATENATION also its Init OpData;
- scratch: none;
- refuses: CONCATENATION (ConcatenationPrepare) a fused activation, an input other
  than float32, int8, int16, int32, int64, bool, or a tensor of another type than
  input 0; SPLIT, SPLIT_V (SplitPrepare, SplitVPrepare, their Evals) an axis that
  is not constant, a value other than float32, int8, int16, int32;
- in place: CONCATENATION allows the concat view: an input may lie on its byte
  range of the output (its producer writes it there; the kernel copies each byte
  onto itself).
"""

from __future__ import annotations

from arenaplan.runtime.records import CONCAT_VIEW
from arenaplan.tflm.facts import (
    Accepts,
    Constant,
    Kernel,
    OpRule,
    Option,
    Same,
    types,
)

_SPLIT = types("FLOAT32 INT8 INT16 INT32")

BUILTIN = {
    "CONCATENATION": Kernel(
        OpRule("TfLiteConcatenationParams", "concatenation:OpData"),
        refuses=(
            Option("fused_activation_function", frozenset({"NONE"}), "NONE"),
            Accepts("input 0", types("FLOAT32 INT8 INT16 INT32 INT64 BOOL")),
            Same(("output 0", "every input"), "input 0"),
        ),
        view=CONCAT_VIEW,
    ),
    "PACK": Kernel(OpRule("TfLitePackParams")),
    "UNPACK": Kernel(OpRule("TfLiteUnpackParams")),
    "SPLIT": Kernel(
        OpRule("TfLiteSplitParams"),
        refuses=(Constant("input 0", "axis"), Accepts("input 1", _SPLIT)),
    ),
    "SPLIT_V": Kernel(
        OpRule("TfLiteSplitVParams"),
        refuses=(Constant("input 2", "axis"), Accepts("input 0", _SPLIT)),
    ),
}
