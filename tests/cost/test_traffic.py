"""The memory traffic model (cost/traffic*.py) and its measurement (verify/traffic_measure.py).

Formula tests run on small models built with the project's writer
(``traffic_models.py``), shaped unlike the shared models (other paddings, strides,
dilations, depth multipliers, batches, alignments), and on the shared models. The
measured tests run the real TFLM kernels under the arenatraffic valgrind tool and need
``python scripts/build_tflm.py --variants host-reference && python
scripts/build_traffic.py``; without them they are skipped with that reason. They
measure the built models and every shared model TFLM runs (about 30 s).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from kits.opmodels import Net, q
from kits.traffic_models import (
    BUILT,
    add_model,
    concat_model,
    conv_model,
    fc_model,
    mean_model,
    softmax_model,
    strided_slice_model,
    svdf_model,
)
from testkit import MODEL_PATHS, TFLM_REFUSES, model_path

from arenaplan.cli import main
from arenaplan.cost.traffic import (
    Traffic,
    compare,
    difference,
    memcpy_traffic,
    operator_traffic,
    traffic_details,
)
from arenaplan.cost.traffic_kernel import tap_count
from arenaplan.cost.traffic_tflm import _broadcast_loads
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization
from arenaplan.reader import read_model, read_model_bytes
from arenaplan.tflm.verify.traffic_measure import measure_traffic, traffic_available

WHY_NOT = traffic_available()
needs_build = pytest.mark.skipif(WHY_NOT is not None, reason=f"cannot measure: {WHY_NOT}")


def _traffic(data: bytes):
    model = read_model_bytes(data)
    return model, operator_traffic(model)


# ---- formulas --------------------------------------------------------------------


def test_taps_count_the_filter_positions_inside_the_input() -> None:
    # 5 outputs, stride 1, SAME padding 1 of a 3-tap filter over 5 inputs: 2+3+3+3+2
    assert tap_count(5, 5, 3, 1, 1) == 13
    # dilation 2 and stride 2, no padding: every tap inside
    assert tap_count(3, 9, 3, 2, 0, 2) == 9


def test_convolution_reads_its_input_once_per_tap_and_output_channel() -> None:
    _, traffic = _traffic(conv_model())
    t = traffic[(0, 0)]
    # SAME, 9x7 input, 3x2 filter, stride (2, 1), dilation (1, 2): 5x7 output
    taps = tap_count(5, 9, 3, 2, 1) * tap_count(7, 7, 2, 1, 1, 2)
    assert t[(0, 0)] == Traffic.reads(taps * 3 * 5, 1)  # input: per tap, c_in x c_out
    assert t[(0, 1)] == Traffic.reads(taps * 3 * 5, 1)  # filter
    assert t[(0, 2)] == Traffic.reads(5 * 7 * 5, 4)  # bias, once per output element
    assert t[(0, 3)] == Traffic.writes(5 * 7 * 5, 1)
    # per-channel multiplier and shift, once per output element, plus fixed fields
    op_data = t[("persistent", "op_data", 0, 0)]
    assert op_data.loads == 2 * 5 * 7 * 5 + 10


def test_depthwise_reads_its_input_once_per_tap_and_output_channel() -> None:
    _, traffic = _traffic(conv_model(True, c_in=3, c_out=6))
    t = traffic[(0, 0)]
    taps = tap_count(5, 9, 3, 2, 1) * tap_count(7, 7, 2, 1, 1, 2)
    assert t[(0, 0)].loads == taps * 6
    assert t[(0, 1)].loads == taps * 6


def test_fully_connected_and_softmax() -> None:
    _, traffic = _traffic(fc_model(batch=3, depth=10, units=7))
    t = traffic[(0, 0)]
    assert t[(0, 0)].loads == t[(0, 1)].loads == 3 * 7 * 10
    assert t[(0, 2)] == Traffic.reads(21, 4)
    assert t[("persistent", "op_data", 0, 0)].loads == 2 * 21 + 9  # per-channel
    _, traffic = _traffic(softmax_model(rows=3, depth=7))
    assert traffic[(0, 0)][(0, 0)].loads == 3 * 21  # max, exponentials, output
    assert traffic[(0, 0)][(0, 1)].stores == 21


def test_broadcast_reads_a_stride_0_operand_once_per_run() -> None:
    m = read_model_bytes(add_model())
    a, b, y = m.subgraphs[0].tensors[:3]

    def shaped(t, shape):
        return type(t)(t.index, t.name, shape, t.dtype, t.buffer, False, False)

    y4 = shaped(y, (2, 3, 4, 5))
    a4 = shaped(a, (2, 3, 4, 5))
    assert _broadcast_loads(a4, shaped(b, ()), y4) == (120, 1)  # one fused loop
    assert _broadcast_loads(a4, shaped(b, (5,)), y4) == (120, 120)
    assert _broadcast_loads(a4, shaped(b, (2, 1, 1, 1)), y4) == (120, 2)  # once per batch


def test_memcpy_moves_words_when_both_ends_are_aligned() -> None:
    loads, stores = memcpy_traffic(20, 16, 16)
    assert loads.load_widths == ((1, 4), (8, 2)) and stores.store_widths == ((1, 4), (8, 2))
    loads, _ = memcpy_traffic(944, 4, 16)
    assert loads.load_widths == ((4, 236),)
    loads, _ = memcpy_traffic(7, 3, 16)
    assert loads == Traffic.reads(7, 1)


def test_concatenation_and_strided_slice_copy_runs() -> None:
    _, traffic = _traffic(concat_model())
    t = traffic[(0, 0)]
    assert sum(t[(0, k)].load_bytes for k in range(3)) == t[(0, 3)].store_bytes == 12 * 17
    _, traffic = _traffic(strided_slice_model())
    t = traffic[(0, 0)]
    assert t[(0, 0)].load_bytes == t[(0, 4)].store_bytes == 5 * 4 * 5
    _, traffic = _traffic(strided_slice_model((1, 2, 1, 3)))
    t = traffic[(0, 0)]
    assert t[(0, 0)] == Traffic.reads(3 * 4 * 2, 1)  # one load per element


def test_svdf_shifts_its_state_and_reads_it_per_memory_slot() -> None:
    _, traffic = _traffic(svdf_model(batch=2, inputs=12, filters=8, memory=5, rank=2))
    t = traffic[(0, 0)]
    state = t[(0, 4)]
    shifted = (2 * 8 * 5 - 1) * 2  # bytes moved left by one element (2-aligned: bytewise)
    assert state.load_bytes == shifted + 2 * 8 * 5 * 2
    assert state.store_bytes == shifted + 2 * 8 * 2
    assert t[(0, 0)].loads == 2 * 8 * 12


def test_the_shared_models_lstm_and_every_shared_operator() -> None:
    model = read_model(model_path("tflite-micro__trained_lstm_int8"))
    t = operator_traffic(model)[(0, 0)]
    # 28 steps x 4 gates x 20 cells x 28 inputs; recurrent weights 28 x 20 x 20
    assert t[(0, 0)].loads == 62_720 and t[(0, 8)].loads == 11_200
    assert t[("scratch", 0, 0, 1)] == Traffic(3920, 3920, 7840, 7840, ((2, 3920),), ((2, 3920),))
    for path in MODEL_PATHS:
        details = traffic_details(read_model(path))
        if path.stem not in TFLM_REFUSES:
            assert all(d.exact for d in details), path.stem
        assert all(d.traffic for d in details)


def test_mean_walks_an_odometer_over_the_input() -> None:
    _, traffic = _traffic(mean_model((3, 5, 6), (1,), keep=True))
    t = traffic[(0, 0)]
    # NextIndex touches the last digit 90 times, the middle 90/6, the first 90/30
    # (4-byte stores); the 12 bytes of digits were zeroed first (8 + 1+1+1+1 bytes)
    assert t[("scratch", 0, 0, 1)].store_widths == ((1, 4), (4, 90 + 15 + 3), (8, 1))
    # per element: the 3 digits for the input offset, 2 for the output's
    assert t[("scratch", 0, 0, 1)].loads == 108 + 90 * 5
    assert t[("scratch", 0, 0, 0)].loads == 90 + 18  # the sums, then each rescaled
    assert t[(0, 0)] == Traffic.reads(90, 1)


def test_an_unmodelled_kernel_is_a_lower_bound() -> None:
    n = Net("unknown")
    x, y = n.act((2, 8), DType.FLOAT32), n.act((2, 8), DType.FLOAT32)
    n.op("L2_NORMALIZATION", [x], [y])
    (d,) = traffic_details(read_model_bytes(n.done([x], [y])))
    assert not d.exact and d.kernel == "L2_NORMALIZATION"
    assert d.traffic[(0, 0)] == Traffic.reads(16, 4)


def test_compare_names_the_worst_figure() -> None:
    p = {(0, 0): {(0, 1): Traffic.reads(100, 1), (0, 2): Traffic.writes(10, 1)}}
    m = {(0, 0): {(0, 1): Traffic.reads(104, 1), ("other",): Traffic.reads(5, 8)}}
    diffs = {d.key: d for d in compare(p, m)}
    assert set(diffs) == {(0, 1), (0, 2)}  # the stack is not compared
    assert math.isclose(diffs[(0, 1)].error, 4 / 104)
    assert math.isinf(diffs[(0, 2)].error)
    assert difference(0, 0, (0, 1), Traffic(), Traffic()).error == 0


# ---- the command -----------------------------------------------------------------


def test_profile_prints_and_writes_json(tmp_path: Path, capsys) -> None:
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model())
    out = tmp_path / "traffic.json"
    assert main(["profile", str(path), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "FULLY_CONNECTED" in text and "1 of 1 operators modelled" in text
    doc = json.loads(out.read_text())
    (op,) = doc["operators"]
    assert op["exact"] and op["kernel"] == "FULLY_CONNECTED/int8/per_channel"
    weights = next(e for e in op["traffic"] if e["key"] == [0, 1])
    assert weights["predicted"]["loads"] == 210 and weights["kind"] == "tensor"


def test_profile_measure_without_the_build_says_how(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("ARENAPLAN_TFLM_BUILD", str(tmp_path / "nowhere"))
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model())
    assert main(["profile", str(path), "--measure"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "scripts/build_traffic.py" in err[0]


# ---- measured -----------------------------------------------------------------------


def _check_measured(data: bytes, name: str) -> None:
    model = read_model_bytes(data)
    measured = measure_traffic(data)
    predicted = operator_traffic(model)
    bad = [
        f"{name} op {d.op} {d.key}: predicted {d.predicted}, measured {d.measured}"
        for d in compare(predicted, {k: v.traffic for k, v in measured.items()})
        if d.error > 0.05
    ]
    assert not bad, "\n".join(bad[:10])


@needs_build
@pytest.mark.parametrize("name", sorted(BUILT))
def test_measured_equals_predicted_on_built_models(name: str) -> None:
    _check_measured(BUILT[name](), name)


def _shared_params() -> list:
    out = [pytest.param(p, id=p.stem) for p in MODEL_PATHS if p.stem not in TFLM_REFUSES]
    return out or [
        pytest.param(
            None,
            marks=pytest.mark.skip(
                reason="../shared/models is absent (CI has it beside the clone)"
            ),
        )
    ]


@needs_build
@pytest.mark.parametrize("path", _shared_params())
def test_measured_equals_predicted_on_shared_models(path: Path) -> None:
    _check_measured(path.read_bytes(), path.stem)


@needs_build
def test_measurement_attributes_tensors_and_persistent_blocks() -> None:
    measured = measure_traffic(model_path("tflite-micro__simple_add_model"))
    (op,) = measured.values()
    assert op.name == "ADD"
    assert op.traffic[(0, 0)] == Traffic.reads(16384, 1)
    assert op.traffic[(0, 2)] == Traffic.writes(16384, 1)
    assert ("arena", "head") not in op.traffic  # nothing outside its own tensors
    assert op.traffic[("persistent", "op_data", 0, 0)].loads > 0


def test_quantization_helper_is_the_opmodels_one() -> None:
    assert q(0.5) == Quantization((0.5,), (0,))


@needs_build
@pytest.mark.parametrize(
    "script, table",
    [
        ("gen_traffic_per_element.py", "traffic_per_element.json"),
        ("gen_traffic_rfft.py", "traffic_rfft.json"),
    ],
)
def test_measured_kernel_tables_regenerate_as_shipped(
    tmp_path: Path, script: str, table: str
) -> None:
    """Each script writes its shipped table: every entry, and the header but for the
    names of this machine's tools."""
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / table
    cmd = [sys.executable, str(repo / "scripts" / script), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)  # seconds
    assert done.returncode == 0, done.stderr
    new = json.loads(out.read_text())
    shipped = json.loads((repo / "src/arenaplan/cost/data" / out.name).read_text())
    for tool in ("compiler", "valgrind"):
        new.pop(tool)
        shipped.pop(tool)
    assert new == shipped


def test_tap_count_is_closed_form_and_exact() -> None:
    """Against the pairs counted one by one, and at 2^31 - 1 rows (no loop over rows)."""
    import itertools

    def pairs(out: int, size: int, k: int, s: int, p: int, d: int) -> int:
        return sum(1 for o in range(out) for f in range(k) if 0 <= o * s - p + f * d < size)

    for out, size, k, s, p, d in itertools.product(
        range(0, 9, 2), range(0, 11, 3), range(1, 6, 2), (1, 2, 3), (0, 1, 3), (1, 2)
    ):
        assert tap_count(out, size, k, s, p, d) == pairs(out, size, k, s, p, d)
    big = 2**31 - 1
    assert tap_count(big, big, 3, 1, 1) == 3 * big - 2
    assert tap_count(2, big, big, 1, 0) == 2 * big - 1  # a filter as tall as the input
