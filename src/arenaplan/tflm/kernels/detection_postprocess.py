"""TFLite_Detection_PostProcess, the custom kernel TFLM ships.

Sources: tensorflow/lite/micro/kernels/detection_postprocess.cc.

- tail: no options struct (its custom options are read in Init); Init: its OpData;
- scratch (Prepare), with n boxes, d max_detections and c num_classes: n; 16 * n;
  4 * the scores' dims 1 * 2; 4 * n twice; 4 * d * n twice; 4 * n; 4 * d * n;
  4 * max(c, d) * n; 4 * min(n, d) * n;
- refusals, in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Kernel, OpRule, ScratchView


def _scratch(ctx: ScratchView) -> list[int]:
    boxes, scores = ctx.t(0), ctx.t(1)
    n, d = boxes.shape[1], ctx.custom("max_detections")
    c = ctx.custom("num_classes")
    return [
        n,
        16 * n,
        4 * scores.shape[1] * scores.shape[2],
        4 * n,
        4 * n,
        4 * d * n,
        4 * d * n,
        4 * n,
        4 * d * n,
        4 * max(c, d) * n,
        4 * min(n, d) * n,
    ]


CUSTOM = {
    "TFLite_Detection_PostProcess": Kernel(
        OpRule(None, "detection_postprocess:OpData"), scratch=_scratch
    ),
}
