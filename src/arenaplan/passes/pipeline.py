"""Run a list of passes, verifying the IR after each one.

A failure of the verifier names the pass that broke the model and the operator
it found wrong; nothing downstream ever sees an unverified model. Each pass's
``origin`` is checked too (one entry per operator, each an operator of the same
subgraph and opcode in the pass's input) and composed with those before it, so
that every record maps its model back to the model the pipeline was given.

A pass rewrites operators; the model's tables stay as they were (``_table_changes``):
each subgraph's inputs and outputs (the same tensors: name, shape, type,
quantisation, in order), its variable tensors, every signature def (key, subgraph,
names, each name on the same input or output), metadata other than the offline plan
(which a rewrite drops: its offsets were for other tensors), description and
version. A pass that changes one is a bug in that pass (``PassError``, exit 70).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.errors import ModelFormatError, PassError
from arenaplan.ir.model import Model, Subgraph, Tensor
from arenaplan.ir.verifier import check_model, verify_ir
from arenaplan.passes.base import Origin, Pass, compose, identity
from arenaplan.passes.edit import OFFLINE_PLAN
from arenaplan.runtime.spec import KernelSet, Profile


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
        changed = _table_changes(model, result.model)
        if changed:
            more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
            raise PassError(f"pass {p.name} broke the model's tables: {changed[0]}{more}")
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


def _boundary(sg: Subgraph, indices: tuple[int, ...]) -> list[tuple[object, ...]]:
    """What identifies each tensor of a subgraph boundary across a rewrite."""
    return [_facts(sg.tensors[t]) for t in indices]


def _facts(t: Tensor) -> tuple[object, ...]:
    return (t.name, t.shape, t.dtype, t.quantization)


def _table_changes(before: Model, after: Model) -> list[str]:
    """How ``after`` (a pass's output) changed ``before``'s tables, one line each."""
    if len(after.subgraphs) != len(before.subgraphs):
        return [f"{len(before.subgraphs)} subgraphs became {len(after.subgraphs)}"]
    found = []
    for b, a in zip(before.subgraphs, after.subgraphs, strict=True):
        for kind, was, now in (("inputs", b.inputs, a.inputs), ("outputs", b.outputs, a.outputs)):
            if _boundary(b, was) != _boundary(a, now):
                found.append(f"subgraph {b.index}'s {kind} are other tensors")
        if _variables(b) != _variables(a):
            found.append(f"subgraph {b.index}'s variable tensors changed")
    found += _signature_changes(before, after)
    if _metadata(before) != _metadata(after):
        found.append("the metadata changed")
    if (before.description, before.version, before.unkept) != (
        after.description,
        after.version,
        after.unkept,
    ):
        found.append("the model's description, version or unkept parts changed")
    return found


def _variables(sg: Subgraph) -> list[str]:
    return sorted(repr(_facts(t)) for t in sg.tensors if t.is_variable)


def _metadata(model: Model) -> list[tuple[str, bytes]]:
    """Metadata entries and their bytes, the offline plan left out."""
    data = model.buffers
    return [(n, data[b] if b < len(data) else b"") for n, b in model.metadata if n != OFFLINE_PLAN]


def _signature_changes(before: Model, after: Model) -> list[str]:
    """Each signature def must keep its key, subgraph and names, each name on the
    same place of its subgraph's inputs or outputs as before."""
    if len(before.signature_defs) != len(after.signature_defs):
        return [f"{len(before.signature_defs)} signature defs became {len(after.signature_defs)}"]
    found = []
    for i, (b, a) in enumerate(zip(before.signature_defs, after.signature_defs, strict=True)):
        where = f"signature def {i} ({b.key!r})"
        if (b.key, b.subgraph) != (a.key, a.subgraph):
            found.append(f"{where}: its key or subgraph changed")
            continue
        sb, sa = before.subgraphs[b.subgraph], after.subgraphs[a.subgraph]
        for kind, was, now, bb, ab in (
            ("input", b.inputs, a.inputs, sb.inputs, sa.inputs),
            ("output", b.outputs, a.outputs, sb.outputs, sa.outputs),
        ):
            if [n for n, _ in was] != [n for n, _ in now]:
                found.append(f"{where}: its {kind} names changed")
                continue
            for (name, t0), (_, t1) in zip(was, now, strict=True):
                place0 = bb.index(t0) if t0 in bb else None
                place1 = ab.index(t1) if t1 in ab else None
                if place0 != place1 or _facts(sb.tensors[t0]) != _facts(sa.tensors[t1]):
                    found.append(
                        f"{where}: {kind} {name!r} is tensor {t1} ({sa.tensors[t1].name!r}), "
                        f"was tensor {t0} ({sb.tensors[t0].name!r})"
                    )
    return found


def _options(p: Pass) -> dict[str, int | float | bool | str | None]:
    """The pass's options: its dataclass fields (not its ClassVars); a kernel set or
    a build profile as its spelling."""
    if not dataclasses.is_dataclass(p):
        return {}
    return {f.name: plain_option(getattr(p, f.name)) for f in dataclasses.fields(p)}


def plain_option(value: object) -> int | float | bool | str | None:
    return str(value) if isinstance(value, KernelSet | Profile) else value  # type: ignore[return-value]
