"""Reading an input file: a missing, unreadable or undecodable one is one line.

Each stage raises its own error class (a model is a ``ModelFormatError``, a
problem CSV an ``AllocationError``, a target file a ``TargetError``); the words
are the same everywhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from arenaplan.errors import ArenaplanError

# The largest input read (bytes): a flatbuffer's offsets are signed 32-bit, so no model
# is larger; a problem CSV of a million buffers is about 30 MB.
MAX_INPUT = 2**31 - 1


def read_input(path: str | Path, kind: str, error: type[ArenaplanError]) -> bytes:
    """The bytes of ``path``, a ``kind`` file (".tflite", "CSV", ...): a regular file (or a
    link to one) of at most ``MAX_INPUT`` bytes. A FIFO, socket or device is refused
    before it is opened (reading one could wait for ever or never end)."""
    path = Path(path)
    _check_regular(path, kind, error)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a {kind} file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None


def _check_regular(path: Path, kind: str, error: type[ArenaplanError]) -> None:
    try:
        st = os.stat(path)
    except OSError:
        return  # absent or unreadable: reading says so in the words below
    if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
        if st.st_size > MAX_INPUT:
            raise error(
                f"{path}: {st.st_size:,} bytes, more than any {kind} file can be "
                f"(at most {MAX_INPUT:,})"
            )
        return
    raise error(f"{path}: is {file_kind(st.st_mode)}, not a {kind} file")


_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a file that is not regular is, in words ("a FIFO"), from its ``st_mode``
    (inputs here, outputs in ``export.files``)."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def read_text_input(path: str | Path, kind: str, error: type[ArenaplanError]) -> str:
    """The text of ``path`` as UTF-8 (a byte-order mark, as spreadsheets write, dropped)."""
    try:
        return read_input(path, kind, error).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{path}: not a text (UTF-8) {kind} file") from None
