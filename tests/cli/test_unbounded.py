"""Nothing is unbounded: models whose declared dimensions are the largest the reader
lets through (2**31 - 1 bytes in one tensor) go through ``profile`` and ``plan
--target ... --weights auto`` at once, for every operator kind the traffic models
loop over (windows as tall as their output, strided slices, concatenations, LSTM
steps, RFFT frames, xcore's channel groups). Each model is a few hundred bytes; a
loop over its rows would take minutes. The figures are checked against counts worked
out independently; ``signal.alarm`` only detects a hang."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kits.opmodels import I16, I32, Net
from kits.traffic_models import lstm_steps

from arenaplan.cli import main
from arenaplan.cost.traffic import traffic_details
from arenaplan.cost.traffic_xcore import xcore_counts
from arenaplan.ir.dtypes import DType
from arenaplan.reader import read_model_bytes
from arenaplan.reader.tflite_reader import TENSOR_LIMIT

BIG = TENSOR_LIMIT  # rows of an int8 tensor: the most one tensor may hold


@pytest.fixture(autouse=True)
def hang_detector() -> Iterator[None]:
    """Fails a test that runs for a minute (each takes well under a second)."""

    def fail(*_: object) -> None:
        raise AssertionError("still running after 60 s: something loops over a dimension")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def pool(opcode: str) -> bytes:
    """A window as tall as its input and output: BIG taps over BIG rows."""
    n = Net("pool")
    x, y = n.act((1, BIG, 1, 1)), n.act((1, BIG, 1, 1))
    window = {"filter_height": BIG, "filter_width": 1}
    n.op(opcode, [x], [y], padding="SAME", stride_h=1, stride_w=1, **window)
    return n.done([x], [y])


def conv() -> bytes:
    n = Net("conv")
    x, y = n.act((1, BIG, 1, 1)), n.act((1, BIG, 1, 1))
    w, b = n.weights((1, 3, 1, 1)), n.bias(1)
    n.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_h=1, stride_w=1)
    return n.done([x], [y])


def strided_slice(step: int) -> bytes:
    """Every row of a [1, BIG, 1, 1] tensor, innermost stride ``step``."""
    n = Net("slice")
    x, y = n.act((1, BIG, 1, 1)), n.act((1, BIG, 1, 1))
    bounds = ([0, 0, 0, 0], [1, BIG, 1, 1], [1, 1, 1, step])
    n.op("STRIDED_SLICE", [x, *(n.const(v, I32) for v in bounds)], [y])
    return n.done([x], [y])


def concatenation() -> bytes:
    """BIG // 2 rows of two one-byte inputs side by side."""
    n = Net("concat")
    rows = BIG // 2
    a, b, y = n.act((1, rows, 1, 1)), n.act((1, rows, 1, 1)), n.act((1, rows, 1, 2))
    n.op("CONCATENATION", [a, b], [y], axis=3)
    return n.done([a, b], [y])


def rfft() -> bytes:
    """As many 4-sample frames as int16 output rows fit."""
    n = Net("rfft")
    frames = BIG // 12
    x, y = n.act((frames, 4), I16), n.act((frames, 6), I16)
    n.custom("SignalRfft", [x], [y], T=DType.INT16.code, fft_length=4)
    return n.done([x], [y])


def channels() -> bytes:
    """A fully connected operator with BIG output channels (non-constant weights):
    xcore's groups of 16 channels."""
    n = Net("channels")
    x, w, y = n.act((1, 1)), n.act((BIG, 1)), n.act((1, BIG))
    n.op("FULLY_CONNECTED", [x, w, -1], [y])
    return n.done([x, w], [y])


def lstm() -> bytes:
    return lstm_steps("tflite-micro__trained_lstm_int8", 2**26)  # 2**26 steps of 28 bytes


MODELS: dict[str, Callable[[], bytes]] = {
    "average_pool": lambda: pool("AVERAGE_POOL_2D"),
    "max_pool": lambda: pool("MAX_POOL_2D"),
    "conv": conv,
    "slice_runs": lambda: strided_slice(1),
    "slice_elements": lambda: strided_slice(2),
    "concatenation": concatenation,
    "rfft": rfft,
    "channels": channels,
    "lstm": lstm,
}


