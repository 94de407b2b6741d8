"""Builtin options tables for the writer, through the ``tflite`` builder functions.

Options come as snake_case names (``stride_w``) with plain values; enum fields
take their schema names (``padding="SAME"``). Each is written with the generated
``<Table>Add<Field>`` function, so only fields the schema has are accepted.
"""

from __future__ import annotations

from collections.abc import Mapping

import flatbuffers
import tflite

from arenaplan.errors import UsageError

# operator -> its options table in the schema (operators absent here take none)
OPTION_TABLES = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "ADD": "AddOptions",
    "MUL": "MulOptions",
    "SUB": "SubOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "RESHAPE": "ReshapeOptions",
    "SOFTMAX": "SoftmaxOptions",
    "CONCATENATION": "ConcatenationOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "SVDF": "SVDFOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
}
_ENUMS = {"padding": tflite.Padding, "fused_activation_function": tflite.ActivationFunctionType}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _enum_value(field: str, value: object) -> object:
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
    for field, value in options.items():  # vectors go before the table starts
        if isinstance(value, tuple | list):
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
