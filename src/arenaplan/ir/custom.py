"""Custom operators' options: a FlexBuffers map, decoded on demand and checked.

The IR keeps a custom operator's options as the raw bytes of the file. Kernels
that read them (the Signal library, detection post-processing) get a dict from
``custom_options``; bytes that are not a FlexBuffers map are a corrupt model,
reported with the operator's name, never a decoder's exception.
"""

from __future__ import annotations

from flatbuffers import flexbuffers

from arenaplan.errors import ModelFormatError
from arenaplan.ir.model import Operator

_DECODE_ERRORS = (
    IndexError,
    KeyError,
    ValueError,
    TypeError,
    OverflowError,
    UnicodeDecodeError,
    RecursionError,
    MemoryError,
    AttributeError,
)


def custom_options(op: Operator) -> dict:
    """The options map of a custom operator ({} when it has none)."""
    if not op.custom_options:
        return {}
    try:
        value = flexbuffers.Loads(op.custom_options)
    except _DECODE_ERRORS:
        value = None
    if not isinstance(value, dict):
        raise ModelFormatError(
            f"corrupt model: operator {op.index} {op.opcode}: its custom options are not "
            "a FlexBuffers map"
        )
    return value


def int_option(op: Operator, key: str, default: int = 0) -> int:
    """An integer custom option; a value of another kind is a corrupt model."""
    value = custom_options(op).get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelFormatError(
            f"corrupt model: operator {op.index} {op.opcode}: option {key} is {value!r}, "
            "not an integer"
        )
    return value
