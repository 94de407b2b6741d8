"""The planned model carries TFLM's offline plan and is otherwise the same model."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import tflite
from testkit import model_params, model_path

from arenaplan.export.json_plan import plan_to_json
from arenaplan.placement import plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.reader.tflite_reader import OFFLINE_PLAN_NAME
from arenaplan.tflm.offline_plan import offline_plan_words, with_offline_plan


def _buffer_bytes(data: bytes) -> list[bytes]:
    m = tflite.Model.GetRootAsModel(data, 0)
    out = []
    for i in range(m.BuffersLength()):
        raw = m.Buffers(i).DataAsNumpy()
        out.append(raw.tobytes() if isinstance(raw, np.ndarray) else b"")
    return out


@pytest.mark.parametrize("path", model_params())
def test_plan_round_trips_and_the_rest_is_unchanged(path) -> None:
    data = path.read_bytes()
    model = read_model_bytes(data)
    plan = plan_model(model)
    out = with_offline_plan(data, plan.tensor_offsets)
    assert out[-len(data) :] == data  # the original bytes, verbatim
    again = read_model_bytes(out)
    assert again.subgraphs == model.subgraphs
    assert again.version == model.version and again.description == model.description
    assert again.stored_plan == plan.tensor_offsets
    names = [name for name, _ in again.metadata]
    assert names == [n for n, _ in model.metadata if n != OFFLINE_PLAN_NAME] + [OFFLINE_PLAN_NAME]
    old, new = _buffer_bytes(data), _buffer_bytes(out)
    assert new[: len(old)] == old
    assert new[-1] == offline_plan_words(plan.tensor_offsets)
    # the original moved by a multiple of 16: every alignment inside it still holds
    assert (len(out) - len(data)) % 16 == 0


def test_metadata_words_layout() -> None:
    words = offline_plan_words([0, -1, 48])
    assert struct.unpack("<6i", words) == (0, 0, 3, 0, -1, 48)


def test_replanning_replaces_the_old_plan_and_is_deterministic() -> None:
    data = model_path("mlcommons-tiny__vww_96_int8").read_bytes()
    model = read_model_bytes(data)
    plan = plan_model(model)
    once = with_offline_plan(data, plan.tensor_offsets)
    assert once == with_offline_plan(data, plan.tensor_offsets)
    other = [-1] * model.tensor_count
    twice = read_model_bytes(with_offline_plan(once, other))
    assert [n for n, _ in twice.metadata].count(OFFLINE_PLAN_NAME) == 1
    assert twice.stored_plan == tuple(other)


def test_json_plan_fields_and_determinism() -> None:
    path = model_path("tflite-micro__keyword_scrambled")
    model = read_model_bytes(path.read_bytes())
    text = plan_to_json(model, plan_model(model), path.name)
    assert text == plan_to_json(model, plan_model(model), path.name)
    doc = json.loads(text)
    assert doc["arena"]["size"] == 672 and doc["arena"]["lower_bound"] == 672
    assert doc["arena"]["alignment"] == 16 and doc["arena"]["optimal"] is True
    first = doc["tensors"][0]
    assert set(first) >= {"subgraph", "index", "name", "bytes", "offset", "first", "last"}
    assert len(doc["scratch"]) == 14
    assert len(doc["offline_offsets"]) == model.tensor_count


def test_fields_the_model_lacks_stay_absent_in_the_planned_model() -> None:
    """An offset field written as 0 is no reference: verifying loaders reject it."""
    data = model_path("tflite-micro__hello_world_int8").read_bytes()
    before = tflite.Model.GetRootAsModel(data, 0)
    assert before.MetadataBufferIsNone()
    plan = plan_model(read_model_bytes(data))
    after = tflite.Model.GetRootAsModel(with_offline_plan(data, plan.tensor_offsets), 0)
    assert after.MetadataBufferIsNone()
    assert after.SignatureDefsLength() == before.SignatureDefsLength()
