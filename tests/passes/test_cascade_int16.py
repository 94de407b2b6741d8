"""The ``cascade`` pass on int16x8 models: int16 stages (TFLM's int16 Prepare
parameters, the accumulator word, two-byte rings), TRANSPOSE_CONV and CONCATENATION
stages, and chains several activations enter whole.

Whether the kernel computes the same bytes as TFLM is proven in TFLM built from
source (tests/tflm/test_cascade_kernel.py); here, what the pass writes."""

from __future__ import annotations

import pytest
from kits.opmodels import I8, I16, I32, I64, Net, int16x8_network
from testkit import kernel_set

from arenaplan.builder.unet import unet_denoiser
from arenaplan.ir import cascade_format as f
from arenaplan.ir.model import Operator
from arenaplan.ir.row_range import NO_ROWS, RowRange
from arenaplan.ir.verifier import verify_ir
from arenaplan.passes import cascade_quant as p
from arenaplan.passes import make_pass, run_passes
from arenaplan.passes.cascade import longest_chains
from arenaplan.passes.cascade_chain import block_rows, chain_of
from arenaplan.passes.cascade_rows import INPUT, RowGeometry, ring_rows
from arenaplan.passes.cascade_stage import Uncascadable, stage_of
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.cmsis_nn.buffer_sizes import Dims, convolve_wrapper_s16_buffer
from arenaplan.tflm.cmsis_nn.cascade import work_bytes

SAME = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
DECODER = list(range(17, 26))  # the built U-Net's decoder: TRANSPOSE_CONV .. CONV_2D


def _conv_model(bias, dtype=I16, depthwise=False, zero=0, **options) -> bytes:
    """One 3x3 convolution of an [1, 6, 5, 4] activation of ``dtype``; ``bias``: its
    type (None: no bias)."""
    n = Net("conv")
    x = n.act((1, 6, 5, 4), dtype, 0.001, zero)
    y = n.act((1, 6, 5, 4), dtype, 0.002)
    w = n.weights((1, 3, 3, 4), 3) if depthwise else n.weights((4, 3, 3, 4), 0)
    b = -1 if bias is None else n.bias(4, bias, 4)
    if depthwise:
        n.op("DEPTHWISE_CONV_2D", [x, w, b], [y], depth_multiplier=1, **SAME, **options)
    else:
        n.op("CONV_2D", [x, w, b], [y], **SAME, **options)
    return n.done([x], [y])


def _stage(data: bytes, index: int = 0):
    model = read_model_bytes(data)
    sg = model.subgraphs[0]
    return stage_of(sg, sg.operators[index], model.buffers)


def test_int16_conv_records_the_accumulator_tflm_uses() -> None:
    """conv.cc: an int32 bias, or none and quantized_bias_type INT32, sums in int32
    (acc32 1); an int64 bias or none otherwise in int64 (0). Element type 1, the
    clamp int16's."""
    cases = [(I64, {}, 0), (I32, {}, 1), (None, {}, 0), (None, {"quantized_bias_type": 2}, 1)]
    for bias, options, acc32 in cases:
        w = _stage(_conv_model(bias, **options)).words
        assert (w[f.ELEMENT_TYPE], w[f.ACC32]) == (1, acc32), (bias, options)
        assert (w[f.ACT_MIN], w[f.ACT_MAX]) == (-32768, 32767)
    assert _stage(_conv_model(I64, depthwise=True)).words[f.ACC32] == 0
    int8 = _stage(_conv_model(I32, dtype=I8)).words
    assert (int8[f.ELEMENT_TYPE], int8[f.ACC32], int8[f.ACT_MAX]) == (0, 0, 127)


def test_int16_stages_refuse_what_tflm_would_not_compute_exactly() -> None:
    with pytest.raises(Uncascadable, match="TFLM reads it as int64"):
        _stage(_conv_model(I32, depthwise=True))  # depthwise_conv.cc reads int64
    with pytest.raises(Uncascadable, match="zero point other than 0"):
        _stage(_conv_model(I64, zero=3))
    with pytest.raises(Uncascadable, match="neither int64 nor int32"):
        _stage(_conv_model(I16))


