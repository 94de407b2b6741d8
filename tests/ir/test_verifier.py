"""The IR verifier: every real and synthetic model passes unchanged; each kind of
broken model (built with ``dataclasses.replace``) is refused with one line naming
the subgraph, the operator and its opcode."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from kits.opmodels import OP_MODELS, SHAPED
from testkit import model_params

from arenaplan.errors import ModelFormatError, PassError
from arenaplan.ir import DType, Model, Operator, Options, Tensor
from arenaplan.ir.model import SignatureDef
from arenaplan.ir.verifier import _SHAPE_RULES, check_model, ir_problems, verify_ir
from arenaplan.reader import read_model_bytes

SYNTHETIC = {**OP_MODELS, **SHAPED}


def _model(name: str) -> Model:
    return read_model_bytes(SYNTHETIC[name]())


def _with_op(model: Model, i: int, **changes) -> Model:
    sg = model.subgraphs[0]
    ops = list(sg.operators)
    ops[i] = replace(ops[i], **changes)
    return replace(model, subgraphs=(replace(sg, operators=tuple(ops)), *model.subgraphs[1:]))


def _with_tensor(model: Model, t: int, **changes) -> Model:
    sg = model.subgraphs[0]
    tensors = list(sg.tensors)
    tensors[t] = replace(tensors[t], **changes)
    return replace(model, subgraphs=(replace(sg, tensors=tuple(tensors)), *model.subgraphs[1:]))


def _with_option(model: Model, i: int, name: str, value) -> Model:
    items = dict(model.subgraphs[0].operators[i].options.items)
    items[name] = value
    return _with_op(model, i, options=Options(tuple(sorted(items.items()))))


def _with_data(model: Model, tensor: Tensor, values, dtype: str = "<i4") -> Model:
    buffers = list(model.buffers)
    buffers[tensor.buffer] = np.asarray(values, dtype=dtype).tobytes()
    return replace(model, buffers=tuple(buffers))


def _refused(model: Model, *words: str) -> str:
    with pytest.raises(PassError) as info:
        verify_ir(model)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


# ---- every model passes ---------------------------------------------------------


@pytest.mark.parametrize("path", model_params())
def test_every_shared_model_is_well_formed(path: Path) -> None:
    verify_ir(read_model_bytes(path.read_bytes()))


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_every_synthetic_model_is_well_formed(name: str) -> None:
    verify_ir(_model(name))


@pytest.mark.parametrize("path", model_params())
def test_a_wrong_output_shape_of_any_checked_operator_is_caught(path: Path) -> None:
    """Growing the last dim of the output of any operator whose kind has a shape rule
    makes that very operator fail: no rule is silently skipped on the real models."""
    model = read_model_bytes(path.read_bytes())
    sg = model.subgraphs[0]
    checked = 0
    for op in sg.operators:
        y = sg.tensors[op.outputs[0]]
        if op.opcode not in _SHAPE_RULES or not y.shape or -1 in y.shape:
            continue
        broken = _with_tensor(model, y.index, shape=(*y.shape[:-1], y.shape[-1] + 1))
        where = f"subgraph 0 operator {op.index} {op.opcode}:"
        assert any(p.startswith(where) for p in ir_problems(broken)), (op.index, op.opcode)
        checked += 1
    assert checked or not any(op.opcode in _SHAPE_RULES for op in sg.operators)


# ---- indices ----------------------------------------------------------------------


def test_an_operator_input_out_of_range() -> None:
    m = _model("conv_int8_per_channel")
    _refused(_with_op(m, 0, inputs=(0, 1, 99)), "subgraph 0 operator 0 CONV_2D", "tensor 99")


def test_an_operator_output_of_minus_one() -> None:
    m = _model("conv_int8_per_channel")
    _refused(_with_op(m, 0, outputs=(-1,)), "operator 0 CONV_2D", "output 0 is tensor -1")


def test_a_subgraph_output_out_of_range() -> None:
    m = _model("conv_int8_per_channel")
    sg = replace(m.subgraphs[0], outputs=(7,))
    _refused(replace(m, subgraphs=(sg,)), "subgraph 0 output 0 is tensor 7")


def test_a_buffer_out_of_range() -> None:
    m = _model("conv_int8_per_channel")
    _refused(_with_tensor(m, 1, buffer=len(m.buffers)), "subgraph 0 tensor 1", "buffer")


def test_a_called_subgraph_out_of_range() -> None:
    m = _model("conv_int8_per_channel")
    call = Operator(1, "CALL_ONCE", False, (), (), options=Options((("init_subgraph_index", 3),)))
    sg = m.subgraphs[0]
    m = replace(m, subgraphs=(replace(sg, operators=(*sg.operators, call)),))
    _refused(m, "operator 1 CALL_ONCE", "init_subgraph_index is 3")


def test_an_operator_index_that_is_not_its_position() -> None:
    m = _model("fc_int8_per_tensor")
    _refused(_with_op(m, 1, index=2), "subgraph 0 operator 1 FULLY_CONNECTED", "operator 2")


# ---- data flow --------------------------------------------------------------------


def test_an_input_read_before_it_is_produced() -> None:
    m = _model("fc_int8_per_tensor")  # three chained FULLY_CONNECTED
    sg = m.subgraphs[0]
    a, b, c = sg.operators
    swapped = (replace(b, index=0), replace(a, index=1), c)
    broken = replace(m, subgraphs=(replace(sg, operators=swapped),))
    _refused(broken, "operator 0 FULLY_CONNECTED", "read before", "produced later by operator 1")


def test_a_swap_is_a_use_before_definition_not_a_cycle() -> None:
    """Operators in the wrong order, but some order runs them: no cycle is claimed."""
    m = _model("fc_int8_per_tensor")
    sg = m.subgraphs[0]
    a, b, c = sg.operators
    swapped = (replace(b, index=0), replace(a, index=1), c)
    message = _refused(replace(m, subgraphs=(replace(sg, operators=swapped),)), "read before")
    assert "cycle" not in message


def test_a_cycle_names_its_operators() -> None:
    """Operator 0 reads what operator 2 writes, and 2 depends on 0 through 1: a cycle,
    whatever the order (the data of the issue's 'cycle in its data flow')."""
    m = _model("fc_int8_per_tensor")  # three chained FULLY_CONNECTED: 0 -> 1 -> 2
    a, _, c = m.subgraphs[0].operators
    cyclic = _with_op(m, 0, inputs=(c.outputs[0], *a.inputs[1:]))
    _refused(cyclic, "subgraph 0 operator 0 FULLY_CONNECTED", "a cycle, operators 0 -> 2 -> 1 -> 0")


def test_an_operator_reading_its_own_output_is_a_cycle() -> None:
    m = _model("relu_int8")  # t0 -> t1 -> t2 -> t3
    _refused(_with_op(m, 1, inputs=(2,)), "operator 1 RELU", "a cycle, operators 1 -> 1")


def test_an_operator_writing_a_constant() -> None:
    m = _model("conv_int8_per_channel")
    w = m.subgraphs[0].operators[0].inputs[1]
    found = ir_problems(_with_op(m, 0, outputs=(w,)))  # the output is then never made, too
    assert f"subgraph 0 operator 0 CONV_2D: writes tensor {w} " in "\n".join(found)
    assert any(p.endswith("which holds constant data") for p in found)


def test_an_input_never_produced() -> None:
    m = _model("relu_int8")
    sg = m.subgraphs[0]
    broken = replace(m, subgraphs=(replace(sg, inputs=()),))
    _refused(broken, "operator 0 RELU", "never produced", "not a subgraph input")


def test_a_tensor_produced_twice() -> None:
    m = _model("relu_int8")  # t0 -> t1 -> t2 -> t3
    _refused(_with_op(m, 1, outputs=(1,)), "operator 1 RELU", "produced twice", "operator 0")


def test_a_subgraph_input_produced_again() -> None:
    m = _model("relu_int8")
    _refused(_with_op(m, 2, outputs=(0,)), "operator 2 RELU", "subgraph input")


# ---- quantisation -----------------------------------------------------------------


def test_an_int8_activation_without_quantisation() -> None:
    m = _model("conv_int8_per_channel")
    y = m.subgraphs[0].operators[0].outputs[0]
    _refused(
        _with_tensor(m, y, quantization=None), "operator 0 CONV_2D", "INT8 without quantisation"
    )


def test_an_int16_elementwise_input_without_quantisation() -> None:
    m = _model("add_int16")
    _refused(_with_tensor(m, 1, quantization=None), "operator 0 ADD", "input 1")


def test_int32_and_float_need_no_quantisation() -> None:
    verify_ir(_model("add_float"))
    verify_ir(_model("shape_ops_float"))


# ---- shapes -----------------------------------------------------------------------


def test_conv_output_size_follows_padding() -> None:
    m = _model("conv_int8_per_channel")  # 8x8 input, 3x3 filter, SAME: 8x8 output
    _refused(_with_option(m, 0, "padding", "VALID"), "operator 0 CONV_2D", "give H, W = 6, 6")


def test_conv_output_size_follows_stride_and_dilation() -> None:
    m = _model("conv_int8_per_channel")
    _refused(_with_option(m, 0, "stride_h", 2), "operator 0 CONV_2D", "H, W = 4, 8")
    valid = _with_option(m, 0, "padding", "VALID")
    y = m.subgraphs[0].operators[0].outputs[0]
    valid = _with_tensor(valid, y, shape=(1, 6, 6, 6))
    verify_ir(valid)
    _refused(_with_option(valid, 0, "dilation_w_factor", 2), "H, W = 6, 4")


def test_conv_channels() -> None:
    m = _model("conv_int8_per_channel")  # filter (6, 3, 3, 4)
    _refused(_with_tensor(m, 0, shape=(1, 8, 8, 3)), "operator 0 CONV_2D", "not a multiple")
    _refused(_with_tensor(m, 2, shape=(5,)), "operator 0 CONV_2D", "bias needs 6")


def test_depthwise_channels() -> None:
    m = _model("depthwise_int8")  # input 4 channels, filter (1, 3, 3, 4)
    _refused(_with_tensor(m, 0, shape=(1, 8, 8, 3)), "DEPTHWISE_CONV_2D", "not a multiple of")


def test_pooling_output_size() -> None:
    m = _model("avg_pool_int8")  # 8x8, 2x2 /2 VALID: 4x4
    _refused(_with_option(m, 0, "filter_height", 4), "AVERAGE_POOL_2D", "H, W = 3, 4")


def test_pad_reads_its_paddings_from_the_buffer() -> None:
    m = _model("pad_int8")  # (1, 4, 4, 2) padded by one on H and W: (1, 6, 6, 2)
    pads = m.subgraphs[0].operand(m.subgraphs[0].operators[0], 1)
    broken = _with_data(m, pads, [[0, 0], [2, 1], [1, 1], [0, 0]])
    _refused(broken, "operator 0 PAD", "give [1, 7, 6, 2]")


def test_padv2_int64_paddings() -> None:
    m = _model("padv2_int8")
    sg = m.subgraphs[0]
    pads = sg.operand(sg.operators[0], 1)
    wide = _with_data(m, pads, [[0, 0], [1, 1], [1, 1], [0, 0]], "<i8")
    verify_ir(_with_tensor(wide, pads.index, dtype=DType.INT64))


def test_strided_slice_bounds_and_masks() -> None:
    m = _model("strided_slice_int8")  # (1, 8, 8, 4) [0:1, 0:8:2, 0:8:2, 0:4] -> (1, 4, 4, 4)
    sg = m.subgraphs[0]
    begin, end, strides = (sg.operand(sg.operators[0], k) for k in (1, 2, 3))
    _refused(_with_data(m, strides, [1, 1, 2, 1]), "STRIDED_SLICE", "give [1, 8, 4, 4]")
    _refused(_with_data(m, begin, [0, -3, 0, 0]), "give [1, 2, 4, 4]")  # rows 5, 7
    _refused(_with_option(m, 0, "shrink_axis_mask", 1), "give [4, 4, 4]")
    moved = _with_data(_with_data(m, begin, [0, 2, 0, 0]), end, [1, 6, 8, 4])
    _refused(moved, "give [1, 2, 4, 4]")  # rows 2, 4
    _refused(_with_option(moved, 0, "offset", True), "give [1, 3, 4, 4]")  # end 2 + 6: 2, 4, 6
    backwards = _with_data(_with_data(m, strides, [1, -2, 2, 1]), begin, [0, 7, 0, 0])
    backwards = _with_data(backwards, end, [1, 0, 8, 4])
    verify_ir(backwards)  # rows 7, 5, 3, 1
    _refused(_with_data(backwards, begin, [0, 5, 0, 0]), "give [1, 3, 4, 4]")  # 5, 3, 1
    _refused(_with_data(backwards, end, [1, 6, 8, 4]), "give [1, 1, 4, 4]")  # 7
    verify_ir(_with_option(_with_data(backwards, end, [1, 6, 8, 4]), 0, "end_mask", 2))


def test_concatenation_along_its_axis() -> None:
    m = _model("concatenation_int8")  # (1,4,4,3) + (1,4,4,5) on axis 3
    _refused(_with_option(m, 0, "axis", 1), "CONCATENATION", "input 0")
    verify_ir(_with_option(m, 0, "axis", -1))
    _refused(_with_tensor(m, 1, shape=(1, 4, 4, 6)), "CONCATENATION", "give 9 on axis 3")


def test_elementwise_broadcasting() -> None:
    m = _model("add_int8")  # (1, 4, 4, 8) + (1, 4, 4, 8)
    verify_ir(_with_tensor(m, 1, shape=(8,)))
    verify_ir(_with_tensor(m, 1, shape=(1, 4, 1, 1)))
    _refused(_with_tensor(m, 1, shape=(2, 1, 1, 1, 1)), "operator 0 ADD", "give [2, 1, 4, 4, 8]")
    _refused(_with_tensor(m, 1, shape=(3,)), "operator 0 ADD", "do not broadcast")
    _refused(_with_tensor(_model("mul_int8"), 1, shape=(2, 1, 1, 1)), "operator 0 MUL")


def test_reshape_keeps_the_element_count() -> None:
    m = _model("reshape_static")  # (1, 4, 4, 8) -> (1, 128)
    y = m.subgraphs[0].operators[0].outputs[0]
    _refused(_with_tensor(m, y, shape=(1, 127)), "operator 0 RESHAPE", "128 elements")
    verify_ir(_with_tensor(m, y, shape=(2, 64)))
    _refused(_with_tensor(m, y, shape=(3, -1)), "operator 0 RESHAPE")


def test_fully_connected_units_and_rows() -> None:
    m = _model("fc_int8_per_tensor")  # (1, 16) x (16, 16)
    _refused(_with_tensor(m, 0, shape=(1, 15)), "operator 0 FULLY_CONNECTED", "rows of 16")
    y = m.subgraphs[0].operators[0].outputs[0]
    _refused(_with_tensor(m, y, shape=(1, 12)), "operator 0 FULLY_CONNECTED", "1 rows of 16")


def test_unknown_kinds_and_unknown_dims_are_not_shape_checked() -> None:
    m = _model("stateless_math_float")  # EXP, FLOOR, ...: no shape rule
    verify_ir(_with_tensor(m, 1, shape=(3, 3)))
    conv = _model("conv_int8_per_channel")
    verify_ir(_with_tensor(conv, 3, shape=(1, -1, 8, 6)))


def test_all_problems_are_counted_in_the_one_line() -> None:
    m = _model("relu_int8")
    broken = _with_op(_with_op(m, 1, outputs=(1,)), 2, outputs=(0,))
    assert "(and 3 more)" in _refused(broken, "invalid IR")  # two outputs never produced


# ---- check_model: what every command runs on the model it reads ------------------


def test_check_model_refuses_in_one_line_naming_the_file_and_the_count() -> None:
    m = _model("relu_int8")
    broken = _with_op(_with_op(m, 1, outputs=(1,)), 2, outputs=(1,))
    with pytest.raises(ModelFormatError) as info:
        check_model(broken, "net.tflite")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("net.tflite: invalid model: subgraph 0 operator 1 RELU")
    assert message.endswith(f"(and {len(ir_problems(broken)) - 1} more)")
    check_model(m, "net.tflite")  # a valid model passes


def _relus(model: Model, reads: list[int]) -> Model:
    """relu_int8's first RELU repeated: operator i writes tensor i + 1 and reads tensor
    ``reads[i]``; tensor 0 is the subgraph input, the last tensor its output."""
    sg = model.subgraphs[0]
    n = len(reads)
    act = sg.tensors[1]
    tensors = (sg.tensors[0], *(replace(act, index=i, name=f"t{i}") for i in range(1, n + 1)))
    relu = sg.operators[0]
    ops = tuple(replace(relu, index=i, inputs=(r,), outputs=(i + 1,)) for i, r in enumerate(reads))
    sg = replace(sg, tensors=tensors, operators=ops, inputs=(0,), outputs=(n,))
    return replace(model, subgraphs=(sg,))


def test_data_flow_is_linear_in_the_operators() -> None:
    """40,000 operators in reverse order (each reads what the next writes: no cycle),
    and the same closed into one ring (a cycle through all): each read said once, the
    ring's operators named in one line. A search per read took minutes here."""
    import signal

    n = 40_000
    m = _model("relu_int8")

    def hung(*_) -> None:
        raise TimeoutError("the data-flow check ran for minutes")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)  # a failure detector only: a few seconds when linear
    try:
        reads = [i + 2 for i in range(n - 1)]  # operator i reads what i + 1 writes
        backwards = ir_problems(_relus(m, [*reads, 0]))  # the last reads the input
        ring = ir_problems(_relus(m, [*reads, 1]))  # the last reads what 0 writes
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert len(backwards) == n - 1 and not any("cycle" in p for p in backwards)
    assert "(produced later by operator 1)" in backwards[0]
    assert len(ring) == n - 1 and all("a cycle" in p for p in ring)
    chain = f"0 -> 1 -> 2 -> 3 -> ... -> {n - 2} -> {n - 1} -> 0 (40,000 operators)"
    assert ring[0].endswith(f"a cycle, operators {chain} each read what the next one writes")
    assert ring[1].endswith("a cycle, operator 2 depends on this one through the data")


