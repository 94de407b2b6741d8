"""PAD and PADV2, TFLM's CMSIS-NN kernel (the reference one: ``tflm.kernels.pad``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/pad.cc.

Scratch, tail and refusals as the reference kernel; no in-place rule (not read).
"""

from __future__ import annotations

from arenaplan.tflm.facts import CmsisKernel

KERNELS = {"PAD": CmsisKernel(), "PADV2": CmsisKernel()}
