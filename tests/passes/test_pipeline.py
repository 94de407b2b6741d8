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
    with pytest.raises(ModelFormatError, match="the model as given: invalid IR"):
        run_passes(broken, [make_pass("reorder", {})])
