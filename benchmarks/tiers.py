"""Memory tiers: estimated latency of placements over a target's memories.

    python benchmarks/tiers.py [--models DIR] [--targets generic,esp32s3,imxrt1170,xcore_ai]

Per model and target, with the target's fastest memory as "SRAM" and the next
one that holds activations as "external": the estimated latency (ms, the target's
time model, ``cost.timing``) of all activations in SRAM (if they fit), all in
external RAM, all in SRAM but TFLM's persistent arena external, and our placement
and Vela's strategy with SRAM limited to 100%, 75%, 50%, 35% and 25% of the lower
bound; last, the worst ratio ours/Vela over those (<= 1.000: ours never worse).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.cost.roofline import default_memory
from arenaplan.cost.timing import estimate
from arenaplan.errors import AllocationError
from arenaplan.placement import plan_model
from arenaplan.placement.tiers import place_tiers
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
FRACTIONS = (1.0, 0.75, 0.5, 0.35, 0.25)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def _all_in(model, target, memory: str, persistent: str | None = None) -> float:
    """Estimated seconds with every activation in ``memory`` (weights where they live),
    TFLM's persistent arena in ``persistent`` (default: the fastest memory)."""
    where = default_memory(model, target)
    acts = {k: memory for k in where if not model.subgraphs[k[0]].tensors[k[1]].is_constant}
    return sum(t.seconds for t in estimate(model, target, {**where, **acts}, persistent))


def _at(model, target, sram: str, capacity: int) -> tuple[str, float]:
    """'ours / Vela' in ms at an SRAM capacity, and the ratio ours/Vela."""
    try:
        a = place_tiers(model, target, {sram: capacity}).seconds
        b = place_tiers(model, target, {sram: capacity}, "vela").seconds
    except AllocationError:
        return "-", 0.0
    return f"{_ms(a)} / {_ms(b)}", a / b if b else 1.0


def row(model, name: str, target) -> list[str]:
    acts = [m for m in target.memories if "activations" in m.holds]
    sram, ext = acts[0].name, acts[1].name
    lb = plan_model(model).lower_bound
    fits = lb <= acts[0].capacity
    all_sram = _ms(_all_in(model, target, sram)) if fits else "no fit"
    tail_out = _ms(_all_in(model, target, sram, ext)) if fits else "-"
    cells, worst = [], 0.0
    for f in FRACTIONS:
        text, ratio = _at(model, target, sram, int(lb * f))
        cells.append(text)
        worst = max(worst, ratio)
    return [
        name.split("__")[-1][:24],
        target.name,
        f"{lb:,}",
        all_sram,
        _ms(_all_in(model, target, ext)),
        tail_out,
        *cells,
        f"{worst:.3f}",
    ]


def _slowed(target, bandwidth: float):
    acts = [m for m in target.memories if "activations" in m.holds]
    slow = {
        m.name: dataclasses.replace(m, read_bandwidth=bandwidth, write_bandwidth=bandwidth)
        for m in acts[1:]
    }
    return dataclasses.replace(target, memories=tuple(slow.get(m.name, m) for m in target.memories))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--targets", default="generic,esp32s3,imxrt1170,xcore_ai")
    parser.add_argument(
        "--slow-external",
        type=float,
        metavar="BYTES_PER_S",
        help="override the external memories' bandwidth (to see placement "
        "matter where the roofline is compute-bound)",
    )
    args = parser.parse_args()
    paths = sorted(args.models.glob("*.tflite"))
    if not paths:
        print(f"no models in {args.models}", file=sys.stderr)
        return 2
    targets = [load_builtin(t) for t in args.targets.split(",")]
    if args.slow_external:
        targets = [_slowed(t, args.slow_external) for t in targets]
    table = Table(
        title="estimated latency (ms): all in SRAM, all external, only the persistent arena "
        "external, and ours / Vela's strategy with SRAM at a share of the lower bound"
    )
    shares = [f"{round(f * 100)}%: ours / Vela" for f in FRACTIONS]
    for col in (
        "model",
        "target",
        "lower bound",
        "all SRAM",
        "all external",
        "tail external",
        *shares,
        "worst ours/Vela",
    ):
        table.add_column(col, justify="left" if col in ("model", "target") else "right")
    for path in paths:
        model = read_model(path)
        for target in targets:
            table.add_row(*row(model, path.stem, target))
    Console(width=200).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
