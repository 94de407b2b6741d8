"""Proof in the real TFLM runtime (PyPI ``tflite-micro``), always in a child process."""

from arenaplan.tflm.verify.compare import VerifyReport, compare_models
from arenaplan.tflm.verify.runner import Measurement, TflmRunner, measure, tflm_available

__all__ = [
    "Measurement",
    "TflmRunner",
    "VerifyReport",
    "compare_models",
    "measure",
    "tflm_available",
]
