"""Sizes of the structs TFLM puts in its tail, per build profile.

Columns, in ``PROFILE_COLUMNS`` order:

- ``pypi``: the 64-bit PyPI wheel (``tflite-micro`` 0.dev20261023, built with
  ``USE_TFLM_COMPRESSION``). Read from the wheel itself: the immediate size and
  alignment its ``Parse*`` functions pass to ``AllocatePOD`` and the size its
  kernel ``Init`` functions pass to ``AllocatePersistentBuffer`` (objdump of
  ``_runtime.so``); the structs allocated in ``Prepare`` from ``sizeof`` with host
  g++ and ``-DUSE_TFLM_COMPRESSION`` on the TFLM source; every op the tests can
  build is then checked against the runtime's measured tail
  (``tests/analysis/test_tail_ops.py``). Where the wheel and the source differ,
  the wheel wins (its ``TfLiteFullyConnectedParams`` is 32/8, the source's 16/4).
- ``arm32``: ``sizeof``/``alignof`` from arm-none-eabi-g++ 12 on the TFLM source
  (commit 90b983c2b) with ``-DTF_LITE_STATIC_MEMORY``, its default one-byte enums.
- ``int32``: the same compiler with ``-fno-short-enums`` (int-sized enums, as on
  RISC-V, Xtensa, i386). TFLM built so (``verify.native``'s ``arm32-int32-reference``)
  has the tail these sizes predict on every shared model and small test model.

The ``cmsis_nn:*`` rows are the OpData of TFLM's CMSIS-NN kernels (compiled with
``-DCMSIS_NN`` and CMSIS-NN's headers; arm32 with ``-mcpu=cortex-m4``, the same
sizes with ``-mcpu=cortex-m55``). ``host`` (not a column: ``HOST_OPTIONS`` and
``HOST_STATE`` amend the pypi one) is a 64-bit build from the source without
compression.

Each probe appended ``sizeof``/``alignof`` of the struct to a copy of the kernel's
translation unit (so types in anonymous namespaces resolve) and read the values
from the assembly. Sizes in bytes.
"""

from __future__ import annotations

Struct = tuple[int, int]  # (bytes, alignment)

PROFILE_COLUMNS = ("pypi", "arm32", "int32")


def _all(size: int, align: int) -> tuple[Struct, Struct, Struct]:
    """The same size and alignment in every profile."""
    return ((size, align), (size, align), (size, align))


def _enum_sized(size64: int, size_short: int) -> tuple[Struct, Struct, Struct]:
    """A struct of enums (and bytes): int enums on pypi and int32, one-byte on arm32."""
    short_align = 4 if size_short % 4 == 0 else 1
    return ((size64, 4), (size_short, short_align), (size64, 4))


# Builtin options: what each ``Parse*`` of flatbuffer_conversions.cc allocates, at
# alignof(struct), from the MicroBuiltinDataAllocator. Parsers not listed (ParsePad,
# ParseRelu, ParseLogistic, ...) allocate nothing.
OPTIONS: dict[str, tuple[Struct, Struct, Struct]] = {
    "TfLiteAddParams": _enum_sized(8, 2),  # activation enum + bool
    "TfLiteSubParams": _enum_sized(8, 2),
    "TfLiteMulParams": _enum_sized(4, 1),
    "TfLiteDivParams": _enum_sized(4, 1),
    "TfLiteCastParams": _enum_sized(8, 2),  # two TfLiteType
    "TfLiteShapeParams": _enum_sized(4, 1),
    "TfLiteArgMaxParams": _enum_sized(4, 1),
    "TfLiteArgMinParams": _enum_sized(4, 1),
    "TfLiteL2NormParams": _enum_sized(4, 1),
    "TfLiteMirrorPaddingParams": _enum_sized(4, 1),
    # the wheel's parser allocates 32/8 (a newer struct than the source's 16/4)
    "TfLiteFullyConnectedParams": ((32, 8), (5, 1), (16, 4)),
    "TfLiteSVDFParams": ((12, 4), (8, 4), (12, 4)),
    "TfLiteTransposeConvParams": ((20, 4), (16, 4), (20, 4)),
    "TfLiteVarHandleParams": ((16, 8), (8, 4), (8, 4)),  # two const char*
    "TfLiteConvParams": _all(28, 4),
    "TfLiteDepthwiseConvParams": _all(28, 4),
    "TfLitePoolParams": _all(40, 4),
    "TfLiteSoftmaxParams": _all(4, 4),
    "TfLiteConcatenationParams": _all(8, 4),
    "TfLiteReshapeParams": _all(36, 4),
    "TfLiteSqueezeParams": _all(36, 4),
    "TfLiteStridedSliceParams": _all(24, 4),
    "TfLiteReducerParams": _all(1, 1),
    "TfLitePackParams": _all(8, 4),
    "TfLiteUnpackParams": _all(8, 4),
    "TfLiteSplitParams": _all(4, 4),
    "TfLiteSplitVParams": _all(4, 4),
    "TfLiteGatherParams": _all(8, 4),
    "TfLiteLeakyReluParams": _all(4, 4),
    "TfLiteDepthToSpaceParams": _all(4, 4),
    "TfLiteSpaceToDepthParams": _all(4, 4),
    "TfLiteResizeBilinearParams": _all(2, 1),
    "TfLiteResizeNearestNeighborParams": _all(2, 1),
    "TfLiteBatchMatMulParams": _all(3, 1),
    "TfLiteCumsumParams": _all(2, 1),
    "TfLiteUnidirectionalSequenceLSTMParams": _all(16, 4),
    "TfLiteCallOnceParams": _all(4, 4),
    "TfLiteIfParams": _all(8, 4),
    "TfLiteWhileParams": _all(8, 4),
}