def test_int16_elementwise_stages_carry_tflm_prepare_parameters() -> None:
    """ADD's left shift 15 (add_common.cc's int16 path), RELU's and LEAKY_RELU's
    multipliers as for int8, every clamp int16's; the stages' sources as written."""
    model = read_model_bytes(int16x8_network())
    sg = model.subgraphs[0]

    def q(t: int) -> tuple[float, int]:
        quant = sg.tensors[t].quantization
        return quant.scales[0], quant.zero_points[0]

    seen = set()
    for op in sg.operators:
        if op.opcode not in ("ADD", "LEAKY_RELU", "MUL", "PAD"):
            continue
        seen.add(op.opcode)
        w = stage_of(sg, op, model.buffers).words
        assert w[f.ELEMENT_TYPE] == 1 and (w[f.ACT_MIN], w[f.ACT_MAX]) == (-32768, 32767)
        x, y = q(op.inputs[0]), q(op.outputs[0])
        if op.opcode == "ADD":
            a = p.add_params(x, q(op.inputs[1]), y, bits=16)
            assert a.left_shift == 15 and w[f.ADD_WORDS + 1] == 15
            assert w[f.ADD_WORDS + 2 : f.ADD_WORDS + 8] == (
                a.input1_multiplier, a.input1_shift, a.input2_multiplier, a.input2_shift,
                a.output_multiplier, a.output_shift)  # fmt: skip
        elif op.opcode == "LEAKY_RELU":
            m1, s1, m2, s2 = p.leaky_relu_params(x, y, op.options.get("alpha"))
            assert (w[f.OUT_MULT], w[f.OUT_SHIFT], w[f.ALPHA_MULT], w[f.ALPHA_SHIFT]) == (
                m1, s1, m2, s2)  # fmt: skip
        elif op.opcode == "MUL":
            assert (w[f.OUT_MULT], w[f.OUT_SHIFT]) == p.mul_params(x, q(op.inputs[1]), y)
        else:
            assert w[f.PAD_VALUE] == 0  # pad.cc pads int16 with 0
    assert seen == {"ADD", "LEAKY_RELU", "MUL", "PAD"}
    assert p.relu_params((0.01, 0), (0.02, 0), bits=16)[2:] == (0, 32767)
    assert p.relu6_range((0.001, 0), bits=16) == (0, 6000)
    assert p.activation_range("RELU6", 0.0001, 0, bits=16) == (0, 32767)


def test_a_chain_is_int8_or_int16() -> None:
    """A stage's activations are of one type, and so are a chain's stages."""
    n = Net("mixed")
    x16, x8 = n.act((1, 4, 4, 2), I16, 0.001), n.act((1, 4, 4, 2), I8, 0.05)
    y16, y8 = n.act((1, 4, 4, 2), I16, 0.001), n.act((1, 4, 4, 2), I8, 0.05)
    n.op("RELU", [x16], [y16])
    n.op("RELU", [x8], [y8])
    z = n.act((1, 4, 4, 2), I16, 0.002)
    n.op("ADD", [x16, x8], [z])
    model = read_model_bytes(n.done([x16, x8], [y16, y8, z]))
    sg = model.subgraphs[0]
    with pytest.raises(Uncascadable, match="int8 and int16 operators in one chain"):
        chain_of(sg, [0, 1], model.buffers)
    with pytest.raises(Uncascadable, match="not all of one type"):
        stage_of(sg, sg.operators[2], model.buffers)


