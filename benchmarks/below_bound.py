"""Below the naive bound: every model of ../shared/models rewritten, planned, proven.

For each model: the naive bound (live bytes at the peak in the model's own order,
scratch included, sizes rounded to 16), the planned head after the passes, the
activation bytes after them (live tensor bytes at the peak, not rounded, before
scratch, shared bytes counted once), extra MACs, operators added, the head TFLM measures with
the rewritten model's offline plan, whether its outputs are bit-identical to the
original's on random inputs, TFLM's tail before and after (measured) and the time
the pipeline took (passes, plan, proof). Every row is ``run_plan``'s, as ``arenaplan
plan --passes ...`` gives it: a rewrite TFLM does not prove gives way to the model as
given, and the proof column says why. With ``--kernels reference,cmsis_nn`` the
passes run and plan for each kernel set and are proven where those kernels run (the
PyPI runtime for the reference kernels, TFLM built from source for CMSIS-NN:
``python scripts/build_tflm.py``): per kernel set, the planned head and "proven", or
why not.

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

from arenaplan.passes.band_search import model_macs
from arenaplan.pipeline import PlanRequest, PlanResult, Source, run_plan
from arenaplan.reader import read_model_bytes
from arenaplan.runtime.registry import kernel_names, parse_kernels, runtime_of
from arenaplan.runtime.spec import KernelSet

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
COLUMNS = (
    "model",
    "naive bound",
    "head after",
    "activation bytes",
    "extra MACs",
    "ops added",
    "proof",
    "TFLM head",
    "bit-exact",
    "TFLM tail before -> after",
    "s",
)


def _request(
    source: Source, args: argparse.Namespace, kernels: KernelSet | None = None
) -> PlanRequest:
    """The passes of ``args`` on ``source``, proven as ``arenaplan plan`` proves them
    (unless ``--no-tflm``), for ``kernels`` (None: the default kernel set)."""
    return PlanRequest(
        source,
        passes=tuple(args.passes.split(",")),
        max_extra_macs=args.max_extra_macs / 100,
        objective=args.objective,
        clobber_inputs=args.clobber_inputs,
        kernels=kernels,
        prove=not args.no_tflm,
    )


def _row(path: Path, args: argparse.Namespace) -> list[str]:
    data = path.read_bytes()
    model = read_model_bytes(data)
    source = Source(data, model, path.name)
    before = run_plan(PlanRequest(source, prove=False)).plan
    start = time.perf_counter()
    done = run_plan(_request(source, args))
    seconds = time.perf_counter() - start
    new, plan = done.model, done.plan
    total = model_macs(model)
    extra = 100 * (model_macs(new) - total) / total if total else 0.0
    added = new.operator_count - model.operator_count
    head, exact, tails = _measured(done, args.no_tflm)
    kernels = () if args.no_tflm else args.kernels
    proofs = [_kernels_proof(source, args, parse_kernels(k)) for k in kernels]
    return [
        path.stem.split("__")[-1],
        f"{before.lower_bound:,}",
        f"{plan.arena:,}",
        f"{plan.tensor_lower_bound:,}",
        f"{extra:.1f}%",
        f"{added:+d}",
        _proof_words(done),
        head,
        exact,
        tails,
        *proofs,
        f"{seconds:.2f}",
    ]


def _proof_words(done: PlanResult) -> str:
    """What ``run_plan`` proved: the rewrite, nothing (no pass changed the model), or
    why the rewrite gave way to the model as given."""
    proof = done.proof
    if proof is None:
        return "nothing to prove" if done.planned else "not asked"
    if proof.proven:
        return "proven"
    reason = proof.reason or ""
    return f"NOT: {reason if len(reason) <= 60 else reason[:57] + '...'}"


def _kernels_proof(source: Source, args: argparse.Namespace, kernels: KernelSet) -> str:
    """The passes run and planned for ``kernels`` and proven where they run: the head
    and "proven", or why not."""
    done = run_plan(_request(source, args, kernels))
    return f"{done.plan.arena:,} {_proof_words(done)}"


def _measured(done: PlanResult, skip: bool) -> tuple[str, str, str]:
    """The planned model and the model as given run side by side in the runtime as
    installed (``arenaplan verify``): measured head, bit-exact outputs, measured tails."""
    if skip:
        return "-", "-", "-"
    runtime = runtime_of(done.plan.kernels)
    report = runtime.verify(done.source.data, done.planned, 3, 0, None)
    if report.refused or report.failed or report.planned is None or report.original is None:
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
