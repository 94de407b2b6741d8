"""Which kernels a TFLM build runs: its reference kernels, or CMSIS-NN's.

CMSIS-NN asks for scratch buffers whose sizes depend on the Arm extensions the
library is compiled for (``arm_nn_math_types.h``: ``ARM_MATH_DSP`` from
``__ARM_FEATURE_DSP``, ``ARM_MATH_MVEI`` from ``__ARM_FEATURE_MVE``), so a variant
names that level:

- ``reference``: TFLM's reference kernels (the PyPI wheel, any build without
  ``OPTIMIZED_KERNEL_DIR``);
- ``cmsis_nn``: CMSIS-NN in plain C, neither DSP nor MVE (a host build, RISC-V,
  Xtensa, Cortex-M0/M0+/M3);
- ``cmsis_nn+dsp``: CMSIS-NN with the DSP extension (Cortex-M4, M7, M33, M35P);
- ``cmsis_nn+mve``: CMSIS-NN with MVE integer (Helium: Cortex-M55, M85).

What each variant asks for is in ``tflm.scratch`` (head) and
``tflm.tail`` (tail); the CMSIS-NN rules are in ``tflm.cmsis_nn``.
"""

from __future__ import annotations

from arenaplan.runtime.spec import KernelSet

KERNELS = ("reference", "cmsis_nn", "cmsis_nn+dsp", "cmsis_nn+mve")
REFERENCE = "reference"

# What each variant stands for, in words (help texts, headers).
KERNEL_WORDS = {
    "reference": "TFLM's reference kernels",
    "cmsis_nn": "CMSIS-NN, plain C (no DSP, no MVE)",
    "cmsis_nn+dsp": "CMSIS-NN with the DSP extension (Cortex-M4/M7/M33)",
    "cmsis_nn+mve": "CMSIS-NN with MVE/Helium (Cortex-M55/M85)",
}

# CMSIS-NN feature level of each CMSIS-NN variant: "c", "dsp" or "mve".
_FEATURES = {"cmsis_nn": "c", "cmsis_nn+dsp": "dsp", "cmsis_nn+mve": "mve"}


def check_kernels(name: str) -> str:
    """``name`` if it is a known variant; ValueError (naming the variants) if not."""
    if name not in KERNELS:
        raise ValueError(f"unknown kernels {name!r} (known: {', '.join(KERNELS)})")
    return name


def cmsis_features(name: str) -> str | None:
    """The CMSIS-NN feature level of variant ``name`` ("c", "dsp", "mve"), None for
    the reference kernels."""
    return _FEATURES.get(check_kernels(name))


def kernel_name(kernels: KernelSet | str | None) -> str:
    """TFLM's spelling of a kernel set (a value, or already spelled; None: the
    reference kernels)."""
    if kernels is None:
        return REFERENCE
    return check_kernels(kernels if isinstance(kernels, str) else kernels.name)
