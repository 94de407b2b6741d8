"""ExecuTorch programs planned again: ExecuTorch's pools against arenaplan's.

    python benchmarks/executorch.py [--programs DIR]

For every ``.pte`` of ``DIR`` (default: the programs ``scripts/executorch_lane.sh``
exported, in ~/.cache/arenaplan/executorch/pte/<hash>): its methods, the default pool
(memory id 1) of each as ExecuTorch planned it, as ExecuTorch's naive planner would
(every planned tensor its own bytes), as arenaplan plans it (checked by the
independent simulation, written back) without and with ``--passes reorder``, the
lower bound for the program's order (live bytes at the peak, 16-byte aligned, the
most over the methods), the time to plan, and the method allocator: measured, when
ExecuTorch's runtime is installed (``pip install executorch==1.5.1 --no-deps``; both
planned programs are then proven bit-identical, "NO" says which is not), and predicted
from the program for 64- and 32-bit pointers. A program whose own plan is wrong is
named with why.

A second table: the programs the lane also exported with ExecuTorch's BankedGreedy
over two memories of the i.MX RT1170 (a small TCM bank, memory id 1, and OCRAM, id 2;
``banked.json``), against arenaplan's plan of the greedy program for the same
capacities (``plan --target imxrt1170 --memory tcm=N``): each pool's bytes and the
estimated time of one call, both timed by the same function from each program's
own plan (``executorch.placed_time``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.allocation.packing import align_up
from arenaplan.errors import ArenaplanError
from arenaplan.executorch import native
from arenaplan.executorch.method_bytes import largest_method
from arenaplan.executorch.placed_time import placed_seconds, pool_sizes
from arenaplan.executorch.prove import prove_program
from arenaplan.executorch.runtime import RUNTIME
from arenaplan.pipeline import PlanRequest, Wanted, read_source, run_plan
from arenaplan.reader import read_model_bytes
from arenaplan.reader.pte_format import read_program
from arenaplan.targets.load import load_builtin

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "export_pte.py"
BANKS = ("tcm", "ocram")  # memory ids 1 and 2 of the banked programs
COLUMNS = (
    "program",
    "methods",
    "ExecuTorch greedy",
    "naive",
    "arenaplan",
    "with reorder",
    "bound",
    "s",
    "allocator measured",
    "predicted 64-bit",
    "32-bit",
)


def _default_dir() -> Path:
    key = hashlib.sha256(SCRIPT.read_bytes()).hexdigest()[:16]
    return Path.home() / ".cache" / "arenaplan" / "executorch" / "pte" / key


def _pools(data: bytes) -> str:
    return " + ".join(f"{p.pools[1]:,}" for p in read_program(data).plans)


def _naive(model) -> int:
    """ExecuTorch's naive planner: every planned tensor its own bytes, 16-aligned (the
    most over the methods)."""
    sizes = RUNTIME.tensor_bytes(model)
    return max(sum(align_up(b, 16) for b in sg) for sg in sizes)


def _row(path: Path, prove: bool) -> list[str]:
    source = read_source(path)
    start = time.perf_counter()
    done = run_plan(PlanRequest(source, outputs=Wanted(model=True)))
    seconds = time.perf_counter() - start
    ordered = run_plan(PlanRequest(source, passes=("reorder",), outputs=Wanted(model=True)))
    program = read_program(source.data)
    predicted = [largest_method(program, b)[0] for b in (8, 4)]
    measured = "-"
    if prove:
        found = prove_program(source.data, done.files["model"])
        measured = f"{found.tail:,}" if found.proven else f"NO: {found.reason}"
        again = prove_program(source.data, ordered.files["model"])
        measured += "" if again.proven else f"; reorder NO: {again.reason}"
    return [
        path.stem,
        str(len(program.plans)),
        _pools(source.data),
        f"{_naive(source.model):,}",
        _pools(done.files["model"]),
        _pools(ordered.files["model"]),
        f"{done.plan.lower_bound:,}",
        f"{seconds:.2f}",
        measured,
        f"{predicted[0]:,}",
        f"{predicted[1]:,}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=Path, default=_default_dir())
    args = parser.parse_args()
    paths = sorted(args.programs.glob("*.pte"))
    if not paths:
        print(f"no .pte in {args.programs} (bash scripts/executorch_lane.sh)", file=sys.stderr)
        return 2
    prove = native.unavailable() is None
    table = Table(title="default pool (memory id 1) per method, bytes")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col == "program" else "right")
    for path in paths:
        if path.stem.endswith("_banked"):  # the second table's
            continue
        try:
            table.add_row(*_row(path, prove))
        except ArenaplanError as exc:
            table.add_row(path.stem, "", "", "", "refused: " + str(exc)[:60], *[""] * 6)
    Console(width=160).print(table)
    banked = args.programs / "banked.json"
    if banked.is_file():
        Console(width=160).print(_banked_table(args.programs, json.loads(banked.read_text())))
    return 0


def _banked_table(folder: Path, caps: dict[str, dict[str, int]]) -> Table:
    target = load_builtin("imxrt1170")
    table = Table(title="two memories of imxrt1170: BankedGreedy against arenaplan")
    for col in ("program", "tcm bank", "BankedGreedy pools", "ms", "arenaplan pools", "ms"):
        table.add_column(col, justify="left" if col == "program" else "right")
    for name, banks in sorted(caps.items()):
        theirs = read_model_bytes((folder / f"{name}_banked.pte").read_bytes())
        source = read_source(folder / f"{name}.pte")
        request = PlanRequest(source, target=target, caps=banks, outputs=Wanted(model=True))
        ours = read_model_bytes(run_plan(request).files["model"])
        row = [name, f"{banks['tcm']:,}"]
        for model in (theirs, ours):
            pools = " + ".join(f"{b:,}" for b in pool_sizes(model).values())
            row += [pools, f"{placed_seconds(model, target, BANKS) * 1e3:.4f}"]
        table.add_row(*row)
    return table


if __name__ == "__main__":
    sys.exit(main())
