"""CIRCULAR_BUFFER, a custom kernel TFLM ships.

Sources: tensorflow/lite/micro/kernels/circular_buffer.cc,
tensorflow/lite/micro/kernels/circular_buffer_common.cc.

- tail: no options struct; Init: OpDataCircularBuffer;
- scratch, refusals, in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Kernel, OpRule

CUSTOM = {
    "CIRCULAR_BUFFER": Kernel(OpRule(None, "OpDataCircularBuffer")),
}
