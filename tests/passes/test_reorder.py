"""The reorder pass: never raises the peak, reaches the optimum on the unrolled LSTM,
keeps every order topological and every dependency that is not a data edge, and the
reordered models compute bit for bit what the originals compute in TFLM."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from kits.opmodels import OP_MODELS, SHAPED, Net
from testkit import model_params, model_path

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Problem
from arenaplan.analysis.buffers import arena_items
from arenaplan.ir import DType, Model, Operator, Options, Subgraph, Tensor
from arenaplan.ir.verifier import verify_ir
from arenaplan.passes import pass_class, run_passes
from arenaplan.passes.reorder import Reorder, order_problem, with_order
from arenaplan.passes.schedule import peak_bytes
from arenaplan.placement import plan_model
from arenaplan.reader import read_model_bytes

SYNTHETIC = {**OP_MODELS, **SHAPED}


def _peak(model: Model) -> int:
    return live_bytes_bound(Problem(arena_items(model).buffers))


def _same_operators(a: Model, b: Model) -> bool:
    """The same operators in each subgraph, whatever their order and index."""
    return all(
        sorted(repr(replace(op, index=0)) for op in x.operators)
        == sorted(repr(replace(op, index=0)) for op in y.operators)
        for x, y in zip(a.subgraphs, b.subgraphs, strict=True)
    )


def _ops(model: Model) -> list[Operator]:
    """Every operator in model order (the numbering of ``origin``), index dropped."""
    return [replace(op, index=0) for sg in model.subgraphs for op in sg.operators]


def _check_origin(model: Model, result) -> None:
    """Operator i of the output is operator ``origin[i]`` of the input (same opcode,
    inputs, outputs and options), each input operator exactly once."""
    old, new = _ops(model), _ops(result.model)
    assert None not in result.origin
    assert new == [old[i] for i in result.origin]
    assert sorted(result.origin) == list(range(len(old)))


def _check(model: Model) -> Model:
    """Run the pass and check what holds for every model."""
    result = Reorder().run(model)
    verify_ir(result.model)  # among others: every input produced before it is read
    assert result.stats["peak_after"] <= result.stats["peak_before"] == _peak(model)
    assert result.stats["peak_after"] == _peak(result.model)
    assert _same_operators(model, result.model)
    _check_origin(model, result)
    if result.changed:
        assert result.stats["peak_after"] < result.stats["peak_before"]
        assert result.note.startswith("operator order: peak ")
        assert result.origin != tuple(range(model.operator_count))
    else:
        assert result.model is model
        assert result.origin == tuple(range(model.operator_count))  # the identity
    return result.model


# ---- models that run in TFLM and gain from another order ---------------------------


def unrolled_rnn(steps: int = 6) -> bytes:
    """Like the unrolled LSTM: every input projection computed first, then the steps."""
    n = Net("unrolled_rnn")
    x = n.act((steps, 1, 16))
    xs = [n.act((1, 16)) for _ in range(steps)]
    n.op("UNPACK", [x], xs, num=steps, axis=0)
    w_in, b_in = n.weights((64, 16), None), n.bias(64)
    w_rec, b_rec = n.weights((64, 64), None), n.bias(64)
    projections = []
    for t in range(steps):
        p = n.act((1, 64), scale=0.1)
        n.op("FULLY_CONNECTED", [xs[t], w_in, b_in], [p])
        projections.append(p)
    h = None
    for t in range(steps):
        s = projections[t]
        if h is not None:
            r = n.act((1, 64), scale=0.1)
            n.op("FULLY_CONNECTED", [h, w_rec, b_rec], [r])
            s = n.act((1, 64), scale=0.2)
            n.op("ADD", [projections[t], r], [s])
        h = n.act((1, 64), scale=1 / 128)
        n.op("TANH", [s], [h])
    return n.done([x], [h])


def fan_out(branches: int = 4) -> bytes:
    """Wide layers first, then their narrow heads, then one concatenation."""
    n = Net("fan_out")
    x = n.act((1, 32))
    wide = []
    for _ in range(branches):
        w = n.act((1, 256))
        n.op("FULLY_CONNECTED", [x, n.weights((256, 32), None), n.bias(256)], [w])
        wide.append(w)
    heads = []
    for w in wide:
        h = n.act((1, 8))
        n.op("FULLY_CONNECTED", [w, n.weights((8, 256), None), n.bias(8)], [h])
        heads.append(h)
    y = n.act((1, 8 * branches))
    n.op("CONCATENATION", heads, [y], axis=1)
    return n.done([x], [y])


GAINING = {"unrolled_rnn": unrolled_rnn, "fan_out": fan_out}


# ---- the model -------------------------------------------------------------


def test_the_unrolled_lstm_reaches_its_optimum() -> None:
    model = read_model_bytes(model_path("arm-ml-examples__basic_lstm_quantized_small").read_bytes())
    result = Reorder().run(model)
    assert result.changed
    stats = result.stats
    # the figures, in planned tensor bytes as they are: 18,144 -> 2,450
    assert (stats["tensor_bytes_before"], stats["tensor_bytes_after"]) == (18_144, 2_450)
    # rounded to 16 as the planner counts: 18,512 -> 2,464, which is the lower bound
    # (QUANTIZE's float input and int8 output, both live in its step whatever the order)
    assert (stats["peak_before"], stats["peak_after"]) == (18_512, 2_464) and 2_464 <= 2_600
    assert stats["lower_bound"] == 2_464 and stats["optimal"] == 1
    assert result.note == "operator order: peak 18,512 -> 2,464 B (optimal)"
    verify_ir(result.model)
    plan = plan_model(result.model)
    assert plan.lower_bound == 2_464 and plan.arena == 2_464  # the planner reaches it


@pytest.mark.parametrize("path", model_params())
def test_the_pass_never_raises_the_peak_of_a_shared_model(path: Path) -> None:
    _check(read_model_bytes(path.read_bytes()))


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_the_pass_never_raises_the_peak_of_a_synthetic_model(name: str) -> None:
    _check(read_model_bytes(SYNTHETIC[name]()))


@pytest.mark.parametrize("name", sorted(GAINING))
def test_the_gaining_models_gain(name: str) -> None:
    model = read_model_bytes(GAINING[name]())
    reordered = _check(model)
    assert _peak(reordered) < _peak(model)
    assert plan_model(reordered).arena < plan_model(model).arena


@pytest.mark.parametrize("name", sorted(GAINING))
def test_reordered_models_run_bit_exact_in_tflm(name: str) -> None:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.export.tflite_writer import write_model
    from arenaplan.tflm.verify import compare_models

    data = GAINING[name]()
    result = Reorder().run(read_model_bytes(data))
    assert result.changed
    report = compare_models(data, write_model(result.model), trials=3)
    assert report.refused is None and report.failed is None
    assert report.identical, report.mismatch
    assert report.planned.head < report.original.head  # TFLM's own planner gains too


def _random_order(problem, seed: int) -> tuple[int, ...]:
    """A random order that keeps every dependency of ``problem``."""
    rng = random.Random(seed)
    order: list[int] = []
    waiting = set(range(problem.n))
    while waiting:
        v = rng.choice(sorted(v for v in waiting if problem.preds[v] <= set(order)))
        order.append(v)
        waiting.remove(v)
    return tuple(order)


@pytest.mark.parametrize("name", ["unrolled_rnn", "fan_out", "int16x8_network"])
def test_any_order_the_dependencies_allow_runs_bit_exact_in_tflm(name: str) -> None:
    """Not only the searched order: random orders that keep the dependencies compute
    the same, bit for bit."""
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.export.tflite_writer import write_model
    from arenaplan.tflm.verify import compare_models

    data = {**GAINING, **SYNTHETIC}[name]()
    model = read_model_bytes(data)
    sg = model.subgraphs[0]
    problem = order_problem(model, arena_items(model), sg)
    orders = {_random_order(problem, seed) for seed in range(8)} - {tuple(range(problem.n))}
    assert orders
    for order in sorted(orders)[:2]:
        moved = replace(model, subgraphs=(with_order(sg, order),))
        verify_ir(moved)
        report = compare_models(data, write_model(moved), trials=2)
        assert report.refused is None and report.failed is None
        assert report.identical, report.mismatch


# ---- the cost model is the planner's lower bound -----------------------------------


@pytest.mark.parametrize("name", ["unrolled_rnn", "fan_out", "keras_residual_relu_int8"])
def test_the_searched_peak_is_the_planners_lower_bound_for_any_order(name: str) -> None:
    model = read_model_bytes({**GAINING, **SYNTHETIC}[name]())
    sg = model.subgraphs[0]
    problem = order_problem(model, arena_items(model), sg)
    for seed in range(20):
        order = _random_order(problem, seed)
        moved = replace(model, subgraphs=(with_order(sg, order),))
        verify_ir(moved)
        assert peak_bytes(problem, order) == _peak(moved)


def test_scratch_buffers_count() -> None:
    model = read_model_bytes(model_path("tflite-micro__keyword_scrambled").read_bytes())
    sg = model.subgraphs[0]
    problem = order_problem(model, arena_items(model), sg)
    assert sum(problem.scratch) > 0
    assert peak_bytes(problem, range(len(sg.operators))) == _peak(model) == 672


# ---- dependencies that are not data edges -----------------------------------------


def _t(i: int, dtype: DType = DType.FLOAT32, variable: bool = False) -> Tensor:
    return Tensor(i, f"t{i}", (1, 64), dtype, 0, False, variable)


def _op(i: int, opcode: str, ins: tuple[int, ...], outs: tuple[int, ...], **options) -> Operator:
    return Operator(i, opcode, False, ins, outs, options=Options(tuple(sorted(options.items()))))


def _one_subgraph(tensors, ops, inputs, outputs, *more: Subgraph) -> Model:
    return Model((Subgraph(0, "main", tuple(tensors), tuple(ops), inputs, outputs), *more))


def test_operators_on_one_variable_tensor_keep_their_order() -> None:
    # op0 and op2 both touch the variable t5 (its state): op2 may not run before op0
    tensors = [_t(0), _t(1), _t(2), _t(3), _t(4), _t(5, variable=True)]
    ops = [
        _op(0, "RELU", (0, 5), (1,)),
        _op(1, "RELU", (1,), (2,)),
        _op(2, "RELU", (0, 5), (3,)),
        _op(3, "ADD", (2, 3), (4,)),
    ]
    model = _one_subgraph(tensors, ops, (0,), (4,))
    problem = order_problem(model, arena_items(model), model.subgraphs[0])
    assert 0 in problem.preds[2]


def test_operators_on_resources_keep_their_order() -> None:
    model = read_model_bytes(OP_MODELS["resource_variables"]())  # VAR_HANDLE, ASSIGN, READ
    sg = model.subgraphs[0]
    problem = order_problem(model, arena_items(model), sg)
    opcodes = [op.opcode for op in sg.operators]
    assign, read = opcodes.index("ASSIGN_VARIABLE"), opcodes.index("READ_VARIABLE")
    assert assign in problem.preds[read]  # no data edge says so: the resource does
    _check(model)


def test_call_once_stays_where_it_is_and_the_called_subgraph_is_left_alone() -> None:
    # subgraph 1 (called once): small, and a fan-out that another order would improve
    init = Subgraph(
        1,
        "init",
        tuple(replace(_t(i), shape=(1, 1)) for i in range(5)),
        (
            _op(0, "RELU", (0,), (1,)),
            _op(1, "RELU", (0,), (2,)),
            _op(2, "RELU", (1,), (3,)),
            _op(3, "ADD", (3, 2), (4,)),
        ),
        (0,),
        (4,),
    )
    # subgraph 0: CALL_ONCE, then two wide branches computed before their narrow heads
    tensors = [_t(0), _t(1), _t(2), _t(3), _t(4), _t(5)]
    tensors[3] = replace(tensors[3], shape=(1, 1))
    tensors[4] = replace(tensors[4], shape=(1, 1))
    tensors[5] = replace(tensors[5], shape=(1, 1))
    ops = [
        _op(0, "CALL_ONCE", (), (), init_subgraph_index=1),
        _op(1, "RELU", (0,), (1,)),
        _op(2, "RELU", (0,), (2,)),
        _op(3, "ABS", (1,), (3,)),  # no shape rule: a narrowing stand-in
        _op(4, "ABS", (2,), (4,)),
        _op(5, "ADD", (3, 4), (5,)),
    ]
    model = _one_subgraph(tensors, ops, (0,), (5,), init)
    verify_ir(model)
    result = Reorder().run(model)
    verify_ir(result.model)
    assert result.changed
    main, called = result.model.subgraphs
    assert main.operators[0].opcode == "CALL_ONCE"
    assert called is init
    assert [op.index for op in main.operators] == list(range(6))
    assert result.stats["peak_after"] < result.stats["peak_before"]
    # numbered in model order: subgraph 1's operators follow subgraph 0's, unmoved
    _check_origin(model, result)
    assert result.origin[0] == 0 and result.origin[6:] == (6, 7, 8, 9)
    assert result.origin[1:6] != (1, 2, 3, 4, 5)


@pytest.mark.parametrize("opcode", ["WHILE", "IF"])
def test_subgraphs_with_other_control_flow_are_left_alone(opcode: str) -> None:
    body = Subgraph(1, "body", (_t(0), _t(1)), (_op(0, "RELU", (0,), (1,)),), (0,), (1,))
    options = (
        {"cond_subgraph_index": 1, "body_subgraph_index": 1}
        if opcode == "WHILE"
        else {"then_subgraph_index": 1, "else_subgraph_index": 1}
    )
    tensors = [_t(i) for i in range(6)]
    ops = [
        _op(0, "RELU", (0,), (1,)),
        _op(1, "RELU", (0,), (2,)),
        _op(2, "RELU", (1,), (3,)),
        _op(3, opcode, (3,), (4,), **options),
        _op(4, "ADD", (4, 2), (5,)),
    ]
    model = _one_subgraph(tensors, ops, (0,), (5,), body)
    result = Reorder().run(model)
    assert not result.changed and result.model is model


# ---- the pass as a pass -----------------------------------------------------------


def test_the_pass_is_registered_and_runs_in_the_pipeline() -> None:
    assert pass_class("reorder") is Reorder
    model = read_model_bytes(unrolled_rnn())
    out, records = run_passes(model, [Reorder(time_limit=0.5)])
    (record,) = records
    assert record.name == "reorder" and record.changed and record.options["time_limit"] == 0.5
    assert record.stats["peak_after"] == _peak(out) < record.stats["peak_before"]


def test_the_pass_is_deterministic_and_needs_no_search_time() -> None:
    model = read_model_bytes(fan_out())
    runs = [Reorder(time_limit=t).run(model) for t in (0.0, 2.0, 2.0)]
    assert runs[1] == runs[2]
    assert runs[0].changed and runs[0].stats["peak_after"] <= runs[0].stats["peak_before"]


def test_an_offline_plan_is_dropped_with_the_old_order() -> None:
    model = read_model_bytes(unrolled_rnn())
    planned = replace(model, stored_plan=(0,) * model.tensor_count)
    result = Reorder().run(planned)
    assert result.changed and result.model.stored_plan is None


# ---- hostile input: no order problem with a cycle ---------------------------------


def _variable_read_before_its_write() -> Model:
    """relu_int8 (t0 -> t1 -> t2 -> t3) with t2 a variable that operator 0 reads: its
    state, which operator 1 (after 0, on 0's output) then writes. Valid for the
    verifier (a variable is there from the start); a data edge from the later writer
    to the reader would make a cycle."""
    m = read_model_bytes(OP_MODELS["relu_int8"]())
    sg = m.subgraphs[0]
    tensors = list(sg.tensors)
    tensors[2] = replace(tensors[2], is_variable=True)
    ops = (replace(sg.operators[0], inputs=(2,)), *sg.operators[1:])
    return replace(m, subgraphs=(replace(sg, tensors=tuple(tensors), operators=ops),))


def test_a_variable_read_before_a_later_write_is_no_cycle() -> None:
    model = _variable_read_before_its_write()
    verify_ir(model)
    sg = model.subgraphs[0]
    problem = order_problem(model, arena_items(model), sg)
    assert problem.preds[0] == frozenset()  # the read is of the state, not of operator 1
    assert 0 in problem.preds[1]  # the data edge 0 -> 1 and the variable's chain
    new, (record,) = run_passes(model, [Reorder()])
    assert [op.outputs for op in new.subgraphs[0].operators] == [(1,), (2,), (3,)]
    assert record.origin == (0, 1, 2)