# ---- the model's tables: signature defs, metadata, offline plan --------------------


def _signed() -> Model:
    model = _model("keras_residual_relu_int8")
    sg = model.subgraphs[0]
    sd = SignatureDef("serving_default", 0, (("x", sg.inputs[0]),), (("y", sg.outputs[0]),))
    return replace(model, signature_defs=(sd,))


def _one_problem(model: Model) -> str:
    found = ir_problems(model)
    assert len(found) == 1, found
    return found[0]


def test_a_signature_def_is_well_formed() -> None:
    assert ir_problems(_signed()) == []


def test_a_signature_output_beyond_the_tensors() -> None:
    model = _signed()
    n = len(model.subgraphs[0].tensors)
    sd = replace(model.signature_defs[0], outputs=(("y", n),))
    problem = _one_problem(replace(model, signature_defs=(sd,)))
    assert problem == (
        f"signature def 0 ('serving_default'): output 'y' is tensor {n}, but subgraph 0 "
        f"has {n} tensors"
    )


def test_a_signature_input_that_is_not_a_subgraph_input() -> None:
    model = _signed()
    inner = model.subgraphs[0].operators[0].outputs[0]
    sd = replace(model.signature_defs[0], inputs=(("x", inner),))
    assert "input 'x' is tensor" in _one_problem(replace(model, signature_defs=(sd,)))
    assert "not an input of subgraph 0" in _one_problem(replace(model, signature_defs=(sd,)))


def test_a_signature_of_a_missing_subgraph_and_repeated_names_and_keys() -> None:
    model = _signed()
    sd = model.signature_defs[0]
    assert "names subgraph 3, but there are 1" in _one_problem(
        replace(model, signature_defs=(replace(sd, subgraph=3),))
    )
    twice = replace(sd, outputs=(*sd.outputs, *sd.outputs))
    assert "output 'y' is named twice" in _one_problem(replace(model, signature_defs=(twice,)))
    assert "its key is another signature def's" in _one_problem(
        replace(model, signature_defs=(sd, sd))
    )


def test_metadata_beyond_the_buffers_and_an_offline_plan_of_another_length() -> None:
    model = _signed()
    n = len(model.buffers)
    assert _one_problem(replace(model, metadata=(("m", n),))) == (
        f"metadata 'm' uses buffer {n}, but there are {n} buffers"
    )
    short = replace(model, stored_plan=(0,) * (model.tensor_count - 1))
    assert "the offline plan has" in _one_problem(short)
