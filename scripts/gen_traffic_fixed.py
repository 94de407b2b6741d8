#!/usr/bin/env python3
"""Write the traffic model's fixed terms (cost/data/traffic_fixed.json), measured.

    python scripts/gen_traffic_fixed.py [--variant host-reference] [--out FILE]

Runs every model of ``fixed_models()`` (``tests/kits/traffic_models.py``: the
shared models, the op and built models of the tests, models that vary the number of
inputs and steps) once in TFLM under the arenatraffic valgrind tool, takes each
modelled operator's measured traffic less its data terms
(``arenaplan.cost.traffic.fixed_terms``) and writes, per kernel path and role, the
loads and stores every instance of the path agrees on (``NOT_FIXED`` names the paths
left out, and ``NOT_MEASURED`` of the set the models). ``arenaplan.cost.traffic_fixed``
reads the table.

Where a count grows with ranks, inputs or steps, ``FORMS`` gives its shape: each
``?`` is a number solved from the instances (the instances must determine it), the
rest is structural (``r0``: one 4-byte load per dim of input 0's shape in the
flatbuffer) and is checked on every instance. The script stops, naming the path, the
role and the models, when instances disagree or a ``?`` is not determined.

The header records the TFLM bundle (``arenaplan.tflm.verify.native.bundle_key``), the
variant, the compiler that built it, valgrind's version and this command. Needs:
``python scripts/build_tflm.py --variants host-reference && python
scripts/build_traffic.py``. About a minute on one core. Exit status 0, 1 when the
instances do not give a table, 2 when the build is absent.
"""

from __future__ import annotations

import fnmatch
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("scripts", "src", "tests")]
from kits.traffic_models import NOT_MEASURED, fixed_models  # noqa: E402
from traffic_table import REPO, TableError, table_main  # noqa: E402

from arenaplan.cost.traffic import Item, fixed_terms, role_items, role_text  # noqa: E402
from arenaplan.reader import read_model_bytes  # noqa: E402
from arenaplan.tflm.verify.traffic_measure import measure_traffic  # noqa: E402

OUT = REPO / "src" / "arenaplan" / "cost" / "data" / "traffic_fixed.json"
ABOUT = (
    "Per TFLM kernel path, the fixed loads (and stores, after '/') of one invoke, by role: "
    "inK/outK the eval tensor of input/output K ('in*' every input), node, fw (framework), "
    "model (flatbuffer bytes other than tensor data), opdata (the scalar fields of the "
    "operator data), handles (scratch handles). Each item is 'width:count' (width in bytes, "
    "count in accesses); a count may use rK/qK (rank of input/output K), n (inputs) and the "
    "kernel's own variables (arenaplan.cost.traffic_tflm). Measured under valgrind on the "
    "variant below."
)
_BINARY = {"model": "4:?+r0+r1+q0"}  # the dims of both inputs and the output
_ONE_RANK = {"model": "4:?+r0"}  # the dims of input 0
_TWO_RANKS = {"model": "4:?+r0+q0"}  # the dims of input 0 and output 0
_STEPS = "8:?*N"  # an eval tensor read on every time step
# Kernel path (fnmatch pattern) -> role -> the items of that role that grow: '?' a
# measured number, the rest structural. An "in*" role: every input is read alike.
FORMS: dict[str, dict[str, str]] = {
    "ADD/*": _BINARY,
    "SUB/*": _BINARY,
    "MUL/*": _BINARY,
    "DIV/*": _BINARY,
    "MAXIMUM/*": _BINARY,
    "MINIMUM/*": _BINARY,
    "SQUARED_DIFFERENCE/*": _BINARY,
    "CONCATENATION/*": {
        "in*": "",
        "fw": "8:?+?*n",
        "node": "8:?+?*n",
        "model": "4:?+?*n+(n+1)*q0",  # the output's dims once, then once per input
    },
    "FULLY_CONNECTED/int8": _ONE_RANK,
    "QUANTIZE/int16/int32": _ONE_RANK,
    "QUANTIZE/int16/int8": _ONE_RANK,
    "QUANTIZE/int8/uint8": _ONE_RANK,
    "QUANTIZE/uint8/int8": _ONE_RANK,
    "RESHAPE": _ONE_RANK,
    "QUANTIZE/float32/int8": _TWO_RANKS,
    "SOFTMAX/int8/int16": _TWO_RANKS,
    "RELU/int8": {"model": "4:?+2*r0"},
    "STRIDED_SLICE/*": {"model": "4:?+2*r0"},
    "MEAN/int*": {"model": "4:?+r0+k+q0"},  # k: the reduced axes
    "SUM/int*": {"model": "4:?+r0+k+q0"},
    "SVDF/int8/int16": {"out0": "8:?*B*U"},  # B batches, U units
    "UNIDIRECTIONAL_SEQUENCE_LSTM/int8": {  # N: time steps
        **{f"in{k}": _STEPS for k in (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 18, 19)},
        "out0": _STEPS,
        "model": "4:?*N+?",
        "opdata": "4:?+?*N",
    },
}
# Kernel paths measured but not written, and why: their bookkeeping reads grow with the
# elements (what the data terms do not model), so no fixed term holds for them.
NOT_FIXED = {
    "ABS/int8": "its node is read once per element",
    "FLOOR_DIV/float32/same": "input 1's eval tensor and the flatbuffer are read per element",
}


