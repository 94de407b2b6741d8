"""The tasks of a sweep: models x targets x SRAM sizes x passes x weights policies."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from arenaplan.errors import UsageError
from arenaplan.explore.tasks import NONE, Task, file_hash
from arenaplan.units import parse_size

ROUND = 16  # bytes: sizes of a range are multiples of this


def parse_sizes(text: str) -> list[int]:
    """``A..B:N``: N sizes from A to B spaced evenly on a log scale (each a multiple
    of 16 bytes, duplicates dropped); or a comma-separated list of sizes."""
    if ".." not in text:
        return sorted({parse_size(p.strip(), "--sram") for p in text.split(",") if p.strip()})
    span, _, count = text.partition(":")
    lo_text, _, hi_text = span.partition("..")
    lo, hi = parse_size(lo_text, "--sram"), parse_size(hi_text, "--sram")
    n = int(count) if count.strip().isdigit() else 0
    if n < 2 or hi <= lo:
        raise UsageError(f"--sram {text!r}: expected SMALL..LARGE:N with N >= 2 and SMALL < LARGE")
    ratio = math.log(hi / lo) / (n - 1)
    sizes = {max(ROUND, round(lo * math.exp(k * ratio) / ROUND) * ROUND) for k in range(n)}
    return sorted(sizes)


def words(text: str, option: str) -> list[str]:
    found = [w.strip() for w in text.split(",") if w.strip()]
    if not found:
        raise UsageError(f"{option}: give at least one value")
    return found


def policy_words(text: str) -> list[str]:
    """``explore --weights``: comma-separated policies, where ``double`` is not a
    policy but the end of the one before it (``groups[:G],double``), so
    ``none,groups:8,double`` is ``none`` and ``groups:8,double``."""
    found: list[str] = []
    for word in words(text, "--weights"):
        if word == "double" and found and found[-1].split(":")[0] == "groups":
            found[-1] += ",double"
        else:
            found.append(word)
    return found


def make_tasks(
    models: Sequence[Path],
    targets: Sequence[str],
    sizes: Sequence[int],
    passes: Sequence[str] = (NONE,),
    weights: Sequence[str] = (NONE,),
    time_limit: float = 1.0,
) -> list[Task]:
    """Every combination, in a fixed order; each model's bytes hashed once."""
    for m in models:
        if not m.is_file():
            raise UsageError(f"{m}: no such file")
    hashes = {m: file_hash(m) for m in models}
    return [
        Task(str(m), hashes[m], t, s, p, w, time_limit)
        for m in models
        for t in targets
        for p in passes
        for w in weights
        for s in sizes
    ]
