"""Input files: the same one-line words for every kind, each stage's own error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arenaplan.allocation.minimalloc_csv import read_problem
from arenaplan.errors import AllocationError, ModelFormatError, TargetError
from arenaplan.reader import read_model
from arenaplan.targets import load_target


@pytest.mark.parametrize(
    ("read", "error", "kind"),
    [
        (read_model, ModelFormatError, ".tflite"),
        (read_problem, AllocationError, "CSV"),
        (load_target, TargetError, "TOML"),
    ],
)
def test_missing_directory_and_binary_inputs(tmp_path: Path, read, error, kind) -> None:
    with pytest.raises(error, match="no such file"):
        read(tmp_path / "nope")
    with pytest.raises(error, match=f"is a directory, not a {kind} file"):
        read(tmp_path)
    if kind != ".tflite":
        binary = tmp_path / "b"
        binary.write_bytes(b"\xff\xfe\x00bad")
        with pytest.raises(error, match=f"not a text \\(UTF-8\\) {kind} file"):
            read(binary)


@pytest.mark.parametrize(
    ("read", "error", "kind"),
    [
        (read_model, ModelFormatError, ".tflite"),
        (read_problem, AllocationError, "CSV"),
        (load_target, TargetError, "TOML"),
    ],
)
def test_a_fifo_or_a_device_is_refused_before_it_is_opened(
    tmp_path: Path, read, error, kind
) -> None:
    """Opening a FIFO with no writer would wait for ever; a device may never end."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(error, match=f"is a FIFO, not a {kind} file"):
        read(fifo)
    with pytest.raises(error, match=f"is a character device, not a {kind} file"):
        read("/dev/zero")
