"""Small pieces the sub-commands share."""

from __future__ import annotations

from pathlib import Path

from arenaplan.errors import ModelFormatError
from arenaplan.ir.model import Model
from arenaplan.reader import read_model_bytes


def load(path: Path) -> tuple[bytes, Model]:
    """The file's bytes and its IR; errors name the file."""
    if not path.exists():
        raise ModelFormatError(f"{path}: no such file")
    if path.is_dir():
        raise ModelFormatError(f"{path}: is a directory, not a .tflite file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFormatError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return data, read_model_bytes(data)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from None
