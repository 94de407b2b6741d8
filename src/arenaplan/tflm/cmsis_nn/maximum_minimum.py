"""MAXIMUM and MINIMUM, TFLM's CMSIS-NN kernel (the reference one:
``tflm.kernels.arithmetic``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/maximum_minimum.cc.

Scratch, tail and refusals as the reference kernel; no in-place rule (not read).
"""

from __future__ import annotations

from arenaplan.tflm.facts import CmsisKernel

KERNELS = {"MAXIMUM": CmsisKernel(), "MINIMUM": CmsisKernel()}
