"""RELU, RELU6, LEAKY_RELU, HARD_SWISH, PRELU, ELU, LOGISTIC and TANH, TFLM's
reference kernels.

Sources: tensorflow/lite/micro/kernels/activations.cc,
tensorflow/lite/micro/kernels/activations_common.cc,
tensorflow/lite/micro/kernels/leaky_relu.cc, tensorflow/lite/micro/kernels/leaky_relu_common.cc,
tensorflow/lite/micro/kernels/hard_swish.cc, tensorflow/lite/micro/kernels/hard_swish_common.cc,
tensorflow/lite/micro/kernels/prelu.cc, tensorflow/lite/micro/kernels/prelu_common.cc,
tensorflow/lite/micro/kernels/elu.cc, tensorflow/lite/micro/kernels/logistic.cc,
tensorflow/lite/micro/kernels/logistic_common.cc, tensorflow/lite/micro/kernels/tanh.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseLeakyRelu).

- tail: each its Init's OpData (ReluInit, ...); LEAKY_RELU also its options
  TfLiteLeakyReluParams; no Prepare allocations;
- scratch: none;
- refuses: RELU, RELU6 (ReluEval, Relu6Eval) an input other than float32, int8,
  int16; HARD_SWISH (HardSwishEval) other than float32, int8; LOGISTIC, TANH
  (CalculateArithmeticOpData, LogisticEval, TanhEval) other than float32, int8,
  int16, or an output of another type;
- in place: all but PRELU write their output over input 0 of its shape (each
  element read before it is written, docs/inplace.md).
"""

from __future__ import annotations

from arenaplan.tflm.facts import OUT_LIKE_IN, Accepts, InPlaceRule, Kernel, OpRule, types

_IN_OUT = (OUT_LIKE_IN, Accepts("input 0", types("FLOAT32 INT8 INT16")))

BUILTIN = {
    "RELU": Kernel(
        OpRule(None, "ReluOpData"),
        refuses=(Accepts("input 0", types("FLOAT32 INT8 INT16")),),
        inplace=InPlaceRule(
            (0,), True, "activations.h ReluQuantized; activations_common.cc ReluFloat"
        ),
    ),
    "RELU6": Kernel(
        OpRule(None, "Relu6OpData"),
        refuses=(Accepts("input 0", types("FLOAT32 INT8 INT16")),),
        inplace=InPlaceRule(
            (0,), True, "activations.h Relu6Quantized; activations_common.cc Relu6Float"
        ),
    ),
    "LEAKY_RELU": Kernel(
        OpRule("TfLiteLeakyReluParams", "LeakyReluOpData"),
        inplace=InPlaceRule((0,), True, "reference/leaky_relu.h LeakyRelu, QuantizeLeakyRelu"),
    ),
    "HARD_SWISH": Kernel(
        OpRule(None, "HardSwishParams"),
        refuses=(Accepts("input 0", types("FLOAT32 INT8")),),
        inplace=InPlaceRule((0,), True, "reference/hard_swish.h HardSwish"),
    ),
    "PRELU": Kernel(OpRule(None, "PreluParams")),
    "ELU": Kernel(
        OpRule(None, "elu:OpData"),
        inplace=InPlaceRule((0,), True, "reference/elu.h Elu; elu.cc EvalUsingLookupTable"),
    ),
    "LOGISTIC": Kernel(
        OpRule(None, "OpDataLogistic"),
        refuses=_IN_OUT,
        inplace=InPlaceRule((0,), True, "reference/logistic.h, integer_ops/logistic.h Logistic"),
    ),
    "TANH": Kernel(
        OpRule(None, "tanh:OpData"),
        refuses=_IN_OUT,
        inplace=InPlaceRule((0,), True, "reference/tanh.h, integer_ops/tanh.h Tanh"),
    ),
}
