"""Run a list of passes, verifying the IR after each one.

A failure of the verifier names the pass that broke the model and the operator
it found wrong; nothing downstream ever sees an unverified model.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.errors import ModelFormatError, PassError
from arenaplan.ir.model import Model
from arenaplan.ir.verifier import verify_ir
from arenaplan.passes.base import Pass


@dataclass(frozen=True, slots=True)
class PassRecord:
    """What one pass did: for the JSON plan and the summary's one line."""

    name: str
    options: dict[str, int | float | bool | str | None]
    changed: bool
    note: str
    stats: dict[str, int | float | str]
    seconds: float


def run_passes(model: Model, passes: Sequence[Pass]) -> tuple[Model, list[PassRecord]]:
    """Apply ``passes`` in order; the IR is verified before the first (bad input:
    ``ModelFormatError``) and after each one (a broken pass: ``PassError``)."""
    try:
        verify_ir(model)
    except PassError as exc:
        raise ModelFormatError(f"the model as given: {exc}") from None
    records = []
    for p in passes:
        start = time.perf_counter()
        result = p.run(model)
        try:
            verify_ir(result.model)
        except (PassError, ModelFormatError) as exc:
            raise PassError(f"pass {p.name} broke the model: {exc}") from None
        model = result.model
        records.append(
            PassRecord(
                p.name,
                _options(p),
                result.changed,
                result.note,
                dict(result.stats),
                time.perf_counter() - start,
            )
        )
    return model, records


def _options(p: Pass) -> dict[str, int | float | bool | str | None]:
    """The pass's options: its dataclass fields (not its ClassVars)."""
    if not dataclasses.is_dataclass(p):
        return {}
    return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
