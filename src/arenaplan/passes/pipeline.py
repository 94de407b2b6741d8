"""Run a list of passes, verifying the IR after each one.

A failure of the verifier names the pass that broke the model and the operator
it found wrong; nothing downstream ever sees an unverified model. Each pass's
``origin`` is checked too (one entry per operator, each an operator of the same
subgraph and opcode in the pass's input) and composed with those before it, so
that every record maps its model back to the model the pipeline was given.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.errors import ModelFormatError, PassError
from arenaplan.ir.model import Model
from arenaplan.ir.verifier import check_model, verify_ir
from arenaplan.passes.base import Origin, Pass, compose, identity


@dataclass(frozen=True, slots=True)
class PassRecord:
    """What one pass did: for the JSON plan and the summary's one line. ``origin``:
    for each operator of the model after this pass, the operator of the model
    ``run_passes`` was given that it came from (None: inserted by a pass)."""

    name: str
    options: dict[str, int | float | bool | str | None]
    changed: bool
    note: str
    stats: dict[str, int | float | str]
    seconds: float
    origin: Origin


def run_passes(model: Model, passes: Sequence[Pass]) -> tuple[Model, list[PassRecord]]:
    """Apply ``passes`` in order; the IR is verified before the first (bad input:
    ``ModelFormatError``, no pass blamed) and, with each pass's origin, after each one
    (a broken pass: ``PassError``)."""
    check_model(model, "the model as given")
    records = []
    origin = identity(model)
    for p in passes:
        start = time.perf_counter()
        result = p.run(model)
        try:
            verify_ir(result.model)
        except (PassError, ModelFormatError) as exc:
            raise PassError(f"pass {p.name} broke the model: {exc}") from None
        came = result.origin if result.origin is not None else identity(result.model)
        _check_origin(p.name, model, result.model, came)
        origin = compose(origin, came)
        model = result.model
        records.append(
            PassRecord(
                p.name,
                _options(p),
                result.changed,
                result.note,
                dict(result.stats),
                time.perf_counter() - start,
                origin,
            )
        )
    return model, records


def _check_origin(name: str, before: Model, after: Model, origin: Origin) -> None:
    """Each operator of ``after`` came from an operator of ``before`` of the same
    subgraph and opcode, or was inserted (None)."""
    if len(origin) != after.operator_count:
        raise PassError(
            f"pass {name} gave an origin of {len(origin)} operators for a model of "
            f"{after.operator_count}"
        )
    old = [(sg.index, op) for sg in before.subgraphs for op in sg.operators]
    new = [(sg.index, op) for sg in after.subgraphs for op in sg.operators]
    for (s, op), i in zip(new, origin, strict=True):
        if i is None or (0 <= i < len(old) and old[i][0] == s and old[i][1].opcode == op.opcode):
            continue
        was = "no operator"
        if 0 <= i < len(old):
            was = f"operator {old[i][1].index} {old[i][1].opcode} of subgraph {old[i][0]}"
        raise PassError(
            f"pass {name}: operator {op.index} {op.opcode} of subgraph {s} is said to come "
            f"from {was} of its input"
        )


def _options(p: Pass) -> dict[str, int | float | bool | str | None]:
    """The pass's options: its dataclass fields (not its ClassVars)."""
    if not dataclasses.is_dataclass(p):
        return {}
    return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
