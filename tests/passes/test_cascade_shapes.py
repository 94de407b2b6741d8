"""Shape computations the ``cascade`` pass folds into constants (passes/cascade_shapes.py):
the values are those TFLM's SHAPE, STRIDED_SLICE and PACK compute, only those are
folded, and the chain the SHAPE cut becomes one cascade."""

from __future__ import annotations

import numpy as np
import pytest
from kits.opmodels import I16, I32, I64, Net

from arenaplan.builder.unet import unet_denoiser
from arenaplan.ir import cascade_format as f
from arenaplan.ir.verifier import verify_ir
from arenaplan.passes import make_pass, run_passes
from arenaplan.passes.cascade import longest_chains
from arenaplan.passes.cascade_shapes import fold_shapes
from arenaplan.reader import read_model_bytes


def _shape_model(out_type: int = 2, stride: int = 1, shrink: int = 1, output_dims=False) -> bytes:
    """RESHAPE of x whose shape is PACK(STRIDED_SLICE(SHAPE(x)), 12): as a converter
    writes a dynamic batch."""
    n = Net("shape")
    x = n.act((1, 3, 4, 1), I16, 0.001)
    dims = n.act((4,), I32 if out_type == 2 else I64)
    n.op("SHAPE", [x], [dims], out_type=out_type)
    batch = n.act((), I32) if shrink else n.act((1,), I32)
    ends = [n.const([0], I32), n.const([1], I32), n.const([stride], I32)]
    n.op("STRIDED_SLICE", [dims, *ends], [batch], shrink_axis_mask=shrink)
    packed = n.act((2,), I32)
    n.op("PACK", [batch, n.const(12, I32)], [packed], axis=0, values_count=2)
    y = n.act((1, 12), I16, 0.001)
    n.op("RESHAPE", [x, packed], [y])
    return n.done([x], [y, dims] if output_dims else [y])


def _values(model, opcode: str) -> list:
    sg = model.subgraphs[0]
    op = next(o for o in sg.operators if o.opcode == opcode)
    t = sg.tensors[op.inputs[1]]
    data = model.buffers[t.buffer]
    return list(np.frombuffer(data, "<i4").reshape(t.shape)) if t.is_constant else None


def test_shape_slice_and_pack_fold_into_the_reshape_s_shape() -> None:
    model = read_model_bytes(_shape_model())
    folded, count, origin = fold_shapes(model)
    verify_ir(folded)
    assert count == 3
    assert [op.opcode for op in folded.subgraphs[0].operators] == ["RESHAPE"]
    assert _values(folded, "RESHAPE") == [1, 12]  # the batch of [1, 3, 4, 1], then 12
    assert origin == (3,)  # the RESHAPE is the old operator 3


@pytest.mark.parametrize(
    ("kwargs", "left"),
    [
        ({"out_type": 4}, ["SHAPE", "STRIDED_SLICE", "PACK", "RESHAPE"]),  # int64 values
        ({"stride": 2}, ["STRIDED_SLICE", "PACK", "RESHAPE"]),  # a stride other than 1
        ({"output_dims": True}, ["SHAPE", "RESHAPE"]),  # SHAPE's output leaves the graph
    ],
    ids=["int64", "stride", "output"],
)
def test_what_is_not_computed_here_exactly_stays(kwargs: dict, left: list[str]) -> None:
    model = read_model_bytes(_shape_model(**kwargs))
    folded, _, _ = fold_shapes(model)
    assert [op.opcode for op in folded.subgraphs[0].operators] == left


def test_a_model_without_shape_computations_is_left_as_it_is() -> None:
    model = read_model_bytes(unet_denoiser())
    assert fold_shapes(model)[0] is model


def test_a_shape_that_cut_a_chain_no_longer_does() -> None:
    """The converter's TRANSPOSE_CONV shapes read the decoder's tensors by SHAPE: the
    decoder was runs cut by them; folded, it is one cascade, and the shape operators
    are gone from the rewritten model."""
    data = unet_denoiser(frames=1, bins=64, channels=4, shape_ops=True)
    model = read_model_bytes(data)
    runs = longest_chains(model.subgraphs[0], model.buffers)
    assert max(len(r) for r in runs) < 9
    out, records = run_passes(model, [make_pass("cascade", {})])
    assert records[0].stats["shapes_folded"] == 6
    opcodes = [op.opcode for op in out.subgraphs[0].operators]
    assert not {"SHAPE", "STRIDED_SLICE", "PACK"} & set(opcodes)
    decoder = max(
        (op for op in out.subgraphs[0].operators if op.opcode == f.OPCODE),
        key=lambda op: len(f.decode(op).records),
    )
    assert len(f.decode(decoder).records) == 9
