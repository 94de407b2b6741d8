"""No model that plans without passes fails with passes or ``--fit``: every shared
model and every Keras-like kit, planned as given, with every pass (cascade where TFLM
built from source can prove it, written all the same where it cannot) and with
``--fit`` at its own whole arena, through the one planning function with proofs."""

from __future__ import annotations

from pathlib import Path

import pytest
from kits.keras_like import KERAS_LIKE
from testkit import model_params

from arenaplan.pipeline import PlanRequest, run_plan
from arenaplan.pipeline.request import Source
from arenaplan.reader import read_model_bytes

ALL = ("cascade", "reorder", "inplace", "bands")


def _check(source: Source) -> None:
    as_given = run_plan(PlanRequest(source))
    (array,) = as_given.figures.arrays
    passes = run_plan(PlanRequest(source, passes=ALL, write_unproven=True))
    assert passes.figures.arrays[0].bytes <= array.bytes
    fitted = run_plan(PlanRequest(source, fit=array.bytes))
    assert fitted.figures.arrays[0].bytes <= array.bytes


@pytest.mark.parametrize("path", model_params())
def test_every_shared_model_plans_with_every_pass_and_fit(path: Path) -> None:
    data = path.read_bytes()
    _check(Source(data, read_model_bytes(data), path.name))


@pytest.mark.parametrize("name", list(KERAS_LIKE))
def test_every_keras_like_model_plans_with_every_pass_and_fit(name: str) -> None:
    data = KERAS_LIKE[name]()
    _check(Source(data, read_model_bytes(data), f"{name}.tflite"))
