"""Deciding a capacity against minimising, on held-out problems packed at their bound.

    python benchmarks/solver_decide.py [--time-limit 20] [--only NAME] [--write DIR]
                                       [--set held-out|hard] [--seeds K]

Ten generated instances, other seeds and families than ``solver_hard.py``'s (its
own ten with ``--set hard``), each with a packing at exactly its max-load bound:

- guillotine and pinwheel tilings (other seeds, larger);
- holes: a tiling less a fifth of the pieces not live at one step (that step stays
  full, so the bound is the height; no tiling to rebuild);
- stacked: a tiling on top of another that spans half its steps;
- epochs: two tilings of different heights, one after the other in time;
- aligned: a tiling in 64-byte units, alignments of 16, 32 or 64;
- fine: 3,000 steps, 4,096 bytes high;
- traces: real models' buffers (other models than ``solver_hard.py``'s), peaks
  aligned and stacked.

For each: the bound, the height minimising reaches (``minimize``) and its seconds,
then the decision at the bound (``minimize.decide``), its answer, the phase that
found the packing and its seconds. Both share nothing (each starts afresh) and
every packing is validated. ``--seeds K`` instead decides K further seeds (300
on) of each generated family (``--only``: those whose name has it) at 500, 1,000
and 2,000 buffers, seeds no benchmark uses (how general the table is), and prints
how many were decided feasible at their bound and the slowest. Run on demand; it
is not part of the tests.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from solver_hard import Rect, _write, instances, merged_traces, rects, tiling

from arenaplan.allocation.bounds import live_bytes_bound
from arenaplan.allocation.minimize import decide, minimize
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.validate import check_solution


def _problem(pieces: list[Rect], scale: int = 1, aligns: tuple[int, ...] = (1,)) -> Problem:
    rng = random.Random(len(pieces))
    return Problem(
        tuple(
            Buffer(f"b{i}", t0, t1, h * scale, rng.choice(aligns))
            for i, (t0, t1, _, h) in enumerate(pieces)
        )
    )


def holes(n: int, seed: int, pinwheel: bool) -> Problem:
    rng = random.Random(seed)
    peak = rng.randrange(400)
    pieces = rects(n, seed, pinwheel)
    return _problem([p for p in pieces if p[0] <= peak <= p[1] or rng.random() > 0.2])


def stacked(n: int, seed: int) -> Problem:
    below = rects(n // 2, seed, True, height=1 << 19)
    above = rects(n // 2, seed + 1, False, steps=200, height=1 << 18)
    pieces = below + [(t0 + 100, t1 + 100, y + (1 << 19), h) for t0, t1, y, h in above]
    random.Random(seed).shuffle(pieces)
    return _problem(pieces)


def epochs(n: int, seed: int) -> Problem:
    first = rects(n // 2, seed, True, steps=300)
    then = rects(n // 2, seed + 1, True, steps=300, height=3 << 18)
    return _problem(first + [(t0 + 300, t1 + 300, y, h) for t0, t1, y, h in then])


HELD_OUT_TRACES = (
    ["arm-ml-examples__cnn_s_quantized", "arm-ml-examples__dnn_s_quantized",
     "mlcommons-tiny__ad01_int8", "tflite-micro__test_conv_model"],
    ["mlcommons-tiny__kws_ref_model_float32", "tflite-micro__trained_lstm_int8",
     "tflite-micro__hello_world_int8", "mlcommons-tiny__vww_96_int8"],
)  # fmt: skip


FAMILIES = {
    "guillotine": lambda n, seed: tiling(n, seed, pinwheel=False),
    "pinwheel": lambda n, seed: tiling(n, seed, pinwheel=True),
    "holes-guillotine": lambda n, seed: holes(n, seed, pinwheel=False),
    "holes-pinwheel": lambda n, seed: holes(n, seed, pinwheel=True),
    "stacked": stacked,
    "epochs": epochs,
    "aligned": lambda n, seed: _problem(rects(n, seed, True, height=1 << 14), 64, (16, 32, 64)),
    "fine": lambda n, seed: _problem(rects(n, seed, True, steps=3000, height=1 << 12)),
}


def held_out() -> list[tuple[str, Problem | None]]:
    return [
        ("guillotine-1800", FAMILIES["guillotine"](1800, 201)),
        ("pinwheel-1500", FAMILIES["pinwheel"](1500, 202)),
        ("holes-guillotine-1000", FAMILIES["holes-guillotine"](1000, 203)),
        ("holes-pinwheel-1500", FAMILIES["holes-pinwheel"](1500, 204)),
        ("stacked-1200", stacked(1200, 205)),
        ("epochs-1000", epochs(1000, 206)),
        ("aligned-1200", FAMILIES["aligned"](1200, 207)),
        ("fine-2500", FAMILIES["fine"](2500, 208)),
        ("traces-3", merged_traces(HELD_OUT_TRACES[0])),
        ("traces-4", merged_traces(HELD_OUT_TRACES[1])),
    ]


def row(name: str, problem: Problem, seconds: float) -> list[str]:
    bound = live_bytes_bound(problem)
    start = time.perf_counter()
    sol = minimize(problem, seconds=seconds)
    t_min = time.perf_counter() - start
    check_solution(problem, sol.offsets)
    start = time.perf_counter()
    answer = decide(problem, bound, seconds=seconds)
    t_dec = time.perf_counter() - start
    if answer.offsets is not None:
        check_solution(Problem(problem.buffers, bound), answer.offsets)
    phase = answer.reason if answer.status == "feasible" else "-"
    reached = "yes" if sol.height <= bound else f"no ({sol.height / bound:.3f}x)"
    return [name, f"{len(problem.buffers):,}", f"{bound:,}", reached, sol.allocator,
            f"{t_min:.2f}", answer.status, phase, f"{t_dec:.2f}"]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--write", type=Path, help="save the instances as minimalloc CSV here")
    ap.add_argument("--set", choices=("held-out", "hard"), default="held-out")
    ap.add_argument("--seeds", type=int, default=0)
    args = ap.parse_args(argv)
    if args.seeds:
        _other_seeds(args.seeds, args.time_limit, args.only)
        return 0
    table = Table(title=f"minimise vs decide at the bound ({args.set}), {args.time_limit:g} s each")
    cols = ("instance", "buffers", "bound", "minimise reaches it", "by", "s",
            "decide", "by", "s")  # fmt: skip
    for col in cols:
        table.add_column(col, justify="left" if col in ("instance", "by") else "right")
    found = held_out() if args.set == "held-out" else instances()
    for name, problem in found:
        if args.only and args.only not in name:
            continue
        if problem is None:
            table.add_row(name, "skipped: ../shared/models absent", *[""] * 7)
            continue
        if args.write:
            _write(args.write / f"{name}.csv", problem)
        table.add_row(*row(name, problem, args.time_limit))
    Console(width=140).print(table)
    return 0


def _other_seeds(k: int, seconds: float, only: str) -> None:
    """Decided at the bound, over ``k`` seeds per generated family and size."""
    table = Table(title=f"decide at the bound, seeds 300..{299 + k}, {seconds:g} s each")
    for col in ("family", "buffers", "decided feasible", "slowest s"):
        table.add_column(col, justify="left" if col == "family" else "right")
    for family, make in FAMILIES.items():
        if only and only not in family:
            continue
        for n in (500, 1000, 2000):
            decided, slowest = 0, 0.0
            for seed in range(300, 300 + k):
                problem = make(n, seed)
                bound = live_bytes_bound(problem)
                start = time.perf_counter()
                answer = decide(problem, bound, seconds=seconds)
                slowest = max(slowest, time.perf_counter() - start)
                if answer.offsets is not None:
                    check_solution(Problem(problem.buffers, bound), answer.offsets)
                decided += answer.status == "feasible"
            table.add_row(family, f"{n:,}", f"{decided} of {k}", f"{slowest:.2f}")
    Console(width=140).print(table)


if __name__ == "__main__":
    raise SystemExit(main())
