"""A constant's data is the bytes its shape says (ir/constants.py), as TFLM reads
them: a buffer holding more plans, stages and writes blobs exactly as the same model
with exact buffers, and is written back whole; one holding fewer is refused on
reading in one line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from arenaplan.builder.mobilenet import mobilenet_v1
from arenaplan.cli import main
from arenaplan.errors import ModelFormatError
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.constants import constant_bytes, constant_ints, constant_values, data_bytes
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Tensor
from arenaplan.reader import read_model_bytes


def _longer(model: Model, extra: int) -> Model:
    """``model`` with every constant's buffer ``extra`` bytes longer (bytes that are
    not zero, so that reading them would show)."""
    consts = {t.buffer for sg in model.subgraphs for t in sg.tensors if t.is_constant}
    tail = bytes((i * 37 + 11) % 256 for i in range(extra))
    buffers = tuple(b + tail if k in consts else b for k, b in enumerate(model.buffers))
    return replace(model, buffers=buffers, buffer_sizes=tuple(len(b) for b in buffers))


def test_the_bytes_of_a_constant_are_those_its_shape_says() -> None:
    t = Tensor(0, "c", (2, 3), DType.INT32, 1, True, False)
    buffers = (b"", np.arange(6, dtype="<i4").tobytes() + b"\x01\x02\x03")
    assert constant_bytes(buffers, t) == buffers[1][:24]
    assert constant_ints(buffers, t) == [0, 1, 2, 3, 4, 5]
    assert constant_values(buffers, t).shape == (6,)
    assert constant_bytes(buffers, t, 26) == buffers[1][:26]  # a kernel reading more
    assert constant_bytes((b"", buffers[1][:23]), t) is None  # fewer: no data
    assert constant_bytes(buffers, replace(t, buffer=5)) is None
    assert constant_bytes(buffers, replace(t, is_constant=False)) is None
    assert data_bytes(DType.INT4, 9) == 5 and data_bytes(DType.INT16, 9) == 18


def test_a_shorter_buffer_is_refused_on_reading() -> None:
    m = read_model_bytes(mobilenet_v1(0.25, 32, 1, 10))
    w = next(t for t in m.subgraphs[0].tensors if t.is_constant and len(t.shape) == 4)
    buffers = list(m.buffers)
    buffers[w.buffer] = buffers[w.buffer][:-1]
    short = replace(m, buffers=tuple(buffers), buffer_sizes=tuple(len(b) for b in buffers))
    with pytest.raises(ModelFormatError, match=r"needs .* bytes of data, its buffer holds") as e:
        read_model_bytes(write_model(short))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("extra", [7, 65_536])
def test_longer_buffers_plan_as_the_exact_ones(tmp_path: Path, extra: int) -> None:
    """``plan --target imxrt1170 --weights groups --json`` (the blob index in the JSON)
    on a MobileNet whose constants' buffers are longer than their shapes: the same
    plan, weights and blob as with exact buffers (it exited 70 reshaping 65,536 bytes
    into a 3 x 3 filter); the model written back keeps the longer buffers."""
    exact = read_model_bytes(mobilenet_v1(0.25, 32, 1, 10))
    got = {}
    for name, model in (("exact", exact), ("longer", _longer(exact, extra))):
        src = tmp_path / f"{name}.tflite"
        src.write_bytes(write_model(model))
        out = [f"-o{tmp_path / name}.o.tflite", "--json", str(tmp_path / f"{name}.json")]
        blob = ["--weights-blob", str(tmp_path / f"{name}.bin")]
        argv = ["plan", str(src), "-q", "--target", "imxrt1170", "--weights", "groups:8"]
        assert main([*argv, *out, *blob]) == 0
        data = json.loads((tmp_path / f"{name}.json").read_text())
        got[name] = (data["arena"], data["weights"], (tmp_path / f"{name}.bin").read_bytes())
    assert got["longer"] == got["exact"]
    written = read_model_bytes((tmp_path / "longer.o.tflite").read_bytes())
    assert _constant_sizes(written) == _constant_sizes(_longer(exact, extra))


def _constant_sizes(model: Model) -> dict[str, int]:
    """Bytes of each constant's buffer, by tensor name."""
    sg = model.subgraphs[0]
    return {t.name: len(model.buffers[t.buffer]) for t in sg.tensors if t.is_constant}
