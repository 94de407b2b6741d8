"""Lifetimes follow TFLM's scopes; scratch requests follow the reference kernels."""

from __future__ import annotations

import pytest
from testkit import model_path

from arenaplan.errors import UnsupportedModelError
from arenaplan.ir import DType, Model, Operator, Options, Subgraph, Tensor
from arenaplan.reader import read_model
from arenaplan.tflm.lifetimes import UNSET, compute_lifetimes
from arenaplan.tflm.scratch import scratch_requests
from arenaplan.tflm.sizes import tensor_bytes


def _t(i: int, shape=(4,), const: bool = False, var: bool = False) -> Tensor:
    return Tensor(i, f"t{i}", shape, DType.INT8, i + 1 if const else 0, const, var)


def _chain_model() -> Model:
    # t0 -> op0 -> t1 -> op1 -> t2 ; t0 also feeds op1; t3 is a weight; t4 is a variable read at op1
    tensors = (_t(0), _t(1), _t(2), _t(3, const=True), _t(4, var=True), _t(5))
    ops = (Operator(0, "ADD", False, (0, 3), (1,)), Operator(1, "ADD", False, (1, 0, 4, -1), (2,)))
    return Model((Subgraph(0, "main", tensors, ops, (0,), (2,)),))


def test_tflm_scopes_for_a_small_graph() -> None:
    lt = compute_lifetimes(_chain_model())
    life = [(x.first, x.last) for x in lt.tensors[0]]
    assert life[0] == (0, 2)  # graph input: scope 0, last read by op1 (scope 2)
    assert life[1] == (1, 2)
    assert life[2] == (2, 2)  # graph output: extended to the last scope (2)
    assert life[4] == (UNSET, 2)  # a variable only read: first stays -1
    assert life[5] == (UNSET, UNSET)  # never used
    assert lt.operators[0] == ((1, 1), (2, 2))
    assert lt.scopes == 3


def test_control_flow_opens_scopes_for_called_subgraphs() -> None:
    body = Subgraph(
        1, "body", (_t(0), _t(1)), (Operator(0, "RELU", False, (0,), (1,)),), (0,), (1,)
    )
    main = Subgraph(
        0,
        "main",
        (_t(0), _t(1), _t(2)),
        (
            Operator(0, "CALL_ONCE", False, (), (), options=Options((("init_subgraph_index", 1),))),
            Operator(1, "RELU", False, (0,), (1,)),
            Operator(2, "RELU", False, (1,), (2,)),
        ),
        (0,),
        (2,),
    )
    lt = compute_lifetimes(Model((main, body)))
    # scope 1: CALL_ONCE, scope 2: entering subgraph 1 (its inputs), scope 3: its RELU
    assert (lt.tensors[1][0].first, lt.tensors[1][0].last) == (2, 3)
    assert lt.operators[1] == ((3, 3),)
    assert lt.operators[0][0] == (1, 3)  # the caller's span covers the called subgraph
    assert (lt.tensors[0][1].first, lt.tensors[0][1].last) == (4, 5)


def test_unknown_dim_of_a_reshape_output_takes_the_input_bytes() -> None:
    tensors = (_t(0, (2, 8)), _t(1, (-1,)), _t(2, (4,), const=True))
    sg = Subgraph(0, "", tensors, (Operator(0, "RESHAPE", False, (0, 2), (1,)),), (0,), (1,))
    assert tensor_bytes(Model((sg,)))[0][1] == 16
    other = Subgraph(0, "", tensors, (Operator(0, "RELU", False, (0,), (1,)),), (0,), (1,))
    with pytest.raises(UnsupportedModelError, match="unknown dimension"):
        tensor_bytes(Model((other,)))


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        (
            "tflite-micro__keyword_scrambled",
            [(1, 256)] * 2
            + [(3, 256)] * 2
            + [(5, 256)] * 2
            + [(7, 256)] * 2
            + [(9, 128)] * 2
            + [(10, 128)] * 2
            + [(11, 128)] * 2,
        ),
        ("tflite-micro__trained_lstm_int8", [(0, 40)] * 4),
        ("google-coral-test-data__keras_lstm_mnist_ptq", [(1, 40)] * 4),
        ("tflite-micro__audio_preprocessor_int8", [(3, 1024)]),
        ("mlcommons-tiny__vww_96_int8", []),
    ],
)
def test_scratch_requests_of_real_models(stem: str, expected: list[tuple[int, int]]) -> None:
    model = read_model(model_path(stem))
    requests = scratch_requests(model, tensor_bytes(model))
    assert [(r.op, r.bytes) for r in requests] == expected
    assert [r.order for r in requests] == list(range(len(expected)))


def test_real_model_lifetimes_cover_every_activation() -> None:
    model = read_model(model_path("mlcommons-tiny__pretrainedResnet_quant"))
    lt = compute_lifetimes(model)
    sg = model.subgraphs[0]
    for t in sg.tensors:
        life = lt.tensors[0][t.index]
        if not t.is_constant:
            assert 0 <= life.first <= life.last < lt.scopes, t
    assert lt.scopes == len(sg.operators) + 1
