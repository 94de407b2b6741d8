"""Builtin operator options, read generically from the ``tflite`` schema bindings.

Each options table of the schema is a generated class with one accessor per
field; we call every scalar accessor and every vector accessor, and keep the
values as (snake_case name, value) pairs. Enum fields that later stages print
(padding, fused activation) are turned into their schema names.
"""

from __future__ import annotations

import re
from functools import cache

import tflite

from arenaplan.ir.model import Options, OptionValue

_SKIP_SUFFIXES = ("AsNumpy", "IsNone", "Length", "BufferHasIdentifier")
_ENUMS = {"padding": tflite.Padding, "fused_activation_function": tflite.ActivationFunctionType}


@cache
def _union_names(union: type) -> dict[int, str]:
    """Union type code -> options table name (``Conv2DOptions``)."""
    return {v: k for k, v in vars(union).items() if not k.startswith("_") and isinstance(v, int)}


@cache
def _enum_names(enum: type) -> dict[int, str]:
    return {v: k for k, v in vars(enum).items() if not k.startswith("_") and isinstance(v, int)}


@cache
def _accessors(cls: type) -> tuple[tuple[str, str, bool], ...]:
    """(method name, snake_case field name, is_vector) for every field of ``cls``."""
    names = [n for n in vars(cls) if n[:1].isupper() and not n.startswith(("GetRoot", "Init"))]
    fields = []
    for name in sorted(names):
        if name.endswith(_SKIP_SUFFIXES):
            continue
        is_vector = f"{name}Length" in vars(cls)
        fields.append((name, _snake(name), is_vector))
    return tuple(fields)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def read_options(union: type, type_code: int, table: object | None) -> Options:
    """Decode one options union member; an unknown or absent table gives no options."""
    if table is None or type_code == 0:
        return Options()
    name = _union_names(union).get(type_code)
    cls = getattr(tflite, name, None) if name else None
    if cls is None:
        return Options()
    obj = cls()
    obj.Init(table.Bytes, table.Pos)  # type: ignore[attr-defined]
    items: list[tuple[str, OptionValue]] = []
    for method, field, is_vector in _accessors(cls):
        value = _read_field(obj, cls, method, is_vector)
        if value is None:
            continue
        if field in _ENUMS and isinstance(value, int):
            value = _enum_names(_ENUMS[field]).get(value, str(value))
        items.append((field, value))
    return Options(tuple(sorted(items)))


def _read_field(obj: object, cls: type, method: str, is_vector: bool) -> OptionValue | None:
    accessor = getattr(obj, method)
    if is_vector:
        length = getattr(obj, f"{method}Length")()
        return tuple(int(accessor(j)) for j in range(length))
    try:
        value = accessor()
    except TypeError:  # a table or struct accessor needing arguments: not an option
        return None
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return None
