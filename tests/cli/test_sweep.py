"""``arenaplan sweep``: latency against fast-memory size, printed and plotted."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.cli import main


def test_sweep_prints_every_capacity_and_plots(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib", reason="plots need matplotlib")
    src = model_path("arm-ml-examples__ds_cnn_s_quantized")
    plot = tmp_path / "sweep.svg"
    assert (
        main(["sweep", str(src), "--target", "esp32s3", "--points", "4", "--plot", str(plot)]) == 0
    )
    out = capsys.readouterr().out
    assert "16,000" in out and "4,000" in out and "Vela" in out
    assert plot.read_bytes().startswith(b"<?xml")


def test_sweep_options_are_checked(capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    assert main(["sweep", str(src), "--points", "1"]) == 2
    assert main(["sweep", str(src), "--target", "nowhere"]) == 2
    assert "unknown target" in capsys.readouterr().err
