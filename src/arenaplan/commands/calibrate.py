"""``arenaplan calibrate``: fit a target's rates and latencies to MicroProfiler logs.

    arenaplan calibrate --target xcore_ai run_sram.log run_ext.log@activations=lpddr \\
        --model model.tflite -o my_xcore.toml

Each RUN is a log file of the model under one placement, given after ``@`` as
``what=memory`` pairs (``activations``, ``persistent``, ``weights``); what is not
given stays where the target puts it by default (activations and the persistent
arena in the fastest memory, weights in the last memory that holds weights).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.commands.common import add_target_options, target_from_args
from arenaplan.cost.calibration import (
    MAX_TICKS_PER_SECOND,
    Calibration,
    Run,
    calibrate,
    check_ticks_per_second,
)
from arenaplan.cost.profile_log import parse_profile
from arenaplan.cost.roofline import TensorKey, default_memory
from arenaplan.cost.timing import operator_accesses
from arenaplan.errors import UsageError
from arenaplan.export.files import Outputs
from arenaplan.inputs import read_text_input
from arenaplan.ir.model import Model
from arenaplan.pipeline.request import read_source
from arenaplan.targets import Target
from arenaplan.targets.save import target_to_toml

_WHAT = ("activations", "persistent", "weights")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit a target's compute rates and memory latencies to profiler logs",
        description="Fit the target's compute rate per operator kind and each memory's "
        "latency to TFLM MicroProfiler logs of one model under one or more placements "
        "(bounded least squares); print the fit error per operator kind and write the "
        "calibrated target as TOML.",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="LOG[@WHAT=MEMORY,...]",
        help="a MicroProfiler log (Log, LogCsv or LogTicksPerTagCsv output) and where "
        "the run kept activations, persistent data and weights",
    )
    p.add_argument("--model", type=Path, required=True, help="the model the logs profile")
    p.add_argument("-o", "--output", type=Path, required=True, help="target TOML to write")
    add_target_options(p, "xcore_ai", "the target to calibrate (its memories and clock)")
    p.add_argument(
        "--ticks-per-second",
        type=_ticks_per_second,
        default=None,
        help="the profiler's timer rate, at most "
        f"{MAX_TICKS_PER_SECOND:g} (default: the target's clock, one tick per cycle)",
    )
    p.add_argument(
        "--per-opcode",
        action="store_true",
        help="fit one compute rate per opcode (ADD, MUL, ...) instead of per operator kind",
    )
    p.set_defaults(run=run)


def _ticks_per_second(text: str) -> float:
    """An ``argparse`` type: a timer rate (its errors become one usage line)."""
    try:
        return check_ticks_per_second(float(text))
    except (ValueError, UsageError) as exc:
        reason = str(exc) if isinstance(exc, UsageError) else f"{text!r} is not a number"
        raise argparse.ArgumentTypeError(reason) from None


def parse_run(text: str, model: Model, target: Target) -> Run:
    """``LOG[@what=memory,...]`` -> a run with its placement."""
    path, _, spec = text.partition("@")
    chosen = _placement_spec(spec, target, text)
    log = parse_profile(read_text_input(Path(path), "profiler log", UsageError), path)
    where = _placement(model, target, chosen)
    persistent = chosen.get("persistent", target.fastest("persistent").name)
    return Run(Path(path).name + (f"@{spec}" if spec else ""), log, where, persistent)


def _placement_spec(spec: str, target: Target, text: str) -> dict[str, str]:
    chosen: dict[str, str] = {}
    for item in filter(None, spec.split(",")):
        what, _, memory = item.partition("=")
        if what not in _WHAT:
            raise UsageError(f"{text}: {what!r} is not one of {', '.join(_WHAT)}")
        names = [m.name for m in target.memories]
        if memory not in names:
            raise UsageError(
                f"{text}: target {target.name} has no memory {memory!r} ({', '.join(names)})"
            )
        chosen[what] = memory
    return chosen


def _placement(model: Model, target: Target, chosen: dict[str, str]) -> dict[TensorKey, str]:
    where = default_memory(model, target)
    for sg in model.subgraphs:
        for t in sg.tensors:
            what = "weights" if t.is_constant else "activations"
            if what in chosen:
                where[(sg.index, t.index)] = chosen[what]
    return where


def _print(console: Console, result: Calibration, per: str) -> None:
    cycles_per_ms = result.target.clock_hz / 1000
    title = f"calibrated {result.target.name}: fit per run and {per}"
    table = Table(title=title)
    for col in ("run", per, "measured ms", "fitted ms", "error"):
        table.add_column(col, justify="left" if col in ("run", per) else "right")
    for run, kind, measured, fitted in result.errors:
        err = (fitted - measured) / measured if measured else 0.0
        ms = (f"{v / cycles_per_ms:.3f}" for v in (measured, fitted))
        table.add_row(run, kind, *ms, f"{err:+.1%}")
    console.print(table)
    rates = ", ".join(f"{k} {v:.3g}" for k, v in sorted(result.target.macs_per_cycle.items()))
    console.print(f"compute (work per cycle): {rates}")
    lat = ", ".join(f"{m.name} {m.latency:.3g}" for m in result.target.memories)
    console.print(f"latency (cycles per access): {lat}")
    through = [m for m in result.target.memories if m.cache_writes == "through"]
    if through:
        lat = ", ".join(f"{m.name} {m.write_latency:.3g}" for m in through)
        console.print(f"store latency (cycles per store, write-through): {lat}")


def run(args: argparse.Namespace, console: Console) -> int:
    outputs = Outputs((args.model, *(Path(r.partition("@")[0]) for r in args.runs)))
    outputs.claim(args.output, "-o")
    target = target_from_args(args)
    model = read_source(args.model).model  # verified as plan verifies it
    runs = [parse_run(text, model, target) for text in args.runs]
    ops = operator_accesses(model, target.traffic, target.kernels)
    result = calibrate(ops, runs, target, args.ticks_per_second, args.per_opcode)
    header = (
        f"{target.name} calibrated by arenaplan from {', '.join(r.name for r in runs)}\n"
        f"model {args.model.name}; worst error per run and "
        f"{'opcode' if args.per_opcode else 'kind'} {result.worst():.1%}"
    )
    outputs.add(args.output, target_to_toml(result.target, header).encode())
    written = outputs.write_all()
    _print(console, result, "opcode" if args.per_opcode else "kind")
    for path in written:
        console.print(f"wrote {path}")
    return 0
