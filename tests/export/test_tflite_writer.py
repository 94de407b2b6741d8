"""write_model: every model the reader reads, written back; proven by reading it again
(full IR equality) and by running it in the real TFLM runtime."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import flatbuffers
import pytest
import tflite
from kits.opmodels import OP_MODELS, SHAPED
from testkit import TFLM_REFUSES, model_params, model_path

from arenaplan.errors import UnsupportedModelError
from arenaplan.export.tflite_writer import DATA_ALIGN, write_model
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import (
    Model,
    Operator,
    Options,
    Quantization,
    SignatureDef,
    Subgraph,
    Tensor,
)
from arenaplan.placement import plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.reader.schema import (
    ENUM_FIELDS,
    OPTION_UNIONS,
    OptionField,
    names,
    option_fields,
)
from arenaplan.reader.tflite_reader import OFFLINE_PLAN_NAME
from arenaplan.tflm.offline_plan import with_offline_plan

if TYPE_CHECKING:
    from arenaplan.tflm.verify import TflmRunner

BUILT = {**OP_MODELS, **SHAPED}


def _round_trip(data: bytes) -> bytes:
    """Read, write, read again: the same IR, and the same bytes when written twice."""
    model = read_model_bytes(data)
    written = write_model(model)
    assert read_model_bytes(written) == model
    assert write_model(model) == written
    assert write_model(read_model_bytes(written)) == written
    return written


def _data_positions(data: bytes) -> list[int]:
    """File position of every buffer's data and every operator's custom options."""
    m = tflite.Model.GetRootAsModel(data, 0)
    found = []
    for i in range(m.BuffersLength()):
        buf = m.Buffers(i)
        if buf.DataLength():
            found.append(buf._tab.Vector(buf._tab.Offset(4)))
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            if op.CustomOptionsLength():
                found.append(op._tab.Vector(op._tab.Offset(14)))
    return found


@pytest.mark.parametrize("path", model_params())
def test_shared_model_round_trips(path: Path) -> None:
    written = _round_trip(path.read_bytes())
    assert all(pos % DATA_ALIGN == 0 for pos in _data_positions(written))
    assert tflite.Model.GetRootAsModel(written, 0).Buffers(0).DataLength() == 0


@pytest.mark.parametrize("name", sorted(BUILT))
def test_built_model_round_trips(name: str) -> None:
    _round_trip(BUILT[name]())


def _value(table: str, field: OptionField) -> object:
    """A value unlike the schema default, of the field's type."""
    if field.kind == "scalar" and field.name in ENUM_FIELDS:
        return "SAME" if field.name == "padding" else "RELU6"
    if field.name.endswith("subgraph_index"):
        return 0
    if field.kind == "string":
        return f"{table}.{field.name}"
    if field.kind == "vector":
        return {
            "Float32": (0.25, -1.5, 3.0),
            "Int64": (1, -2, 2**40),
            "Bool": (1, 0, 1),
        }.get(field.element, (1, 2, 3))
    return {"Bool": True, "Float32": 0.5}.get(field.element, 3)


def test_every_options_table_of_both_unions_round_trips() -> None:
    """One operator per options table of the schema, every field set: each comes back."""
    x = Tensor(0, "x", (1, 4), DType.INT8, 0, False, False)
    y = Tensor(1, "y", (1, 4), DType.INT8, 0, False, False)
    ops = []
    for position, union in enumerate(OPTION_UNIONS):
        for code, table in sorted(names(union).items()):
            if not code:
                continue
            items = tuple(sorted((f.name, _value(table, f)) for f in option_fields(table)))
            opcode = ("ABS", "STABLEHLO_COMPOSITE")[position]
            options = Options(items, table)
            version = 1 + len(ops) % 3  # operator codes: one per (operator, version)
            ops.append(
                Operator(len(ops), opcode, False, (0,), (1,), options=options, version=version)
            )
    model = Model((Subgraph(0, "main", (x, y), tuple(ops), (0,), (1,)),), buffers=(b"",))
    back = read_model_bytes(write_model(model))
    assert [op.options for op in back.subgraphs[0].operators] == [op.options for op in ops]
    assert back == replace(model, buffer_sizes=(0,))
    fb = tflite.Model.GetRootAsModel(write_model(model), 0)
    codes = {
        (fb.OperatorCodes(i).DeprecatedBuiltinCode(), fb.OperatorCodes(i).BuiltinCode())
        for i in range(fb.OperatorCodesLength())
    }
    assert codes == {(101, 101), (127, 206)}  # ABS; STABLEHLO_COMPOSITE past 127
    assert fb.OperatorCodesLength() == 6  # one code per (operator, version)


