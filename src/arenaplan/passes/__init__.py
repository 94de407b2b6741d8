"""Graph rewrites: pure model -> model functions with a name and options.

``PASS_CLASSES`` names, for each word users type in ``--passes``, the module and
class that implement it (imported on demand); the fields of each class are its
options.
"""

from __future__ import annotations

import importlib

from arenaplan.passes.base import Pass, PassResult
from arenaplan.passes.pipeline import PassRecord, run_passes

# name -> "module:Class"; the order is the order ``arenaplan passes`` lists them
PASS_CLASSES: dict[str, str] = {
    "reorder": "arenaplan.passes.reorder:Reorder",
    "bands": "arenaplan.passes.bands:Bands",
    "inplace": "arenaplan.passes.inplace:InPlace",
}


def pass_class(name: str) -> type:
    """The class of the pass called ``name`` (KeyError if there is none)."""
    module, cls = PASS_CLASSES[name].split(":")
    return getattr(importlib.import_module(module), cls)


__all__ = ["PASS_CLASSES", "Pass", "PassRecord", "PassResult", "pass_class", "run_passes"]
