"""MUL, TFLM's CMSIS-NN kernel (the reference one: ``tflm.kernels.arithmetic``).

Sources: tensorflow/lite/micro/kernels/cmsis_nn/mul.cc,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/BasicMathFunctions/arm_elementwise_mul_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/BasicMathFunctions/arm_elementwise_mul_s16.c.

- scratch, tail, refusals: as the reference kernel;
- in place: each feature level's loops read (``INPLACE``); broadcasts run the
  reference loops, float32 and int32 mul_common.cc's.
"""

from __future__ import annotations

from arenaplan.tflm.facts import CmsisKernel

_MUL = "cmsis_nn/mul.cc EvalQuantized (broadcast: reference; float32, int32: mul_common.cc)"
INPLACE = {
    "c": f"{_MUL} -> arm_elementwise_mul_s8: scalar loop *in1++, *in2++, then *output++; "
    "arm_elementwise_mul_s16: arm_nn_read_q15x2_ia of each input, then "
    "arm_nn_write_q15x2_ia of the same 4 bytes",
    "dsp": f"{_MUL} -> arm_elementwise_mul_s8 ARM_MATH_DSP: read_and_pad_reordered 4 s8 "
    "of each input, then arm_nn_write_s8x4_ia of the same 4 bytes, scalar tail; "
    "arm_elementwise_mul_s16: as without DSP (SMULBB/SMULTT)",
    "mve": f"{_MUL} -> arm_elementwise_mul_s8/_s16 ARM_MATH_MVEI: vldrbq_z_s32/"
    "vldrhq_z_s32 of 4 lanes of each input, then vstrbq_p_s32/vstrhq_p_s32 of the "
    "same 4 lanes (vctp32q predicates the tail)",
}

KERNELS = {"MUL": CmsisKernel(inplace=INPLACE)}
