"""Cascade baseline: the built models of known shapes and two real ones, planned as
they are and after the passes, for TFLM on arm32.

    python benchmarks/cascade.py [--models DIR]

Models: MobileNetV1 0.25 with a 96x96x1 input and 2 classes (person_detect's shape),
MobileNetV2 1.0 224, DS-CNN M and L (``arenaplan.builder``), and ../shared/models'
vww_96_int8 and ds_cnn_s_quantized (skipped, with a line on stderr, where absent). Every
figure is in bytes and comes from ``run_plan``'s result with the arm32 profile and the
reference kernels:

    ops            operators of the model as given
    naive bound    live bytes at the peak in the model's own order, scratch included,
                   sizes rounded to 16 (``Plan.lower_bound``)
    head           arenaplan's plan of TFLM's non-persistent arena
    tail           TFLM's persistent bytes predicted (``figures.tail``)
    arena          the smallest single arena TFLM works in: head, tail and TFLM's
                   planning room (``figures.array("arena")``)
    passes: ...    the same three after ``--passes reorder,inplace,bands`` (objective:
                   the arena; at most 10% extra MACs; not proven here)
    s              seconds to plan both
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1, mobilenet_v2
from arenaplan.pipeline import PlanRequest, PlanResult, Source, run_plan
from arenaplan.reader import read_model_bytes

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
PASSES = ("reorder", "inplace", "bands")
PROFILE = "arm32"
SHARED = ("mlcommons-tiny__vww_96_int8", "arm-ml-examples__ds_cnn_s_quantized")
COLUMNS = ("model", "ops", "naive bound", "head", "tail", "arena",
           "passes: head", "passes: tail", "passes: arena", "s")  # fmt: skip


BUILT: tuple[tuple[str, Callable[[], bytes]], ...] = (
    ("mobilenet_v1_0.25_96x1 (person_detect)", lambda: mobilenet_v1(0.25, 96, 1, 2)),
    ("mobilenet_v2_1.0_224", lambda: mobilenet_v2(1.0, 224)),
    ("ds_cnn_M", lambda: ds_cnn("M")),
    ("ds_cnn_L", lambda: ds_cnn("L")),
)


def _sources(args: argparse.Namespace) -> Iterator[Source]:
    for name, build in BUILT:
        data = build()
        yield Source(data, read_model_bytes(data), name)
    for stem in SHARED:
        path = args.models / f"{stem}.tflite"
        if not path.exists():
            print(f"{path} is absent: skipped", file=sys.stderr)
            continue
        data = path.read_bytes()
        yield Source(data, read_model_bytes(data), stem.split("__")[-1])


def _figures(done: PlanResult) -> list[str]:
    """Head, tail and whole arena of one result."""
    figures = done.figures
    assert figures is not None  # run_plan always makes them
    arena = figures.array("arena")
    assert arena is not None  # no target: one arena
    whole = f"{'>=' if arena.at_least else ''}{arena.bytes:,}"
    return [f"{figures.head:,}", f"{figures.tail:,}", whole]


def _row(source: Source) -> list[str]:
    start = time.perf_counter()
    before = run_plan(PlanRequest(source, profile=PROFILE, prove=False))
    after = run_plan(PlanRequest(source, profile=PROFILE, passes=PASSES, prove=False))
    seconds = time.perf_counter() - start
    return [
        source.name,
        str(source.model.operator_count),
        f"{before.plan.lower_bound:,}",
        *_figures(before),
        *_figures(after),
        f"{seconds:.1f}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    args = parser.parse_args()
    table = Table(title=f"{PROFILE}, --passes {','.join(PASSES)} (bytes)")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col == "model" else "right")
    for source in _sources(args):
        table.add_row(*_row(source))
    Console(width=200).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