def _details(data: bytes) -> tuple:
    model = read_model_bytes(data)
    sg = model.subgraphs[0]
    op = sg.operators[-1]
    (d,) = [d for d in traffic_details(model) if d.op == op.index]
    return model, sg, op, d


def test_a_window_as_tall_as_its_output_is_counted_exactly() -> None:
    data = pool("AVERAGE_POOL_2D")
    assert len(data) < 2048  # a few hundred bytes declaring two 2 GiB tensors
    _, _, op, d = _details(data)
    # SAME padding of a BIG-tap window over BIG rows: p = (BIG - 1) // 2 rows on top,
    # output row o sees BIG - |o - p| rows of the input
    p = (BIG - 1) // 2
    far = p * (p + 1) // 2 + (BIG - 1 - p) * (BIG - p) // 2  # sum over o of |o - p|
    assert d.exact
    assert d.traffic[(0, op.inputs[0])].loads == BIG * BIG - far


def test_slices_and_concatenations_move_every_byte_once() -> None:
    for data in (strided_slice(1), strided_slice(2), concatenation()):
        _, sg, op, d = _details(data)
        y = sg.tensors[op.outputs[0]]
        assert d.exact, d.kernel
        assert d.traffic[(0, y.index)].store_bytes == y.nbytes
        read = sum(d.traffic[(0, i)].load_bytes for i in op.inputs if not sg.tensors[i].is_constant)
        assert read == y.nbytes


def test_lstm_steps_and_rfft_frames_are_counted_per_step() -> None:
    _, sg, op, d = _details(lstm())
    y = sg.tensors[op.outputs[0]]
    assert d.exact and d.variables["N"] == 2**26
    assert d.traffic[(0, y.index)].store_bytes == y.nbytes  # the hidden state, every step
    _, sg, op, d = _details(rfft())
    x = sg.tensors[op.inputs[0]]
    assert d.exact
    assert d.traffic[(0, x.index)].load_bytes == x.nbytes  # every frame copied in once


def test_xcore_counts_channel_groups_without_listing_them() -> None:
    model = read_model_bytes(channels())
    (counts,) = xcore_counts(model).values()
    groups = -(-BIG // 16)
    # OutputTransformFn: two masked stores per group of 16 output channels
    assert counts.traffic[(0, 2)].stores == 2 * groups


@pytest.mark.parametrize("name", MODELS)
def test_profile_and_plan_finish(name: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(MODELS[name]())
    assert main(["profile", str(path), "--json", str(tmp_path / "t.json")]) == 0
    assert (tmp_path / "t.json").stat().st_size > 0
    for target in ("xcore_ai", "imxrt1170"):
        out = tmp_path / f"{target}.tflite"
        code = main(["plan", str(path), "--target", target, "--weights", "auto", "-o", str(out)])
        err = capsys.readouterr().err
        # gigabyte activations fit no memory of these targets: said in one line
        assert code == 2 and err.count("\n") == 1 and "do not fit" in err, err
        assert not out.exists()


def test_verify_refuses_what_this_machine_cannot_run(tmp_path: Path, capsys) -> None:
    """Two 2 GiB tensors: within TFLM's counts, beyond what verify runs here (it would
    allocate them and interpret a 2**31-row convolution for minutes)."""
    path = tmp_path / "conv.tflite"
    path.write_bytes(conv())
    assert main(["verify", str(path), str(path), "--trials", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1,073,741,824 B (1 GiB) verify runs" in err, err


def test_the_reader_refuses_what_tflm_cannot_count(tmp_path: Path, capsys) -> None:
    n = Net("too_big")
    x, y = n.act((1, BIG, 1, 1), I16), n.act((1, BIG, 1, 1), I16)
    n.op("RELU", [x], [y])
    path = tmp_path / "too_big.tflite"
    path.write_bytes(n.done([x], [y]))
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[1, 2147483647, 1, 1] int16" in err
    assert f"at most {TENSOR_LIMIT:,}" in err
