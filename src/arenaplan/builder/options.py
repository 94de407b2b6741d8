"""Builtin options tables for the writer, through the ``tflite`` builder functions.

Options come as snake_case names (``stride_w``) with plain values; enum fields
take their schema names (``padding="SAME"``, ``mode="REFLECT"``), type fields a
``DType`` or its schema name (``out_data_type="INT8"``), string fields a ``str``.
Each is written with the generated ``<Table>Add<Field>`` function, so only fields
the schema has are accepted.
"""

from __future__ import annotations

from collections.abc import Mapping

import flatbuffers
import tflite

from arenaplan.errors import UsageError
from arenaplan.ir.dtypes import DType

# operator -> its options table in the schema (operators absent here take none)
OPTION_TABLES = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "ADD": "AddOptions",
    "MUL": "MulOptions",
    "SUB": "SubOptions",
    "DIV": "DivOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "RESHAPE": "ReshapeOptions",
    "SOFTMAX": "SoftmaxOptions",
    "LOG_SOFTMAX": "LogSoftmaxOptions",
    "CONCATENATION": "ConcatenationOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "SVDF": "SVDFOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "PAD": "PadOptions",
    "PADV2": "PadV2Options",
    "MIRROR_PAD": "MirrorPadOptions",
    "LEAKY_RELU": "LeakyReluOptions",
    "HARD_SWISH": "HardSwishOptions",
    "STRIDED_SLICE": "StridedSliceOptions",
    "SQUEEZE": "SqueezeOptions",
    "GATHER": "GatherOptions",
    "GATHER_ND": "GatherNdOptions",
    "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions",
    "SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions",
    "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions",
    "CAST": "CastOptions",
    "SHAPE": "ShapeOptions",
    "SPLIT": "SplitOptions",
    "SPLIT_V": "SplitVOptions",
    "PACK": "PackOptions",
    "UNPACK": "UnpackOptions",
    "ARG_MAX": "ArgMaxOptions",
    "ARG_MIN": "ArgMinOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "BATCH_MATMUL": "BatchMatMulOptions",
    "CUMSUM": "CumsumOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    "SQUARED_DIFFERENCE": "SquaredDifferenceOptions",
    "SELECT_V2": "SelectV2Options",
    "TRANSPOSE": "TransposeOptions",
    "EXPAND_DIMS": "ExpandDimsOptions",
    "QUANTIZE": "QuantizeOptions",
    "DEQUANTIZE": "DequantizeOptions",
    "CALL_ONCE": "CallOnceOptions",
    "IF": "IfOptions",
    "WHILE": "WhileOptions",
    "VAR_HANDLE": "VarHandleOptions",
    "ASSIGN_VARIABLE": "AssignVariableOptions",
    "READ_VARIABLE": "ReadVariableOptions",
}
_ENUMS = {
    "padding": tflite.Padding,
    "fused_activation_function": tflite.ActivationFunctionType,
    "mode": tflite.MirrorPadMode,
}
_TYPE_FIELDS = {"in_data_type", "out_data_type", "out_type", "output_type"}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _enum_value(field: str, value: object) -> object:
    if field in _TYPE_FIELDS:
        if isinstance(value, DType):
            return value.code
        if isinstance(value, str) and hasattr(DType, value):
            return DType[value].code
    enum = _ENUMS.get(field)
    if enum is None or not isinstance(value, str):
        return value
    if not hasattr(enum, value):
        raise UsageError(f"{field}: unknown value {value!r}")
    return getattr(enum, value)


def build_options(
    b: flatbuffers.Builder, opcode: str, options: Mapping[str, object]
) -> tuple[int, int]:
    """(union type code, table offset) of ``opcode``'s options; (0, 0) if it has none."""
    table = OPTION_TABLES.get(opcode)
    if table is None:
        if options:
            raise UsageError(f"{opcode} takes no options (got {', '.join(options)})")
        return 0, 0
    vectors = {}
    for field, value in options.items():  # vectors and strings go before the table
        if isinstance(value, str) and field not in _ENUMS and field not in _TYPE_FIELDS:
            vectors[field] = b.CreateString(value)
        elif isinstance(value, tuple | list):
            start = getattr(tflite, f"{table}Start{_camel(field)}Vector", None)
            if start is None:
                raise UsageError(f"{opcode}: option {field!r} is not a vector")
            start(b, len(value))
            for v in reversed(value):
                b.PrependInt32(int(v))
            vectors[field] = b.EndVector()
    getattr(tflite, f"{table}Start")(b)
    for field, value in options.items():
        add = getattr(tflite, f"{table}Add{_camel(field)}", None)
        if add is None:
            raise UsageError(f"{opcode}: unknown option {field!r}")
        add(b, vectors[field] if field in vectors else _enum_value(field, value))
    return getattr(tflite.BuiltinOptions, table), getattr(tflite, f"{table}End")(b)
