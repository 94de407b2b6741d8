"""A sweep of more than 1,000 tasks on each backend: wall time and tasks per second.

    python benchmarks/explore.py [--models DIR] [--backends inprocess,pool,ray]
                                 [--targets generic,imxrt1170,esp32s3] [--sizes 9]

Tasks: every model of ../shared/models x targets x ``--sizes`` sizes of the fastest
memory from 1 KiB to 1 MiB x passes none and bands (19 x 3 x 9 x 2 = 1,026 by
default). Each backend runs the whole sweep into a fresh results folder; the table
gives wall time, tasks per second, the work (sum of the tasks' own times), the
speedup over one process, and whether its rows equal the in-process rows (but for
wall times). Ray runs a local cluster started by the benchmark. On a multi-node
cluster, start Ray on each node (``ray start --head`` on one, ``ray start
--address=HEAD:6379`` on the others, with arenaplan installed and the models at the
same path on every node) and run ``arenaplan explore ... --ray auto`` (or
``--ray HEAD:6379``) from a node of the cluster.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenaplan.explore.backends import ray_available, run
from arenaplan.explore.grid import make_tasks, parse_sizes
from arenaplan.explore.store import Store

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def _same(rows):
    return sorted(tuple(sorted((k, v) for k, v in r.items() if k != "seconds")) for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    ap.add_argument("--backends", default="inprocess,pool,ray")
    ap.add_argument("--targets", default="generic,imxrt1170,esp32s3")
    ap.add_argument("--sizes", type=int, default=9)
    args = ap.parse_args(argv)
    models = sorted(args.models.glob("*.tflite")) if args.models.is_dir() else []
    if not models:
        print(f"{args.models}: no models; nothing to sweep", file=sys.stderr)
        return 1
    sizes = parse_sizes(f"1KiB..1MiB:{args.sizes}")
    tasks = make_tasks(models, args.targets.split(","), sizes, ["none", "bands"])
    console = Console(width=160)
    table = Table(title=f"{len(tasks)} tasks ({len(models)} models)")
    for col in ("backend", "wall s", "tasks/s", "work s", "speedup", "failed", "rows = in-process"):
        table.add_column(col, justify="left" if col == "backend" else "right")
    reference = None
    for backend in args.backends.split(","):
        if backend == "ray" and ray_available():
            table.add_row(backend, "-", "-", "-", "-", "-", str(ray_available()))
            continue
        with tempfile.TemporaryDirectory() as folder, Store(Path(folder)) as store:
            start = time.perf_counter()
            for row in run(tasks, backend):
                store.add(row)
            wall = time.perf_counter() - start
            rows = store.rows()
        work = sum(r["seconds"] for r in rows)
        failed = sum(r["status"] == "failed" for r in rows)
        same = "-" if reference is None else str(_same(rows) == reference)
        reference = reference or _same(rows)
        table.add_row(backend, f"{wall:.1f}", f"{len(rows) / wall:.1f}", f"{work:.1f}",
                      f"{work / wall:.2f}", str(failed), same)  # fmt: skip
        console.print(f"{backend}: {wall:.1f} s")
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
