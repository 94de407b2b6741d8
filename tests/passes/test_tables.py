"""Every pass keeps the model's tables: signature defs, subgraph inputs and outputs,
metadata, variable tensors (issue: a pass that dropped tensors left a signature def
pointing past the end, and the read-back blamed the user's file).

The written model is judged by reading it with the ``tflite`` package's own schema
bindings, not arenaplan's reader: each signature name must name, in the written
file, a tensor of the original's name, shape and type.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pytest
import tflite
from kits.opmodels import SHAPED
from testkit import model_params

from arenaplan.builder.demo import demo_model
from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1
from arenaplan.errors import PassError
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.model import Model, SignatureDef
from arenaplan.passes import PASS_CLASSES, make_pass, run_passes
from arenaplan.passes.base import PassResult
from arenaplan.passes.edit import SubgraphEdit
from arenaplan.reader import read_model_bytes

KEY = "serving_default"


def _with_signature(data: bytes) -> bytes:
    """``data`` with a converter-style signature def over subgraph 0's boundary."""
    model = read_model_bytes(data)
    sg = model.subgraphs[0]
    ins = tuple((sg.tensors[t].name, t) for t in sg.inputs)
    outs = tuple((f"output_{k}", t) for k, t in enumerate(sg.outputs))
    return write_model(replace(model, signature_defs=(SignatureDef(KEY, 0, ins, outs),)))


SIGNED = {
    "demo": demo_model,
    "ds_cnn_m": lambda: ds_cnn("M", signature=KEY),
    "mobilenet_v1_025_96": lambda: mobilenet_v1(0.25, 96, 1, 2, signature=KEY),
    **{name: (lambda f=f: _with_signature(f())) for name, f in SHAPED.items()},
}


def _signatures_in_file(data: bytes) -> list[tuple[str, int, str, list, list]]:
    """(key, subgraph, kind, [(name, tensor name, shape, type)]) read with the
    ``tflite`` package alone."""
    m = tflite.Model.GetRootAs(data, 0)
    out = []
    for i in range(m.SignatureDefsLength()):
        sd = m.SignatureDefs(i)
        sg = m.Subgraphs(sd.SubgraphIndex())
        for kind, n, get, boundary in (
            ("inputs", sd.InputsLength(), sd.Inputs, sg.InputsAsNumpy()),
            ("outputs", sd.OutputsLength(), sd.Outputs, sg.OutputsAsNumpy()),
        ):
            entries = []
            for j in range(n):
                e = get(j)
                t = sg.Tensors(e.TensorIndex())
                assert e.TensorIndex() in list(boundary), f"{kind} {e.Name()} off the boundary"
                shape = tuple(t.ShapeAsNumpy()) if t.ShapeLength() else ()
                entries.append((e.Name(), t.Name(), shape, t.Type()))
            out.append((sd.SignatureKey(), sd.SubgraphIndex(), kind, entries))
    return out


def _check_kept(before: bytes, model: Model) -> None:
    after = write_model(model)
    assert _signatures_in_file(after) == _signatures_in_file(before)
    read_model_bytes(after)  # and arenaplan's reader takes what arenaplan wrote


@pytest.mark.parametrize("name", list(SIGNED))
@pytest.mark.parametrize("pass_name", list(PASS_CLASSES))
def test_each_pass_keeps_signature_defs(name: str, pass_name: str) -> None:
    data = SIGNED[name]()
    model = read_model_bytes(data)
    assert model.signature_defs, "the test model carries a signature def"
    out, _ = run_passes(model, [make_pass(pass_name, {"objective": "head"})])
    _check_kept(data, out)


@pytest.mark.parametrize("name", list(SIGNED))
def test_the_fit_passes_keep_signature_defs(name: str) -> None:
    """cascade, reorder, inplace, bands in a row, as ``--fit`` runs them, changing the
    model (cascades, bands) while every signature stays on its tensors."""
    data = SIGNED[name]()
    names = ("cascade", "reorder", "inplace", "bands")
    out, _ = run_passes(read_model_bytes(data), [make_pass(n, {}) for n in names])
    _check_kept(data, out)


def test_a_cascade_that_drops_tensors_keeps_the_signature_on_the_output() -> None:
    """The reported case: a cascade removes the tensors inside its chain, so the
    output's index moves, and the signature's with it."""
    data = SIGNED["mobilenet_v1_025_96"]()
    model = read_model_bytes(data)
    out, records = run_passes(model, [make_pass("cascade", {})])
    assert records[0].changed and out.subgraphs[0].outputs != model.subgraphs[0].outputs
    (sd,) = out.signature_defs
    assert sd.outputs[0][1] == out.subgraphs[0].outputs[0]
    _check_kept(data, out)


@pytest.mark.parametrize("path", model_params())
def test_every_pass_keeps_the_tables_of_every_shared_model(path) -> None:
    data = path.read_bytes()
    model = read_model_bytes(data)
    for name in PASS_CLASSES:
        out, _ = run_passes(model, [make_pass(name, {})])
        _check_kept(data, out)
        assert [(n, out.buffers[b]) for n, b in out.metadata] == [
            (n, model.buffers[b]) for n, b in model.metadata
        ]


# ---- a pass that breaks a table is named, exit 70 -----------------------------------


