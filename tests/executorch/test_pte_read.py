"""A ``.pte`` read into the IR without torch: methods, tensors, instructions, and what
the program's own plan says (views, state, pools)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from kits.pte import PROGRAMS, pte_path

from arenaplan.errors import ModelFormatError
from arenaplan.executorch import native
from arenaplan.executorch.storage import storage_of
from arenaplan.ir.verifier import ir_problems
from arenaplan.reader import read_model_bytes
from arenaplan.reader.pte_format import read_program


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_program_reads_into_a_valid_ir(name: str) -> None:
    data = pte_path(name).read_bytes()
    model = read_model_bytes(data)
    program = read_program(data)
    assert model.file_format == "pte" and ir_problems(model) == []
    assert [sg.name for sg in model.subgraphs] == [p.name for p in program.plans]
    for sg, plan in zip(model.subgraphs, program.plans, strict=True):
        assert len(sg.tensors) == len(plan.tensors())
        assert len(sg.operators) == len(plan.instructions)
    assert len(model.stored_plan) == model.tensor_count


def test_a_program_with_two_methods_has_two_subgraphs_and_pools() -> None:
    data = pte_path("two_methods").read_bytes()
    model = read_model_bytes(data)
    assert [sg.name for sg in model.subgraphs] == ["gram", "mix"]
    assert all(len(p.pools) == 2 and p.pools[1] > 0 for p in read_program(data).plans)


def test_views_lie_in_their_base_and_state_is_kept() -> None:
    """``views``: views of the product, the slice and the in-place add's result;
    ``counter``: its mutable buffer is state; ``cnn``: flatten is a view of the pool."""
    views = storage_of(read_model_bytes(pte_path("views").read_bytes()))
    assert len(views.views) >= 3 and not views.state
    counter = storage_of(read_model_bytes(pte_path("counter").read_bytes()))
    assert len(counter.state) == 1 and not counter.views
    cnn = read_model_bytes(pte_path("cnn").read_bytes())
    ((member, ((_, base), delta)),) = storage_of(cnn).views.items()
    tensors = cnn.subgraphs[0].tensors
    assert delta == 0 and tensors[member[1]].shape[-1] == 2048 and tensors[base].shape[1] == 8


@pytest.mark.parametrize("cut", [7, 40, 200])
def test_a_cut_program_is_one_line(cut: int) -> None:
    data = pte_path("cnn").read_bytes()
    with pytest.raises(ModelFormatError) as info:
        read_model_bytes(data[:cut])
    assert "\n" not in str(info.value)


def test_the_runner_source_ships_with_the_package() -> None:
    """A wheel carries the runner's C++ (package data), as it carries the firmware's."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]
    source = native.SOURCE.relative_to(native.SOURCE.parents[1]).as_posix()
    assert source.endswith(".cc") and any(
        Path(source).match(g) for g in data["arenaplan.executorch"]
    )


def test_the_runner_links_the_quantized_kernels_and_is_keyed_on_its_command(
    monkeypatch,
) -> None:
    """``int8`` runs ``quantized_decomposed`` kernels: their library is linked like the
    optimized one (registration only, so not dropped as unneeded); a runner built
    without it is not the one a changed command finds in the cache."""
    folder = Path("/wheel/executorch")
    command = native.build_command(folder, Path("out"))
    keep, back = command.index("-Wl,--push-state,--no-as-needed"), command.index("-Wl,--pop-state")
    assert keep < command.index("-lexecutorch_kernels_quantized") < back
    assert keep < command.index("-lexecutorch_kernels_optimized") < back
    before = native.build_key(folder)
    monkeypatch.setattr(native, "KERNELS", ("executorch_kernels_optimized",))
    assert native.build_key(folder) != before
    assert native.build_key(Path("/elsewhere/executorch")) != native.build_key(folder)


def test_int8_dequantizes_its_weights_into_the_pool() -> None:
    """``int8`` (PT2E, no delegate): int8 constants, and the float copies
    ``dequantize_per_tensor`` computes from them are pool tensors, not constants."""
    model = read_model_bytes(pte_path("int8").read_bytes())
    sg = model.subgraphs[0]
    kinds = {op.opcode.split("(")[0] for op in sg.operators}
    assert "quantized_decomposed::quantize_per_tensor.out" in kinds
    weights = [
        op.outputs[0]
        for op in sg.operators
        if op.opcode.startswith("quantized_decomposed::dequantize")
        and sg.tensors[op.inputs[0]].is_constant
    ]
    assert len(weights) == 4  # two convolutions, two linears
    assert all(
        not sg.tensors[t].is_constant and sg.tensors[t].dtype.name == "FLOAT32" for t in weights
    )
    assert sum(sg.tensors[t].nbytes for t in weights) == 4 * (432 + 4608 + 8192 + 160)