# Kernel state allocated with AllocatePersistentBuffer (always 16-aligned, so only
# the size matters): name -> bytes (pypi, arm32, int32). "file:Type" where the
# type name is not unique in TFLM.
STATE: dict[str, tuple[int, int, int]] = {
    "OpDataConv": (80, 56, 56),  # conv_common.cc ConvInit, depthwise_conv.cc
    "OpDataFullyConnected": (72, 48, 48),  # fully_connected.cc FullyConnectedInit
    "transpose_conv:OpData": (88, 72, 72),  # transpose_conv.cc TransposeConvInit
    "concatenation:OpData": (80, 24, 24),  # ConcatenationInit (compression adds 40)
    "SoftmaxParams": (80, 56, 56),  # softmax_common.cc SoftmaxInit
    "OpDataAdd": (60, 60, 60),  # add.cc AddInit
    "OpDataSub": (52, 52, 52),  # sub.cc SubInit
    "OpDataMul": (36, 36, 36),  # mul_common.cc MulInit
    "OpDataDiv": (28, 28, 28),  # div.cc DivInit
    "OpDataSvdf": (36, 36, 36),  # svdf.cc InitSvdf
    "OpDataLSTM": (688, 688, 688),  # unidirectional_sequence_lstm.cc Init
    "StridedSliceParams": (84, 84, 84),  # strided_slice_common.cc StridedSliceInit
    "OpDataReduce": (44, 44, 44),  # reduce.cc InitReduce
    "OpDataPooling": (32, 32, 32),  # pooling.cc PoolInit
    "OpDataLogistic": (16, 16, 16),  # logistic.cc LogisticInit
    "tanh:OpData": (16, 16, 16),  # tanh.cc TanhInit
    "OpDataQuantizeReference": (32, 32, 32),  # quantize.cc InitQuantizeReference
    "DequantizeOpData": (32, 32, 32),  # dequantize.cc DequantizeInit
    "pad:OpData": (56, 56, 56),  # pad_common.cc PadInit (PAD and PADV2)
    "ReluOpData": (28, 28, 28),  # activations.cc ReluInit
    "Relu6OpData": (8, 8, 8),  # activations.cc Relu6Init
    "LeakyReluOpData": (24, 24, 24),  # leaky_relu.cc LeakyReluInit
    "HardSwishParams": (20, 20, 20),  # hard_swish.cc HardSwishInit
    "PreluParams": (28, 28, 28),  # prelu.cc PreluInit
    "elu:OpData": (256, 256, 256),  # elu.cc EluInit (a 256-entry lookup table)
    "OpDataAbsRsqrt": (28, 28, 28),  # elementwise.cc ElementWiseAbsRsqrtInit
    "comparisons:OpData": (32, 32, 32),  # comparisons.cc Init
    "select:OpData": (1, 1, 1),  # select.cc SelectInit
    "squared_difference:OpData": (112, 112, 112),  # SquaredDifferenceInit
    "L2NormalizationParams": (4, 4, 4),  # l2norm.cc L2NormInit
    "OpDataMirrorPad": (20, 20, 20),  # mirror_pad.cc MirrorPadInit
    "SpaceToBatchParams": (4, 4, 4),  # space_to_batch_nd.cc SpaceToBatchNDInit
    "OpDataBatchMatmul": (32, 16, 16),  # batch_matmul.cc BatchMatMulInit
    "QuantizationOpDataBatchMatmul": (28, 28, 28),  # batch_matmul.cc Prepare
    "TfLiteEvalTensor": (24, 12, 12),  # batch_matmul.cc transposed operand
    "add_n:OpData": (40, 40, 40),  # add_n.cc Prepare, int8 only
    "cumsum:OpData": (36, 36, 36),  # cumsum.cc CumSumPrepare, int8 only
    "LogSoftmaxOpData": (40, 28, 28),  # log_softmax.cc Prepare, int8 only
    "embedding_lookup:OpData": (16, 8, 8),  # embedding_lookup.cc CalculateOpData
    "call_once:OpData": (8, 8, 8),  # call_once.cc CallOnceInit
    "if:OpData": (8, 8, 8),  # if.cc IfInit
    "while:OpData": (8, 8, 8),  # while.cc WhileInit
    "var_handle:OpData": (4, 4, 4),  # var_handle.cc VarHandleInit
    "assign_variable:OpData": (4, 0, 0),  # assign_variable.cc Init: compression only
    "OpDataCircularBuffer": (8, 8, 8),  # circular_buffer.cc CircularBufferInit
    "detection_postprocess:OpData": (112, 112, 112),  # DetectionPostProcessInit
    # signal library (signal/micro/kernels, signal/src)
    "TFLMSignalWindowParams": (8, 8, 8),
    "TFLMSignalEnergyParams": (8, 8, 8),
    "TFLMSignalLogParams": (8, 8, 8),  # filter_bank_log.cc
    "TfLitePcanParams": (4, 4, 4),
    "TFLMSignalFilterBankParams": (64, 36, 36),
    "TFLMSignalSpectralSubtractionParams": (56, 44, 44),
    "TfLiteAudioFrontendRfftParams": (48, 32, 32),
    "TfLiteAudioFrontendIrfftParams": (32, 24, 24),
    "TFLMSignalFrontendDelayParams": (32, 20, 20),
    "TFLMSignalFramerParams": (40, 28, 28),
    "TFLMSignalOverlapAddParams": (32, 24, 24),
    "TFLMSignalStackerParams": (56, 36, 36),
    "CircularBuffer": (40, 24, 24),  # signal/src/circular_buffer.h, header of a state
    "IrfftFloatState": (16, 8, 8),  # signal/src/irfft_float.cc
    # micro_resource_variable.cc MicroResourceVariables::Create
    "MicroResourceVariables": (16, 12, 12),
    "MicroResourceVariable": (40, 20, 20),
    # CMSIS-NN kernels (kernels/cmsis_nn/*.cc Init, built with CMSIS-NN's headers and
    # KERNELS_OPTIMIZED_FOR_SPEED); the pypi column as a compression build would have them
    "cmsis_nn:conv:OpData": (88, 60, 60),  # OpDataConv + buffer_idx
    "cmsis_nn:depthwise_conv:OpData": (88, 60, 60),  # OpDataConv + buffer_idx
    "cmsis_nn:fully_connected:OpData": (104, 72, 72),  # OpDataFullyConnected + 6 fields
    "cmsis_nn:pooling:OpData": (36, 36, 36),  # OpDataPooling + buffer_idx
    "CMSISNNSoftmaxParams": (88, 64, 64),  # SoftmaxParams + num_rows, row_size
    "CmsisNnOpDataSvdf": (48, 40, 40),
    "cmsis_nn:lstm:OpData": (1008, 912, 912),  # OpDataLSTM + cmsis_nn_lstm_params
    "cmsis_nn:transpose_conv:OpData": (88, 76, 76),
    "cmsis_nn:add:OpData": (60, 60, 60),
    "cmsis_nn:batch_matmul:OpData": (56, 36, 36),  # OpDataBatchMatmul + dims + index
}

