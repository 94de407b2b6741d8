"""What the best-plan chooser keeps: per model, the whole arena as given, of each pass
list it compares, and what ``--fit`` keeps at the least of them.

    python benchmarks/fit_choice.py [--models DIR] [--only TEXT] [--no-prove]

Models: every ``.tflite`` of ``../shared/models`` (``--models``), the built
MobileNetV1 0.25 96x96x1, DS-CNN M and L and the int16x8 U-Net
(``arenaplan.builder``), and benchmarks/keras_zoo.py's exports
(``~/.cache/arenaplan/keras_zoo``) when present. Bytes, TFLM's arm32 profile,
reference kernels, through ``pipeline.run_plan`` as ``arenaplan plan`` runs it:

    as given       the whole arena (head + tail + TFLM's planning room) of the model
    R,I,B ...      ``--passes cascade,reorder,inplace,bands``: each list it plans
                   (reorder,inplace,bands; cascade,reorder,inplace; all four), the
                   figure it planned to (an estimate until proven)
    kept           the list that plan kept, and its whole arena once proven (TFLM
                   built from source for cascades, the PyPI runtime otherwise)
    fit            ``--fit`` at the least of those figures: the list kept and its
                   whole arena, or the error

``--no-prove`` plans without proofs (seconds instead of minutes; figures are then
estimates). Needs TFLM built from source to keep a cascade (``bash
scripts/native_lane.sh``); without it the cascade lists are planned but not kept.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1
from arenaplan.builder.unet import unet_denoiser
from arenaplan.errors import ArenaplanError
from arenaplan.pipeline import PlanRequest, PlanResult, Source, run_plan
from arenaplan.reader import read_model_bytes

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "models"
ZOO = Path.home() / ".cache" / "arenaplan" / "keras_zoo"
ALL = ("cascade", "reorder", "inplace", "bands")
SHORT = {"cascade": "C", "reorder": "R", "inplace": "I", "bands": "B"}
BUILT: tuple[tuple[str, Callable[[], bytes]], ...] = (
    ("mobilenet_v1_0.25_96x1", lambda: mobilenet_v1(0.25, 96, 1, 2)),
    ("ds_cnn_M", lambda: ds_cnn("M")),
    ("ds_cnn_L", lambda: ds_cnn("L")),
    ("unet_int16x8", unet_denoiser),
)


def _sources(models: Path, only: str | None) -> Iterator[Source]:
    named: list[tuple[str, Callable[[], bytes]]] = list(BUILT)
    for folder in (models, ZOO):
        if folder.is_dir():
            paths = sorted(p for p in folder.glob("*.tflite") if ".float_io" not in p.name)
            named += [(p.stem.split("__")[-1], p.read_bytes) for p in paths]
    for name, read in named:
        if only is None or only in name:
            data = read()
            yield Source(data, read_model_bytes(data), name)


def _whole(done: PlanResult) -> int:
    return done.figures.arrays[0].bytes


def _short(names: tuple[str, ...]) -> str:
    return ",".join(SHORT[n] for n in names) or "none"


def _row(source: Source, prove: bool) -> list[str]:
    given = run_plan(PlanRequest(source, prove=prove))
    done = run_plan(PlanRequest(source, passes=ALL, prove=prove))
    figures = {names: figure for names, figure in done.compared}
    kept = tuple(r.name for r in done.rewrite.records) if done.rewrite else ()
    least = min(figures.values(), default=_whole(given))
    cells = [source.name, f"{_whole(given):,}"]
    cells += [f"{figures[n]:,}" if n in figures else "-" for n in _LISTS]
    cells += [_short(kept), f"{_whole(done):,}"]
    try:
        fitted = run_plan(PlanRequest(source, fit=least, prove=prove))
        fit_kept = tuple(r.name for r in fitted.rewrite.records) if fitted.rewrite else ()
        cells += [f"{_short(fit_kept)} {_whole(fitted):,}"]
    except ArenaplanError as exc:
        cells += [f"error: {str(exc)[:60]}"]
    return cells


_LISTS = (("reorder", "inplace", "bands"), ("cascade", "reorder", "inplace"), ALL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=SHARED)
    parser.add_argument("--only", help="models whose name contains this text")
    parser.add_argument("--no-prove", action="store_true", help="estimates only")
    args = parser.parse_args(argv)
    table = Table(title="whole arena (bytes, arm32, reference kernels)")
    for column in ("model", "as given", "R,I,B", "C,R,I", "C,R,I,B", "kept", "whole", "fit"):
        table.add_column(column, justify="left" if column in ("model", "kept") else "right")
    for source in _sources(args.models, args.only):
        try:
            table.add_row(*_row(source, not args.no_prove))
        except ArenaplanError as exc:
            print(f"{source.name}: {exc}", file=sys.stderr)
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
