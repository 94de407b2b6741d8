"""Inputs for trial runs: random values over each input type's whole range."""

from __future__ import annotations

import numpy as np

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model

_NUMPY = {
    DType.INT8: np.int8,
    DType.UINT8: np.uint8,
    DType.INT16: np.int16,
    DType.UINT16: np.uint16,
    DType.INT32: np.int32,
    DType.UINT32: np.uint32,
    DType.INT64: np.int64,
    DType.FLOAT32: np.float32,
    DType.FLOAT16: np.float16,
    DType.FLOAT64: np.float64,
    DType.BOOL: np.bool_,
}


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    np_type = _NUMPY.get(dtype)
    if np_type is None:
        raise ValueError(f"cannot make inputs of type {dtype.name}")
    shape = tuple(max(d, 1) for d in shape)
    if np_type is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(np_type, np.integer):
        info = np.iinfo(np_type)
        return rng.integers(info.min, info.max, shape, dtype=np_type, endpoint=True)
    return rng.standard_normal(shape).astype(np_type)


def random_inputs(model: Model, trials: int, seed: int) -> list[list[np.ndarray]]:
    """``trials`` lists of arrays, one per input of subgraph 0; same seed, same values."""
    rng = np.random.default_rng(seed)
    sg = model.subgraphs[0]
    return [
        [_array(rng, sg.tensors[i].shape, sg.tensors[i].dtype) for i in sg.inputs]
        for _ in range(trials)
    ]


def zero_inputs(model: Model) -> list[np.ndarray]:
    sg = model.subgraphs[0]
    return [
        np.zeros(
            tuple(max(d, 1) for d in sg.tensors[i].shape), _NUMPY.get(sg.tensors[i].dtype, np.int8)
        )
        for i in sg.inputs
    ]
