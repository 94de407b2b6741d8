"""A model file by its format: ExecuTorch's ``.pte`` (file identifier ``ET12``), else
TFLite (whose reader names what it found when the file is neither)."""

from __future__ import annotations

from pathlib import Path

from arenaplan.errors import ModelFormatError
from arenaplan.ir.model import Model
from arenaplan.reader import tflite_reader
from arenaplan.reader.pte_format import is_pte
from arenaplan.reader.pte_reader import read_pte_bytes


def read_model_bytes(data: bytes) -> Model:
    """Parse a model held in memory; every failure is a one-line ``ModelFormatError``
    (or ``UnsupportedModelError``)."""
    if is_pte(data):
        return read_pte_bytes(data)
    return tflite_reader.read_model_bytes(data)


def load_model(path: str | Path) -> tuple[bytes, Model]:
    """The file's bytes and its IR (exporters need the bytes to edit the model)."""
    data = tflite_reader.read_file(path)
    try:
        return data, read_model_bytes(data)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from None


def read_model(path: str | Path) -> Model:
    """Read the model at ``path``; every failure is a one-line error."""
    return load_model(path)[1]
