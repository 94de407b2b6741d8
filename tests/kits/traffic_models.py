"""Small models for the traffic model's tests and for the fixed terms' generator.

``BUILT``: models built with the project's writer, shaped unlike the shared models
(other paddings, strides, dilations, depth multipliers, batches, alignments).
:func:`fixed_models` is the set ``scripts/gen_traffic_fixed.py`` measures to write
``cost/data/traffic_fixed.json``, and ``tests/tflm/test_measured_tables.py``
regenerates it from the same set.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from kits.opmodels import I8, I16, I32, OP_MODELS, SHAPED, Net, q
from testkit import MODEL_PATHS, MODELS_DIR, TFLM_REFUSES

from arenaplan.cost.traffic import traffic_details
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.dtypes import DType
from arenaplan.reader import read_model, read_model_bytes


def conv_model(
    depthwise: bool = False,
    in_hw: tuple[int, int] = (9, 7),
    c_in: int = 3,
    c_out: int = 5,
    k: tuple[int, int] = (3, 2),
    stride: tuple[int, int] = (2, 1),
    dilation: tuple[int, int] = (1, 2),
    padding: str = "SAME",
) -> bytes:
    n = Net("conv_t", seed=3)
    h, w = in_hw
    x = n.act((1, h, w, c_in))
    wt = n.weights((1, *k, c_out), 3) if depthwise else n.weights((c_out, *k, c_in), 0)
    b = n.bias(c_out, I32, c_out)

    def out_size(size: int, kk: int, s: int, d: int) -> int:
        eff = (kk - 1) * d + 1
        return (size + s - 1) // s if padding == "SAME" else (size - eff + s) // s

    oh, ow = out_size(h, k[0], stride[0], dilation[0]), out_size(w, k[1], stride[1], dilation[1])
    y = n.act((1, oh, ow, c_out))
    opts = dict(
        padding=padding,
        stride_h=stride[0],
        stride_w=stride[1],
        dilation_h_factor=dilation[0],
        dilation_w_factor=dilation[1],
    )
    if depthwise:
        n.op("DEPTHWISE_CONV_2D", [x, wt, b], [y], depth_multiplier=c_out // c_in, **opts)
    else:
        n.op("CONV_2D", [x, wt, b], [y], **opts)
    return n.done([x], [y])


def fc_model(batch: int = 3, depth: int = 10, units: int = 7, per_channel: bool = True) -> bytes:
    n = Net("fc_t", seed=4)
    x = n.act((batch, depth))
    w = n.weights((units, depth), 0 if per_channel else None)
    b = n.bias(units, I32, units if per_channel else 1)
    y = n.act((batch, units))
    n.op("FULLY_CONNECTED", [x, w, b], [y])
    return n.done([x], [y])


def pool_model(opcode: str = "AVERAGE_POOL_2D", padding: str = "SAME") -> bytes:
    n = Net("pool_t")
    x = n.act((1, 7, 6, 3))
    y = n.act((1, 4, 3, 3) if padding == "SAME" else (1, 3, 2, 3))
    n.op(opcode, [x], [y], padding=padding, stride_h=2, stride_w=2, filter_height=3, filter_width=3)
    return n.done([x], [y])


def softmax_model(rows: int = 3, depth: int = 7) -> bytes:
    n = Net("softmax_t")
    x = n.act((rows, depth))
    y = n.act((rows, depth), I8, scale=1 / 256, zero=-128)
    n.op("SOFTMAX", [x], [y], beta=1.0)
    return n.done([x], [y])


def add_model(shape=(1, 5, 3, 6)) -> bytes:
    n = Net("add_t")
    a, b, y = n.act(shape), n.act(shape), n.act(shape)
    n.op("ADD", [a, b], [y])
    return n.done([a, b], [y])


def add_int32_broadcast_model() -> bytes:
    n = Net("add_b")
    a, b, y = n.act((2, 3, 4), I32), n.act((2, 1, 1), I32), n.act((2, 3, 4), I32)
    n.op("ADD", [a, b], [y])
    return n.done([a, b], [y])


def pad_model() -> bytes:
    n = Net("pad_t")
    x = n.act((1, 3, 5, 3))
    pads = n.const([[0, 0], [2, 1], [0, 3], [0, 0]], I32)
    y = n.act((1, 6, 8, 3))
    n.op("PAD", [x, pads], [y])
    return n.done([x], [y])


def concat_model(dtype: DType = I8, channels: tuple[int, ...] = (3, 5, 9)) -> bytes:
    """Odd channel counts on the last axis: memcpy runs of every alignment."""
    n = Net("concat_t")
    xs = [n.act((1, 3, 4, c), dtype) for c in channels]
    y = n.act((1, 3, 4, sum(channels)), dtype)
    n.op("CONCATENATION", xs, [y], axis=3)
    return n.done(xs, [y])


def strided_slice_model(strides=(1, 1, 1, 1)) -> bytes:
    n = Net("slice_t")
    x = n.act((1, 6, 5, 7))
    begin, end = [0, 1, 1, 2], [1, 6, 5, 7]
    shape = [len(range(b, e, s)) for b, e, s in zip(begin, end, strides, strict=True)]
    consts = [n.const(v, I32) for v in (begin, end, list(strides))]
    y = n.act(tuple(shape))
    n.op("STRIDED_SLICE", [x, *consts], [y])
    return n.done([x], [y])


def quantize_model() -> bytes:
    n = Net("quant_t")
    x = n.act((2, 3, 5), DType.FLOAT32)
    y = n.act((2, 3, 5))
    n.op("QUANTIZE", [x], [y])
    r = n.act((6, 5))
    shape = n.const([6, 5], I32)
    n.op("RESHAPE", [y, shape], [r])
    return n.done([x], [r])


def mean_model(shape=(3, 5, 6), axes=(1,), keep=True, dtype=I8, opcode="MEAN") -> bytes:
    n = Net("mean_t")
    x = n.act(shape, dtype)
    axis = n.const(list(axes), I32)
    rank = len(shape)
    resolved = {a % rank for a in axes}
    out = tuple(1 if i in resolved else d for i, d in enumerate(shape) if keep or i not in resolved)
    y = n.act(out, dtype)
    n.op(opcode, [x, axis], [y], keep_dims=keep)
    return n.done([x], [y])


def svdf_model(batch: int = 2, inputs: int = 12, filters: int = 8, memory: int = 5, rank: int = 2):
    n = Net("svdf_t", seed=5)
    x = n.act((batch, inputs), I8, scale=0.05)
    wf = n.weights((filters, inputs), None)
    wt = n.b.add_tensor(
        "wt",
        (filters, memory),
        I16,
        data=n.rng.integers(-1000, 1000, (filters, memory)).astype(np.int16),
        quantization=q(0.0005),
    )
    units = filters // rank
    b = n.const(np.zeros(units), I32, q(0.002 * 0.0005))  # scale: state's x weights_time's
    state = n.b.add_tensor(
        "state", (batch, filters * memory), I16, quantization=q(0.002), is_variable=True
    )
    y = n.act((batch, filters // rank), I8, scale=0.1)
    n.op("SVDF", [x, wf, wt, b, state], [y], rank=rank, fused_activation_function="RELU")
    return n.done([x], [y])


def rfft_model(length: int = 128, frame: int = 100) -> bytes:
    n = Net("rfft_t")
    x = n.act((2, frame), I16)
    y = n.act((2, 2 * (length // 2 + 1)), I16)
    n.custom("SignalRfft", [x], [y], T=DType.INT16.code, fft_length=length)
    return n.done([x], [y])


BUILT = {
    "conv_same_stride_dilated": conv_model,
    "conv_valid": lambda: conv_model(padding="VALID", stride=(1, 2), dilation=(1, 1)),
    "depthwise_multiplier_2": lambda: conv_model(True, c_in=3, c_out=6, dilation=(2, 1)),
    "fc_per_channel_batch_3": fc_model,
    "fc_per_tensor": lambda: fc_model(batch=1, depth=33, units=5, per_channel=False),
    "avg_pool_same": pool_model,
    "max_pool_valid": lambda: pool_model("MAX_POOL_2D", "VALID"),
    "softmax_rows": softmax_model,
    "add_int8": add_model,
    "add_int32_broadcast": add_int32_broadcast_model,
    "pad_int8": pad_model,
    "concat_odd": concat_model,
    "strided_slice_runs": strided_slice_model,
    "strided_slice_strided": lambda: strided_slice_model((1, 2, 1, 3)),
    "quantize_reshape": quantize_model,
    "svdf_rank_2_batch_2": svdf_model,
    "mean_int8_rank_3": mean_model,
    "mean_int8_three_axes": lambda: mean_model((2, 3, 4, 5), (1, 2, 3), keep=False),
    "sum_int16_axes_reversed": lambda: mean_model((1, 4, 6, 3), (2, 1), True, I16, "SUM"),
    "mean_float_spatial": lambda: mean_model((1, 5, 4, 3), (1, 2), True, DType.FLOAT32),
    "rfft_128_two_frames": rfft_model,
}


def lstm_steps(stem: str, steps: int) -> bytes:
    """The LSTM operator of the shared model ``stem`` alone, over ``steps`` time steps
    (its input and output reshaped, the weights as they are)."""
    model = read_model(MODELS_DIR / f"{stem}.tflite")
    sg = model.subgraphs[0]
    op = next(o for o in sg.operators if o.opcode == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    x, y = op.inputs[0], op.outputs[0]
    tensors = list(sg.tensors)
    for i in (x, y):
        batch, _, depth = tensors[i].shape
        tensors[i] = dataclasses.replace(
            tensors[i], shape=(batch, steps, depth), shape_signature=None
        )
    lstm = dataclasses.replace(op, index=0)
    alone = dataclasses.replace(
        sg, tensors=tuple(tensors), operators=(lstm,), inputs=(x,), outputs=(y,)
    )
    return write_model(dataclasses.replace(model, subgraphs=(alone,), signature_defs=()))


# Models the fixed terms are not measured on, and why: in each, a measured term departs
# from what the kernel path's other instances say (a limit of the data terms).
NOT_MEASURED = {
    # its RELU reads the dims RESHAPE's Prepare rewrote (the -1) from RESHAPE's op data,
    # not from the flatbuffer: 3 model loads fewer than the RELU of any other model
    "op:reshape_minus_one": "dims rewritten by an earlier operator",
    # two frames: Rfft's op data is read 4 times less than its data terms count
    "built:rfft_128_two_frames": "Rfft's op-data terms on a second frame",
}

# What a fixed term grows with, varied where the models above hold one value: the
# number of inputs of a concatenation in each dtype, the time steps of an LSTM.
VARIED = {
    "concat_float32_3_inputs": lambda: concat_model(DType.FLOAT32),
    "concat_int16_2_inputs": lambda: concat_model(I16, (3, 5)),
    "concat_int32_2_inputs": lambda: concat_model(I32, (3, 5)),
    "lstm_5_steps": lambda: lstm_steps("tflite-micro__trained_lstm_int8", 5),
}


def fixed_models() -> list[tuple[str, bytes]]:
    """(name, ``.tflite`` bytes) of every model the fixed terms are measured on: the
    shared models TFLM runs, ``BUILT``, the op models of ``opmodels.py`` and ``VARIED``
    (those that need the shared models only when they are there), less
    ``NOT_MEASURED``, keeping those with an operator the traffic model knows."""
    makers = {f"op:{name}": make for name, make in {**OP_MODELS, **SHAPED}.items()}
    makers |= {f"built:{name}": make for name, make in BUILT.items()}
    makers |= {f"varied:{name}": make for name, make in VARIED.items()}
    if not MODEL_PATHS:  # the LSTM of 5 steps is cut from a shared model
        del makers["varied:lstm_5_steps"]
    models = [(p.stem, p.read_bytes()) for p in MODEL_PATHS if p.stem not in TFLM_REFUSES]
    models += [(name, make()) for name, make in makers.items() if name not in NOT_MEASURED]
    return [(name, data) for name, data in models if _modelled(data)]


def _modelled(data: bytes) -> bool:
    return any(d.exact for d in traffic_details(read_model_bytes(data), fixed=False))