# ``host``: TFLM built from this source for a 64-bit host by its Makefile, without
# compression (``verify.native``'s host variants). Its sizes are the pypi column's
# except these (``sizeof`` with host g++ without ``-DUSE_TFLM_COMPRESSION``; the
# source's own FC options).
HOST_OPTIONS: dict[str, Struct] = {"TfLiteFullyConnectedParams": (16, 4)}
HOST_STATE: dict[str, int] = {
    "OpDataConv": 72,
    "OpDataFullyConnected": 64,
    "transpose_conv:OpData": 80,
    "concatenation:OpData": 40,
    "assign_variable:OpData": 0,
    "cmsis_nn:conv:OpData": 80,
    "cmsis_nn:depthwise_conv:OpData": 80,
    "cmsis_nn:fully_connected:OpData": 96,
}


def column(profile: str) -> int:
    """Index of ``profile`` in the tables' columns."""
    return PROFILE_COLUMNS.index(profile)


def options_for(profile: str) -> dict[str, Struct]:
    """Options struct name -> (bytes, alignment) in ``profile`` (or ``host``)."""
    if profile == "host":
        return options_for("pypi") | HOST_OPTIONS
    k = column(profile)
    return {name: row[k] for name, row in OPTIONS.items()}


def state_for(profile: str) -> dict[str, int]:
    """Kernel state struct name -> bytes in ``profile`` (or ``host``)."""
    if profile == "host":
        return state_for("pypi") | HOST_STATE
    k = column(profile)
    return {name: row[k] for name, row in STATE.items()}
