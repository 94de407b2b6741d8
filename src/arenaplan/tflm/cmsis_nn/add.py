"""ADD, TFLM's CMSIS-NN kernel (the reference one: ``tflm.kernels.arithmetic``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/add.cc,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/BasicMathFunctions/arm_elementwise_add_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/BasicMathFunctions/arm_elementwise_add_s16.c.

- scratch: none;
- tail: the reference kernel's, with its own OpData;
- refusals: as the reference kernel;
- in place: each feature level's loops read (``INPLACE``); broadcasts, float32 and
  int32 run the reference loops.
"""

from __future__ import annotations

from dataclasses import replace

from arenaplan.tflm.facts import CmsisKernel, OpRule
from arenaplan.tflm.kernels import arithmetic as reference

_ADD = "cmsis_nn/add.cc EvalAddQuantizedInt8/Int16 (broadcast, float32, int32: reference)"
INPLACE = {
    "c": f"{_ADD} -> arm_elementwise_add_s8: scalar loop *in1++, *in2++, then *output++; "
    "arm_elementwise_add_s16: arm_nn_read_q15x2_ia of each input, then "
    "arm_nn_write_q15x2_ia of the same 4 bytes",
    "dsp": f"{_ADD} -> arm_elementwise_add_s8 ARM_MATH_DSP: read_and_pad_reordered 4 s8 "
    "of each input, then arm_nn_write_s8x4_ia of the same 4 bytes, scalar tail; "
    "arm_elementwise_add_s16 as without DSP",
    "mve": f"{_ADD} -> arm_elementwise_add_s8/_s16 ARM_MATH_MVEI: vldrbq_z_s32/"
    "vldrhq_z_s32 of 4 lanes of each input, then vstrbq_p_s32/vstrhq_p_s32 of the "
    "same 4 lanes (vctp32q predicates the tail)",
}


def _tail(features: str) -> OpRule:
    return replace(reference.BUILTIN["ADD"].tail, init="cmsis_nn:add:OpData")


KERNELS = {"ADD": CmsisKernel(tail=_tail, inplace=INPLACE)}
