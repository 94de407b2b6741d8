"""Shared test helpers: the real models of ../shared, skipped with a reason where absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenaplan.runtime.registry import parse_kernels, parse_profile
from arenaplan.runtime.spec import KernelSet, Profile

SHARED = Path(__file__).resolve().parents[2] / "shared"
MODELS_DIR = SHARED / "models"
MODEL_PATHS = sorted(MODELS_DIR.glob("*.tflite")) if MODELS_DIR.is_dir() else []
SHARED_ABSENT = "../shared/models is absent (CI has it beside the clone)"
# Models the PyPI TFLM runtime refuses (models README): still valid planner input.
TFLM_REFUSES = {
    "arm-ml-examples__basic_lstm_quantized_small",
    "mlcommons-tiny__kws_ref_model_float32",
}


def model_path(stem: str) -> Path:
    path = MODELS_DIR / f"{stem}.tflite"
    if not path.exists():
        pytest.skip(SHARED_ABSENT)
    return path


def shared_path(relative: str) -> Path:
    path = SHARED / relative
    if not path.exists():
        folder = "/".join(Path(relative).parts[:2])  # one reason per shared folder
        pytest.skip(f"../shared/{folder} is absent (CI has ../shared beside the clone)")
    return path


def model_params() -> list:
    """Parametrise over every real model; one skipped case where ../shared is absent."""
    if not MODEL_PATHS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=SHARED_ABSENT))]
    return [pytest.param(p, id=p.stem) for p in MODEL_PATHS]


def kernel_set(name: str | KernelSet) -> KernelSet:
    """TFLM's kernel set spelled ``name`` (as ``--kernels`` takes it; a value as it is)."""
    return name if isinstance(name, KernelSet) else parse_kernels(name, "tflm")


def build_profile(name: str) -> Profile:
    """TFLM's build profile spelled ``name`` (as ``--profile`` takes it)."""
    return parse_profile(name, "tflm")


def need_prover(kernels: str | KernelSet = "reference") -> None:
    """Skip, naming what to install or build, when nothing here can prove a plan for
    ``kernels`` (the PyPI runtime for reference kernels, else a TFLM build)."""
    from arenaplan.tflm.verify.prove import proof_runtime

    why = proof_runtime(kernels if isinstance(kernels, str) else kernels.name)[1]
    if why is not None:
        pytest.skip(why)


# CMSIS-NN's UNIDIRECTIONAL_SEQUENCE_LSTM keeps the cell state in a scratch buffer of
# the head, so nothing carries from one Invoke to the next; the reference kernel keeps
# the state in the model's variable tensors. A first Invoke gives the same bytes.
STATEFUL_LSTM = {"google-coral-test-data__keras_lstm_mnist_ptq", "tflite-micro__trained_lstm_int8"}