def test_int16_rings_hold_two_bytes_an_element() -> None:
    """Ring offsets advance by rows x out_w x out_c x 2 bytes (4-aligned)."""
    model = read_model_bytes(unet_denoiser())
    sg = model.subgraphs[0]
    chain = chain_of(sg, DECODER, model.buffers)
    at = 0
    for w in chain.records[:-1]:
        assert w[f.RING_OFFSET] == at and w[f.ELEMENT_TYPE] == 1
        at += -(-w[f.RING_ROWS] * w[f.OUT_W] * w[f.OUT_C] * 2 // 4) * 4
    assert chain.scratch == at


def _transpose(in_h: int, out_h: int, k: int, s: int, pad: int) -> RowGeometry:
    return RowGeometry("TRANSPOSE_CONV", INPUT, INPUT, in_h, out_h, k, s, 1, pad)


@pytest.mark.parametrize(("in_h", "k", "s", "same"), [(5, 3, 2, True), (5, 4, 2, False),
                         (4, 2, 3, True), (6, 3, 1, True), (3, 5, 2, False)])  # fmt: skip
def test_transpose_conv_row_reads_the_input_rows_that_reach_it(in_h, k, s, same) -> None:
    """needs(y) of TRANSPOSE_CONV: the input rows r whose scatter (r * stride - pad +
    filter row) lands on y, as TFLM's reference kernel adds them."""
    out_h = in_h * s if same else (in_h - 1) * s + k
    total = max((-(-out_h // s) - 1) * s + k - out_h, 0) if same else 0
    g = _transpose(in_h, out_h, k, s, total // 2)
    for y in range(out_h):
        rows = [r for r in range(in_h) for fy in range(k) if r * s - total // 2 + fy == y]
        assert g.needs(y) == (RowRange(min(rows), max(rows) + 1) if rows else NO_ROWS), y
    chain = [g, RowGeometry("CONV_2D", 0, INPUT, out_h, out_h, 3, 1, 1, 1)]
    assert ring_rows(chain)[0] >= 1


def test_transpose_conv_and_concatenation_are_int16_stages() -> None:
    model = read_model_bytes(unet_denoiser())
    sg = model.subgraphs[0]
    kinds = {}
    for op in sg.operators:
        if op.opcode in ("TRANSPOSE_CONV", "CONCATENATION"):
            st = stage_of(sg, op, model.buffers)
            kinds.setdefault(op.opcode, st)
            assert st.words[f.KIND] == f.KINDS[op.opcode] and st.words[f.ELEMENT_TYPE] == 1
    tconv = kinds["TRANSPOSE_CONV"]
    assert tconv.sources == (sg.operators[17].inputs[2],)  # shape, filter, input, bias
    assert all(s in range(-31, 8) for s in tconv.quant[len(tconv.quant) // 2 :])
    concat = kinds["CONCATENATION"]
    assert concat.words[f.IN_C] + sg.tensors[concat.sources[1]].shape[3] == concat.words[f.OUT_C]
    int8 = read_model_bytes(_transpose_int8())
    with pytest.raises(Uncascadable, match="only int16x8"):
        stage_of(int8.subgraphs[0], int8.subgraphs[0].operators[0], int8.buffers)


def _transpose_int8() -> bytes:
    n = Net("tconv8")
    x = n.act((1, 4, 4, 3), I8)
    shape = n.const([1, 8, 8, 5], I32)
    y = n.act((1, 8, 8, 5), I8)
    w = n.weights((5, 3, 3, 3), 0)
    n.op("TRANSPOSE_CONV", [shape, w, x, -1], [y], padding="SAME", stride_w=2, stride_h=2)
    return n.done([x], [y])


def test_a_chain_takes_several_activations_whole() -> None:
    """The U-Net's decoder: the bottleneck and both skip tensors enter whole, as the
    operator's inputs 0, 1, 2 in the order the stages first read them (source words
    -1, -2, -3); the rewritten model is valid and writes back."""
    model = read_model_bytes(unet_denoiser())
    sg = model.subgraphs[0]
    assert DECODER in longest_chains(sg, model.buffers)
    chain = chain_of(sg, DECODER, model.buffers)
    ops = sg.operators
    assert chain.inputs == (ops[17].inputs[2], ops[19].inputs[1], ops[24].inputs[1])
    srcs = [(w[f.SRC0], w[f.SRC1]) for w in chain.records]
    assert srcs[0][0] == -1 and srcs[2] == (1, -2) and srcs[7] == (6, -3)
    out, _ = run_passes(model, [make_pass("cascade", {})])
    verify_ir(out)
    cascades = [op for op in out.subgraphs[0].operators if op.opcode == f.OPCODE]
    decoder = max(cascades, key=lambda op: len(f.decode(op).records))
    names = [out.subgraphs[0].tensors[t].name for t in decoder.inputs[:3]]
    assert names == [sg.tensors[t].name for t in chain.inputs]  # renumbered by the edit


def test_wide_int16_convolutions_step_in_pixel_pairs_with_cmsis_nn() -> None:
    """CMSIS-NN's int16 CONV_2D (C, DSP) sums a lone pixel otherwise than a pair above
    512 columns: such a stage's steps hold an even number of pixels, even at
    step_pixels 0; with MVE (the same sums either way) or unpaired, one row."""
    assert block_rows("CONV_2D", 5, 9, kernel_set("cmsis_nn"), step_pixels=0, paired=True) == 2
    assert block_rows("CONV_2D", 5, 9, kernel_set("cmsis_nn+dsp"), step_pixels=0, paired=True) == 2
    assert block_rows("CONV_2D", 6, 9, kernel_set("cmsis_nn"), step_pixels=0, paired=True) == 0
    assert block_rows("CONV_2D", 5, 9, kernel_set("cmsis_nn+mve"), step_pixels=0, paired=True) == 0
    assert block_rows("CONV_2D", 5, 9, kernel_set("cmsis_nn"), step_pixels=0) == 0
    n = Net("wide")
    x = n.act((1, 6, 5, 64), I16, 0.001)
    y = n.act((1, 6, 5, 4), I16, 0.002)
    n.op("CONV_2D", [x, n.weights((4, 3, 3, 64), 0), n.bias(4, I64, 4)], [y], **SAME)
    z = n.act((1, 6, 5, 4), I16, 0.002)
    n.op("LEAKY_RELU", [y], [z], alpha=0.1)
    model = read_model_bytes(n.done([x], [z]))
    out, _ = run_passes(
        model, [make_pass("cascade", {"kernels": kernel_set("cmsis_nn"), "step_pixels": 0})]
    )
    op = next(o for o in out.subgraphs[0].operators if o.opcode == f.OPCODE)
    assert f.decode(op).records[0][f.BLOCK_ROWS] == 2


def test_cmsis_nn_work_buffer_of_int16_convolutions() -> None:
    """arm_convolve_wrapper_s16_get_buffer_size for CONV_2D (two or, with MVE, four
    int16 im2col columns); none for DEPTHWISE_CONV_2D (TFLM gives
    arm_depthwise_conv_s16 no buffer)."""
    op = _cascade_op(_conv_model(I64))
    for features in ("c", "dsp", "mve"):
        want = convolve_wrapper_s16_buffer(features, Dims(1, 6, 5, 4), Dims(1, 3, 3, 4))
        assert work_bytes(features, op) == want
    assert convolve_wrapper_s16_buffer("c", Dims(1, 6, 5, 4), Dims(1, 3, 3, 4)) == 2 * 36 * 2
    assert work_bytes("mve", _cascade_op(_conv_model(I64, depthwise=True))) == 0


def _cascade_op(data: bytes) -> Operator:
    """The cascade operator of a model's operator 0 alone."""
    model = read_model_bytes(data)
    chain = chain_of(model.subgraphs[0], [0], model.buffers)
    options = f.encode(chain.records, chain.scratch)
    return Operator(0, f.OPCODE, True, chain.inputs, (chain.output,), custom_options=options)


def test_int16_unet_cascades_lower_the_estimate() -> None:
    """The pass's own estimate (head + arm32 tail) of the built U-Net: the encoder's
    pairs, the whole decoder (no TRANSPOSE_CONV scratch of a whole int64 output)."""
    model = read_model_bytes(unet_denoiser())
    out, records = run_passes(model, [make_pass("cascade", {})])
    stats = records[0].stats
    assert stats["score_after"] <= stats["score_before"] - 6_000
    left = {op.opcode for op in out.subgraphs[0].operators}
    assert not left & {"TRANSPOSE_CONV", "QUANTIZE", "CONCATENATION", "CONV_2D", "LEAKY_RELU"}


def test_quantize_within_a_type_is_a_stage() -> None:
    """QUANTIZE from int16 to int16 (the converter's, before a CONCATENATION):
    Requantize's multiplier, input over output scale in double; the type's clamp. From
    int16 to int8 it is no stage (a chain's activations are of one type)."""
    model = read_model_bytes(unet_denoiser())
    sg = model.subgraphs[0]
    op = sg.operators[18]
    w = stage_of(sg, op, model.buffers).words
    scale_in = sg.tensors[op.inputs[0]].quantization.scales[0]
    scale_out = sg.tensors[op.outputs[0]].quantization.scales[0]
    assert (w[f.OUT_MULT], w[f.OUT_SHIFT]) == p.requantize_params((scale_in, 0), (scale_out, 0))
    assert (w[f.KIND], w[f.ACT_MIN], w[f.ACT_MAX]) == (f.KINDS["QUANTIZE"], -32768, 32767)
    n = Net("narrowing")
    x = n.act((1, 4, 4, 2), I16, 0.001)
    y = n.act((1, 4, 4, 2), I8, 0.05)
    n.op("QUANTIZE", [x], [y])
    narrow = read_model_bytes(n.done([x], [y]))
    with pytest.raises(Uncascadable, match="not all of one type"):
        stage_of(narrow.subgraphs[0], narrow.subgraphs[0].operators[0], narrow.buffers)


def test_chains_of_one_row_run_along_the_columns() -> None:
    """A 1-D network's chains (one-row tensors, 1xk windows) are written along the
    columns: each record's rows and columns swapped (word 47 set), so rings hold a
    few columns, not the whole row; a 2-D network's are not, nor, for CMSIS-NN
    kernels, an int8 chain that convolves (the s8 wrappers choose by shape)."""
    model = read_model_bytes(unet_denoiser(frames=1, bins=64, channels=4))
    out, _ = run_passes(model, [make_pass("cascade", {})])
    cascades = [op for op in out.subgraphs[0].operators if op.opcode == f.OPCODE]
    decoder = max(cascades, key=lambda op: len(f.decode(op).records))
    records = f.decode(decoder).records
    assert all(w[f.COLUMNS] == 1 and w[f.IN_W] == w[f.OUT_W] == w[f.FILTER_W] == 1 for w in records)
    widths = [w[f.OUT_H] for w in records]
    assert all(0 <= w[f.RING_ROWS] <= 3 for w in records[:-1]) and max(widths) == 64
    flat, _ = run_passes(read_model_bytes(unet_denoiser()), [make_pass("cascade", {})])
    assert all(
        w[f.COLUMNS] == 0
        for op in flat.subgraphs[0].operators
        if op.opcode == f.OPCODE
        for w in f.decode(op).records
    )
    n = Net("row8")
    x = n.act((1, 1, 12, 2), I8)
    y = n.act((1, 1, 12, 4), I8)
    n.op("CONV_2D", [x, n.weights((4, 1, 3, 2), 0), n.bias(4, I32, 4)], [y], **SAME)
    z = n.act((1, 1, 12, 4), I8)
    n.op("RELU", [y], [z])
    row8 = read_model_bytes(n.done([x], [z]))
    sg = row8.subgraphs[0]
    assert chain_of(sg, [0, 1], row8.buffers).records[0][f.COLUMNS] == 1
    assert chain_of(sg, [0, 1], row8.buffers, kernel_set("cmsis_nn")).records[0][f.COLUMNS] == 0
