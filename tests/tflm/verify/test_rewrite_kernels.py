"""Rewrites proven on the kernels that will run: every shared model, ``plan --passes
reorder,inplace,bands`` for the reference kernels (proven in the PyPI runtime) and for
CMSIS-NN at each level: plain C (TFLM's host-cmsis_nn build), DSP (arm32-cmsis_nn
under qemu-arm) and MVE (m55-cmsis_nn on qemu-system-arm). A rewrite proven with the
reference kernels must be proven with CMSIS-NN too, or the proof must name why not
(the CMSIS-NN build refuses the original model); outputs that differ or a head that is
not the plan fail. Each side skips, naming what to install or build, when it cannot
run here."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from testkit import TFLM_REFUSES, model_params, need_prover

from arenaplan.cli import main
from arenaplan.tflm.verify.prove import PROOF_BUILDS

PASSES = "reorder,inplace,bands"


@cache
def _proof(path: Path, kernels: str, folder: Path) -> dict:
    """The JSON ``proof`` of ``plan --passes PASSES --kernels kernels`` on ``path``."""
    out = folder / f"{path.stem}.{kernels}"
    argv = ["plan", str(path), "-q", "-o", f"{out}.tflite", "--json", f"{out}.json"]
    assert main([*argv, "--passes", PASSES, "--kernels", kernels]) == 0
    return json.loads(Path(f"{out}.json").read_text())["proof"] or {"proven": None}


@pytest.mark.parametrize("kernels", sorted(PROOF_BUILDS))
@pytest.mark.parametrize("path", model_params())
def test_a_rewrite_proven_on_reference_kernels_is_proven_on_cmsis_nn(
    path: Path, kernels: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    need_prover("reference")
    need_prover(kernels)
    folder = tmp_path_factory.getbasetemp()
    reference, cmsis = _proof(path, "reference", folder), _proof(path, kernels, folder)
    print(f"\n{path.stem}: reference {reference}\n{path.stem}: {kernels} {cmsis}")
    if reference["proven"] is None:
        pytest.skip("the passes changed nothing for the reference kernels: nothing proven")
    if not reference["proven"]:
        pytest.skip(f"not proven with the reference kernels: {reference['reason']}")
    assert cmsis["runtime"].startswith(f"TFLM {PROOF_BUILDS[kernels]}")
    refused = (cmsis["reason"] or "").startswith("TFLM refuses the original model")
    assert cmsis["proven"] or refused, cmsis["reason"]
