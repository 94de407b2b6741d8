"""TFLM's refusals predicted from the model, checked against the real runtime."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tflite
from kits.refusal_models import CASES, Case
from testkit import TFLM_REFUSES, model_params, model_path

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph, Tensor
from arenaplan.reader import read_model, read_model_bytes
from arenaplan.tflm.refusals import REGISTERED_BUILTINS, RULES, tflm_refusals
from arenaplan.tflm.verify.inputs import random_inputs

RUNTIME_ABSENT = "the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
ARENA = 1 << 20  # bytes: plenty for every case here


@pytest.fixture(scope="module")
def runner() -> Iterator:
    pytest.importorskip("tflite_micro", reason=RUNTIME_ABSENT)
    from arenaplan.tflm.verify import TflmRunner

    with TflmRunner() as r:
        yield r


def _runs(runner, data: bytes) -> tuple[bool, str | None]:
    model = read_model_bytes(data)
    n_out = len(model.subgraphs[0].outputs)
    result = runner.run(data, ARENA, random_inputs(model, 1, 0), n_out)
    return result.ok, result.error


def test_every_named_builtin_is_a_schema_operator() -> None:
    # a misspelt name would make "TFLM has no kernel" fire on a registered operator
    schema = {name for name in vars(tflite.BuiltinOperator) if not name.startswith("_")}
    assert schema >= REGISTERED_BUILTINS
    assert set(RULES) <= REGISTERED_BUILTINS


@pytest.mark.parametrize("path", model_params())
def test_shared_model_prediction_matches_the_models_readme(path: Path) -> None:
    assert bool(tflm_refusals(read_model(path))) == (path.stem in TFLM_REFUSES)


@pytest.mark.parametrize("path", model_params())
def test_shared_model_prediction_matches_the_runtime(runner, path: Path) -> None:
    data = path.read_bytes()
    reasons = tflm_refusals(read_model_bytes(data))
    ok, error = _runs(runner, data)
    assert bool(reasons) == (not ok), (reasons, error)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_built_model_prediction_matches_the_runtime(runner, case: Case) -> None:
    data = case.build()
    reasons = tflm_refusals(read_model_bytes(data))
    ok, error = _runs(runner, data)
    assert (not ok) == case.refused, error
    assert bool(reasons) == case.refused, reasons


def test_the_reasons_name_operator_opcode_and_why() -> None:
    fill = "operator 5 FILL: dims (input 0) is not constant: TFLM needs it in the flatbuffer"
    lstm = read_model(model_path("arm-ml-examples__basic_lstm_quantized_small"))
    assert tflm_refusals(lstm) == (fill,)
    kws = tflm_refusals(read_model(model_path("mlcommons-tiny__kws_ref_model_float32")))
    hybrid = "CONV_2D: hybrid (FLOAT32 input, INT8 weights): TFLM's kernels have no hybrid path"
    assert kws == tuple(f"operator {i} {hybrid}" for i in (0, 2, 4, 6, 8))


def test_a_uint8_convolution_is_refused_for_its_types_not_as_hybrid(runner) -> None:
    """TFLM's CONV_2D says "Hybrid models are not supported" of a UINT8 model: the
    reason given (by ``verify``, and by ``plan --weights``) is ours: operator and types."""
    from arenaplan.tflm.verify.compare import compare_models

    data = next(c for c in CASES if c.name == "uint8 CONV_2D").build()
    ours = (
        "operator 0 CONV_2D: UINT8 input, UINT8 weights: the kernel takes input/weights "
        "FLOAT32/FLOAT32, INT16/INT8, INT8/INT4, INT8/INT8"
    )
    assert tflm_refusals(read_model_bytes(data)) == (ours,)
    assert "Hybrid" in (_runs(runner, data)[1] or "")  # TFLM's own words
    report = compare_models(data, data, trials=1, runner=runner)
    assert report.refused == f"TFLM refuses the original model: {ours}"


def test_every_reason_is_listed_and_subgraphs_other_than_0_are_named() -> None:
    def tensor(i: int, dtype: DType, constant: bool = False) -> Tensor:
        return Tensor(i, f"t{i}", (1, 4), dtype, i + 1 if constant else 0, constant, False)

    add = Operator(0, "ADD", False, (0, 0), (1,))
    tile = Operator(1, "TILE", False, (1, 2), (3,))
    custom = Operator(2, "MyOp", True, (3,), (3,))
    body = (tensor(0, DType.UINT8), tensor(1, DType.UINT8))
    tail = (tensor(2, DType.INT32, constant=True), tensor(3, DType.UINT8))
    sg0 = Subgraph(0, "main", body + tail, (add,), (0,), (1,))
    sg1 = Subgraph(1, "other", body + tail, (add, tile, custom), (0,), (3,))
    uint8_add = "operator 0 ADD: output 0 is UINT8; the kernel takes FLOAT32, INT16, INT32, INT8"
    assert tflm_refusals(Model((sg0, sg1))) == (
        uint8_add,
        f"subgraph 1 {uint8_add}",
        "subgraph 1 operator 1 TILE: TFLM's op resolver has no kernel for it",
        "subgraph 1 operator 2 MyOp: custom op that TFLM's op resolver does not register",
    )


def test_registered_custom_ops_and_omitted_optional_inputs_are_not_refusals() -> None:
    model = read_model(model_path("tflite-micro__audio_preprocessor_int8"))  # Signal ops
    assert tflm_refusals(model) == ()
    f32 = DType.FLOAT32
    tensors = tuple(Tensor(i, f"t{i}", (1, 4), f32, 0, False, False) for i in range(3))
    fc = Operator(0, "FULLY_CONNECTED", False, (0, 1, -1), (2,))  # no bias
    assert tflm_refusals(Model((Subgraph(0, "main", tensors, (fc,), (0, 1), (2,)),))) == ()
