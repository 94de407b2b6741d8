"""Where tasks run: in this process, a local process pool, or a Ray cluster.

Each backend takes tasks and yields their rows as they finish (in finishing
order; a row says which task it is). ``run_task`` is the same function on every
backend and depends only on the task, so every backend gives the same rows (but
for the wall-time column).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Any

from arenaplan.errors import UsageError
from arenaplan.explore.tasks import Task, run_task

BACKENDS = ("inprocess", "pool", "ray")


def run_inprocess(tasks: Sequence[Task]) -> Iterator[dict[str, Any]]:
    for t in tasks:
        yield run_task(t)


def run_pool(tasks: Sequence[Task], workers: int | None = None) -> Iterator[dict[str, Any]]:
    """A pool of ``workers`` processes (default: one per core), started fresh
    ("spawn": no state inherited from this process)."""
    n = workers or os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(run_task, t) for t in tasks]
        for f in as_completed(futures):
            yield f.result()


def ray_available() -> str | None:
    """None if Ray can be imported, else why not (one line)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "Ray is not installed (pip install 'arenaplan[ray]')"
    return None


def run_ray(
    tasks: Sequence[Task], address: str | None = None, workers: int | None = None
) -> Iterator[dict[str, Any]]:
    """The tasks on a Ray cluster: the one at ``address`` ("auto": the one this
    machine belongs to), or a local one started here and stopped at the end."""
    why = ray_available()
    if why:
        raise UsageError(why)
    import ray

    started = not ray.is_initialized()
    if started:
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=workers or os.cpu_count(), log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"cannot reach a Ray cluster at {address}: {exc}") from None
    try:
        remote = ray.remote(run_task)
        waiting = [remote.remote(t) for t in tasks]
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                yield ray.get(ref)
    finally:
        if started:
            ray.shutdown()


def run(
    tasks: Sequence[Task], backend: str, workers: int | None = None, address: str | None = None
) -> Iterator[dict[str, Any]]:
    if backend == "inprocess":
        return run_inprocess(tasks)
    if backend == "pool":
        return run_pool(tasks, workers)
    if backend == "ray":
        return run_ray(tasks, address, workers)
    raise UsageError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