def _hand_built() -> Model:
    """Two subgraphs with what the shared models lack: an IF calling a subgraph,
    intermediates, a custom operator, an unknown builtin, per-channel quantisation
    on axis 3, shape signatures, has_rank, signature defs, metadata."""
    q = Quantization((0.5,), (-3,))
    w_quant = Quantization((0.125, 0.0625), (0, 0), 3)  # float32 values
    main_tensors = (
        Tensor(0, "cond", (1,), DType.BOOL, 0, False, False, has_rank=True),
        Tensor(1, "x", (1, 2, 2, 2), DType.INT8, 0, False, False, q, (-1, 2, 2, 2), True),
        Tensor(2, "w", (1, 1, 1, 2), DType.INT8, 1, True, False, w_quant),
        Tensor(3, "y", (1, 2, 2, 2), DType.INT8, 0, False, False, Quantization((0.25,), ())),
        Tensor(4, "state", (1, 2), DType.INT16, 0, False, True),
        Tensor(5, "scratch", (), DType.FLOAT32, 0, False, False, shape_signature=()),
    )
    if_options = Options((("else_subgraph_index", 1), ("then_subgraph_index", 1)), "IfOptions")
    main_ops = (
        Operator(0, "IF", False, (0, 1), (3,), options=if_options, version=2),
        Operator(1, "MyCustom", True, (3, -1, 2), (3,), (5,), custom_options=b"\x01\x02\x03"),
        Operator(2, "BUILTIN_250", False, (3,), (1,), version=7),
    )
    body = Subgraph(1, "body", main_tensors[:2], (), (1,), (1,))
    plan = b"note: no offline plan here"
    return Model(
        subgraphs=(Subgraph(0, "main", main_tensors, main_ops, (0, 1), (3,)), body),
        version=3,
        description="hand built",
        metadata=(("min_runtime_version", 2), ("note", 3)),
        buffer_sizes=(0, 2, 6, len(plan)),
        buffers=(b"", b"\x05\xfb", b"1.14.0", plan),
        signature_defs=(
            SignatureDef("serving_default", 0, (("x", 1), ("cond", 0)), (("y", 3),)),
            SignatureDef("body", 1, (("x", 1),), ()),
        ),
    )


def test_a_hand_built_model_comes_back_equal() -> None:
    model = _hand_built()
    written = write_model(model)
    assert read_model_bytes(written) == model
    assert all(pos % DATA_ALIGN == 0 for pos in _data_positions(written))


def test_options_without_their_table_are_written_by_the_operator_kind() -> None:
    sg = _hand_built().subgraphs[0]
    conv = Operator(0, "CONV_2D", False, (1, 2, -1), (3,), options=Options((("padding", "SAME"),)))
    model = replace(_hand_built(), subgraphs=(replace(sg, operators=(conv,)),), signature_defs=())
    options = read_model_bytes(write_model(model)).subgraphs[0].operators[0].options
    assert options.table == "Conv2DOptions" and options.get("padding") == "SAME"
    assert options.get("stride_w") == 0  # the schema default, read back


def _refusal(model: Model) -> str:
    with pytest.raises(UnsupportedModelError) as info:
        write_model(model)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_what_cannot_be_read_back_equal_is_refused_in_one_line() -> None:
    model = _hand_built()
    sg = model.subgraphs[0]
    w = replace(sg.tensors[2], buffer=0)
    no_bytes = replace(sg, tensors=(*sg.tensors[:2], w, *sg.tensors[3:]))
    assert "is constant, but its buffer 0 holds 0 bytes" in _refusal(
        replace(model, subgraphs=(no_bytes, model.subgraphs[1]))
    )
    assert "stored_plan is not the one" in _refusal(replace(model, stored_plan=(0,) * 8))
    assert "buffer 0 holds 3 bytes" in _refusal(
        replace(model, buffers=(b"abc", *model.buffers[1:]))
    )
    unkept = replace(model, unkept=("subgraph 0 tensor 2 is sparse", "buffer 1 ..."))
    assert "subgraph 0 tensor 2 is sparse (and 1 more)" in _refusal(unkept)
    odd = Operator(0, "ABS", False, (1,), (3,), options=Options((("alpha", 1.0),)))
    assert "do not name their table" in _refusal(
        replace(model, subgraphs=(replace(sg, operators=(odd,)), model.subgraphs[1]))
    )
    huge = replace(sg, tensors=(replace(sg.tensors[0], shape=(2**40,)), *sg.tensors[1:]))
    assert "does not fit its schema field" in _refusal(
        replace(model, subgraphs=(huge, model.subgraphs[1]))
    )
    wrong = replace(odd, options=Options((("alpha", 1.0),), "Conv2DOptions"))
    assert "Conv2DOptions has no option 'alpha'" in _refusal(
        replace(model, subgraphs=(replace(sg, operators=(wrong,)), model.subgraphs[1]))
    )


