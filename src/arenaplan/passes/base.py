"""What a pass is: a named, pure function from a model to a model.

A pass is a frozen dataclass whose fields are its options, with a class-level
``name`` (kebab-case, the word users type in ``--passes``) and ``summary`` (one
line for ``arenaplan passes``). ``run`` returns a new model and what it changed;
it never edits its input (the IR is frozen anyway). The pipeline, not the pass,
verifies the IR afterwards (``ir.verifier.verify_ir``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from arenaplan.ir.model import Model


@dataclass(frozen=True, slots=True)
class PassResult:
    """``changed``: the graph differs from the input; ``note``: one line saying how
    (printed in the summary); ``stats``: figures for the JSON plan (ints, floats)."""

    model: Model
    changed: bool
    note: str
    stats: dict[str, int | float | str] = field(default_factory=dict)


class Pass(Protocol):
    name: ClassVar[str]
    summary: ClassVar[str]

    def run(self, model: Model) -> PassResult: ...
