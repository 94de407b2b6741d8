"""SOFTMAX, TFLM's CMSIS-NN kernel (the reference one: ``tflm.kernels.softmax``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/softmax.cc,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/SoftmaxFunctions/arm_softmax_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/SoftmaxFunctions/arm_nn_softmax_common_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/SoftmaxFunctions/arm_softmax_s16.c.

- scratch: none;
- tail: the reference kernel's, with its own params (CMSISNNSoftmaxParams);
- refusals: as the reference kernel;
- in place: each feature level's loops read (``INPLACE``).
"""

from __future__ import annotations

from dataclasses import replace

from arenaplan.tflm.facts import CmsisKernel, OpRule
from arenaplan.tflm.kernels import softmax as reference

_SOFTMAX = "cmsis_nn/softmax.cc SoftmaxEval (float32: reference/softmax.h Softmax)"
_SOFTMAX_S16 = (
    "arm_softmax_s16 (no feature paths): max loop; loop 2 reads input[col], then writes "
    "cached_exp_results[col] (the output row); loop 3 reads and writes the output row"
)
INPLACE = {
    "c": f"{_SOFTMAX} -> arm_softmax_s8 -> arm_nn_softmax_common_s8: per row a max loop "
    "and a sum loop read the row, then loop 3 reads input[col], then writes "
    f"output_s8[col]; {_SOFTMAX_S16}",
    "dsp": f"{_SOFTMAX} -> arm_softmax_s8 -> arm_nn_softmax_common_s8 (no DSP path): "
    f"as without DSP; {_SOFTMAX_S16}",
    "mve": f"{_SOFTMAX} -> arm_softmax_s8 ARM_MATH_MVEI: per row the max (vldrbq_z_s8, "
    "16 lanes) and sum (vldrbq_s32) passes only read; then vldrbq_s32(&input[idx]), "
    "then vstrbq_s32(&output[idx]), 4 lanes, idx += 4, scalar tail (GCC 12.2: the "
    f"plain C path); {_SOFTMAX_S16}",
}


def _tail(features: str) -> OpRule:
    return replace(reference.BUILTIN["SOFTMAX"].tail, init="CMSISNNSoftmaxParams")


KERNELS = {"SOFTMAX": CmsisKernel(tail=_tail, inplace=INPLACE)}
