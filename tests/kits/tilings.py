"""Random tilings: pieces (first step, last step inclusive, bytes) that cover
``steps x height`` exactly, so a packing at the live-bytes bound exists (the pieces'
own places). The largest piece is cut along time or bytes, or (``pinwheel``) into five
around a centre, which no guillotine cut separates."""

from __future__ import annotations

import random

Piece = tuple[int, int, int]  # first step, last step (inclusive), bytes


def _cut(rng: random.Random, r: Piece, pinwheel: bool) -> list[Piece]:
    t0, t1, h = r
    w = t1 - t0 + 1
    if pinwheel and w >= 3 and h >= 3 and rng.random() < 0.35:
        a, b = rng.randint(1, w - 2), rng.randint(1, h - 2)
        c, d = rng.randint(a + 1, w - 1), rng.randint(b + 1, h - 1)
        return [
            (t0, t0 + c - 1, b),  # bottom
            (t0 + c, t1, d),  # right
            (t0 + a, t1, h - d),  # top
            (t0, t0 + a - 1, h - b),  # left
            (t0 + a, t0 + c - 1, d - b),  # centre
        ]
    if w > 1 and (h == 1 or rng.random() < 0.5):
        k = rng.randint(1, w - 1)
        return [(t0, t0 + k - 1, h), (t0 + k, t1, h)]
    k = rng.randint(1, h - 1)
    return [(t0, t1, k), (t0, t1, h - k)]


def tiling_pieces(n: int, seed: int, pinwheel: bool, steps: int, height: int) -> list[Piece]:
    """About ``n`` pieces tiling ``steps x height`` bytes exactly, shuffled."""
    rng = random.Random(seed)
    pieces: list[Piece] = [(0, steps - 1, height)]
    while len(pieces) < n:
        k = max(range(len(pieces)), key=lambda i: (pieces[i][1] - pieces[i][0] + 1) * pieces[i][2])
        r = pieces.pop(k)
        if r[0] == r[1] and r[2] == 1:
            pieces.append(r)
            break
        pieces += _cut(rng, r, pinwheel)
    rng.shuffle(pieces)
    return pieces
