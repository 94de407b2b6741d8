"""QUANTIZE, DEQUANTIZE and CAST, TFLM's reference kernels.

Sources: tensorflow/lite/micro/kernels/quantize.cc,
tensorflow/lite/micro/kernels/quantize_common.cc, tensorflow/lite/micro/kernels/dequantize.cc,
tensorflow/lite/micro/kernels/dequantize_common.cc, tensorflow/lite/micro/kernels/cast.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseCast).

QUANTIZE
- tail: Init: OpDataQuantizeReference;
- scratch: none;
- refuses (PrepareQuantizeReference, EvalQuantizeReference): an (input, output)
  type pair it has no case for;
- in place: output over input 0 of its shape (reference/quantize.h,
  requantize.h: element i read before it is written).

DEQUANTIZE
- tail: Init: DequantizeOpData;
- refuses (DequantizePrepare, DequantizeEval): an input other than int8, int16,
  uint8, or an output other than float32;
- scratch, in place: none.

CAST
- tail: options TfLiteCastParams; scratch, refusals, in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Accepts, InPlaceRule, Kernel, OpRule, in_out, types

BUILTIN = {
    "QUANTIZE": Kernel(
        OpRule(None, "OpDataQuantizeReference"),
        refuses=(
            in_out(
                "FLOAT32/INT8 FLOAT32/INT16 INT32/INT8 INT32/INT16 INT16/INT8 INT16/INT16"
                " INT16/INT32 INT8/INT8 INT8/UINT8 INT8/INT16 INT8/INT32 UINT8/INT8"
            ),
        ),
        inplace=InPlaceRule((0,), True, "quantize_common.cc; reference/quantize.h, requantize.h"),
    ),
    "DEQUANTIZE": Kernel(
        OpRule(None, "DequantizeOpData"),
        refuses=(
            Accepts("input 0", types("INT8 INT16 UINT8")),
            Accepts("output 0", types("FLOAT32")),
        ),
    ),
    "CAST": Kernel(OpRule("TfLiteCastParams")),
}
