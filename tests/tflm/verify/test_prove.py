"""The proof's record and where a proof runs (verify/prove.py), without running TFLM."""

from __future__ import annotations

import pytest

from arenaplan.tflm.kernel_sets import KERNELS
from arenaplan.tflm.verify.native import VARIANTS
from arenaplan.tflm.verify.prove import PROOF_BUILDS, PROOF_TRIALS, PYPI, Proof, proof_runtime


def test_an_unproven_proof_keeps_its_trials_and_its_measured_head() -> None:
    """The measured head goes to ``measured_head``, never into ``trials`` (the fields
    after the reason are keyword-only)."""
    record = Proof(
        "TFLM's measured head is 10 B, the plan says 8 B", runtime=PYPI, head=10
    ).as_dict()
    assert record["trials"] == PROOF_TRIALS and record["measured_head"] == 10
    assert record["proven"] is False and record["measured_tail"] is None
    with pytest.raises(TypeError):
        Proof("why", 10)  # type: ignore[misc]


def test_every_kernel_set_has_a_place_to_be_proven() -> None:
    """The reference kernels in the PyPI runtime, each CMSIS-NN level in the build that
    compiles its code; where that cannot run here, the reason names what is missing."""
    assert set(PROOF_BUILDS) | {"reference"} == set(KERNELS)
    assert all(VARIANTS[v].kernels == k for k, v in PROOF_BUILDS.items())
    assert proof_runtime("reference")[0] == PYPI
    for kernels, variant in PROOF_BUILDS.items():
        runtime, why = proof_runtime(kernels)
        assert variant in runtime
        assert why is None or variant in why
