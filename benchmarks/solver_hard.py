"""Hard families: problems feasible exactly at their max-load bound.

    python benchmarks/solver_hard.py [--time-limit 60] [--only NAME] [--write DIR]
                                     [--seeds K]

Ten generated instances, each with a packing at exactly its max-load bound (so
"solved" means a packing of height = bound, found within the time limit):

- guillotine tilings: a rectangle (steps x bytes) cut recursively, at random, along
  time or along addresses; each piece is a buffer;
- pinwheel tilings: the same, but a piece may instead be split into five around a
  centre (the classic non-guillotine pattern: no straight cut separates them);
- merged traces: the buffer problems of several real models (../shared/models,
  planned heads that are optimal at their bound), shifted in time so that their
  peaks coincide, stacked: the bound is the sum of the peaks and the stacked plans
  reach it.

Each instance is printed with its buffers, bound, the height found, whether it is
solved, and the seconds taken. ``--write DIR`` saves them as minimalloc CSV files.
``--seeds K`` also runs K other seeds of each tiling family at 300, 800, 1,500
and 3,000 buffers (how general the ten are) and prints the solved counts.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.minimize import minimize
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.validate import check_solution

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
Rect = tuple[int, int, int, int]  # first step, last step (inclusive), offset, size


def _split(rng: random.Random, r: Rect, pinwheel: bool) -> list[Rect]:
    t0, t1, y0, h = r
    w = t1 - t0 + 1
    if pinwheel and w >= 3 and h >= 3 and rng.random() < 0.35:
        a, b = rng.randint(1, w - 2), rng.randint(1, h - 2)  # centre's corner
        c, d = rng.randint(a + 1, w - 1), rng.randint(b + 1, h - 1)  # centre's other corner
        return [
            (t0, t0 + c - 1, y0, b),  # bottom, left part up to the centre's right edge
            (t0 + c, t1, y0, d),  # right, bottom up to the centre's top edge
            (t0 + a, t1, y0 + d, h - d),  # top, from the centre's left edge
            (t0, t0 + a - 1, y0 + b, h - b),  # left, from the bottom piece's top
            (t0 + a, t0 + c - 1, y0 + b, d - b),  # the centre
        ]
    if (w > 1 and rng.random() < 0.5) or h == 1:
        k = rng.randint(1, w - 1)
        return [(t0, t0 + k - 1, y0, h), (t0 + k, t1, y0, h)]
    k = rng.randint(1, h - 1)
    return [(t0, t1, y0, k), (t0, t1, y0 + k, h - k)]


def rects(n: int, seed: int, pinwheel: bool, steps: int = 400, height: int = 1 << 20) -> list:
    """About ``n`` rectangles (first, last, offset, bytes) tiling ``steps x height``."""
    rng = random.Random(seed)
    pieces: list[Rect] = [(0, steps - 1, 0, height)]
    while len(pieces) < n:
        k = max(range(len(pieces)), key=lambda i: (pieces[i][1] - pieces[i][0] + 1) * pieces[i][3])
        r = pieces.pop(k)
        if r[1] == r[0] and r[3] == 1:
            pieces.append(r)
            break
        pieces += _split(rng, r, pinwheel)
    return pieces


def tiling(n: int, seed: int, pinwheel: bool, steps: int = 400, height: int = 1 << 20) -> Problem:
    """About ``n`` buffers tiling ``steps x height`` exactly."""
    pieces = rects(n, seed, pinwheel, steps, height)
    return Problem(tuple(Buffer(f"b{i}", t0, t1, h) for i, (t0, t1, _, h) in enumerate(pieces)))


def merged_traces(names: list[str]) -> Problem | None:
    """Real models' head problems, shifted so their peaks coincide (None without them)."""
    from arenaplan.analysis.buffers import arena_items
    from arenaplan.reader import read_model

    buffers: list[Buffer] = []
    for name in names:
        path = MODELS / f"{name}.tflite"
        if not path.exists():
            return None
        items = arena_items(read_model(path))
        bufs = items.buffers
        peak = max(range(max(b.last for b in bufs) + 1),
                   key=lambda s: sum(b.size for b in bufs if b.first <= s <= b.last))  # fmt: skip
        shift = 1000 - peak
        buffers += [Buffer(f"{name}:{b.id}", b.first + shift, b.last + shift, b.size, b.alignment)
                    for b in bufs]  # fmt: skip
    return Problem(tuple(buffers))


