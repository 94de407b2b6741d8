"""The plan validator states its facts with code of its own: lifetimes, tensor bytes
and the in-place rules. Each is checked against the planner's statement of the same
fact, and a planner given a wrong fact is caught by the validator."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kits.opmodels import F32, I8, Net
from testkit import kernel_set, model_params

from arenaplan.errors import PlanValidationError
from arenaplan.ir import DType, Model, Operator, Options, Subgraph, Tensor
from arenaplan.placement import PlanOptions, check_plan, plan_model
from arenaplan.reader import read_model, read_model_bytes
from arenaplan.runtime.spec import KernelSet
from arenaplan.tflm import alias_rules, lifetimes, sizes
from arenaplan.tflm.alias_rules import INPLACE_RULES, InPlaceRule
from arenaplan.tflm.kernel_sets import KERNELS
from arenaplan.tflm.lifetimes import compute_lifetimes
from arenaplan.tflm.sizes import tensor_bytes
from arenaplan.tflm.validate import (
    OVERWRITABLE,
    _scopes,
    _tensor_bytes,
    offline_plan_problems,
    plan_problems,
)

# ---- two statements of one fact agree -----------------------------------------------


def test_the_validator_and_the_planner_state_the_same_in_place_rules() -> None:
    """``OVERWRITABLE`` (the validator's, from docs/inplace.md) and
    ``alias_rules.INPLACE_RULES`` (the planner's, from the kernel readings) say, for every
    kernels variant, the same opcodes, input positions and shape condition."""
    assert set(OVERWRITABLE) == set(KERNELS) == set(INPLACE_RULES)
    for kernels in KERNELS:
        planner = {op: (r.inputs, r.same_shape) for op, r in INPLACE_RULES[kernels].items()}
        assert planner == OVERWRITABLE[kernels], kernels


def _same_lifetimes(model: Model) -> None:
    lt = compute_lifetimes(model)
    own = _scopes(model)
    for sg in model.subgraphs:
        for t in sg.tensors:
            life = lt.tensors[sg.index][t.index]
            assert own.tensor(sg.index, t.index) == (life.first, life.last), (sg.index, t.index)
        for op in sg.operators:
            assert own.op(sg.index, op.index) == lt.operators[sg.index][op.index], op


@pytest.mark.parametrize("path", model_params())
def test_the_validator_derives_the_planners_lifetimes_and_bytes(path: Path) -> None:
    model = read_model(path)
    _same_lifetimes(model)
    planner = tensor_bytes(model)
    for sg in model.subgraphs:
        for t in sg.tensors:
            if not t.is_constant:
                assert _tensor_bytes(sg, t) == planner[sg.index][t.index], t


def _t(i: int, shape: tuple[int, ...] = (4,)) -> Tensor:
    return Tensor(i, f"t{i}", shape, DType.INT8, 0, False, False)


# the options naming the subgraphs a control-flow operator runs (the schema's names)
_CALLED = {
    "IF": ("then_subgraph_index", "else_subgraph_index"),
    "WHILE": ("cond_subgraph_index", "body_subgraph_index"),
    "CALL_ONCE": ("init_subgraph_index",),
}


@st.composite
def _models(draw) -> Model:
    """Up to four subgraphs; an operator reads earlier tensors of its subgraph, writes
    a new one, and may be a control-flow operator running later subgraphs (so none
    runs itself). Some subgraphs are never run."""
    n_sub = draw(st.integers(1, 4))
    subgraphs = []
    for s in range(n_sub):
        n_in = draw(st.integers(0, 2))
        tensors = [_t(i) for i in range(n_in)]
        ops = []
        for i in range(draw(st.integers(0, 5))):
            later = list(range(s + 1, n_sub))
            opcode, options = "ADD", Options()
            if later and draw(st.booleans()):
                opcode = draw(st.sampled_from(sorted(_CALLED)))
                called = [draw(st.sampled_from(later)) for _ in _CALLED[opcode]]
                options = Options(tuple(zip(_CALLED[opcode], called, strict=True)))
            reads = draw(st.lists(st.integers(-1, len(tensors) - 1), max_size=3)) if tensors else []
            out = len(tensors)
            tensors.append(_t(out))
            ops.append(Operator(i, opcode, False, tuple(reads), (out,), options=options))
        tensors.append(_t(len(tensors)))  # a tensor nothing touches
        n = len(tensors)
        outputs = draw(st.lists(st.integers(0, n - 1), max_size=2))
        subgraphs.append(
            Subgraph(s, f"s{s}", tuple(tensors), tuple(ops), tuple(range(n_in)), tuple(outputs))
        )
    return Model(tuple(subgraphs))


@settings(max_examples=300, deadline=None)
@given(_models())
def test_lifetimes_agree_on_random_control_flow(model: Model) -> None:
    _same_lifetimes(model)


def test_an_unknown_dim_is_sized_as_the_planner_sizes_it() -> None:
    tensors = (_t(0, (2, 8)), _t(1, (-1,)), Tensor(2, "s", (1,), DType.INT32, 1, True, False))
    sg = Subgraph(0, "", tensors, (Operator(0, "RESHAPE", False, (0, 2), (1,)),), (0,), (1,))
    assert _tensor_bytes(sg, tensors[1]) == tensor_bytes(Model((sg,)))[0][1] == 16
    other = Subgraph(0, "", tensors, (Operator(0, "RELU", False, (0,), (1,)),), (0,), (1,))
    assert _tensor_bytes(other, tensors[1]) is None


# ---- a planner with a wrong fact is caught -------------------------------------------


def _diamond() -> Model:
    """x -> RELU -> a -> RELU -> b; ADD(a, b) -> c: ``a`` is read until the ADD."""
    n = Net("diamond")
    x = n.act((1, 64))
    a, b, c = n.act((1, 64)), n.act((1, 64)), n.act((1, 64))
    n.op("RELU", [x], [a])
    n.op("RELU", [a], [b])
    n.op("ADD", [a, b], [c])
    return read_model_bytes(n.done([x], [c]))


def test_a_planner_that_forgets_later_reads_is_refused(monkeypatch) -> None:
    """The planner's lifetimes (``tflm.lifetimes``) made to keep only a tensor's
    first read: ``a`` dies at the second RELU, so the planner puts ``c`` on it."""
    real = lifetimes._Marker.used

    def first_read_only(self, s: int, t: int) -> None:
        if self.last[s][t] == lifetimes.UNSET:
            real(self, s, t)

    model = _diamond()
    monkeypatch.setattr(lifetimes._Marker, "used", first_read_only)
    with pytest.raises(PlanValidationError, match="overlap"):
        plan_model(model)
    monkeypatch.undo()
    check_plan(model, plan_model(model))


def test_a_planner_that_undersizes_tensors_is_refused(monkeypatch) -> None:
    """The planner's tensor bytes (``tflm.sizes``) halved: the validator's own
    sizes make the tensors overlap or overrun the arena."""
    real = sizes._subgraph_bytes
    monkeypatch.setattr(sizes, "_subgraph_bytes", lambda sg: tuple(b // 2 for b in real(sg)))
    with pytest.raises(PlanValidationError) as caught:
        plan_model(_diamond())
    assert "overlap" in str(caught.value) or "over the capacity" in str(caught.value)


def _conv_chain() -> Model:
    """x -> RELU -> a -> CONV_2D 1x1 -> y -> RELU -> z: CONV_2D writing over ``a`` would
    lower the peak, and it reads a window of inputs for every output."""
    n = Net("conv_chain")
    one = {"padding": "VALID", "stride_w": 1, "stride_h": 1}
    x = n.act((1, 4, 4, 8), scale=0.1)
    a = n.act((1, 4, 4, 8), scale=0.1)
    n.op("RELU", [x], [a])
    y = n.act((1, 4, 4, 8), scale=0.1)
    n.op("CONV_2D", [a, n.weights((8, 1, 1, 8), 0), n.bias(8, per_channel=8)], [y], **one)
    z = n.act((1, 4, 4, 8), scale=0.1)
    n.op("RELU", [y], [z])
    return read_model_bytes(n.done([x], [z]))


def test_a_planner_with_a_wrong_in_place_rule_is_refused(monkeypatch) -> None:
    """CONV_2D added to the planner's table for cmsis_nn+dsp: the planner writes its
    output over its input, the validator's own table says no."""
    options = PlanOptions(alias_kinds=frozenset({"inplace"}), kernels=kernel_set("cmsis_nn+dsp"))
    model = _conv_chain()
    bogus = InPlaceRule((0,), True, "not read")
    monkeypatch.setitem(alias_rules.INPLACE_RULES["cmsis_nn+dsp"], "CONV_2D", bogus)
    with pytest.raises(PlanValidationError, match="CONV_2D: not on the list of kernels safe"):
        plan_model(model, options)
    monkeypatch.undo()
    assert not any(a.op == 1 for a in plan_model(model, options).aliases)


def test_a_plan_for_unknown_kernels_is_refused() -> None:
    model = read_model_bytes(_float_add())
    plan = plan_model(model, PlanOptions(alias_kinds=frozenset({"inplace"}), clobber_inputs=True))
    assert plan.aliases
    found = " | ".join(
        plan_problems(
            model, dataclasses.replace(plan, kernels=KernelSet("tflm", "xtensa", "xtensa"))
        )
    )
    assert "unknown kernels 'xtensa'" in found
    assert "not on the list of kernels safe" in found  # no table: nothing is safe in place


def test_an_offline_plan_is_judged_for_its_kernels() -> None:
    model = read_model_bytes(_float_add())
    options = PlanOptions(
        alias_kinds=frozenset({"inplace"}), clobber_inputs=True, kernels=kernel_set("cmsis_nn")
    )
    plan = plan_model(model, options)
    assert plan.aliases and plan.kernels.name == "cmsis_nn"
    for kernels in KERNELS:
        assert offline_plan_problems(model, plan.tensor_offsets, True, kernels) == []
    assert offline_plan_problems(model, plan.tensor_offsets, True, "xtensa")


def _float_add() -> bytes:
    n = Net("float_add")
    a, b = n.act((1, 32), F32), n.act((1, 32), F32)
    y = n.act((1, 32), F32)
    n.op("ADD", [a, b], [y])
    z = n.act((1, 32), I8, 0.1)
    n.op("QUANTIZE", [y], [z])
    return n.done([a, b], [z])
