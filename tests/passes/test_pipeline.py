"""The pipeline verifies the IR after every pass and names the pass that broke it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import pytest
from kits.opmodels import SHAPED

from arenaplan.errors import ModelFormatError, PassError
from arenaplan.ir.model import Model
from arenaplan.passes import PASS_CLASSES, make_pass, pass_class, run_passes
from arenaplan.passes.base import PassResult
from arenaplan.reader import read_model_bytes


@dataclass(frozen=True, slots=True)
class _GrowFirstOutput:
    """A broken rewrite: one more row in the first operator's output."""

    name: ClassVar[str] = "grow-first-output"
    summary: ClassVar[str] = "breaks the model on purpose"
    rows: int = 1

    def run(self, model: Model) -> PassResult:
        sg = model.subgraphs[0]
        out = sg.operators[0].outputs[0]
        t = sg.tensors[out]
        grown = replace(t, shape=(t.shape[0], t.shape[1] + self.rows, *t.shape[2:]))
        tensors = tuple(grown if x.index == out else x for x in sg.tensors)
        sg = replace(sg, tensors=tensors)
        return PassResult(replace(model, subgraphs=(sg, *model.subgraphs[1:])), True, "grew")


def test_a_pass_that_breaks_shapes_is_named_with_the_operator() -> None:
    model = read_model_bytes(SHAPED["mobilenet_v2_pad_int8"]())
    with pytest.raises(PassError) as exc:
        run_passes(model, [make_pass("reorder", {}), _GrowFirstOutput()])
    message = str(exc.value)
    assert "pass grow-first-output broke the model" in message
    assert "operator 0 PAD" in message and "\n" not in message


def test_records_say_what_each_pass_did_with_its_options_only() -> None:
    model = read_model_bytes(SHAPED["mobilenet_v2_pad_int8"]())
    passes = [make_pass(n, {"objective": "head", "max_extra_macs": 0.3}) for n in PASS_CLASSES]
    _, records = run_passes(model, passes)
    assert [r.name for r in records] == list(PASS_CLASSES)
    bands = records[list(PASS_CLASSES).index("bands")]
    assert bands.changed and bands.options["max_extra_macs"] == 0.3
    assert "name" not in bands.options and "summary" not in bands.options
    for name in PASS_CLASSES:
        assert pass_class(name).name == name and pass_class(name).summary


def test_a_model_broken_before_any_pass_is_bad_input() -> None:
    """The IR is checked before the first pass: a broken input is the model's fault
    (``ModelFormatError``, exit 2), not a pass's."""
    model = read_model_bytes(SHAPED["mobilenet_v2_pad_int8"]())
    broken = _GrowFirstOutput().run(model).model
    with pytest.raises(ModelFormatError, match="the model as given: invalid model"):
        run_passes(broken, [make_pass("reorder", {})])


def _flat(model: Model) -> list:
    """Every operator in model order (``origin``'s numbering), index dropped."""
    return [replace(op, index=0) for sg in model.subgraphs for op in sg.operators]


def test_origins_compose_across_the_passes() -> None:
    """Each record maps its model back to the model the pipeline was given: after
    bands then reorder, operator k is the reordered operator of the banded model that
    came from the original operator ``origin[k]``."""
    model = read_model_bytes(SHAPED["mobilenet_v2_pad_int8"]())
    options = {"objective": "head", "max_extra_macs": 0.3}
    banded = make_pass("bands", options).run(model)
    reordered = make_pass("reorder", options).run(banded.model)
    assert banded.changed and reordered.changed  # both move operators
    out, records = run_passes(model, [make_pass(n, options) for n in ("bands", "reorder")])
    assert records[0].origin == banded.origin
    origin = records[1].origin
    assert origin not in (banded.origin, reordered.origin)
    original, middle, final = _flat(model), _flat(banded.model), _flat(out)
    assert len(origin) == len(final)
    for k, i in enumerate(origin):
        via = reordered.origin[k]
        assert final[k] == middle[via]
        assert i == banded.origin[via]
        if i is not None:
            assert final[k].opcode == original[i].opcode


def test_no_pass_is_the_identity() -> None:
    model = read_model_bytes(SHAPED["mobilenet_v2_pad_int8"]())
    _, records = run_passes(model, [make_pass("inplace", {})])
    assert records[0].origin == tuple(range(model.operator_count))


@dataclass(frozen=True, slots=True)
class _WrongOrigin:
    """A pass that changes nothing but says its first two operators swapped places
    (``swap``), or gives one entry too few."""

    name: ClassVar[str] = "wrong-origin"
    summary: ClassVar[str] = "lies about where its operators came from"
    swap: bool = True

    def run(self, model: Model) -> PassResult:
        n = model.operator_count
        origin = (1, 0, *range(2, n)) if self.swap else tuple(range(n - 1))
        return PassResult(model, True, "lies", origin=origin)


def test_an_origin_that_does_not_fit_the_model_is_an_error() -> None:
    model = read_model_bytes(SHAPED["mobilenet_v2_pad_int8"]())  # PAD, CONV_2D, ...
    with pytest.raises(PassError, match=r"pass wrong-origin: operator 0 PAD .* from operator 1"):
        run_passes(model, [_WrongOrigin()])
    with pytest.raises(PassError, match="pass wrong-origin gave an origin of 12 operators"):
        run_passes(model, [_WrongOrigin(swap=False)])


@pytest.mark.parametrize("names", [(name,) for name in PASS_CLASSES])
def test_every_pass_path_refuses_a_cyclic_model_without_blaming_a_pass(
    names: tuple[str, ...],
) -> None:
    """``pipeline.rewrite.run_rewrite`` (plan --passes, --fit, sweep), through
    ``run_passes`` (which the weights' stage pass runs by too), verifies the model
    before any pass runs: a cycle is the model's fault, named with its operators."""
    from arenaplan.pipeline.rewrite import run_rewrite

    model = read_model_bytes(SHAPED["mobilenet_v2_pad_int8"]())
    sg = model.subgraphs[0]
    a, b = sg.operators[:2]
    ops = (replace(a, inputs=(b.outputs[0], *a.inputs[1:])), *sg.operators[1:])
    cyclic = replace(model, subgraphs=(replace(sg, operators=ops),))
    with pytest.raises(ModelFormatError) as info:
        run_rewrite(cyclic, names, {})
    message = str(info.value)
    assert message.startswith("the model as given: invalid model: subgraph 0 operator 0")
    assert "a cycle, operators 0 -> 1 -> 0" in message and "pass" not in message
