"""PAD, PADV2 and MIRROR_PAD, TFLM's reference kernels (CMSIS-NN's PAD and PADV2:
``tflm.cmsis_nn.pad``).

Sources: tensorflow/lite/micro/kernels/pad.cc, tensorflow/lite/micro/kernels/pad_common.cc,
tensorflow/lite/micro/kernels/mirror_pad.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParsePad, ParseMirrorPad).

- tail: PAD, PADV2: no options struct (ParsePad allocates nothing), Init its
  OpData; MIRROR_PAD: options TfLiteMirrorPaddingParams, Init OpDataMirrorPad;
- scratch: MIRROR_PAD, two int32 buffers of one entry per input dim;
- refuses (PadPrepare, PadEval): an output or constant value of another type than
  the input, an input other than float32, int32, int8, int16, paddings that are not
  constant;
- in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Accepts, Constant, Kernel, OpRule, Same, ScratchView, types

_PAD = (
    Same(("output 0", "input 2"), "input 0"),
    Accepts("input 0", types("FLOAT32 INT32 INT8 INT16")),
    Constant("input 1", "paddings"),
)


def _mirror_pad(ctx: ScratchView) -> list[int]:
    return [4 * len(ctx.t(0).shape)] * 2


BUILTIN = {
    "PAD": Kernel(OpRule(None, "pad:OpData"), refuses=_PAD),
    "PADV2": Kernel(OpRule(None, "pad:OpData"), refuses=_PAD),
    "MIRROR_PAD": Kernel(
        OpRule("TfLiteMirrorPaddingParams", "OpDataMirrorPad"), scratch=_mirror_pad
    ),
}
