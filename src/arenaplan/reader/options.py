"""Builtin operator options, read generically from the ``tflite`` schema bindings.

Each options table of the schema is a generated class with one accessor per
field; we call every scalar, string and vector accessor, and keep the values as
(snake_case name, value) pairs with the table's name. Enum fields that later
stages print (padding, fused activation) are turned into their schema names.
An absent string or vector field is left out (a present empty one is kept).
"""

from __future__ import annotations

import tflite

from arenaplan.ir.model import Options, OptionValue
from arenaplan.reader.schema import ENUM_FIELDS, OptionField, names, option_fields


def options_table(union: type, type_code: int) -> str | None:
    """The options table a union type code names; None for NONE or an unknown code."""
    name = names(union).get(type_code) if type_code else None
    return name if name and hasattr(tflite, name) else None


def read_options(union: type, type_code: int, table: object | None) -> Options:
    """Decode one options union member; an unknown or absent table gives no options."""
    name = options_table(union, type_code)
    if table is None or name is None:
        return Options()
    obj = getattr(tflite, name)()
    obj.Init(table.Bytes, table.Pos)  # type: ignore[attr-defined]
    items: list[tuple[str, OptionValue]] = []
    for field in option_fields(name):
        value = _read_field(obj, field)
        if value is None:
            continue
        if field.name in ENUM_FIELDS and isinstance(value, int):
            value = names(ENUM_FIELDS[field.name]).get(value, str(value))
        items.append((field.name, value))
    return Options(tuple(sorted(items)), name)


def _read_field(obj: object, field: OptionField) -> OptionValue | None:
    accessor = getattr(obj, field.method)
    if field.kind == "vector":
        if getattr(obj, f"{field.method}IsNone")():
            return None
        length = getattr(obj, f"{field.method}Length")()
        convert = float if field.element.startswith("Float") else int
        return tuple(convert(accessor(j)) for j in range(length))
    if field.kind == "other":  # a table or struct: not an option we keep
        return None
    value = accessor()
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return None
