"""Graph rewrites: pure model -> model functions with a name and options.

``PASSES`` maps each name users type in ``--passes`` to its class; the fields
of each class are its options.
"""

from __future__ import annotations

from arenaplan.passes.base import Pass, PassResult
from arenaplan.passes.pipeline import PassRecord, run_passes

PASSES: dict[str, type] = {}

__all__ = ["PASSES", "Pass", "PassRecord", "PassResult", "run_passes"]
