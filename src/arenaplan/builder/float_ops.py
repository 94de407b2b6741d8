"""Float reference layers (NHWC), only to calibrate the demo's quantisation."""

from __future__ import annotations

import numpy as np


def _pad_same(x: np.ndarray, k: int, stride: int) -> np.ndarray:
    h, w = x.shape[1:3]
    out_h, out_w = -(-h // stride), -(-w // stride)
    ph = max((out_h - 1) * stride + k - h, 0)
    pw = max((out_w - 1) * stride + k - w, 0)
    return np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))


def _patches(x: np.ndarray, k: int, stride: int) -> np.ndarray:
    """[1, out_h, out_w, k, k, C] windows of a SAME-padded input."""
    p = _pad_same(x, k, stride)
    win = np.lib.stride_tricks.sliding_window_view(p, (k, k), axis=(1, 2))
    return win[:, ::stride, ::stride].transpose(0, 1, 2, 4, 5, 3)


def conv2d(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """w: [C_out, k, k, C_in]."""
    return np.einsum("nhwijc,oijc->nhwo", _patches(x, w.shape[1], stride), w)


def depthwise2d(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """w: [k, k, C]."""
    return np.einsum("nhwijc,ijc->nhwc", _patches(x, w.shape[0], stride), w)


def avg_pool(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=(1, 2), keepdims=True)