@dataclass(frozen=True, slots=True)
class Instance:
    """One measured operator of a kernel path."""

    model: str
    roles: dict[str, str]  # role -> measured "width:count" items
    variables: dict[str, int]  # what the counts may use (rK, qK, n, kernel variables)


def _value(expr: str, names: dict[str, int]) -> int:
    return int(eval(expr, {"__builtins__": {}}, names))  # our own forms, not input


def solve(form: str, rows: list[tuple[dict[str, int], int]]) -> str:
    """The form with each '?' replaced by the number that makes it give every row's
    count; raises ValueError when the rows do not determine it or disagree."""
    terms = re.split(r"\+(?![^(]*\))", form)  # '+' outside parentheses
    holes = [t for t in terms if t == "?" or t.startswith("?*")]
    fixed = [t for t in terms if t not in holes]
    a = np.array([[_value(t[2:] or "1", v) if t != "?" else 1 for t in holes] for v, _ in rows])
    b = np.array([n - sum(_value(t, v) for t in fixed) for v, n in rows])
    if np.linalg.matrix_rank(a) < len(holes):
        raise ValueError(f"the instances do not determine {form} (too few distinct values)")
    x = np.rint(np.linalg.lstsq(a, b, rcond=None)[0]).astype(int)
    if not np.array_equal(a @ x, b):
        raise ValueError(f"no integers make {form} give every instance's count")
    numbers = iter(int(n) for n in x)
    text = []
    for t in terms:
        if t == "?":
            text.append(str(next(numbers)))
        elif t.startswith("?*"):
            n = next(numbers)
            text.append(t[2:] if n == 1 else f"{n}*{t[2:]}")
        else:
            text.append(t)
    return "+".join(text)


def _forms(path: str) -> dict[str, str]:
    merged: dict[str, str] = {}
    for pattern, roles in FORMS.items():
        if fnmatch.fnmatchcase(path, pattern):
            merged |= roles
    return merged


def _roles(instance: Instance, every_input: bool) -> dict[str, dict[Item, str]]:
    roles = {role: role_items(text) for role, text in instance.roles.items()}
    if not every_input:
        return roles
    inputs = {r: roles.pop(r) for r in list(roles) if re.fullmatch(r"in\d+", r)}
    if len({role_text(items) for items in inputs.values()}) > 1:
        raise TableError(f"{instance.model}: its inputs differ: {inputs}")
    if inputs:
        roles["in*"] = next(iter(inputs.values()))
    return roles


def path_entry(path: str, instances: list[Instance]) -> dict[str, str]:
    """Role -> items of one kernel path, from every instance of it."""
    forms = _forms(path)
    seen = [(i, _roles(i, "in*" in forms)) for i in instances]
    entry = {}
    for role in sorted({r for _, roles in seen for r in roles}, key=_role_order):
        form = role_items(forms.get(role, ""))
        items = {}
        for item in sorted({k for _, roles in seen for k in roles.get(role, {})} | set(form)):
            rows = [(i.variables, int(roles.get(role, {}).get(item, "0"))) for i, roles in seen]
            where = f"{path} {role} {item[0]}{item[1]}"
            if item in form:
                try:
                    items[item] = solve(form[item], rows)
                except ValueError as exc:
                    raise TableError(f"{where}: {exc}: {_models(instances)}") from exc
                continue
            counts = {n for _, n in rows}
            if len(counts) > 1:
                by = {i.model: n for (i, _), (_, n) in zip(seen, rows, strict=True)}
                raise TableError(f"{where}: the instances disagree: {by}")
            if counts != {0}:
                items[item] = str(counts.pop())
        if items:
            entry[role] = role_text(items)
    return entry


def _role_order(role: str) -> tuple[str, int]:
    m = re.fullmatch(r"(in|out)(\d+)", role)
    return (m.group(1), int(m.group(2))) if m else (role, -1)


def _models(instances: list[Instance]) -> str:
    return ", ".join(sorted({i.model for i in instances}))


def measure(variant: str) -> dict[str, list[Instance]]:
    """Kernel path -> its measured instances, over every model of the set."""
    paths: dict[str, list[Instance]] = defaultdict(list)
    for name, data in fixed_models():
        measured = {k: op.traffic for k, op in measure_traffic(data, variant).items()}
        for kernel, roles, variables in fixed_terms(read_model_bytes(data), measured):
            paths[kernel].append(Instance(name, roles, variables))
    return paths


def _measure(variant: str) -> tuple[dict[str, object], str]:
    start = time.perf_counter()
    paths = measure(variant)
    table = {p: path_entry(p, paths[p]) for p in sorted(paths) if p not in NOT_FIXED}
    seconds = time.perf_counter() - start
    notes = [f"  model not measured: {name} ({why})" for name, why in NOT_MEASURED.items()]
    notes += [f"  path not written: {path} ({why})" for path, why in NOT_FIXED.items()]
    return {"paths": table}, "".join(
        [f": {len(table)} kernel paths in {seconds:.0f} s", *(f"\n{n}" for n in notes)]
    )


def main(argv: list[str] | None = None) -> int:
    description = __doc__.splitlines()[0]
    return table_main("gen_traffic_fixed", description, OUT, ABOUT, _measure, argv)


if __name__ == "__main__":
    sys.exit(main())
