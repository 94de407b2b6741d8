"""Broken and fuzzed inputs: a Model or one ModelFormatError, never anything else."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import model_path

from arenaplan.errors import ModelFormatError
from arenaplan.ir.model import Model
from arenaplan.reader import read_model, read_model_bytes

SMALL = (
    "tflite-micro__hello_world_int8",
    "tflite-micro__simple_add_model",
    "tflite-micro__trained_lstm_int8",
)


def _outcome(data: bytes) -> Model | ModelFormatError:
    """Parse; anything but a Model or a one-line ModelFormatError fails the test."""
    try:
        return read_model_bytes(data)
    except ModelFormatError as exc:
        text = str(exc)
        assert text and "\n" not in text, repr(text)
        return exc


def _error(data: bytes) -> str:
    result = _outcome(data)
    assert isinstance(result, ModelFormatError), "expected the input to be refused"
    return str(result)


def test_empty_short_and_foreign_files() -> None:
    assert "empty" in _error(b"")
    assert "truncated" in _error(b"TFL3")
    assert "identifier" in _error(b"this is a text file, not a model\n")
    assert "identifier" in _error(b"\x89PNG\r\n\x1a\n" + bytes(100))
    assert "identifier" in _error(bytes(64))


def test_wrong_identifier_and_root_outside_the_file() -> None:
    data = bytearray(model_path(SMALL[0]).read_bytes())
    wrong = bytes(data[:4]) + b"TFL2" + bytes(data[8:])
    assert "identifier" in _error(wrong)
    struct.pack_into("<I", data, 0, len(data) + 100)
    assert "outside the file" in _error(bytes(data))


def test_truncation_at_many_offsets() -> None:
    data = model_path(SMALL[0]).read_bytes()
    cuts = sorted(set(range(64)) | set(range(0, len(data), max(len(data) // 64, 1))))
    refused = 0
    for cut in cuts:
        if isinstance(_outcome(data[:cut]), ModelFormatError):
            refused += 1
    assert refused >= len(cuts) * 0.9  # almost every cut loses a needed part


def test_flipped_bytes_never_crash() -> None:
    rng = np.random.default_rng(0)
    for stem in SMALL:
        data = model_path(stem).read_bytes()
        for _ in range(150):
            mutated = bytearray(data)
            for pos in rng.integers(0, len(data), size=int(rng.integers(1, 4))):
                mutated[pos] ^= int(rng.integers(1, 256))
            _outcome(bytes(mutated))


def test_offsets_pointing_past_the_end_and_huge_lengths() -> None:
    data = model_path(SMALL[1]).read_bytes()
    root = struct.unpack_from("<I", data, 0)[0]
    vtable = root - struct.unpack_from("<i", data, root)[0]
    n_fields = (struct.unpack_from("<H", data, vtable)[0] - 4) // 2
    subgraphs_field = root + struct.unpack_from("<H", data, vtable + 4 + 2 * 2)[0]
    vector = subgraphs_field + struct.unpack_from("<I", data, subgraphs_field)[0]
    for field in range(1, n_fields):
        slot = struct.unpack_from("<H", data, vtable + 4 + 2 * field)[0]
        if slot:
            bad = bytearray(data)
            struct.pack_into("<I", bad, root + slot, len(data) * 4)
            _outcome(bytes(bad))
    huge = bytearray(data)
    struct.pack_into("<I", huge, vector, 0x7FFFFFFF)
    assert "claims" in _error(bytes(huge)) or "corrupt" in _error(bytes(huge))


def test_paths_missing_and_directories(tmp_path: Path) -> None:
    with pytest.raises(ModelFormatError, match="no such file"):
        read_model(tmp_path / "absent.tflite")
    with pytest.raises(ModelFormatError, match="directory"):
        read_model(tmp_path)


def test_the_broken_corpus_parses_quickly() -> None:
    """A guard against corrupt lengths making the reader loop: 2,000 parses, seconds."""
    data = model_path(SMALL[2]).read_bytes()
    rng = np.random.default_rng(1)
    start = time.monotonic()
    for _ in range(2000):
        mutated = bytearray(data)
        pos = int(rng.integers(8, len(data) - 4))
        struct.pack_into("<I", mutated, pos, int(rng.integers(0, 2**31)))
        _outcome(bytes(mutated))
    assert time.monotonic() - start < 60


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.binary(max_size=512), st.booleans())
def test_fuzz_arbitrary_bytes(blob: bytes, with_identifier: bool) -> None:
    if with_identifier and len(blob) >= 8:
        root = (len(blob) // 2) & ~3
        blob = struct.pack("<I", root) + b"TFL3" + blob[8:]
    _outcome(blob)


@st.composite
def _mutations(draw) -> bytes:
    data = bytearray(model_path(draw(st.sampled_from(SMALL))).read_bytes())
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["write", "insert", "truncate", "word"]))
        pos = draw(st.integers(0, len(data) - 1))
        if kind == "write":
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "truncate":
            del data[pos:]
            if not data:
                break
        elif pos + 4 <= len(data):
            struct.pack_into("<I", data, pos, draw(st.integers(0, 2**32 - 1)))
    return bytes(data)


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(_mutations())
def test_fuzz_mutated_real_models(blob: bytes) -> None:
    _outcome(blob)
