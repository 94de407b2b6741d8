"""Weight copies are bit-exact for every type TFLM copies (passes/stage.py
``weight_copies``, weights/staging.py, weights/blob.py): each weighted operator
of each activation, weight and bias type, its weights copied whole, runs in TFLM
bit-identically to the original, with biases that are not zero; a bias an int16x8
kernel reads as int64 is copied as the 8-byte elements it reads; what cannot be
copied (INT4 weights) is read in place or refused in one line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from export.test_writer_tflm import depthwise_int4_weights
from kits.opmodels import F32, I8, I16, I32, I64
from kits.weights_models import denoiser, one_weighted
from testkit import kernel_set, need_prover

from arenaplan.cli import main
from arenaplan.errors import UnsupportedModelError
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model
from arenaplan.ir.signatures import WEIGHT_SLOTS
from arenaplan.passes.stage import Stage, copy_refusal, weight_copies
from arenaplan.pipeline import planned_model_bytes
from arenaplan.placement import PlanOptions, check_plan, plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.targets.load import load_builtin
from arenaplan.tflm.verify.prove import prove
from arenaplan.weights.blob import weights_blob
from arenaplan.weights.plan import plan_weights
from arenaplan.weights.policies import Policy
from arenaplan.weights.staging import operator_weights

# (operator, activations, bias, weights per channel): every weight type TFLM's
# kernels copy, int16x8 with each bias type they take
TYPES = [
    ("CONV_2D", I8, I32, False),
    ("CONV_2D", I8, I32, True),
    ("CONV_2D", I16, I64, True),
    ("CONV_2D", I16, I32, True),
    ("CONV_2D", F32, F32, False),
    ("DEPTHWISE_CONV_2D", I8, I32, False),
    ("DEPTHWISE_CONV_2D", I8, I32, True),
    ("DEPTHWISE_CONV_2D", I16, I64, True),
    ("DEPTHWISE_CONV_2D", I16, I32, True),  # read as int64: the reported denoiser
    ("DEPTHWISE_CONV_2D", F32, F32, False),
    ("TRANSPOSE_CONV", I8, I32, True),
    ("TRANSPOSE_CONV", I16, I64, True),
    ("TRANSPOSE_CONV", I16, I32, True),  # read as int64
    ("TRANSPOSE_CONV", I16, I16, True),  # widened by the kernel itself
    ("TRANSPOSE_CONV", F32, F32, False),
    ("FULLY_CONNECTED", I8, I32, False),
    ("FULLY_CONNECTED", I8, I32, True),
    ("FULLY_CONNECTED", I16, I64, True),
    ("FULLY_CONNECTED", I16, I32, True),  # read as int32 by the reference kernel
    ("FULLY_CONNECTED", F32, F32, False),
    ("FULLY_CONNECTED", I8, None, False),
]


def _whole(data: bytes, kernels: str = "reference") -> tuple[Model, bytes, int]:
    """Every operator's weights copied whole: the model with its copies, written and
    planned, and its head."""
    m = read_model_bytes(data)
    t = load_builtin("esp32s3")
    wp = plan_weights(m, t, Policy("whole"), None, PlanOptions(kernels=kernel_set(kernels)))
    return wp.model, planned_model_bytes(write_model(wp.model), wp.model, wp.plan), wp.plan.arena


@pytest.mark.parametrize("opcode,act,bias,per_channel", TYPES)
def test_each_weight_type_is_copied_bit_exactly(opcode, act, bias, per_channel) -> None:
    need_prover()
    data = one_weighted(opcode, act, bias, per_channel)
    staged, planned, arena = _whole(data)
    sg = staged.subgraphs[0]
    op = next(o for o in sg.operators if o.opcode == opcode)
    weights = [op.inputs[k] for k in WEIGHT_SLOTS[opcode] if op.inputs[k] >= 0]
    assert len(weights) == 1 + (bias is not None)
    assert not any(sg.tensors[i].is_constant for i in weights)  # each read from its copy
    proof = prove(data, planned, arena)
    assert proof.proven, proof.reason


def test_a_bias_read_as_int64_is_copied_as_the_bytes_read() -> None:
    """The int32 bias of an int16x8 DEPTHWISE_CONV_2D: TFLM reads 8 bytes per channel
    (the file's bytes past the buffer's end, kept by the reader); the copy is an INT64
    tensor of those bytes, made from an INT64 view of the same buffer."""
    data = one_weighted("DEPTHWISE_CONV_2D", I16, I32)
    m = read_model_bytes(data)
    sg = m.subgraphs[0]
    bias = sg.tensors[sg.operators[0].inputs[2]]
    (w, b) = weight_copies(m, 0)
    assert (b.tensor, b.dtype, b.nbytes) == (bias.index, DType.INT64, bias.elements * 8)
    assert (w.dtype, w.nbytes) == (DType.INT8, 36)
    staged = Stage((0,)).run(m).model.subgraphs[0]
    reshape = staged.operators[1]
    view, copy = staged.tensors[reshape.inputs[0]], staged.tensors[reshape.outputs[0]]
    assert view.is_constant and view.buffer == bias.buffer and view.dtype is DType.INT64
    assert copy.dtype is DType.INT64 and copy.shape == bias.shape
    assert staged.operators[2].inputs[2] == copy.index


def test_fully_connected_int16_bias_width_follows_the_kernels() -> None:
    """The reference FULLY_CONNECTED reads an int32 bias as int32; CMSIS-NN's int16x8
    one reads it as int64 (``kernels/cmsis_nn/fully_connected.cc``)."""
    m = read_model_bytes(one_weighted("FULLY_CONNECTED", I16, I32))
    assert weight_copies(m, 0)[1].dtype is DType.INT32
    assert weight_copies(m, 0, kernel_set("cmsis_nn+dsp"))[1].dtype is DType.INT64
    assert operator_weights(m, kernels=kernel_set("cmsis_nn+dsp"))[0].per_channel == (24, 8)


@pytest.mark.parametrize("kernels", ["cmsis_nn", "cmsis_nn+dsp"])
def test_the_cmsis_nn_copies_run_bit_exact(kernels: str) -> None:
    """With CMSIS-NN (TFLM built from source), the int16x8 FULLY_CONNECTED's int32
    bias is read as int64 too: copied as such, proven."""
    need_prover(kernels)
    for data in (one_weighted("FULLY_CONNECTED", I16, I32, False), denoiser(I32, I32)):
        _, planned, arena = _whole(data, kernels)
        proof = prove(data, planned, arena, kernels)
        assert proof.proven, proof.reason


# ---- the reported denoiser, through the command ---------------------------------


@pytest.mark.parametrize("dw_bias,bias", [(I32, I64), (I32, I32), (I64, I64)])
@pytest.mark.parametrize("policy", ["whole", "auto"])
def test_the_int16x8_denoiser_plans_with_copies(tmp_path: Path, dw_bias, bias, policy) -> None:
    """`plan --target esp32s3 --weights whole` on an int16x8 denoiser whose depthwise
    bias is int32 was refused: "outputs differ" (the copy held 4 bytes per channel,
    the kernel read 8). Now proven in TFLM."""
    need_prover()
    src, js = tmp_path / "d.tflite", tmp_path / "d.json"
    src.write_bytes(denoiser(dw_bias, bias))
    argv = ["plan", str(src), "--target", "esp32s3", "--weights", policy]
    assert main([*argv, "-o", str(tmp_path / "o.tflite"), "--json", str(js)]) == 0
    weights = json.loads(js.read_text())["weights"]
    if any(o["policy"] == "whole" for o in weights["operators"]):
        assert weights["proof"]["proven"]


def test_group_blocks_hold_the_bytes_the_kernel_reads(tmp_path: Path) -> None:
    """groups: an int32 bias read as int64 gives 8 bytes per channel, the bytes the
    kernel reads; an int64 slice starts 8-aligned in its block; the validator
    re-derives the buffer sizes the same way."""
    m = read_model_bytes(denoiser(I32, I64))
    sg = m.subgraphs[0]
    dw = next(o for o in sg.operators if o.opcode == "DEPTHWISE_CONV_2D")
    wp = plan_weights(m, load_builtin("esp32s3"), Policy("groups", 3), None, PlanOptions())
    check_plan(wp.model, wp.plan)
    blob = weights_blob(m, [(dw.index, 3), (0, 3)])
    bias = sg.tensors[dw.inputs[2]]
    read = np.frombuffer(m.buffers[bias.buffer][: bias.elements * 8], "<i8")
    first = blob.of(dw.index)[1]  # channels 3..5
    (w_at, w_n), (b_at, b_n) = first.parts
    assert (w_at, w_n, b_at % 8, b_n) == (0, 27, 0, 24)
    got = blob.data[first.offset + b_at : first.offset + b_at + b_n]
    assert got == read[3:6].tobytes()
    conv = blob.of(0)[0]  # 3 x 36 B of filter, then the int64 bias 8-aligned
    assert conv.parts == ((0, 108), (112, 24))
    assert all(b.offset % 16 == 0 for b in blob.blocks)


# ---- what cannot be copied -------------------------------------------------------


def test_int4_weights_are_read_in_place_or_refused(tmp_path: Path, capsys) -> None:
    """INT4 weights cannot be copied by TFLM's RESHAPE (one byte per element, twice
    the packed bytes): read in place where the flash is mapped, refused in one line
    where it is not; the stage pass refuses them too."""
    data = depthwise_int4_weights()
    m = read_model_bytes(data)
    assert "INT4" in (copy_refusal(m, 0) or "")
    with pytest.raises(UnsupportedModelError, match="packed two to a byte"):
        Stage((0,)).run(m)
    src = tmp_path / "m.tflite"
    src.write_bytes(data)
    out = tmp_path / "o.tflite"
    for policy in ("whole", "groups:2", "auto"):
        argv = ["plan", str(src), "--target", "xcore_ai", "--weights", policy, "-o", str(out)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "INT4" in err, err
        assert not out.exists()
        argv[3] = "esp32s3"
        assert main(argv) == 0
        capsys.readouterr()
        planned = read_model_bytes(out.read_bytes())
        assert [op.opcode for op in planned.subgraphs[0].operators] == ["DEPTHWISE_CONV_2D"]
        out.unlink()


def test_a_widened_bias_the_file_cuts_short_is_refused() -> None:
    """A bias read as int64 whose bytes end with the file cannot be copied whole."""
    m = read_model_bytes(one_weighted("DEPTHWISE_CONV_2D", I16, I32))
    bias = m.subgraphs[0].tensors[m.subgraphs[0].operators[0].inputs[2]]
    buffers = list(m.buffers)
    buffers[bias.buffer] = buffers[bias.buffer][: bias.elements * 4 + 3]
    short = replace(m, buffers=tuple(buffers))
    why = copy_refusal(short, 0)
    assert why is not None and "as int64" in why and f"{bias.elements * 4 + 3} B" in why
    assert operator_weights(short)[0].refused == why
    plan_model(short, PlanOptions())  # planning the model as given is not affected


def test_group_buffers_are_sized_for_the_kernels_planned() -> None:
    """Group buffers hold what the planned kernels read, whatever the target's default:
    CMSIS-NN's int16x8 FULLY_CONNECTED reads its int32 bias as int64 (8 bytes a
    channel) on a target whose own kernels are the reference ones."""
    m = read_model_bytes(one_weighted("FULLY_CONNECTED", I16, I32))
    t = load_builtin("esp32s3")
    for kernels, block in (("reference", 5 * 24 + 5 * 4), ("cmsis_nn+dsp", 5 * 24 + 5 * 8)):
        wp = plan_weights(m, t, Policy("groups", 5), None, PlanOptions(kernels=kernel_set(kernels)))
        check_plan(wp.model, wp.plan)
        assert [s.size for s in wp.plan.staging] == [-(-block // 16) * 16], kernels
