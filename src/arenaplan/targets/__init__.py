"""Targets as data: the memories of a chip and its compute rates, from TOML files."""

from arenaplan.targets.load import builtin_names, load_builtin, load_target
from arenaplan.targets.model import HOLDS, Memory, Target

__all__ = [
    "HOLDS",
    "Memory",
    "Target",
    "builtin_names",
    "load_builtin",
    "load_target",
]
