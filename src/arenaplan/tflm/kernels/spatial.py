"""SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND,
RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR, TFLM's reference kernels: the spatial
dims rearranged or resized.

Sources: tensorflow/lite/micro/kernels/space_to_depth.cc,
tensorflow/lite/micro/kernels/depth_to_space.cc,
tensorflow/lite/micro/kernels/space_to_batch_nd.cc,
tensorflow/lite/micro/kernels/batch_to_space_nd.cc,
tensorflow/lite/micro/kernels/resize_bilinear.cc,
tensorflow/lite/micro/kernels/resize_nearest_neighbor.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseSpaceToDepth, ParseDepthToSpace,
ParseResizeBilinear, ParseResizeNearestNeighbor).

- tail: SPACE_TO_DEPTH, DEPTH_TO_SPACE: their options, and the output's dims made
  writable in Prepare; SPACE_TO_BATCH_ND: Init SpaceToBatchParams; the resizes:
  their options; BATCH_TO_SPACE_ND nothing;
- scratch: none;
- refuses (ResizeBilinearPrepare/Eval, ResizeNearestNeighborPrepare/Eval): a size
  that is not constant; an output other than float32, int8 (bilinear) or float32,
  int8, int16 (nearest neighbour);
- in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Accepts, Constant, Kernel, OpRule, types
from arenaplan.tflm.kernels.common import writable_output_dims

BUILTIN = {
    "SPACE_TO_DEPTH": Kernel(OpRule("TfLiteSpaceToDepthParams", prepare=writable_output_dims)),
    "DEPTH_TO_SPACE": Kernel(OpRule("TfLiteDepthToSpaceParams", prepare=writable_output_dims)),
    "SPACE_TO_BATCH_ND": Kernel(OpRule(None, "SpaceToBatchParams")),
    "BATCH_TO_SPACE_ND": Kernel(OpRule()),
    "RESIZE_BILINEAR": Kernel(
        OpRule("TfLiteResizeBilinearParams"),
        refuses=(Constant("input 1", "size"), Accepts("output 0", types("FLOAT32 INT8"))),
    ),
    "RESIZE_NEAREST_NEIGHBOR": Kernel(
        OpRule("TfLiteResizeNearestNeighborParams"),
        refuses=(Constant("input 1", "size"), Accepts("output 0", types("FLOAT32 INT8 INT16"))),
    ),
}
