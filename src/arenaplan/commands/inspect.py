"""``arenaplan inspect MODEL``: what the model holds, as the planner sees it.

The model is verified first (``ir.verifier``). A model that fails is refused in one
line (exit 2) naming the first problem; with ``--all`` every problem is listed
instead, under "invalid model: N problems", followed by the tables (exit 0: inspect
is the diagnostic tool).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.problem import Problem
from arenaplan.analysis.buffers import arena_items
from arenaplan.commands.common import add_kernels_option, kernels_from_args
from arenaplan.errors import ModelFormatError
from arenaplan.ir.model import Model, Operator
from arenaplan.ir.verifier import ir_problems
from arenaplan.reader import load_model
from arenaplan.runtime.interface import Runtime
from arenaplan.runtime.registry import get, runtime_name_for

_SHOWN_OPTIONS = (
    "padding",
    "stride_h",
    "stride_w",
    "filter_height",
    "filter_width",
    "dilation_h_factor",
    "dilation_w_factor",
    "depth_multiplier",
    "fused_activation_function",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="list a model's subgraphs, operators and tensors",
        description="Show the model as the planner sees it: each subgraph's operators "
        "(options, the kernel scratch buffers TFLM will request) and tensors (bytes, "
        "kind, lifetime in TFLM's scopes), and the lower bound of the head. A model "
        "that fails arenaplan's verifier (an operator reading a tensor before it is "
        "written, a cycle, a shape that does not follow from the inputs) is refused "
        "in one line; --all lists every problem instead and exits 0.",
    )
    p.add_argument("model", type=Path, help="input .tflite (only read)")
    p.add_argument(
        "--all",
        action="store_true",
        help="also list constant tensors (weights, biases), and every problem of an "
        "invalid model instead of refusing it",
    )
    add_kernels_option(p, "reference")
    p.set_defaults(run=run)


def _options_text(op: Operator) -> str:
    opts = op.options.as_dict()
    parts = [f"{k}={opts[k]}" for k in _SHOWN_OPTIONS if k in opts and opts[k] not in (0, "NONE")]
    return " ".join(parts)


def _kind(t, sg) -> str:
    kind = "const" if t.is_constant else "variable" if t.is_variable else "activation"
    if t.index in sg.inputs:
        kind += ", input"
    if t.index in sg.outputs:
        kind += ", output"
    return kind


def _stored_words(runtime: Runtime) -> str:
    """The model carries a plan: TFLM's offline plan, or the runtime's own."""
    return (
        ", has an offline plan" if runtime.plans_by_greedy else f", carries {runtime.title}'s plan"
    )


def run(args: argparse.Namespace, console: Console) -> int:
    _, model = load_model(args.model)
    found = ir_problems(model)
    if found and not args.all:
        first = found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
        raise ModelFormatError(
            f"{args.model}: invalid model: {first}; inspect --all lists every problem"
        )
    if found:  # the reader has checked every index: the tables can be drawn
        _print_problems(console, args.model.name, found)
    runtime = get(runtime_name_for(model))  # the runtime of the model's format
    kernels = kernels_from_args(args) if args.kernels is not None else runtime.default_kernels()
    items = arena_items(model, kernels=kernels)
    scratch_by_op: dict[tuple[int, int], list[int]] = {}
    for r in items.scratch:
        scratch_by_op.setdefault((r.subgraph, r.op), []).append(r.bytes)
    console.print(
        f"[bold]{args.model.name}[/bold]: {len(model.subgraphs)} subgraph(s), "
        f"{model.operator_count} operators, {model.tensor_count} tensors"
        + (_stored_words(runtime) if model.stored_plan else "")
    )
    console.print(
        f"lower bound of the head: {live_bytes_bound(Problem(items.buffers)):,} B "
        f"({len(items.tensors)} tensors, {len(items.scratch)} scratch requests, "
        "sizes rounded to 16)"
    )
    for sg in model.subgraphs:
        _print_operators(console, model, sg.index, scratch_by_op)
        _print_tensors(console, model, sg.index, items, args.all)
    return 0


def _print_problems(console: Console, name: str, found: list[str]) -> None:
    """The verifier's problems, one line each (each names its operator)."""
    count = f"{len(found)} problem" + ("s" if len(found) > 1 else "")
    console.print(f"[bold red]{name}: invalid model: {count}[/bold red]")
    for line in found:
        console.print(f"  {line}", markup=False, soft_wrap=True)


def _print_operators(
    console: Console, model: Model, s: int, scratch_by_op: dict[tuple[int, int], list[int]]
) -> None:
    sg = model.subgraphs[s]
    table = Table(title=f"subgraph {s} {sg.name!r}: operators")
    for col in ("#", "op", "inputs", "outputs", "options", "scratch B"):
        table.add_column(col)
    for op in sg.operators:
        name = f"custom:{op.opcode}" if op.is_custom else op.opcode
        scratch = ", ".join(str(b) for b in scratch_by_op.get((s, op.index), []))
        table.add_row(
            str(op.index),
            name,
            " ".join(map(str, op.inputs)),
            " ".join(map(str, op.outputs)),
            _options_text(op),
            scratch,
        )
    console.print(table)


def _print_tensors(console: Console, model: Model, s: int, items, show_all: bool) -> None:
    sg = model.subgraphs[s]
    table = Table(title=f"subgraph {s}: tensors (lifetimes in TFLM scopes, inclusive)")
    for col in ("#", "name", "shape", "type", "bytes", "kind", "lifetime"):
        table.add_column(col)
    for t in sg.tensors:
        if t.is_constant and not show_all:
            continue
        life = items.lifetimes.tensors[s][t.index]
        span = f"[{life.first}, {life.last}]" if life.last >= 0 else "-"
        table.add_row(
            str(t.index),
            t.name,
            str(list(t.shape)),
            t.dtype.name,
            f"{items.sizes[s][t.index]:,}",
            _kind(t, sg),
            span,
        )
    console.print(table)
