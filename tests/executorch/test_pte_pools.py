"""A program planned over a target's memories: one pool per memory, written, read
back, proven in ExecuTorch's runtime, and timed against ExecuTorch's BankedGreedy
at the same capacities (programs ``scripts/export_pte.py`` planned with it)."""

from __future__ import annotations

import json

import pytest
from kits.pte import need_runtime, pte_dir, pte_path

from arenaplan.cli import main
from arenaplan.executorch.placed_time import placed_seconds, pool_sizes
from arenaplan.executorch.prove import prove_program
from arenaplan.executorch.write import with_allocations
from arenaplan.pipeline import PlanRequest, Wanted, read_source, run_plan
from arenaplan.reader import read_model_bytes
from arenaplan.reader.pte_format import read_program
from arenaplan.targets.load import load_builtin

BANKS = ("tcm", "ocram")  # memory ids 1 and 2, as the banked programs declare them
# the programs exported with BankedGreedy (scripts/export_pte.py's BANKED)
BANKED = ("attention", "autoencoder", "cnn", "int8", "lstm", "rescnn", "unet")


def _caps(name: str) -> dict[str, int]:
    path = pte_dir() / "banked.json"
    if not path.is_file():
        pytest.skip("no banked programs here (bash scripts/executorch_lane.sh makes them)")
    return json.loads(path.read_text())[name]


def _spread(name: str, caps: dict[str, int]):
    source = read_source(pte_path(name))
    request = PlanRequest(
        source, target=load_builtin("imxrt1170"), caps=caps, outputs=Wanted(model=True, json=True)
    )
    return source, run_plan(request)


@pytest.mark.parametrize("name", BANKED)
def test_never_slower_than_banked_greedy_at_the_same_capacities(name: str) -> None:
    caps = _caps(name)
    banked = read_model_bytes(pte_path(f"{name}_banked").read_bytes())
    _, done = _spread(name, caps)
    ours = read_model_bytes(done.files["model"])
    sizes = pool_sizes(ours)
    assert all(sizes[k + 1] <= caps[m] for k, m in enumerate(BANKS) if k + 1 in sizes)
    assert set(pool_sizes(banked)) <= {1, 2}
    target = load_builtin("imxrt1170")
    mine, theirs = placed_seconds(ours, target, BANKS), placed_seconds(banked, target, BANKS)
    assert mine <= theirs * (1 + 1e-9), f"{mine * 1e3:.4f} ms vs BankedGreedy {theirs * 1e3:.4f}"


@pytest.mark.parametrize("name", ["cnn", "unet"])
def test_a_spread_program_has_a_pool_per_memory_and_runs_the_same(name: str) -> None:
    caps = _caps(name)
    source, done = _spread(name, caps)
    program = read_program(done.files["model"])
    pools = program.plans[0].pools
    assert len(pools) == 3 and 0 < pools[1] <= caps["tcm"] and pools[2] > 0
    firmware = json.loads(done.files["json"])["firmware"]
    assert firmware["layout"] == "pools"
    assert [a["memory"] for a in firmware["arrays"]] == ["tcm", "ocram", "ocram"]  # tcm is full
    assert [a["bytes"] for a in firmware["arrays"][:2]] == list(pools[1:])
    need_runtime()
    proof = prove_program(source.data, done.files["model"])
    assert proof.proven, proof.reason


def test_a_program_that_pins_a_pool_is_not_spread(tmp_path, capsys) -> None:
    """A tensor of memory id 2 in the program (a pin): its pools are its own."""
    data = pte_path("cnn").read_bytes()
    program = read_program(data)
    plan = program.plans[0]
    value = next(t.value for t in plan.tensors() if t.memory == 1)
    pinned = tmp_path / "pinned.pte"
    pinned.write_bytes(
        with_allocations(data, program, {(0, value): (2, 0)}, {0: (0, *plan.pools[1:], 65536)})
    )
    code = main(["plan", str(pinned), "--target", "imxrt1170", "--memory", "tcm=16KiB", "-q"])
    assert code == 2
    assert "pins tensors to memory id 2" in capsys.readouterr().err


def test_the_summary_says_each_pool_and_the_method_allocator(capsys) -> None:
    caps = _caps("cnn")
    path = pte_path("cnn")
    assert main(["plan", str(path), "--target", "imxrt1170", "--memory", f"tcm={caps['tcm']}"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "memory id 1: " in out and "B in tcm; memory id 2: " in out
    assert "method allocator of 1,788 B in ocram" in out
    assert "predicted for 32-bit ARM" in out


def test_pinned_pools_are_kept_and_named_without_a_target(tmp_path, capsys) -> None:
    """attention_banked has memory id 2 (pins, from arenaplan's view): planned without a
    target, its pools are memory id 1 and the pinned 2, in the firmware line and the
    header; with a target it is refused in one line (its pins' memory is its own)."""
    path = pte_path("attention_banked")
    header = tmp_path / "a.h"
    assert main(["plan", str(path), "--header", str(header)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "memory id 1: " in out and "memory id 2, pinned: 14,336 B" in out
    assert "#define ARENAPLAN_POOL_2_BYTES 14336u" in header.read_text()
    assert main(["plan", str(path), "--target", "imxrt1170", "-q"]) == 2
    assert "pins tensors to memory id 2" in capsys.readouterr().err
