"""The weights blob and the fetch schedule (weights/blob.py, weights/schedule.py).

The proof: for every CONV_2D and DEPTHWISE_CONV_2D operator of the shared models (and
a built MobileNetV2, and an int16x8 denoiser whose depthwise bias is int32, read as
int64 by TFLM), the generated fetch.h is compiled with a test driver
(fetch_check.cc) and TFLM's reference kernels (from ../shared's source tarball); the
driver copies each group of 16 output channels from the blob with the schedule and
computes that group with the reference kernel from the copied bytes alone. The
result must equal, bit for bit, TFLM's output of the original operator (the PyPI
runtime running the operator alone on a random input).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from kits.opmodels import I32, I64
from kits.weights_models import chain, denoiser
from testkit import MODEL_PATHS

from arenaplan.builder.mobilenet import mobilenet_v2
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model
from arenaplan.reader import read_model, read_model_bytes
from arenaplan.targets import load_builtin
from arenaplan.tflm.verify.runner import TflmRunner, tflm_available
from arenaplan.weights.blob import BLOCK_ALIGN, weights_blob
from arenaplan.weights.schedule import BEFORE, DURING, fetch_header, group_fetches

DRIVER = Path(__file__).with_name("fetch_check.cc")
KINDS = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 1}
G = 16


# ---- the blob --------------------------------------------------------------------


def test_blob_lays_out_groups() -> None:
    m = read_model_bytes(chain())
    sg = m.subgraphs[0]
    blob = weights_blob(m, [(0, 16), (1, 16)])
    conv, dw = blob.of(0), blob.of(1)
    assert [(b.first, b.channels) for b in conv] == [(0, 16), (16, 16), (32, 8)]
    assert all(b.offset % BLOCK_ALIGN == 0 for b in blob.blocks)
    w = np.frombuffer(m.buffers[sg.tensors[sg.operators[0].inputs[1]].buffer], np.int8)
    first = blob.data[conv[1].offset : conv[1].offset + conv[1].parts[0][1]]
    assert first == w.reshape(40, -1)[16:32].tobytes()  # rows, contiguous
    d = np.frombuffer(m.buffers[sg.tensors[sg.operators[1].inputs[1]].buffer], np.int8)
    got = blob.data[dw[2].offset : dw[2].offset + dw[2].parts[0][1]]
    assert got == np.ascontiguousarray(d.reshape(1, 3, 3, 40)[0, :, :, 32:40]).tobytes()
    bias = sg.tensors[sg.operators[1].inputs[2]]
    b = np.frombuffer(m.buffers[bias.buffer], np.int32)
    off, size = dw[0].parts[1]
    assert blob.data[dw[0].offset + off : dw[0].offset + off + size] == b[:16].tobytes()


def test_schedule_alternates_buffers_when_double() -> None:
    blob = weights_blob(read_model_bytes(chain()), [(0, 16)])
    single = group_fetches(blob.of(0), 0, 64, 1216, double=False)
    double = group_fetches(blob.of(0), 0, 64, 1216, double=True)
    assert [(f.dst, f.buffer, f.when) for f in single] == [(64, 0, DURING)] * 3
    assert [(f.dst, f.buffer, f.when) for f in double] == [
        (64, 0, BEFORE),
        (64 + 1216, 1, DURING),
        (64, 0, DURING),
    ]
    text = fetch_header(double, blob, ["sram"], "m.tflite")
    assert "#define ARENAPLAN_FETCH_COUNT 3" in text and '"sram"' in text


# ---- the proof -------------------------------------------------------------------


def _single_op(model: Model, op_index: int) -> bytes:
    """The operator alone, with its weights, as a model TFLM runs."""
    sg = model.subgraphs[0]
    op = sg.operators[op_index]
    keep = [i for i in (*op.inputs, *op.outputs) if i >= 0]
    new = {old: k for k, old in enumerate(keep)}
    tensors = tuple(replace(sg.tensors[i], index=new[i]) for i in keep)
    one = replace(
        op,
        index=0,
        inputs=tuple(new[i] if i >= 0 else -1 for i in op.inputs),
        outputs=tuple(new[i] for i in op.outputs),
    )
    sub = replace(sg, tensors=tensors, operators=(one,), inputs=(0,), outputs=(new[op.outputs[0]],))
    return write_model(
        replace(
            model,
            subgraphs=(sub,),
            signature_defs=(),
            stored_plan=None,
            metadata=tuple((n, b) for n, b in model.metadata if n != "OfflineMemoryAllocation"),
        )
    )


def _round(x: float) -> int:
    return int(np.floor(x + 0.5)) if x >= 0 else -int(np.floor(-x + 0.5))


def _act_range(op, out) -> tuple[int, int]:
    scale, zp = out.quantization.scales[0], out.quantization.zero_points[0]
    act = op.options.get("fused_activation_function", "NONE")
    lo, hi = (-32768, 32767) if out.dtype is DType.INT16 else (-128, 127)
    if act in ("RELU", "RELU6", "RELU_N1_TO_1"):
        lo = max(lo, zp + _round((-1.0 if act == "RELU_N1_TO_1" else 0.0) / scale))
    if act in ("RELU6", "RELU_N1_TO_1"):
        hi = min(hi, zp + _round((6.0 if act == "RELU6" else 1.0) / scale))
    return lo, hi


def _params(model: Model, op_index: int) -> str:
    sg = model.subgraphs[0]
    op = sg.operators[op_index]
    x, w, y = sg.tensors[op.inputs[0]], sg.tensors[op.inputs[1]], sg.tensors[op.outputs[0]]
    o = op.options
    lo, hi = _act_range(op, y)
    wide = 2 if x.dtype is DType.INT16 else 0  # the driver's int16x8 kinds
    fields = [
        KINDS[op.opcode] + wide, *x.shape[1:], *y.shape[1:], w.shape[1], w.shape[2],
        o.get("stride_h", 1), o.get("stride_w", 1), o.get("dilation_h_factor", 1),
        o.get("dilation_w_factor", 1), int(o.get("padding") == "VALID"),
        o.get("depth_multiplier", 1) or 1, x.quantization.zero_points[0],
        y.quantization.zero_points[0], lo, hi,
    ]  # fmt: skip
    scales = [float(np.float32(s)).hex() for s in w.quantization.scales]
    if len(scales) == 1:
        scales *= y.shape[-1]
    x_s, y_s = (float(np.float32(t.quantization.scales[0])).hex() for t in (x, y))
    return " ".join(map(str, fields)) + f" {x_s} {y_s} " + " ".join(scales) + "\n"


def _groupable(model: Model, g: int = G) -> list[int]:
    """Conv and depthwise operators (per-channel-able, groups of whole
    depth-multiplier sets) of subgraph 0: int8, or int16x8 whose kernel reads the
    bias as int64 (a depthwise one whatever its type, a conv one stored as int64)."""
    sg = model.subgraphs[0]
    found = []
    for op in sg.operators:
        x = sg.tensors[op.inputs[0]] if op.opcode in KINDS else None
        if x is None or x.dtype not in (DType.INT8, DType.INT16):
            continue
        bias = sg.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
        int32_bias = bias is None or bias.dtype is not DType.INT64
        if x.dtype is DType.INT16 and op.opcode == "CONV_2D" and int32_bias:
            continue  # read as int32 by the int16x8 conv: not the driver's int64 path
        dm = op.options.get("depth_multiplier", 1) or 1
        if op.opcode == "DEPTHWISE_CONV_2D" and g % dm:
            continue
        found.append(op.index)
    return found


CASES = [pytest.param(p, id=p.stem) for p in MODEL_PATHS] + [
    pytest.param("mobilenet_v2", id="mobilenet_v2_0.35_32")
]


@pytest.mark.skipif(
    not tflm_available(), reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)
@pytest.mark.parametrize("source", CASES)
def test_groups_from_the_blob_match_tflm(source, tflm_kernels, tmp_path: Path) -> None:
    model = (
        read_model_bytes(mobilenet_v2(0.35, 32)) if source == "mobilenet_v2" else read_model(source)
    )
    ops = _groupable(model)
    if not ops:
        pytest.skip(
            "this model has no int8 or int16x8 CONV_2D or DEPTHWISE_CONV_2D: no weight groups "
            "to fetch"
        )
    blob = weights_blob(model, [(op, G) for op in ops])
    fetches = []
    for k, op in enumerate(ops):  # every operator's buffers at 0: they run one by one
        blocks = blob.of(op)
        stride = -(-max(b.size for b in blocks) // 16) * 16
        fetches += group_fetches(blocks, 0, 0, stride, double=k % 2 == 1)
    (tmp_path / "fetch.h").write_text(fetch_header(fetches, blob, ["sram"], "test"))
    (tmp_path / "blob.bin").write_bytes(blob.data)
    exe = tflm_kernels.compile(DRIVER, tmp_path)
    groups = _check_groups(model, ops, exe, tmp_path)
    assert groups == {op: len(blob.of(op)) for op in ops}  # every group computed


def _run_driver(exe: Path, folder: Path, model: Model, op: int, rng, runner) -> int:
    """TFLM's output of operator ``op`` alone on a random input, then the driver's
    groups from the blob in ``folder``; the number of groups it computed."""
    x = model.subgraphs[0].tensors[model.subgraphs[0].operators[op].inputs[0]]
    if x.dtype is DType.INT16:
        data = rng.integers(-32768, 32768, x.shape, dtype=np.int16)
    else:
        data = rng.integers(-128, 128, x.shape, dtype=np.int8)
    result = runner.run(_single_op(model, op), 4 << 20, [[data]], 1)
    assert result.ok, f"operator {op}: {result.error}"
    (folder / "in.bin").write_bytes(data.tobytes())
    (folder / "out.bin").write_bytes(np.asarray(result.outputs[0][0]).tobytes())
    (folder / "params.txt").write_text(_params(model, op))
    files = [str(folder / f) for f in ("blob.bin", "params.txt", "in.bin", "out.bin")]
    run = subprocess.run([str(exe), *files, str(op)], capture_output=True, text=True)
    opcode = model.subgraphs[0].operators[op].opcode
    assert run.returncode == 0, f"operator {op} ({opcode}): {run.stdout}{run.stderr}"
    return int(run.stdout.split()[1])


def _check_groups(model: Model, ops: list[int], exe: Path, folder: Path) -> dict[int, int]:
    """Each operator checked by the driver; the groups it computed, per operator."""
    with TflmRunner() as runner:
        return {
            op: _run_driver(exe, folder, model, op, np.random.default_rng(7 + op), runner)
            for op in ops
        }


@pytest.mark.skipif(
    not tflm_available(), reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)
@pytest.mark.parametrize("dw_bias", [I32, I64])
def test_int16x8_groups_from_the_blob_match_tflm(dw_bias, tflm_kernels, tmp_path: Path) -> None:
    """int16x8 convolutions with int64 biases and a depthwise one whose bias is int32
    (TFLM reads it as int64, 8 bytes a channel): each group of 3 channels computed
    from the bytes the schedule copied equals TFLM's output of the operator."""
    model = read_model_bytes(denoiser(dw_bias, I64))
    ops = _groupable(model, 3)
    assert [model.subgraphs[0].operators[o].opcode for o in ops] == [
        "CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "CONV_2D"
    ]  # fmt: skip
    blob = weights_blob(model, [(op, 3) for op in ops])
    fetches = []
    for op in ops:
        blocks = blob.of(op)
        stride = -(-max(b.size for b in blocks) // 16) * 16
        fetches += group_fetches(blocks, 0, 0, stride, double=False)
    (tmp_path / "fetch.h").write_text(fetch_header(fetches, blob, ["sram"], "test"))
    (tmp_path / "blob.bin").write_bytes(blob.data)
    exe = tflm_kernels.compile(DRIVER, tmp_path)
    assert _check_groups(model, ops, exe, tmp_path) == {op: len(blob.of(op)) for op in ops}


@pytest.mark.skipif(
    not tflm_available(), reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)
@pytest.mark.parametrize("policy", ["groups:16,double", "auto"])
def test_plan_schedule_runs_bit_exact(policy: str, tflm_kernels, tmp_path: Path) -> None:
    """``plan --weights ... --weights-blob --schedule``: the files the command writes,
    compiled and run at the planned offsets, reproduce TFLM's output of each operator."""
    from testkit import model_path, need_prover

    from arenaplan.cli import main

    if policy == "auto":  # copies some weights whole: proven with the target's kernels
        need_prover(load_builtin("imxrt1170").kernels)
    src = model_path("mlcommons-tiny__vww_96_int8")
    out, blob, header = tmp_path / "v.tflite", tmp_path / "blob.bin", tmp_path / "fetch.h"
    plan = tmp_path / "plan.json"
    args = ["plan", str(src), "--target", "imxrt1170", "--weights", policy, "-o", str(out)]
    files = ["--weights-blob", str(blob), "--schedule", str(header), "--json", str(plan)]
    assert main([*args, *files, "-q"]) == 0
    model = read_model(out)
    weights = json.loads(plan.read_text())["weights"]
    staged = {b["operator"] for b in weights["staging_buffers"]}
    ops = [op for op in _groupable(model) if op in staged]
    assert ops, "no conv or depthwise operator was staged in groups"
    exe = tflm_kernels.compile(DRIVER, tmp_path)
    _check_groups(model, ops, exe, tmp_path)
