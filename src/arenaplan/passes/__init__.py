"""Graph rewrites: pure model -> model functions with a name and options.

``PASS_CLASSES`` names, for each word users type in ``--passes``, the module and
class that implement it (imported on demand); the fields of each class are its
options.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping

from arenaplan.passes.base import Pass, PassResult
from arenaplan.passes.pipeline import PassRecord, run_passes

# name -> "module:Class"; the order is the order ``arenaplan passes`` lists them
PASS_CLASSES: dict[str, str] = {
    "reorder": "arenaplan.passes.reorder:Reorder",
    "bands": "arenaplan.passes.bands:Bands",
    "inplace": "arenaplan.passes.inplace:InPlace",
    "cascade": "arenaplan.passes.cascade:Cascade",
}

# opcode -> why a rewrite inserts operators of it, in words (the report's "new: ..."):
# bands slices a band's rows, pads a band and joins the bands; the weights planner
# copies an operator's weights into the arena with RESHAPE (passes.stage)
INSERTED: dict[str, str] = {
    "STRIDED_SLICE": "a band's rows",
    "PAD": "a band's padding",
    "CONCATENATION": "joins the bands",
    "RESHAPE": "weight copy",
}


def pass_class(name: str) -> type:
    """The class of the pass called ``name`` (KeyError if there is none)."""
    module, cls = PASS_CLASSES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make_pass(name: str, options: Mapping[str, object]) -> Pass:
    """The pass called ``name`` with those of ``options`` that are its fields."""
    cls = pass_class(name)
    fields = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in options.items() if k in fields})


__all__ = [
    "INSERTED",
    "PASS_CLASSES",
    "Pass",
    "PassRecord",
    "PassResult",
    "make_pass",
    "pass_class",
    "run_passes",
]
