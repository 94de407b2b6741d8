"""A figure arenaplan cannot prove is labelled an estimate everywhere it is printed."""

from __future__ import annotations

import json
from pathlib import Path

from arenaplan.builder import ModelBuilder
from arenaplan.cli import main
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization


def _vendor_model(path: Path) -> Path:
    """int8 input -> a vendor's custom operator -> SOFTMAX: the custom operator's
    persistent data is unknown to arenaplan."""
    b = ModelBuilder("vendor")
    q = Quantization((0.05,), (0,))
    x = b.add_tensor("x", (1, 16), DType.INT8, quantization=q)
    y = b.add_tensor("y", (1, 16), DType.INT8, quantization=q)
    z = b.add_tensor("z", (1, 16), DType.INT8, quantization=Quantization((1 / 256,), (-128,)))
    b.add_operator("custom:MyVendorOp", [x], [y])
    b.add_operator("SOFTMAX", [y], [z], {"beta": 1.0})
    b.set_io([x], [z])
    path.write_bytes(b.finish())
    return path


def test_an_unmodelled_operator_makes_every_arena_figure_an_estimate(tmp_path: Path, capsys):
    model = _vendor_model(tmp_path / "vendor.tflite")
    js, header = tmp_path / "p.json", tmp_path / "arena.h"
    assert main(["plan", str(model), "--json", str(js), "--header", str(header)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "tail (persistent): at least" in out and "MyVendorOp" in out
    assert "set the tensor arena to at least" in out and "an estimate" in out
    figures = json.loads(js.read_text())["persistent"]
    assert all(not f["exact"] and f["not_modelled"] for f in figures.values())
    text = header.read_text()
    assert "#define ARENAPLAN_SIZES_EXACT 0" in text and "ESTIMATE" in text
    assert "MyVendorOp" in text


def test_a_modelled_model_is_exact_everywhere(tmp_path: Path, capsys) -> None:
    from arenaplan.builder import demo_model

    model = tmp_path / "demo.tflite"
    model.write_bytes(demo_model())
    js, header = tmp_path / "p.json", tmp_path / "arena.h"
    assert main(["plan", str(model), "--json", str(js), "--header", str(header)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "predicted exactly" in out and "at least" not in out
    assert all(f["exact"] for f in json.loads(js.read_text())["persistent"].values())
    assert "#define ARENAPLAN_SIZES_EXACT 1" in header.read_text()
