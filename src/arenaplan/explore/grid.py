"""The tasks of a sweep: models x targets x SRAM sizes x passes x weights policies.

Everything a sweep is given is checked here, before anything starts: each model read
and verified once, each target loaded once, every size one the target's fastest
memory can have, and the counts bounded (``MAX_SIZES``, ``MAX_TASKS``)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from arenaplan.errors import UsageError
from arenaplan.explore.tasks import NONE, Task
from arenaplan.pipeline import read_source
from arenaplan.placement.memories import check_within
from arenaplan.units import parse_size

if TYPE_CHECKING:
    from arenaplan.targets import Target

ROUND = 16  # bytes: sizes of a range are multiples of this
MAX_SIZES = 1000  # sizes of the fastest memory one sweep takes (N of SMALL..LARGE:N)
MAX_TASKS = 100_000  # models x targets x sizes x passes x weights policies of one sweep
LARGEST = 1 << 62  # bytes: the largest size --sram takes (no memory is larger)
_DIGITS = re.compile(r"[0-9]+")  # N of SMALL..LARGE:N: ASCII digits only


def parse_sizes(text: str) -> list[int]:
    """``A..B:N``: N sizes from A to B spaced evenly on a log scale (each a multiple
    of 16 bytes, duplicates dropped); or a comma-separated list of sizes. At most
    ``MAX_SIZES`` sizes either way."""
    if ".." not in text:
        found = [p.strip() for p in text.split(",") if p.strip()]
        if not found:
            raise UsageError("--sram: give at least one size")
        if len(found) > MAX_SIZES:
            raise UsageError(f"--sram: {len(found):,} sizes, above the limit of {MAX_SIZES:,}")
        return sorted({_size(p) for p in found})
    span, _, count = text.partition(":")
    lo_text, _, hi_text = span.partition("..")
    lo, hi = _size(lo_text), _size(hi_text)
    digits = count.strip()
    if _DIGITS.fullmatch(digits) and (len(digits) > 9 or int(digits) > MAX_SIZES):
        raise UsageError(f"--sram: N = {digits[:20]} sizes, above the limit of {MAX_SIZES:,}")
    n = int(digits) if _DIGITS.fullmatch(digits) else 0
    if n < 2 or hi <= lo:
        raise UsageError(
            f"--sram {text[:80]!r}: expected SMALL..LARGE:N with N from 2 to {MAX_SIZES:,} "
            "and SMALL < LARGE"
        )
    ratio = math.log(hi / lo) / (n - 1)
    sizes = {max(ROUND, round(lo * math.exp(k * ratio) / ROUND) * ROUND) for k in range(n)}
    return sorted(sizes)


def _size(text: str) -> int:
    size = parse_size(text.strip(), "--sram")
    if size > LARGEST:
        raise UsageError(f"--sram {text.strip()[:40]!r}: above the limit of {LARGEST:,} B")
    return size


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


def check_sizes(sizes: Sequence[int], targets: Mapping[str, Target]) -> None:
    """Every size one each target's fastest memory can have (the rule of ``plan
    --memory``: a plan for more would not fit the chip)."""

    for target in targets.values():
        for size in sizes:
            check_within(size, target.fastest(), target, f"--sram {size:,} B")


def check_count(*counts: int) -> None:
    """The tasks of a sweep (the product of ``counts``) within ``MAX_TASKS``."""
    total = math.prod(counts)
    if total > MAX_TASKS:
        shown = " x ".join(f"{c:,}" for c in counts)
        raise UsageError(
            f"the sweep has {shown} = {total:,} tasks, above the limit of {MAX_TASKS:,} "
            "(models x targets x sizes x passes x weights)"
        )


def model_hashes(models: Sequence[Path]) -> dict[Path, str]:
    """SHA-256 of each model's bytes, each read and verified once (``read_source``):
    one that cannot be read, is not a model TFLM could run or fails the IR verifier is
    refused in one line (``ModelFormatError``) before the sweep starts."""

    hashes = {}
    for m in models:
        if m not in hashes:
            hashes[m] = hashlib.sha256(read_source(m).data).hexdigest()
    return hashes


def make_tasks(
    models: Sequence[Path],
    targets: Sequence[str],
    sizes: Sequence[int],
    passes: Sequence[str] = (NONE,),
    weights: Sequence[str] = (NONE,),
    time_limit: float = 1.0,
) -> list[Task]:
    """Every combination, in a fixed order; each model read, verified and hashed once
    (``model_hashes``), the count bounded (``MAX_TASKS``) before any is read."""
    check_count(len(models), len(targets), len(sizes), len(passes), len(weights))
    hashes = model_hashes(models)
    return [
        Task(str(m), hashes[m], t, s, p, w, time_limit)
        for m in models
        for t in targets
        for p in passes
        for w in weights
        for s in sizes
    ]
