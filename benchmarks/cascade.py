"""Cascades: the built models of known shapes and two real ones, planned as they are,
after bands and after the cascade pass, measured in TFLM built from source.

    python benchmarks/cascade.py [--models DIR] [--no-instructions] [--only NAME]
    python benchmarks/cascade.py --steps [--kernels reference,cmsis_nn] [--only NAME]
    python benchmarks/cascade.py --stops [--models DIR]

Needs TFLM built from source (``python scripts/build_tflm.py --variants
host-reference,arm32-reference``) and valgrind for the instruction counts. Models:
MobileNetV1 0.25 with a 96x96x1 input and 2 classes (person_detect's shape),
MobileNetV2 1.0 224, DS-CNN M and L, an int16x8 U-Net denoiser
(``arenaplan.builder``), and ../shared/models'
vww_96_int8 and ds_cnn_s_quantized (skipped, with a line on stderr, where absent).
Bytes, arm32 profile, TFLM's reference kernels:

    naive bound    live bytes at the peak in the model's own order, scratch included
    head, tail     arenaplan's plan of TFLM's head; TFLM's persistent tail predicted
    whole          the smallest single arena TFLM works in (head, tail, planning room)
    bands whole    the same after --passes reorder,inplace,bands (not proven here)
    cascade ...    after --passes cascade,reorder,inplace: head, tail, whole as planned
    measured       TFLM arm32-reference (qemu) running the cascaded model with its
                   plan: head and tail as TFLM's recording allocator reports them (its
                   runner adds the PyPI runtime's allocator objects to the tail)
    est. time      the time model's estimate of one invoke on the generic target (every
                   activation in its SRAM), cascaded against original
    instructions   callgrind's count of one invoke on TFLM host-reference: original ->
                   cascaded (change): the measured counterpart of the estimate
    proven         outputs bit-identical to the original's in host-reference (3 random
                   inputs) and arm32-reference (1), and both measured heads = the plan

``--steps``: the memory / instructions trade-off of the steps, per kernel set of
``--kernels`` (each counted in its build: reference and cmsis_nn on the host by
callgrind, cmsis_nn+dsp on arm32-cmsis_nn and cmsis_nn+mve on m55-cmsis_nn by QEMU)
and per built model (MobileNetV1 0.25 96x96x1, MobileNetV2 1.0 224, DS-CNN M and L),
at each step the pass may take (``STEP_CHOICES``: one row per step, 16 and 64
output pixels per call, and the default, each stage's chosen by the time model
within the arena of one row per step; the reference kernels step a row):

    head, whole    the plan of the cascaded model (--passes cascade,reorder,inplace,
                   arm32 profile)
    instructions   one invoke, original -> cascaded (ratio), measured in the build
    estimate       the time model's ratio (``cost.cascade_steps``; fitted on small
                   synthetic chains, not on these networks): original + its estimate
                   of the cascade's extra instructions, over the measured original
    proven         outputs bit-identical to the original's in that build and TFLM's
                   measured head = the plan

``--stops`` (no TFLM needed): what stops the cascades' chains, the survey. Over every
model of ../shared/models, every model the project builds (MobileNetV1 and V2, DS-CNN
M and L, the demo, tests/kits/keras_like.py's networks), every .tflite of ``--models
DIR`` and of ~/.cache/arenaplan/keras_zoo (benchmarks/keras_zoo.py's Keras exports)
when present: each operator no chain takes, grouped by operator and reason (the
stage's refusal, or a stage no run takes), how often and in how many models; then
per model its operators, those in chains and those left out.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.builder.demo import demo_model
from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1, mobilenet_v2
from arenaplan.builder.unet import unet_denoiser
from arenaplan.errors import ArenaplanError
from arenaplan.export.figures import placed_seconds
from arenaplan.passes.cascade import chain_stops
from arenaplan.pipeline import PlanRequest, PlanResult, Source, run_plan
from arenaplan.reader import read_model_bytes
from arenaplan.runtime.registry import parse_kernels, parse_profile
from arenaplan.targets.load import load_builtin
from arenaplan.tflm.verify.compare import compare_models
from arenaplan.tflm.verify.instructions import instructions_available, invoke_instructions
from arenaplan.tflm.verify.native import NativeRunner, native_available

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = ROOT.parent / "shared" / "models"
ZOO = Path.home() / ".cache" / "arenaplan" / "keras_zoo"  # benchmarks/keras_zoo.py's exports
BANDS = ("reorder", "inplace", "bands")
CASCADE = ("cascade", "reorder", "inplace")
PROFILE = parse_profile("arm32")
ESTIMATE_TARGET = "generic"  # whose time model estimates the change of time
SHARED = ("mlcommons-tiny__vww_96_int8", "arm-ml-examples__ds_cnn_s_quantized")
COLUMNS = ("model", "naive bound", "head", "tail", "whole", "bands whole",
           "cascade head", "tail", "whole", "measured head", "tail",
           "est. time", "instructions", "proven", "s")  # fmt: skip
# the targets: (model, figure, at most)
TARGETS = (
    ("mobilenet_v1_0.25_96x1 (person_detect)", "whole", 32_768),
    ("mobilenet_v2_1.0_224", "head", 325_000),
    ("ds_cnn_M", "head", 20_500),
)

BUILT: tuple[tuple[str, Callable[[], bytes]], ...] = (
    ("mobilenet_v1_0.25_96x1 (person_detect)", lambda: mobilenet_v1(0.25, 96, 1, 2)),
    ("mobilenet_v2_1.0_224", lambda: mobilenet_v2(1.0, 224)),
    ("ds_cnn_M", lambda: ds_cnn("M")),
    ("ds_cnn_L", lambda: ds_cnn("L")),
    ("unet_int16x8 (denoiser)", unet_denoiser),
)


def _sources(args: argparse.Namespace) -> Iterator[Source]:
    for name, build in BUILT:
        if args.only and args.only not in name:
            continue
        data = build()
        yield Source(data, read_model_bytes(data), name)
    for stem in SHARED:
        if args.only and args.only not in stem:
            continue
        path = args.models / f"{stem}.tflite"
        if not path.exists():
            print(f"{path} is absent: skipped", file=sys.stderr)
            continue
        data = path.read_bytes()
        yield Source(data, read_model_bytes(data), stem.split("__")[-1])


def _whole(done: PlanResult) -> int:
    arena = done.figures.array("arena")
    assert arena is not None  # no target: one arena
    return arena.bytes


def _measure(source: Source, after: PlanResult) -> tuple[list[str], bool]:
    """arm32 measured head and tail of the cascaded model, and whether it is proven."""
    host = after.proof is not None and after.proof.proven
    with NativeRunner("arm32-reference") as runner:
        report = compare_models(source.data, after.planned, 1, 0, runner=runner, figures=False)
    m = report.planned
    if m is None:
        return ["failed", ""], False
    arm32 = report.identical and m.head == after.plan.arena
    return [f"{m.head:,}", f"{m.tail:,}"], host and arm32


def _instructions(source: Source, after: PlanResult, count: bool) -> str:
    if not count:
        return "-"
    before = invoke_instructions(source.data)
    cascaded = invoke_instructions(after.planned)
    return f"{before:,} -> {cascaded:,} ({100 * (cascaded / before - 1):+.1f}%)"


def _estimated(source: Source, after: PlanResult) -> str:
    """The time model's change, generic target, activations in its fastest memory."""
    target = load_builtin(ESTIMATE_TARGET)
    fastest = target.fastest().name
    before = placed_seconds(source.model, target, fastest, None)
    cascaded = placed_seconds(after.model, target, fastest, None)
    return f"{100 * (cascaded / before - 1):+.1f}%"


def _row(source: Source, count: bool) -> tuple[list[str], dict[str, int]]:
    start = time.perf_counter()
    request = PlanRequest(source, profile=PROFILE, prove=False)
    before = run_plan(request)
    bands = run_plan(PlanRequest(source, profile=PROFILE, passes=BANDS, prove=False))
    after = run_plan(PlanRequest(source, profile=PROFILE, passes=CASCADE))
    measured, proven = _measure(source, after)
    row = [
        source.name,
        f"{before.plan.lower_bound:,}",
        f"{before.plan.arena:,}",
        f"{before.figures.tail:,}",  # type: ignore[union-attr]
        f"{_whole(before):,}",
        f"{_whole(bands):,}",
        f"{after.plan.arena:,}",
        f"{after.figures.tail:,}",
        f"{_whole(after):,}",
        *measured,
        _estimated(source, after),
        _instructions(source, after, count),
        "yes" if proven else "NO",
        f"{time.perf_counter() - start:.0f}",
    ]
    return row, {"head": after.plan.arena, "whole": _whole(after)}


# the models --steps measures: BUILT's int8 networks
STEP_MODELS = ("mobilenet_v1", "mobilenet_v2", "ds_cnn_M", "ds_cnn_L")
# the steps --steps compares: (label, step_pixels; None: the pass's choice)
STEP_CHOICES = (("one row", 0), ("16 px", 16), ("64 px", 64), ("chosen", None))
# the build each kernel set's instructions are counted in (and its plan proven)
BUILDS = {
    "reference": "host-reference",
    "cmsis_nn": "host-cmsis_nn",
    "cmsis_nn+dsp": "arm32-cmsis_nn",
    "cmsis_nn+mve": "m55-cmsis_nn",
}


def _step_rows(source: Source, kernels: str) -> Iterator[list[str]]:
    """One row per step choice of ``source`` with ``kernels`` (one for the reference)."""
    variant = BUILDS[kernels]
    before = invoke_instructions(source.data, 0, variant)
    choices = STEP_CHOICES if kernels != "reference" else STEP_CHOICES[:1]
    for label, pixels in choices:
        start = time.perf_counter()
        request = PlanRequest(source, profile=PROFILE, passes=CASCADE,
                              kernels=parse_kernels(kernels), step_pixels=pixels)  # fmt: skip
        done = run_plan(request)
        after = invoke_instructions(done.planned, 0, variant)
        records = done.rewrite.records if done.rewrite is not None else ()
        stats = next((r.stats for r in records if r.name == "cascade" and r.changed), {})
        extra = stats.get("extra_instructions", 0)
        proven = done.proof is not None and done.proof.proven
        yield [
            source.name, kernels, label, f"{done.plan.arena:,}", f"{_whole(done):,}",
            f"{before:,} -> {after:,} ({after / before:.3f}x)",
            f"{(before + extra) / before:.3f}x" if kernels != "reference" else "-",
            "yes" if proven else "NO", f"{time.perf_counter() - start:.0f}",
        ]  # fmt: skip


def _steps(args: argparse.Namespace) -> int:
    """The memory / instructions trade-off per model, kernel set and step."""
    kernel_sets = [k.strip() for k in args.kernels.split(",") if k.strip()]
    for kernels in kernel_sets:
        why = instructions_available(BUILDS[kernels]) if kernels in BUILDS else "unknown"
        if why is not None:
            print(f"benchmarks/cascade.py: {kernels}: {why}", file=sys.stderr)
            return 2
    table = Table(title=f"steps: --passes {','.join(CASCADE)}, instructions of one invoke")
    columns = ("model", "kernels", "steps", "head", "whole", "instructions", "estimate",
               "proven", "s")  # fmt: skip
    for col in columns:
        table.add_column(col, justify="left" if col in columns[:3] else "right")
    console = Console(width=200)
    for name, build in BUILT:
        if not name.startswith(STEP_MODELS) or (args.only and args.only not in name):
            continue
        data = build()
        source = Source(data, read_model_bytes(data), name)
        for kernels in kernel_sets:
            for row in _step_rows(source, kernels):
                table.add_row(*row)
    console.print(table)
    return 0


def _survey_models(extra: Path) -> Iterator[tuple[str, bytes]]:
    """The survey's models: built, the test kits' Keras-like ones, then files."""
    sys.path.insert(0, str(ROOT / "tests"))
    from kits.keras_like import KERAS_LIKE  # the test kits live outside the package

    for name, build in (*BUILT, ("demo", demo_model), *KERAS_LIKE.items()):
        yield name, build()
    folders = [DEFAULT_MODELS, extra, ZOO]
    for folder in dict.fromkeys(f.resolve() for f in folders if f.is_dir()):
        for path in sorted(folder.glob("*.tflite")):
            yield path.stem.split("__")[-1], path.read_bytes()


def _stops(extra: Path) -> int:
    """The survey: what stops the chains, grouped, and per model."""
    groups: dict[tuple[str, str], list] = {}  # (opcode, why) -> [stops, {models}]
    per_model = Table(title="per model")
    for col in ("model", "operators", "in chains", "left out"):
        per_model.add_column(col, justify="left" if col == "model" else "right")
    for name, data in _survey_models(extra):
        try:
            model = read_model_bytes(data)
        except ArenaplanError as exc:
            print(f"{name}: not read ({exc})", file=sys.stderr)
            continue
        sg = model.subgraphs[0]
        stops = chain_stops(sg, model.buffers)
        for index, why in stops:
            entry = groups.setdefault((sg.operators[index].opcode, why), [0, set()])
            entry[0] += 1
            entry[1].add(name)
        n = len(sg.operators)
        per_model.add_row(name, str(n), str(n - len(stops)), str(len(stops)))
    table = Table(title="what stops the chains (operators no cascade takes)")
    for col in ("operator", "why", "stops", "models"):
        table.add_column(col, justify="right" if col in ("stops", "models") else "left")
    for (opcode, why), (count, names) in sorted(groups.items(), key=lambda g: -g[1][0]):
        table.add_row(opcode, why, str(count), str(len(names)))
    console = Console(width=200)
    console.print(table)
    console.print(per_model)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--no-instructions", action="store_true", help="skip callgrind")
    parser.add_argument("--only", help="the models whose name contains this")
    parser.add_argument("--stops", action="store_true", help="the survey of what stops chains")
    parser.add_argument("--steps", action="store_true", help="memory / instructions per step")
    parser.add_argument("--kernels", default="reference,cmsis_nn", help="--steps: kernel sets")
    args = parser.parse_args()
    if args.stops:
        return _stops(args.models)
    if args.steps:
        return _steps(args)
    for variant in ("host-reference", "arm32-reference"):
        why = native_available(variant)
        if why is not None:
            print(f"benchmarks/cascade.py: {why}", file=sys.stderr)
            return 2
    count = not args.no_instructions
    if count and instructions_available() is not None:
        print(f"benchmarks/cascade.py: {instructions_available()}", file=sys.stderr)
        return 2
    table = Table(title=f"{PROFILE}, reference kernels; cascade = --passes {','.join(CASCADE)}")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col == "model" else "right")
    reached = {}
    for source in _sources(args):
        row, figures = _row(source, count)
        table.add_row(*row)
        reached[source.name] = figures
    console = Console(width=240)
    console.print(table)
    for name, figure, limit in TARGETS:
        if name in reached:
            value = reached[name][figure]
            verdict = "met" if value <= limit else "NOT met"
            console.print(f"target {name} {figure} <= {limit:,} B: {value:,} B, {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