TRACES = (
    ["mlcommons-tiny__vww_96_int8", "mlcommons-tiny__pretrainedResnet_quant",
     "arm-ml-examples__ds_cnn_s_quantized", "mlcommons-tiny__str_ww_ref_model"],
    ["arm-ml-examples__basic_lstm_quantized_small", "mlcommons-tiny__kws_ref_model",
     "tflite-micro__micro_speech_quantized", "google-coral-test-data__keras_lstm_mnist_ptq"],
)  # fmt: skip


def instances() -> list[tuple[str, Problem | None]]:
    found: list[tuple[str, Problem | None]] = []
    for k, n in enumerate((369, 500, 1000, 2287)):
        found.append((f"guillotine-{n}", tiling(n, 11 + k, pinwheel=False)))
    for k, n in enumerate((400, 700, 1200, 2000)):
        found.append((f"pinwheel-{n}", tiling(n, 31 + k, pinwheel=True)))
    for k, names in enumerate(TRACES):
        found.append((f"traces-{k + 1}", merged_traces(names)))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--write", type=Path)
    ap.add_argument("--seeds", type=int, default=0)
    args = ap.parse_args(argv)
    table = Table(title=f"hard families, {args.time_limit:g} s each")
    for col in ("instance", "buffers", "max-load bound", "height", "solved", "seconds"):
        table.add_column(col, justify="left" if col == "instance" else "right")
    solved = total = 0
    for name, problem in instances():
        if args.only and args.only not in name:
            continue
        if problem is None:
            table.add_row(name, "-", "-", "-", "skipped: ../shared/models absent", "-")
            continue
        if args.write:
            _write(args.write / f"{name}.csv", problem)
        bound = live_bytes_bound(problem)
        start = time.perf_counter()
        sol = minimize(problem, seconds=args.time_limit)
        seconds = time.perf_counter() - start
        check_solution(problem, sol.offsets)
        total += 1
        solved += sol.height <= bound
        table.add_row(name, f"{len(problem.buffers):,}", f"{bound:,}", f"{sol.height:,}",
                      "yes" if sol.height <= bound else "no", f"{seconds:.1f}")  # fmt: skip
    Console(width=120).print(table)
    print(f"solved {solved} of {total} at their bound", file=sys.stderr)
    if args.seeds:
        _other_seeds(args.seeds, args.time_limit)
    return 0


def _other_seeds(k: int, seconds: float) -> None:
    """Solved counts over ``k`` other seeds per family and size."""
    table = Table(title=f"other seeds (100..{99 + k}), {seconds:g} s each")
    for col in ("family", "buffers", "solved", "worst seconds"):
        table.add_column(col, justify="left" if col == "family" else "right")
    for family in ("guillotine", "pinwheel"):
        for n in (300, 800, 1500, 3000):
            solved, worst = 0, 0.0
            for seed in range(100, 100 + k):
                problem = tiling(n, seed, pinwheel=family == "pinwheel")
                start = time.perf_counter()
                sol = minimize(problem, seconds=seconds)
                worst = max(worst, time.perf_counter() - start)
                check_solution(problem, sol.offsets)
                solved += sol.height <= live_bytes_bound(problem)
            table.add_row(family, f"{n:,}", f"{solved} of {k}", f"{worst:.1f}")
    Console(width=120).print(table)


def _write(path: Path, problem: Problem) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["id,lower,upper,size"]
    lines += [f"{k},{b.first},{b.last + 1},{b.size}" for k, b in enumerate(problem.buffers)]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
