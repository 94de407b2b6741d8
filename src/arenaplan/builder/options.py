"""Builtin options given to ``ModelBuilder``, turned into the IR's ``Options``.

Options come as snake_case names (``stride_w``) with plain values; enum fields
take their schema names (``padding="SAME"``, ``mode="REFLECT"``), type fields a
``DType`` or its schema name (``out_data_type="INT8"``), string fields a ``str``.
Only fields of the operator's options table (``reader.schema.OPTION_TABLES``)
are accepted; ``export.tflite_writer`` then writes them like any other model's.
"""

from __future__ import annotations

from collections.abc import Mapping

import tflite

from arenaplan.errors import UsageError
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Options, OptionValue
from arenaplan.reader.schema import ENUM_FIELDS, OPTION_TABLES, codes, option_fields

__all__ = ["OPTION_TABLES", "to_options"]

_CODED_ENUMS = {"mode": tflite.MirrorPadMode}  # enums the IR keeps as their code
_TYPE_FIELDS = {"in_data_type", "out_data_type", "out_type", "output_type"}


def _value(field: str, value: object) -> OptionValue:
    if field in _TYPE_FIELDS:
        if isinstance(value, DType):
            return value.code
        if isinstance(value, str) and value in DType.__members__:
            return DType[value].code
    enum = ENUM_FIELDS.get(field) or _CODED_ENUMS.get(field)
    if enum is not None and isinstance(value, str):
        if value not in codes(enum):
            raise UsageError(f"{field}: unknown value {value!r}")
        return value if field in ENUM_FIELDS else codes(enum)[value]
    if isinstance(value, list | tuple):
        return tuple(value)
    return value  # type: ignore[return-value]


def to_options(opcode: str, options: Mapping[str, object]) -> Options:
    """``opcode``'s options as the IR holds them; no options if it takes none."""
    table = OPTION_TABLES.get(opcode)
    if table is None:
        if options:
            raise UsageError(f"{opcode} takes no options (got {', '.join(options)})")
        return Options()
    fields = {f.name: f for f in option_fields(table)}
    items = []
    for name, value in options.items():
        field = fields.get(name)
        if field is None:
            raise UsageError(f"{opcode}: unknown option {name!r}")
        vector = field.kind == "vector"
        if vector != isinstance(value, list | tuple):
            takes = "takes" if vector else "does not take"
            raise UsageError(f"{opcode}: option {name!r} {takes} a vector")
        items.append((name, _value(name, value)))
    return Options(tuple(sorted(items)), table)
