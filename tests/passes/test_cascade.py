"""The ``cascade`` pass: chains found, rings sized, refusals explained, the model valid.

Whether the kernel computes the same bytes as TFLM is proven in TFLM built from
source (tests/tflm/test_cascade_kernel.py); here, what the pass writes."""

from __future__ import annotations

import dataclasses

import pytest
from flatbuffers import flexbuffers
from testkit import kernel_set

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1, mobilenet_v2
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.cascade_format import HEADER_WORDS, MAX_STAGES, MEAN_ROWS, OPCODE, RECORD_WORDS
from arenaplan.ir.row_range import RowRange
from arenaplan.ir.verifier import verify_ir
from arenaplan.passes import make_pass, run_passes
from arenaplan.passes.cascade import Cascade, longest_chains
from arenaplan.passes.cascade_chain import block_rows, chain_of
from arenaplan.passes.cascade_rows import ADD, INPUT, RowGeometry, ring_rows
from arenaplan.passes.cascade_stage import Uncascadable, stage_of
from arenaplan.reader import read_model_bytes


def _conv(src: int, h: int, k: int = 3, s: int = 1) -> RowGeometry:
    pad = max((-(-h // s) - 1) * s + k - h, 0) // 2
    return RowGeometry("CONV_2D", src, INPUT, h, -(-h // s), k, s, 1, pad)


class _Rings:
    """The kernel's row order (docs/cascade.md) over rings of row numbers: every
    read must find the row it wants in its slot."""

    def __init__(self, stages: list[RowGeometry], rings: list[int]) -> None:
        self.g, self.rings = stages, rings
        self.slots = [[None] * max(r, 1) for r in rings]
        self.next = [0] * len(stages)
        self.ok = True

    def make(self, s: int, r: int) -> None:
        while s != INPUT and self.next[s] <= r:
            y, n = self.next[s], self.g[s].step(self.next[s])
            self.compute(s, y)
            for k in range(y, y + n):
                self.slots[s][k % len(self.slots[s])] = k
            self.next[s] += n

    def read(self, s: int, r: int) -> None:
        if s != INPUT and self.slots[s][r % len(self.slots[s])] != r:
            self.ok = False

    def compute(self, s: int, y: int) -> None:
        g = self.g[s]
        if g.kind == MEAN_ROWS:
            for r in range(g.in_h):
                self.make(g.src0, r)
                self.read(g.src0, r)
            return
        n = g.step(y)
        span = g.needs_step(y)
        self.make(g.src0, span.end - 1)
        if g.kind == ADD:
            self.make(g.src1, y + n - 1)
            for r in range(y, y + n):
                self.read(g.src1, r)
        for r in range(span.first, span.end):
            self.read(g.src0, r)


def _holds(stages: list[RowGeometry], rings: list[int]) -> bool:
    walk = _Rings(stages, rings)
    y = 0
    while y < stages[-1].out_h:
        walk.compute(len(stages) - 1, y)
        y += stages[-1].step(y)
    return walk.ok


CHAINS = {
    "conv3x3 -> conv3x3": [_conv(INPUT, 16), _conv(0, 16)],
    "conv -> stride-2 conv -> conv": [_conv(INPUT, 17), _conv(0, 17, 3, 2), _conv(1, 9, 1)],
    "residual": [
        _conv(INPUT, 12, 1),
        _conv(0, 12, 1),
        _conv(1, 12, 3),
        _conv(2, 12, 1),
        RowGeometry(ADD, 0, 3, 12, 12),
        RowGeometry(MEAN_ROWS, 4, INPUT, 12, 1),
    ],
    "dilated 5x5": [_conv(INPUT, 20), RowGeometry("CONV_2D", 0, INPUT, 20, 20, 5, 1, 2, 4)],
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_rings_hold_every_row_read_and_are_the_least_that_do(name: str) -> None:
    stages = CHAINS[name]
    rings = ring_rows(stages)
    assert rings[-1] == 0 and all(r > 0 for r in rings[:-1])
    assert _holds(stages, rings)
    for s in range(len(stages) - 1):
        if rings[s] > 1:
            smaller = [*rings[:s], rings[s] - 1, *rings[s + 1 :]]
            assert not _holds(stages, smaller), f"stage {s} needs fewer rows"


def test_rings_of_known_chains() -> None:
    assert ring_rows(CHAINS["conv3x3 -> conv3x3"]) == [3, 0]
    residual = ring_rows(CHAINS["residual"])
    assert residual[0] == 2  # the block input waits one row for the ADD
    assert residual[4] == 1  # the mean reads one row at a time


def _stepped(stages: list[RowGeometry], block: int) -> list[RowGeometry]:
    return [dataclasses.replace(g, block=block if g.kind != MEAN_ROWS else 1) for g in stages]


@pytest.mark.parametrize("block", [2, 3, 4])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_rings_of_steps_hold_whole_steps(name: str, block: int) -> None:
    """Stages computing several rows per step: rings that hold every row read, in
    whole steps (a multiple of block_rows: a step's rows in consecutive slots)."""
    stages = _stepped(CHAINS[name], block)
    rings = ring_rows(stages)
    assert rings[-1] == 0
    assert all(r > 0 and r % max(g.block, 1) == 0 for r, g in zip(rings[:-1], stages, strict=False))
    assert _holds(stages, rings)


def test_block_rows_fill_cmsis_nn_pixel_groups() -> None:
    assert block_rows("CONV_2D", 5, 25, kernel_set("reference")) == 0  # one row per step
    assert block_rows("DEPTHWISE_CONV_2D", 5, 25, kernel_set("cmsis_nn")) == 0
    assert block_rows("CONV_2D", 5, 25, kernel_set("cmsis_nn"), 16) == 4  # 20 pixels: >= 16, even
    assert (
        block_rows("CONV_2D", 3, 25, kernel_set("cmsis_nn+mve"), 16) == 8
    )  # 24 pixels: groups of 4
    assert block_rows("CONV_2D", 48, 48, kernel_set("cmsis_nn+dsp"), 16) == 0  # one row is enough
    assert block_rows("CONV_2D", 6, 3, kernel_set("cmsis_nn+mve"), 16) == 3  # all its rows
    assert block_rows("CONV_2D", 5, 25, kernel_set("cmsis_nn")) == 0  # by default a row


def test_cmsis_nn_steps_in_the_pass_output() -> None:
    """With CMSIS-NN kernels the pass writes the steps its chooser takes (MobileNetV1:
    larger steps where a cascade is not at the peak, pointwise CONV_2Ds of many input
    channels by the kernel's loop, word 38's path 2, over a folded bias tensor; the
    first two, of 8 and 16 channels, by CMSIS-NN's product, cheaper there) and the model
    predicts the kernel's work buffer as a second request; ``step_pixels`` 0 asks for
    a row per step everywhere; the reference kernels step a row, by path 0."""
    from arenaplan.ir.cascade_format import BLOCK_ROWS, CONV_PATH, decode, is_pointwise
    from arenaplan.tflm.scratch import scratch_requests
    from arenaplan.tflm.sizes import tensor_bytes

    def records(opts: dict) -> tuple[list[tuple[int, ...]], object]:
        out, _ = run_passes(model, [make_pass("cascade", opts)])
        ops = [op for op in out.subgraphs[0].operators if op.opcode == OPCODE]
        return [r for op in ops for r in decode(op).records], out

    model = read_model_bytes(mobilenet_v1(0.25, 96, 1, 2))
    chosen, out = records({"kernels": kernel_set("cmsis_nn")})
    assert any(r[BLOCK_ROWS] > 1 for r in chosen)
    looped = [r for r in chosen if r[CONV_PATH] == 2]
    assert looped and all(is_pointwise(r) for r in looped)
    assert all(r[CONV_PATH] == 2 for r in chosen if is_pointwise(r) and r[5] >= 32)
    assert any(t.name.endswith("folded_bias") for t in out.subgraphs[0].tensors)
    cascades = [op for op in out.subgraphs[0].operators if op.opcode == OPCODE]
    requests = scratch_requests(out, tensor_bytes(out), 8, "cmsis_nn")
    per_op = [sum(1 for q in requests if q.op == op.index) for op in cascades]
    assert 2 in per_op  # the chain's scratch and the work buffer
    rows, _ = records({"kernels": kernel_set("cmsis_nn"), "step_pixels": 0})
    assert all(r[BLOCK_ROWS] == 0 for r in rows)
    plain, _ = records({})
    assert all(r[BLOCK_ROWS] == 0 and r[CONV_PATH] == 0 for r in plain)


BUILT = {
    "mobilenet_v1_0.25_96x1": lambda: mobilenet_v1(0.25, 96, 1, 2),
    "mobilenet_v2_0.35_96": lambda: mobilenet_v2(0.35, 96),
    "ds_cnn_M": lambda: ds_cnn("M"),
}


@pytest.mark.parametrize("name", sorted(BUILT))
def test_pass_writes_valid_cascades(name: str) -> None:
    model = read_model_bytes(BUILT[name]())
    cascaded, records = run_passes(model, [make_pass("cascade", {})])
    verify_ir(cascaded)
    ops = cascaded.subgraphs[0].operators
    cascades = [op for op in ops if op.opcode == OPCODE]
    assert cascades and all(op.is_custom for op in cascades)
    assert records[0].changed and records[0].stats["score_after"] < records[0].stats["score_before"]
    for op in cascades:
        options = flexbuffers.Loads(op.custom_options)
        blob = bytes(options["chain"])
        words = [
            int.from_bytes(blob[k : k + 4], "little", signed=True) for k in range(0, len(blob), 4)
        ]
        assert options["version"] == 2 and words[0] == 2 and words[3] == RECORD_WORDS
        assert len(words) == HEADER_WORDS + words[1] * RECORD_WORDS
    back = read_model_bytes(write_model(cascaded))  # the writer keeps the operator
    assert [op.opcode for op in back.subgraphs[0].operators] == [op.opcode for op in ops]


def test_whole_cascade_estimates_reach_the_targets() -> None:
    """The pass's own estimate (head + arm32 tail) of the issue's models; TFLM measures
    them in benchmarks/cascade.py."""
    v1 = read_model_bytes(mobilenet_v1(0.25, 96, 1, 2))
    dscnn = read_model_bytes(ds_cnn("M"))
    assert Cascade().run(v1).stats["score_after"] <= 32_768
    assert Cascade(objective="head").run(dscnn).stats["score_after"] <= 20_500


def test_longest_chain_stops_at_what_has_no_stage() -> None:
    model = read_model_bytes(ds_cnn("M"))
    sg = model.subgraphs[0]
    chains = longest_chains(sg, model.buffers)
    assert chains == [list(range(10))]  # up to the pool; RESHAPE and FULLY_CONNECTED stay
    with pytest.raises(Uncascadable, match="RESHAPE has no stage"):
        stage_of(sg, sg.operators[10], model.buffers)
    with pytest.raises(Uncascadable, match="read outside the chain"):
        chain_of(sg, [1, 3], model.buffers)  # two separate operators: op 1's output leaves


def test_no_chain_is_longer_than_the_kernel_runs() -> None:
    model = read_model_bytes(mobilenet_v2(1.0, 96))  # 63 operators to the pool
    sg = model.subgraphs[0]
    assert all(len(c) <= MAX_STAGES for c in longest_chains(sg, model.buffers))
    with pytest.raises(Uncascadable, match="kernel runs 1 to 64"):
        chain_of(sg, list(range(MAX_STAGES + 1)), model.buffers)


def test_elementwise_operators_are_stages_with_tflm_prepare_parameters() -> None:
    """Each standalone element-wise operator of the kit's network is a stage whose
    words are what TFLM's Prepare computes (passes/cascade_quant.py), in one cascade."""
    from kits.elementwise_net import ELEMENTWISE_OPS, elementwise_net

    from arenaplan.ir import cascade_format as f
    from arenaplan.passes import cascade_quant as p

    model = read_model_bytes(elementwise_net())
    sg = model.subgraphs[0]

    def q(t: int) -> tuple[float, int]:
        quant = sg.tensors[t].quantization
        return quant.scales[0], quant.zero_points[0]

    seen = set()
    for op in sg.operators:
        if op.opcode not in ELEMENTWISE_OPS:
            continue
        seen.add(op.opcode)
        st = stage_of(sg, op, model.buffers)
        w = st.words
        x, y = q(op.inputs[0]), q(op.outputs[0])
        assert w[f.KIND] == f.KINDS[op.opcode] and w[f.IN_OFFSET] == -x[1]
        if op.opcode == "RELU":
            mult, shift, lo, hi = p.relu_params(x, y)
            assert (w[f.OUT_MULT], w[f.OUT_SHIFT], w[f.ACT_MIN], w[f.ACT_MAX]) == (
                mult, shift, lo, hi)  # fmt: skip
        elif op.opcode == "RELU6":
            assert (w[f.ACT_MIN], w[f.ACT_MAX]) == p.relu6_range(x)
        elif op.opcode == "LEAKY_RELU":
            m1, s1, m2, s2 = p.leaky_relu_params(x, y, op.options.get("alpha"))
            assert (w[f.OUT_MULT], w[f.OUT_SHIFT], w[f.ALPHA_MULT], w[f.ALPHA_SHIFT]) == (
                m1, s1, m2, s2)  # fmt: skip
        elif op.opcode == "MUL":
            assert st.sources == tuple(op.inputs)
            assert (w[f.OUT_MULT], w[f.OUT_SHIFT]) == p.mul_params(x, q(op.inputs[1]), y)
            assert w[f.IN2_OFFSET] == -q(op.inputs[1])[1]
        else:  # SUB: ADD's words, computed in float
            sub = p.sub_params(x, q(op.inputs[1]), y)
            assert w[f.ADD_WORDS : f.ADD_WORDS + 8] == (
                sub.input2_offset, sub.left_shift, sub.input1_multiplier, sub.input1_shift,
                sub.input2_multiplier, sub.input2_shift, sub.output_multiplier,
                sub.output_shift)  # fmt: skip
    assert seen == set(ELEMENTWISE_OPS)
    # the alpha < 0 LEAKY_RELU: a negative multiplier, as TFLM's QuantizeMultiplier gives
    assert p.leaky_relu_params((0.05, 0), (0.05, 0), -0.25)[2] < 0
    # SUB's multipliers in float differ from ADD's in double for some scales
    scales = [(0.1 * k / 7, 0) for k in range(1, 40)]
    assert any(
        p.sub_params(a, b, (0.09, 0)) != p.add_params(a, b, (0.09, 0))
        for a in scales
        for b in scales[:5]
    )
    chains = longest_chains(sg, model.buffers)
    assert [len(c) for c in chains] == [len(sg.operators)]  # one run: every operator


def test_elementwise_stages_read_row_y_and_are_costed() -> None:
    """RELU, MUL, ... read row y of their sources (two for MUL and SUB), like ADD;
    the traffic model and the roofline count each stage's elements."""
    from kits.elementwise_net import elementwise_net

    from arenaplan.cost.roofline import cascade_parts
    from arenaplan.cost.traffic import traffic_details
    from arenaplan.ir import cascade_format as f

    for kind in ("RELU", "RELU6", "LEAKY_RELU", "MUL", "SUB"):
        g = RowGeometry(kind, 0, 1 if kind in ("MUL", "SUB") else INPUT, 8, 8)
        assert g.needs(5) == RowRange(5, 6)
    residual = [_conv(INPUT, 10), _conv(0, 10), RowGeometry("MUL", 0, 1, 10, 10)]
    assert ring_rows(residual) == ring_rows([*residual[:2], RowGeometry(ADD, 0, 1, 10, 10)])
    model, _ = run_passes(read_model_bytes(elementwise_net()), [make_pass("cascade", {})])
    op = max(
        (o for o in model.subgraphs[0].operators if o.opcode == OPCODE),
        key=lambda o: len(cascade_parts(o)),
    )
    parts = cascade_parts(op)
    opcodes = [o for _, o, _ in parts]
    assert {"RELU", "RELU6", "LEAKY_RELU", "MUL", "SUB"} <= set(opcodes)
    for kind, opcode, work in parts:
        if opcode in ("RELU", "MUL"):
            assert kind == "elementwise" and work == 24 * 24 * 8
    # each stage stores each of its output elements once; the element-wise ones load
    # each input element once (MUL, SUB: of both inputs)
    mine = next(t for t in traffic_details(model, fixed=False) if t.op == op.index)
    records = f.decode(op).records
    assert mine.total.stores == sum(w[f.OUT_H] * w[f.OUT_W] * w[f.OUT_C] for w in records)
    elementwise_loads = sum(
        work * (2 if o in ("MUL", "SUB", "ADD") else 1)
        for kind, o, work in parts
        if kind == "elementwise"
    )
    assert mine.total.loads >= elementwise_loads


def test_a_tensor_taller_than_a_cascade_takes_is_refused_not_simulated() -> None:
    from dataclasses import replace

    from arenaplan.passes.cascade_stage import MAX_ROWS

    model = read_model_bytes(ds_cnn("M"))
    sg = model.subgraphs[0]
    op = sg.operators[1]  # a depthwise convolution: make its output absurdly tall
    out = sg.tensors[op.outputs[0]]
    tall = replace(out, shape=(1, 2**31 - 1, *out.shape[2:]))
    tensors = tuple(tall if t.index == out.index else t for t in sg.tensors)
    with pytest.raises(Uncascadable, match=f"a cascade takes {MAX_ROWS:,}"):
        stage_of(replace(sg, tensors=tensors), op, model.buffers)


def test_a_chain_whose_words_leave_int32_is_not_cascaded() -> None:
    """Absurd scales can give multipliers beyond the kernel's int32 words: refused as a
    chain (the pass leaves those operators as they are), never an overflow."""
    from dataclasses import replace as with_

    from arenaplan.builder.ds_cnn import ds_cnn
    from arenaplan.passes.cascade_chain import _check_words, chain_of
    from arenaplan.passes.cascade_stage import Uncascadable
    from arenaplan.reader import read_model_bytes

    model = read_model_bytes(ds_cnn("M"))
    stage = chain_of(model.subgraphs[0], [0], model.buffers).stages[0]
    _check_words([stage])
    low = (-(2**31) - 1, *stage.words[1:])
    for wide in (with_(stage, quant=(2**31,)), with_(stage, words=low)):
        with pytest.raises(Uncascadable, match="int32"):
            _check_words([wide])


def test_constant_operands_are_stages_with_their_strides() -> None:
    """MUL, ADD, SUB by a constant (per channel, scalar, first or second), MINIMUM and
    MAXIMUM by a constant or of two activations, MEAN over rows and columns: stages,
    the constant outside the chain's activations, its strides and order in the words;
    the written operator names the constant by its input index."""
    from kits.keras_like import bn_classifier, clamp_net

    from arenaplan.ir import cascade_format as f

    model = read_model_bytes(clamp_net())
    sg = model.subgraphs[0]
    words = {}
    for op in sg.operators[:-1]:
        st = stage_of(sg, op, model.buffers)
        words[op.opcode, st.words[f.CONST_FIRST]] = st.words
        if op.opcode in ("MUL", "MINIMUM", "SUB") or op.index == 3:
            other = op.inputs[1 - op.inputs.index(st.const)]
            assert st.sources == (other,)
    scalar = words["MINIMUM", 0]
    assert scalar[f.CONST_STRIDE_H : f.CONST_FIRST + 1] == (0, 0, 0, 0)
    per_channel_first = words["SUB", 1]  # [1, 1, 1, C], the operator's first input
    assert per_channel_first[f.CONST_STRIDE_H : f.CONST_FIRST + 1] == (0, 0, 1, 1)
    mean = stage_of(sg, sg.operators[-1], model.buffers)
    assert mean.kind == "MEAN" and mean.words[f.OUT_H : f.OUT_C + 1] == (1, 1, 8)
    assert longest_chains(sg, model.buffers) == [list(range(len(sg.operators)))]
    out, _ = run_passes(model, [make_pass("cascade", {})])
    op = next(o for o in out.subgraphs[0].operators if o.opcode == OPCODE)
    records = f.decode(op).records
    rows = {r[f.ACC_OFFSET] for r in records if r[f.CONST_IN] >= 0}
    assert len(rows) == 1 and -1 not in rows  # every broadcast constant spreads into one row
    for r in records:
        if r[f.CONST_IN] >= 0:
            const = out.subgraphs[0].tensors[op.inputs[r[f.CONST_IN]]]
            assert r[f.SRC1] == -1 and const.is_constant
    bn = read_model_bytes(bn_classifier())
    assert longest_chains(bn.subgraphs[0], bn.buffers)[0] == list(range(10))  # to the pool


def test_constant_operands_that_cannot_be_stages_say_why() -> None:
    """An activation that broadcasts, a constant of another type or one that does not
    broadcast to the output: refused in a few words (the chain stops there)."""
    from dataclasses import replace

    from kits.keras_like import clamp_net

    from arenaplan.ir.dtypes import DType

    model = read_model_bytes(clamp_net())
    sg = model.subgraphs[0]
    mul = sg.operators[1]
    const = sg.tensors[mul.inputs[1]]

    def with_const(t) -> object:
        tensors = tuple(t if x.index == const.index else x for x in sg.tensors)
        return replace(sg, tensors=tensors)

    sub = sg.operators[4]  # SUB, its [1, 1, 1, 8] constant first: as [8, 1, 1] it does not
    per_channel = sg.tensors[sub.inputs[0]]
    tensors = tuple(replace(t, shape=(8, 1, 1)) if t is per_channel else t for t in sg.tensors)
    with pytest.raises(Uncascadable, match="does not broadcast"):
        stage_of(replace(sg, tensors=tensors), sub, model.buffers)
    with pytest.raises(Uncascadable, match="not int8"):
        stage_of(with_const(replace(const, dtype=DType.INT16)), mul, model.buffers)
    with pytest.raises(Uncascadable, match="both inputs are constants"):
        stage_of(sg, replace(mul, inputs=(mul.inputs[1], mul.inputs[1])), model.buffers)


def test_mean_multiplier_is_tflm_rescaled_by_the_count() -> None:
    """QuantizedMeanOrSum's rescaling (reduce.h), worked by hand: in/out scale 1.5 is
    QuantizeMultiplier's (3 * 2^29, shift 1); over 12 elements shift' = min(3, 32,
    32) = 3, multiplier (3 * 2^29 * 8) // 12 = 2^30, shift 1 - 3."""
    from arenaplan.passes.cascade_quant import mean_params, quantize_multiplier

    assert quantize_multiplier(1.5) == (3 << 29, 1)
    assert mean_params(0.3, 0.2, 12) == (1 << 30, -2)
    assert mean_params(0.3, 0.2, 1) == (3 << 29, 1)