@dataclass(frozen=True, slots=True)
class _DropTensors:
    """Rebuilds subgraph 0 with its operators as they are (unused tensors dropped),
    then undoes the signature's renumbering: the bug the issue reported."""

    name: ClassVar[str] = "drop-tensors"
    summary: ClassVar[str] = "breaks the signature def on purpose"
    keep_old_indices: bool = True

    def run(self, model: Model) -> PassResult:
        edit = SubgraphEdit(model, 0)
        for op in model.subgraphs[0].operators:
            edit.add_op(op, op.index)
        new = edit.finish()
        if self.keep_old_indices:
            new = replace(new, signature_defs=model.signature_defs)
        return PassResult(new, True, "dropped", origin=edit.origin())


def _with_unused_tensor(data: bytes) -> Model:
    """The model with a tensor no operator uses before its output (so a rebuild
    renumbers the output)."""
    model = read_model_bytes(data)
    sg = model.subgraphs[0]
    extra = replace(sg.tensors[0], index=len(sg.tensors), name="unused")
    tensors = (*sg.tensors, extra)
    # move the unused one before the output: swap it with the output tensor's index
    out = sg.outputs[0]
    order = list(range(len(tensors)))
    order[out], order[-1] = order[-1], order[out]
    where = {old: new for new, old in enumerate(order)}
    tensors = tuple(replace(tensors[old], index=new) for new, old in enumerate(order))
    ops = tuple(
        replace(
            op,
            inputs=tuple(where[t] if t >= 0 else t for t in op.inputs),
            outputs=tuple(where[t] for t in op.outputs),
        )
        for op in sg.operators
    )
    sg = replace(
        sg,
        tensors=tensors,
        operators=ops,
        inputs=tuple(where[t] for t in sg.inputs),
        outputs=tuple(where[t] for t in sg.outputs),
    )
    sds = tuple(
        replace(
            sd,
            inputs=tuple((n, where[t]) for n, t in sd.inputs),
            outputs=tuple((n, where[t]) for n, t in sd.outputs),
        )
        for sd in model.signature_defs
    )
    return replace(model, subgraphs=(sg,), signature_defs=sds)


def test_a_pass_that_leaves_a_signature_wrong_is_named() -> None:
    model = _with_unused_tensor(demo_model())
    fixed, _ = run_passes(model, [_DropTensors(keep_old_indices=False)])  # as finish() does
    assert len(fixed.subgraphs[0].tensors) == len(model.subgraphs[0].tensors) - 1
    with pytest.raises(PassError) as exc:
        run_passes(model, [_DropTensors()])
    message = str(exc.value)
    assert message.startswith("pass drop-tensors broke the model")
    assert "signature def 0 ('serving_default')" in message and "\n" not in message
    assert PassError.exit_code == 70


def test_a_pass_that_moves_a_signature_to_another_tensor_is_named() -> None:
    """In range and on the boundary, but another tensor than before."""
    data = _with_signature(SHAPED["keras_residual_relu_int8"]())
    model = read_model_bytes(data)
    sd = model.signature_defs[0]
    inp = model.subgraphs[0].inputs[0]
    wrong = replace(sd, outputs=((sd.outputs[0][0], inp),))

    @dataclass(frozen=True, slots=True)
    class _Swap:
        name: ClassVar[str] = "swap"
        summary: ClassVar[str] = "points the output at the input"

        def run(self, m: Model) -> PassResult:
            sg = m.subgraphs[0]
            sg2 = replace(sg, outputs=(*sg.outputs, inp))
            return PassResult(replace(m, signature_defs=(wrong,), subgraphs=(sg2,)), True, "")

    with pytest.raises(PassError, match="pass swap broke the model's tables"):
        run_passes(model, [_Swap()])


def test_metadata_and_variables_are_kept_by_every_pass() -> None:
    data = SIGNED["demo"]()
    model = read_model_bytes(data)
    extra = b"user metadata"
    model = replace(
        model,
        buffers=(*model.buffers, extra),
        buffer_sizes=(*model.buffer_sizes, len(extra)),
        metadata=(*model.metadata, ("user", len(model.buffers))),
    )
    for name in PASS_CLASSES:
        out, _ = run_passes(model, [make_pass(name, {})])
        assert dict(out.metadata)["user"] is not None
        assert out.buffers[dict(out.metadata)["user"]] == extra


def test_inputs_are_int8_where_the_signature_says() -> None:
    """The signature's input names the model's int8 input with its shape."""
    data = SIGNED["demo"]()
    (key, s, kind, entries), _ = _signatures_in_file(data)
    assert (key, s, kind) == (b"serving_default", 0, "inputs")
    assert entries[0][3] == tflite.TensorType.INT8 and np.prod(entries[0][2]) > 0


def _two_subgraphs() -> bytes:
    """A model of two subgraphs (the second a copy of the first, as a control-flow
    body would be another), a signature def on each."""
    model = read_model_bytes(_with_signature(SHAPED["mobilenet_v2_pad_int8"]()))
    sg = model.subgraphs[0]
    (sd,) = model.signature_defs
    second = replace(sd, key="second", subgraph=1)
    return write_model(
        replace(model, subgraphs=(sg, replace(sg, index=1)), signature_defs=(sd, second))
    )


@pytest.mark.parametrize("pass_name", list(PASS_CLASSES))
def test_every_pass_keeps_the_signature_defs_of_every_subgraph(pass_name: str) -> None:
    data = _two_subgraphs()
    out, _records = run_passes(read_model_bytes(data), [make_pass(pass_name, {})])
    assert [sd.subgraph for sd in out.signature_defs] == [0, 1]
    _check_kept(data, out)