def _sparse_model_outside_data() -> bytes:
    """A file the reader reads but the IR cannot hold in full: tensor 0 is sparse and
    its buffer's data is stored outside the flatbuffer (offset, size)."""
    b = flatbuffers.Builder(256)
    tflite.BufferStart(b)
    empty = tflite.BufferEnd(b)
    tflite.BufferStart(b)
    tflite.BufferAddOffset(b, 4096)
    tflite.BufferAddSize(b, 8)
    outside = tflite.BufferEnd(b)
    tflite.SparsityParametersStart(b)
    sparsity = tflite.SparsityParametersEnd(b)
    name = b.CreateString("t")
    b.StartVector(4, 1, 4)
    b.PrependInt32(2)
    shape = b.EndVector()
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, DType.INT32.code)
    tflite.TensorAddBuffer(b, 1)
    tflite.TensorAddName(b, name)
    tflite.TensorAddSparsity(b, sparsity)
    tensor = tflite.TensorEnd(b)
    vectors = []
    for items in ([tensor], [], [empty, outside]):
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        vectors.append(b.EndVector())
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, vectors[0])
    subgraph = tflite.SubGraphEnd(b)
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(subgraph)
    subgraphs = b.EndVector()
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddOperatorCodes(b, vectors[1])
    tflite.ModelAddBuffers(b, vectors[2])
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_parts_the_ir_does_not_keep_are_named_by_the_reader_and_refused() -> None:
    model = read_model_bytes(_sparse_model_outside_data())
    assert model.unkept == (
        "buffer 1 keeps its 8 bytes outside the flatbuffer",
        "subgraph 0 tensor 0 is sparse",
    )
    assert "outside the flatbuffer (and 1 more)" in _refusal(model)


def test_a_planned_model_written_again_carries_one_offline_plan() -> None:
    """An OfflineMemoryAllocation entry in the IR is written like any metadata; planning
    the written model replaces it rather than adding a second one."""
    data = model_path("tflite-micro__keyword_scrambled").read_bytes()
    plan = plan_model(read_model_bytes(data))
    planned = read_model_bytes(with_offline_plan(data, plan.tensor_offsets))
    written = _round_trip(write_model(planned))
    assert read_model_bytes(written).stored_plan == tuple(plan.tensor_offsets)
    moved = [o + 16 if o >= 0 else o for o in plan.tensor_offsets]
    again = read_model_bytes(with_offline_plan(written, moved))
    assert [name for name, _ in again.metadata].count(OFFLINE_PLAN_NAME) == 1
    assert again.stored_plan == tuple(moved)


# --- in the real TFLM runtime ------------------------------------------------------


@pytest.fixture(scope="module")
def runner() -> Iterator[TflmRunner]:
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.tflm.verify import TflmRunner

    with TflmRunner() as own:
        yield own


def _runnable(path: Path) -> bytes:
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    return path.read_bytes()


@pytest.mark.parametrize("path", model_params())
def test_written_model_runs_bit_exact_in_tflm(path: Path, runner: TflmRunner) -> None:
    from arenaplan.tflm.verify import compare_models

    data = _runnable(path)
    report = compare_models(data, write_model(read_model_bytes(data)), trials=2, runner=runner)
    assert report.refused is None and report.failed is None
    assert report.identical, report.mismatch
    assert report.planned.head == report.original.head
    assert report.planned.tail == report.original.tail
    assert report.disagreements() == []


@pytest.mark.parametrize("path", model_params())
def test_written_model_planned_runs_and_verifies(path: Path, runner: TflmRunner) -> None:
    from arenaplan.tflm.verify import compare_models

    data = _runnable(path)
    written = write_model(read_model_bytes(data))
    plan = plan_model(read_model_bytes(written))
    planned = with_offline_plan(written, plan.tensor_offsets)
    report = compare_models(data, planned, trials=2, runner=runner)
    assert report.identical, report.mismatch
    assert report.planned.head == plan.arena
    assert report.disagreements() == []


def test_planned_again_with_another_plan_runs_that_plan(runner: TflmRunner) -> None:
    """The rewritten planned model, planned again 16 bytes higher: TFLM uses the new
    plan (head 16 bytes larger), not the one the IR carried."""
    from arenaplan.tflm.verify import compare_models

    data = model_path("mlcommons-tiny__vww_96_int8").read_bytes()
    plan = plan_model(read_model_bytes(data))
    written = write_model(read_model_bytes(with_offline_plan(data, plan.tensor_offsets)))
    moved = [o + 16 if o >= 0 else o for o in plan.tensor_offsets]
    report = compare_models(data, with_offline_plan(written, moved), trials=2, runner=runner)
    assert report.identical, report.mismatch
    assert report.planned.head == plan.arena + 16
