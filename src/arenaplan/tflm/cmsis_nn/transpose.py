"""TRANSPOSE, TFLM's CMSIS-NN kernel (the reference one: ``tflm.kernels.slice``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/transpose.cc.

Scratch, tail and refusals as the reference kernel; no in-place rule (not read).
"""

from __future__ import annotations

from arenaplan.tflm.facts import CmsisKernel

KERNELS = {"TRANSPOSE": CmsisKernel()}
