"""The files one command writes: all checked first, all written last, or none.

A command names its outputs before it does any work (``Outputs.claim``), so a
bad path (a directory, a missing or unwritable folder, the input itself, two
options naming one file) fails at once with one line and nothing written. The
payloads are rendered in memory (``add``) and written together at the end
(``write_all``): every payload first goes to a temporary file beside its
destination, and only when all of them are on disk are they renamed into
place. A failure before the renames removes every temporary file; the
destinations are untouched.

``-`` as a path means standard output (text payloads only, e.g. the JSON plan). An
output that exists must be a regular file: a device, FIFO, socket or symbolic link is
refused, never replaced. A signal that ends the run (Ctrl-C, ``kill``, a closed terminal)
is held back during the renames, so a run ends with all of its outputs written or none;
the command line turns it into an exception, so the temporary files are removed. Only
SIGKILL can end a run between two renames, or leave temporary files: those a killed run
left beside an output are removed by the next run that claims it.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from glob import escape as glob_escape
from pathlib import Path

from arenaplan.errors import UsageError
from arenaplan.inputs import file_kind
from arenaplan.signals import held

STDOUT = "-"


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


@dataclass
class Outputs:
    """Output paths of one command, keyed by what they resolve to."""

    inputs: tuple[Path, ...] = ()
    _claimed: dict[Path, str] = field(default_factory=dict)  # resolved path -> option
    _staged: list[tuple[Path, bytes]] = field(default_factory=list)
    to_stdout: str | None = None  # the option writing to standard output, if any

    def claim(self, path: Path | None, option: str, stdout_ok: bool = False) -> Path | None:
        """Check ``path`` (given with ``option``) can be written; None passes through."""
        if path is None:
            return None
        if str(path) == STDOUT:
            if not stdout_ok:
                raise UsageError(f"{option} -: this output cannot go to standard output")
            if self.to_stdout is not None:
                raise UsageError(f"{option} and {self.to_stdout} both write to standard output")
            self.to_stdout = option
            return path
        resolved = path.resolve()
        for source in self.inputs:
            if resolved == source.resolve():
                raise UsageError(f"{option} {path}: refusing to overwrite the input")
        if resolved in self._claimed:
            raise UsageError(f"{self._claimed[resolved]} and {option} both name {path}")
        if path.is_dir():
            raise UsageError(f"{option} {path}: is a directory, not a file")
        kind = _not_regular(path)
        if kind is not None:
            raise UsageError(
                f"{option} {path}: is {kind}, not a regular file (arenaplan replaces only "
                "regular files)"
            )
        folder = path.parent
        if not folder.is_dir():
            what = "is not a directory" if folder.exists() else "does not exist"
            raise UsageError(f"{option} {path}: {folder} {what}")
        _probe(folder, f"{option} {path}")
        _clean_stale(path)
        self._claimed[resolved] = option
        return path

    def add(self, path: Path, data: bytes) -> None:
        """Stage ``data`` for ``path`` (a claimed path); nothing is written yet."""
        if str(path) != STDOUT and path.resolve() not in self._claimed:
            raise UsageError(f"{path}: output was not checked before use")  # a bug
        self._staged.append((path, data))

    @property
    def paths(self) -> list[Path]:
        return [p for p, _ in self._staged if str(p) != STDOUT]

    def write_all(self) -> list[Path]:
        """Write every staged payload, all or nothing; returns the files written."""
        temps: list[tuple[str, Path]] = []
        try:
            for path, data in self._staged:
                if str(path) != STDOUT:
                    temps.append((_stage(path, data), path))
        except BaseException:
            for tmp, _ in temps:
                Path(tmp).unlink(missing_ok=True)
            raise
        with held():  # ending signals come before the first rename or after the last
            for tmp, path in temps:
                os.replace(tmp, path)
        for path, data in self._staged:
            if str(path) == STDOUT:
                sys.stdout.write(data.decode())
                sys.stdout.flush()
        return self.paths


TMP_SUFFIX = ".arenaplan-tmp"  # the temporary files ``write_all`` renames into place


def _not_regular(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (None otherwise)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None  # absent: a new file
    if stat.S_ISREG(mode):
        return None
    return file_kind(mode)


def _clean_stale(path: Path) -> None:
    """Remove the temporary files a killed run left for ``path`` (regular files named
    as ``_stage`` names them, beside it)."""
    for stale in path.parent.glob(f".{glob_escape(path.name)}.*{TMP_SUFFIX}"):
        if _not_regular(stale) is None:
            stale.unlink(missing_ok=True)


def _probe(folder: Path, what: str) -> None:
    """Can a file be created in ``folder``? (Permissions, read-only or pseudo file systems:
    only trying tells, since root passes every ``os.access`` check.)"""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".arenaplan-probe.", suffix=TMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise UsageError(f"{what}: cannot write in {folder}: {_why(exc)}") from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def _stage(path: Path, data: bytes) -> str:
    """Write ``data`` to a new temporary file beside ``path``; return its name."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {_why(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(f.fileno(), 0o666 & ~umask)  # mkstemp makes 0600; outputs are ordinary
            f.write(data)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write: {_why(exc)}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp
