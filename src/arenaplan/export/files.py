"""Writing outputs atomically, and never over the input."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from arenaplan.errors import UsageError


def refuse_overwrite(output: Path, *inputs: Path) -> None:
    """An output must never replace one of the inputs."""
    for source in inputs:
        if output.exists() and source.exists() and output.resolve() == source.resolve():
            raise UsageError(f"{output}: refusing to overwrite the input model")


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and a rename: all or nothing."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise UsageError(f"{path}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; outputs are ordinary files
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
