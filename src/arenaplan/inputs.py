"""Reading an input file: a missing, unreadable or undecodable one is one line.

Each stage raises its own error class (a model is a ``ModelFormatError``, a
problem CSV an ``AllocationError``, a target file a ``TargetError``); the words
are the same everywhere.
"""

from __future__ import annotations

from pathlib import Path

from arenaplan.errors import ArenaplanError


def read_input(path: str | Path, kind: str, error: type[ArenaplanError]) -> bytes:
    """The bytes of ``path``, a ``kind`` file (".tflite", "CSV", ...)."""
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a {kind} file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None


def read_text_input(path: str | Path, kind: str, error: type[ArenaplanError]) -> str:
    """The text of ``path`` as UTF-8 (a byte-order mark, as spreadsheets write, dropped)."""
    try:
        return read_input(path, kind, error).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{path}: not a text (UTF-8) {kind} file") from None
