"""RESHAPE, SQUEEZE, EXPAND_DIMS, SHAPE, BROADCAST_ARGS, BROADCAST_TO, FILL and
ZEROS_LIKE, TFLM's reference kernels: shapes, and tensors made from them.

Sources: tensorflow/lite/micro/kernels/reshape.cc,
tensorflow/lite/micro/kernels/reshape_common.cc, tensorflow/lite/micro/kernels/squeeze.cc,
tensorflow/lite/micro/kernels/expand_dims.cc, tensorflow/lite/micro/kernels/shape.cc,
tensorflow/lite/micro/kernels/broadcast_args.cc, tensorflow/lite/micro/kernels/broadcast_to.cc,
tensorflow/lite/micro/kernels/fill.cc, tensorflow/lite/micro/kernels/zeros_like.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseReshape, ParseSqueeze, ParseShape).

- tail: RESHAPE, SQUEEZE, SHAPE their options; RESHAPE's Prepare (ReshapeOutput)
  makes the output's dims writable when the stored shape has a -1; the others
  nothing;
- scratch: none;
- refuses: RESHAPE (ReshapeOutput) an output of another type than the input;
  EXPAND_DIMS (ExpandDimsPrepare) an axis, BROADCAST_TO (BroadcastToPrepare) a shape,
  FILL (FillPrepare) dims that are not constant; FILL (FillEval) a value other than
  float32, int32, int8 or an output of another type;
- in place: RESHAPE, SQUEEZE and EXPAND_DIMS copy their input's bytes in order (or
  not at all when the pointers are equal), so the output may take over input 0 of
  as many elements.
"""

from __future__ import annotations

from arenaplan.tflm.facts import (
    OUT_LIKE_IN,
    Accepts,
    Constant,
    InPlaceRule,
    Kernel,
    OpRule,
    OpView,
    Same,
    types,
)
from arenaplan.tflm.kernels.common import dims_bytes


def _reshape(v: OpView) -> list[int]:
    """ReshapeOutput: writable dims only when the stored output shape has a -1."""
    out = v.output()
    return [dims_bytes(out)] if out is not None and -1 in out.shape else []


BUILTIN = {
    "RESHAPE": Kernel(
        OpRule("TfLiteReshapeParams", prepare=_reshape),
        refuses=(OUT_LIKE_IN,),
        inplace=InPlaceRule(
            (0,), False, "reshape.cc EvalReshapeReference: no copy if pointers equal"
        ),
    ),
    "SQUEEZE": Kernel(
        OpRule("TfLiteSqueezeParams"),
        inplace=InPlaceRule(
            (0,), False, "squeeze.cc SqueezeEval: memcpy(output, input) onto itself"
        ),
    ),
    "EXPAND_DIMS": Kernel(
        OpRule(),
        refuses=(Constant("input 1", "axis"),),
        inplace=InPlaceRule((0,), False, "expand_dims.cc memCopyN: out[i] = in[i], i ascending"),
    ),
    "SHAPE": Kernel(OpRule("TfLiteShapeParams")),
    "BROADCAST_ARGS": Kernel(OpRule()),
    "BROADCAST_TO": Kernel(OpRule(), refuses=(Constant("input 1", "shape"),)),
    "FILL": Kernel(
        OpRule(),
        refuses=(
            Constant("input 0", "dims"),
            Accepts("input 1", types("FLOAT32 INT32 INT8")),
            Same(("output 0",), "input 1"),
        ),
    ),
    "ZEROS_LIKE": Kernel(OpRule()),
}
