"""One task of a design-space sweep, and running it: a pure function of its inputs.

A task is (model content hash, target, SRAM capacity, passes, weights policy); its
key is a hash of exactly those, so the same inputs give the same key on every
machine and backend, and a result store keyed by it can resume a sweep. Running a
task reads and verifies the model, checks its hash, rewrites it with the passes, plans it within
the capacity of the target's fastest memory (spreading activations over the next
memories when it does not fit, ``placement.tiers``; weight buffers planned with
them when a weights policy is given), and returns one row: bytes per memory, the
estimated latency (the target's time model: an estimate), extra MACs, whether the
head is proven optimal, the wall time, or the one-line error (starting "internal
error" when it is arenaplan's bug). Nothing is proven in
TFLM here: a sweep compares estimates; ``arenaplan plan`` proves the one chosen.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arenaplan.errors import AllocationError, ArenaplanError, ModelFormatError
from arenaplan.passes.band_search import model_macs
from arenaplan.pipeline import PlanRequest, read_source, run_plan
from arenaplan.targets import load_builtin
from arenaplan.targets.load import load_target as load_file
from arenaplan.weights.policies import unless_in_place

NONE = "none"  # no passes, or no weights policy (weights where they lie)
INTERNAL = 70  # exit code of an error that is arenaplan's bug (``errors``)


# What a row means; raised when it changes. 2: ``memories`` holds what the firmware
# sets in each memory (TFLM's persistent data included), the latency is the plan's.
ROW_FORMAT = 2


@dataclass(frozen=True, slots=True)
class Task:
    """``model``: path to a .tflite; ``model_hash``: SHA-256 of its bytes; ``target``:
    a built-in name or a target TOML path; ``sram``: bytes of the target's fastest
    memory; ``passes``: pass names joined by "+", or "none"; ``weights``: a
    ``--weights`` policy, or "none": weights where they lie, or copied whole before
    their operator where the target cannot read them in place (xcore.ai's flash);
    ``time_limit``: seconds for the exact solver."""

    model: str
    model_hash: str
    target: str
    sram: int
    passes: str = NONE
    weights: str = NONE
    time_limit: float = 1.0

    @property
    def key(self) -> str:
        """Hash of what decides the result (not the model's path), and of what a row
        means (``ROW_FORMAT``: a store made before a change is not read as after)."""
        fields = asdict(self) | {"row_format": ROW_FORMAT}
        del fields["model"]
        text = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


# the row's columns, in order (``store`` makes its table from them)
COLUMNS: tuple[tuple[str, str], ...] = (
    ("key", "TEXT PRIMARY KEY"),
    ("model", "TEXT"),
    ("model_hash", "TEXT"),
    ("target", "TEXT"),
    ("sram", "INTEGER"),
    ("passes", "TEXT"),
    ("weights", "TEXT"),
    ("status", "TEXT"),  # "ok"; "no-fit": not within the memories; "failed" (see error)
    ("fits", "INTEGER"),  # 1: planned within the memories, 0: not
    ("memories", "TEXT"),  # JSON: bytes of the plan in each memory
    ("head", "INTEGER"),  # bytes of the non-persistent arena in the fastest memory
    ("spread", "INTEGER"),  # 1: activations spread over several memories
    ("latency", "REAL"),  # estimated seconds of one inference
    ("extra_macs", "REAL"),  # MACs the passes add, as a share of the model's
    ("optimal", "INTEGER"),  # 1: the head equals its lower bound (proven optimal)
    ("seconds", "REAL"),  # wall time of the task
    ("error", "TEXT"),  # one line, or NULL
)


def run_task(task: Task) -> dict[str, Any]:
    """The row of ``task``; never raises (an error is a row with ``error`` set)."""

    start = time.perf_counter()
    row: dict[str, Any] = {
        "key": task.key,
        "model": Path(task.model).name,
        "model_hash": task.model_hash,
        "target": task.target,
        "sram": task.sram,
        "passes": task.passes,
        "weights": task.weights,
        "status": "failed",
        "fits": 0,
        "memories": "{}",
        "head": None,
        "spread": 0,
        "latency": None,
        "extra_macs": None,
        "optimal": None,
        "error": None,
    }
    try:
        row |= _plan(task)
        row["fits"], row["status"] = 1, "ok"
    except AllocationError as exc:
        row["error"], row["status"] = _one_line(str(exc)), "no-fit"
    except ArenaplanError as exc:  # exit 70: arenaplan refused its own result, a bug
        bug = exc.exit_code == INTERNAL
        row["error"] = _one_line(f"internal error: {exc}" if bug else str(exc))
    except Exception as exc:  # the guard of last resort: a bug, one row, the sweep goes on
        row["error"] = _one_line(f"internal error: {type(exc).__name__}: {exc}")
    row["seconds"] = time.perf_counter() - start
    return row


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


def _plan(task: Task) -> dict[str, Any]:

    source = read_source(Path(task.model))  # verified as the sweep's start verified it
    if hashlib.sha256(source.data).hexdigest() != task.model_hash:
        raise ModelFormatError(f"{task.model}: changed since the sweep started")
    target = load_target(task.target)
    weights = unless_in_place(target, None if task.weights == NONE else task.weights)
    fast = target.fastest().name
    request = PlanRequest(
        source,
        target,
        {fast: task.sram},
        # the target's TFLM build profile and kernels: its tail, as ``plan`` would
        time_limit=task.time_limit,
        passes=() if task.passes == NONE else tuple(task.passes.split("+")),
        objective="head",
        weights=weights,
        prove=False,  # a sweep compares estimates; ``arenaplan plan`` proves the one chosen
        lay_out=False,
        check_memories=False,  # a size too small is a row that does not fit
    )
    done = run_plan(request)
    return _row_of(done, target) | {"extra_macs": _extra_macs(source.model, done.model)}


def load_target(name: str):
    """A built-in target by name, or a target TOML file (a name ending in .toml)."""

    return load_file(name) if name.endswith(".toml") else load_builtin(name)


def _extra_macs(model, rewritten) -> float:

    before = model_macs(model)
    return (model_macs(rewritten) - before) / before if before else 0.0


def _row_of(done, target) -> dict[str, Any]:
    """Bytes per memory (what the firmware sets: activations, TFLM's persistent data,
    weight copies), head, spread, estimated seconds and optimality of a plan: the
    figures ``arenaplan plan`` shows (``PlanResult.figures``)."""
    figures = done.figures
    if done.tiers is not None:
        head = done.tiers.heights.get(target.fastest().name, 0)
        return _result(figures.per_memory(), head, True, figures.latency, None)
    plan = done.plan
    return _result(figures.per_memory(), plan.arena, False, figures.latency, plan.optimal)


def _result(memories, head, spread, seconds, optimal) -> dict[str, Any]:
    return {
        "memories": json.dumps(memories, sort_keys=True),
        "head": int(head),
        "spread": int(spread),
        "latency": float(seconds),
        "optimal": None if optimal is None else int(optimal),
    }
