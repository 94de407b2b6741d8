"""Below the naive bound: every model of ../shared/models rewritten, planned, proven.

For each model: the naive bound (live bytes at the peak in the model's own order,
scratch included, sizes rounded to 16), the planned head after the passes, the
activation bytes after them (live tensor bytes at the peak, not rounded, before
scratch, shared bytes counted once), extra MACs, operators added, the head TFLM measures with
the rewritten model's offline plan, whether its outputs are bit-identical to the
original's on random inputs, TFLM's tail before and after (measured) and the time
the passes and the plan took. With ``--kernels reference,cmsis_nn`` the rewritten
model is planned for each kernel set and proven where those kernels run
(``verify.prove``: the PyPI runtime for the reference kernels, TFLM built from source
for CMSIS-NN: ``python scripts/build_tflm.py``): per kernel set, the planned head and
"proven", or why not.

    python benchmarks/below_bound.py [--passes reorder,inplace,bands] [--objective head|arena]
        [--max-extra-macs 10] [--clobber-inputs] [--models DIR] [--no-tflm]
        [--kernels reference,cmsis_nn,cmsis_nn+dsp]

``--objective head`` minimises the head alone (the persistent tail in another
memory); ``arena`` (the command's default) the head plus TFLM's tail (arm32).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.export.tflite_writer import write_model
from arenaplan.passes.band_search import model_macs
from arenaplan.pipeline import PlanRequest, Source, run_plan
from arenaplan.placement import PlanOptions, plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.runtime.registry import kernel_names, parse_kernels
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.verify.prove import prove

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
COLUMNS = (
    "model",
    "naive bound",
    "head after",
    "activation bytes",
    "extra MACs",
    "ops added",
    "TFLM head",
    "bit-exact",
    "TFLM tail before -> after",
    "s",
)


def _row(path: Path, args: argparse.Namespace) -> list[str]:
    data = path.read_bytes()
    model = read_model_bytes(data)
    start = time.perf_counter()
    source = Source(data, model, path.name)
    before = run_plan(PlanRequest(source, prove=False)).plan
    done = run_plan(
        PlanRequest(
            source,
            passes=tuple(args.passes.split(",")),
            max_extra_macs=args.max_extra_macs / 100,
            objective=args.objective,
            clobber_inputs=args.clobber_inputs,
            prove=False,  # proven below, on every kernel set asked for
        )
    )
    new, plan, rw = done.model, done.plan, done.rewrite
    assert rw is not None  # passes ran
    aliases, clobber = rw.aliases, rw.clobber_inputs
    seconds = time.perf_counter() - start
    planned = with_offline_plan(write_model(new), plan.offline_offsets)
    total = model_macs(model)
    extra = 100 * (model_macs(new) - total) / total if total else 0.0
    added = new.operator_count - model.operator_count
    head, exact, tails = _proof(data, planned, args.no_tflm)
    kernels = () if args.no_tflm else args.kernels
    proofs = [_kernels_proof(data, new, aliases, clobber, k) for k in kernels]
    return [
        path.stem.split("__")[-1],
        f"{before.lower_bound:,}",
        f"{plan.arena:,}",
        f"{plan.tensor_lower_bound:,}",
        f"{extra:.1f}%",
        f"{added:+d}",
        head,
        exact,
        tails,
        *proofs,
        f"{seconds:.2f}",
    ]


def _kernels_proof(data: bytes, new, aliases, clobber: bool, kernels: str) -> str:
    """The rewritten model planned for ``kernels`` and proven where they run: its head
    and "proven", or why not."""
    options = PlanOptions(aliases=aliases, clobber_inputs=clobber, kernels=parse_kernels(kernels))
    plan = plan_model(new, options)
    planned = with_offline_plan(write_model(new), plan.offline_offsets)
    proof = prove(data, planned, plan.arena, kernels)
    return f"{plan.arena:,} proven" if proof.proven else f"{plan.arena:,} NOT: {proof.reason}"


def _proof(original: bytes, planned: bytes, skip: bool) -> tuple[str, str, str]:
    if skip:
        return "-", "-", "-"
    from arenaplan.tflm.verify import compare_models

    report = compare_models(original, planned, trials=3)
    if report.refused or report.failed:
        return "refused", "-", "-"
    m, o = report.planned, report.original
    return f"{m.head:,}", "yes" if report.identical else "NO", f"{o.tail:,} -> {m.tail:,}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--passes", default="reorder,inplace,bands")
    parser.add_argument("--objective", choices=("head", "arena"), default="head")
    parser.add_argument("--max-extra-macs", type=float, default=10.0, help="percent")
    parser.add_argument("--clobber-inputs", action="store_true")
    parser.add_argument("--no-tflm", action="store_true", help="skip the runtime proof")
    parser.add_argument(
        "--kernels",
        default="",
        help="comma-separated kernel sets to plan for and prove with "
        f"({', '.join(kernel_names())})",
    )
    args = parser.parse_args()
    args.kernels = [k for k in args.kernels.split(",") if k]
    unknown = [k for k in args.kernels if k not in kernel_names()]
    if unknown:
        print(
            f"unknown kernels {unknown[0]!r} (known: {', '.join(kernel_names())})", file=sys.stderr
        )
        return 2
    paths = sorted(args.models.glob("*.tflite"))
    if not paths:
        print(f"no models in {args.models}", file=sys.stderr)
        return 2
    title = f"--passes {args.passes} --objective {args.objective} (bytes)"
    table = Table(title=title)
    columns = [*COLUMNS[:-1], *(f"{k}: head, proof" for k in args.kernels), COLUMNS[-1]]
    for col in columns:
        table.add_column(col, justify="left" if col == "model" or ":" in col else "right")
    for path in paths:
        table.add_row(*_row(path, args))
    Console(width=200).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
