"""What the ``tflite`` package's generated classes tell about the schema.

The reader and the writer need the same facts: the name behind each enum or
union code, and the fields of each options table with how each is stored. They
are read from the generated code itself (its accessors and ``<Table>Add<Field>``
functions), so every table of the schema is covered without a list kept by hand.
The one hand-kept list, ``OPTION_TABLES``, only serves models built by hand.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from functools import cache

import tflite

# Enum fields of options tables kept by name in the IR (printed by later stages).
ENUM_FIELDS: dict[str, type] = {
    "padding": tflite.Padding,
    "fused_activation_function": tflite.ActivationFunctionType,
}
# The two options unions of an Operator, in field order (builtin_options, builtin_options_2).
OPTION_UNIONS: tuple[type, ...] = (tflite.BuiltinOptions, tflite.BuiltinOptions2)

# Operator -> its options table, for an IR that does not name the table (a model
# built by hand; the reader always names it). The schema says this only in comments.
OPTION_TABLES: dict[str, str] = {
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

_SKIP_SUFFIXES = ("AsNumpy", "IsNone", "Length", "BufferHasIdentifier")
_NUMBER = re.compile(r"self\._tab\.Get\(flatbuffers\.number_types\.(\w+)Flags")


@dataclass(frozen=True, slots=True)
class OptionField:
    """One field of an options table.

    ``kind``: "scalar", "string", "vector" (of numbers), or "other" (a table or
    struct, which no options table of the schema has today)."""

    method: str  # the generated accessor (``StrideW``); ``<Table>Add<method>`` writes it
    name: str  # snake_case (``stride_w``): the key in the IR's Options
    kind: str
    element: str  # flatbuffers number type of the scalar or vector element (``Int32``)


@cache
def names(enum: type) -> dict[int, str]:
    """Code -> name of a generated enum or union class (``BuiltinOperator``)."""
    return {v: k for k, v in vars(enum).items() if not k.startswith("_") and isinstance(v, int)}


@cache
def codes(enum: type) -> dict[str, int]:
    """Name -> code of a generated enum or union class."""
    return {name: code for code, name in names(enum).items()}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@cache
def option_fields(table: str) -> tuple[OptionField, ...]:
    """The fields of options table ``table`` (``Conv2DOptions``), by accessor name."""
    cls = getattr(tflite, table)
    methods = [n for n in vars(cls) if n[:1].isupper() and not n.startswith(("GetRoot", "Init"))]
    fields = []
    for method in sorted(methods):
        if method.endswith(_SKIP_SUFFIXES):
            continue
        source = inspect.getsource(getattr(cls, method))
        number = _NUMBER.search(source)
        if f"{method}Length" in vars(cls):
            kind = "vector"
        elif "self._tab.String(" in source:
            kind = "string"
        elif number and "Indirect" not in source:
            kind = "scalar"
        else:
            kind = "other"
        fields.append(OptionField(method, snake(method), kind, number.group(1) if number else ""))
    return tuple(fields)


@cache
def option_union(table: str) -> tuple[int, int] | None:
    """(union position in OPTION_UNIONS, type code) of options table ``table``;
    None if neither union has it."""
    for position, union in enumerate(OPTION_UNIONS):
        code = codes(union).get(table)
        if code:
            return position, code
    return None
