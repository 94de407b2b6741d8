"""The ``.pte`` programs ExecuTorch exported for the tests (``scripts/export_pte.py``,
run by ``scripts/executorch_lane.sh`` into ~/.cache/arenaplan/executorch/pte/<hash>),
and whether ExecuTorch's runtime can run them here."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from arenaplan.executorch import native

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "export_pte.py"
PROGRAMS = ("attention", "cnn", "cnn_naive", "counter", "dscnn", "mlp_linear", "mlp_split")
PROGRAMS += ("rnn", "two_methods", "views", "rescnn", "lstm", "autoencoder", "unet", "int8")
WRONG = "cnn_overlap"  # exported with every tensor at offset 0
# exported with arenaplan's memory_planning_algo; each has a twin exported by ExecuTorch's
TWINS = ("attention", "cnn", "two_methods", "views")
ABSENT = "no exported .pte programs here (bash scripts/executorch_lane.sh makes them)"


def pte_dir() -> Path:
    given = os.environ.get("ARENAPLAN_PTE_DIR")
    if given:
        return Path(given)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    key = hashlib.sha256(SCRIPT.read_bytes()).hexdigest()[:16]
    return cache / "arenaplan" / "executorch" / "pte" / key


def pte_path(name: str) -> Path:
    """The exported program ``name``; the test is skipped when there is none."""
    path = pte_dir() / f"{name}.pte"
    if not path.is_file():
        pytest.skip(ABSENT)
    return path


def need_runtime() -> None:
    why = native.unavailable()
    if why is not None:
        pytest.skip(why)
