"""The tensors of the project's built int8 networks (``mobilenet``, ``ds_cnn``):
activations, per-channel weights and int32 biases with deterministic data.

Values are random from a fixed seed and made in call order, so a network built by
the same calls has the same bytes every time: right for planning and for running
in TFLM, not for accuracy. Names are ``a``/``w``/``b`` and a running count."""

from __future__ import annotations

import numpy as np

from arenaplan.builder.writer import ModelBuilder
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Quantization


class Int8Net:
    """A model under construction (``b``) and the tensors its layers need."""

    def __init__(self, name: str) -> None:
        self.b = ModelBuilder(name)
        self.rng = np.random.default_rng(0)
        self.n = 0

    def act(self, shape: tuple[int, ...]) -> int:
        """An int8 activation (scale 0.05, zero point -128)."""
        self.n += 1
        q = Quantization((0.05,), (-128,))
        return self.b.add_tensor(f"a{self.n}", shape, DType.INT8, quantization=q)

    def weights(self, shape: tuple[int, ...], axis: int) -> int:
        """Constant int8 weights, symmetric, one scale per channel along ``axis``."""
        self.n += 1
        data = self.rng.integers(-100, 100, shape).astype(np.int8)
        k = shape[axis]
        scales = tuple(float(s) for s in self.rng.uniform(0.002, 0.01, k))
        q = Quantization(scales, (0,) * k, axis)
        return self.b.add_tensor(f"w{self.n}", shape, DType.INT8, data=data, quantization=q)

    def bias(self, k: int) -> int:
        """A constant int32 bias of ``k`` channels."""
        self.n += 1
        data = self.rng.integers(-500, 500, k).astype(np.int32)
        q = Quantization((1e-4,) * k, (0,) * k)
        return self.b.add_tensor(f"b{self.n}", (k,), DType.INT32, data=data, quantization=q)
