"""Where tasks run: in this process, a local process pool, or a Ray cluster.

Each backend takes tasks and yields their rows as they finish (in finishing
order; a row says which task it is). ``run_task`` is the same function on every
backend and depends only on the task, so every backend gives the same rows (but
for the wall-time column).

The pool's workers end when the sweep ends, however it ends: on a normal end the
pool is shut down; when the sweep is left early (Ctrl-C, SIGTERM or SIGHUP, taken
between calls into the pool so that none is cut in half; an error) the workers are
killed at once; when its process is killed (SIGKILL), each worker, told at its start to
die with its parent (``_die_with_parent``), ends too.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from arenaplan.errors import UsageError
from arenaplan.explore.tasks import Task, run_task
from arenaplan.signals import Held, die_with_parent, held

BACKENDS = ("inprocess", "pool", "ray")


def run_inprocess(tasks: Sequence[Task]) -> Iterator[dict[str, Any]]:
    for t in tasks:
        yield run_task(t)


WATCH_SECONDS = 1.0  # elsewhere: how often a worker looks whether its parent is alive
POLL_SECONDS = 0.1  # how often the sweep looks for an ending signal while it waits


def run_pool(tasks: Sequence[Task], workers: int | None = None) -> Iterator[dict[str, Any]]:
    """A pool of ``workers`` processes (default: one per core), started fresh
    ("spawn": no state inherited from this process), that end with this process."""
    n = workers or os.cpu_count() or 1
    pool = ProcessPoolExecutor(
        max_workers=n,
        mp_context=get_context("spawn"),
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )
    finished: queue.SimpleQueue[Future] = queue.SimpleQueue()  # futures, as they finish
    complete = False
    try:
        with held() as ending:  # raised between calls into the pool, never inside
            for t in tasks:
                pool.submit(run_task, t).add_done_callback(finished.put)
                _stop_if(ending)
            for _ in tasks:
                yield _next(finished, ending).result()
        complete = True
    finally:
        if complete:
            pool.shutdown()
        else:
            _end_pool(pool)


def _next(finished: queue.SimpleQueue[Future], ending: Held) -> Future:
    """The next future to finish; an ending signal that came is raised first, and
    while waiting (a sweep whose results never stop coming is still ended at once)."""
    while True:
        _stop_if(ending)
        try:
            return finished.get(timeout=POLL_SECONDS)
        except queue.Empty:
            pass


def _stop_if(ending: Held) -> None:
    """Ctrl-C, SIGTERM or SIGHUP came: raise it here, between calls into the pool (one
    raised inside the pool's own code can leave a lock of its futures held, and the
    pool's thread waiting on it for ever: the exit hangs)."""
    if ending.came:
        ending.release()


def _end_pool(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: the running tasks are killed, none waiting starts, and the
    pool's queues are released (its manager thread sees the workers gone)."""
    # CPython's pool keeps its processes there (pid -> process); 3.14 adds kill_workers()
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for p in processes:
        p.kill()
    for p in processes:
        p.join()
    pool.shutdown(wait=True, cancel_futures=True)


def _die_with_parent(parent: int) -> None:
    """A worker's start: Ctrl-C is its parent's to handle (which then ends the pool);
    the worker is killed when its parent ends, however it ends (Linux: the kernel
    does it, ``PR_SET_PDEATHSIG``; elsewhere a thread that looks every second)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if die_with_parent():
        if os.getppid() != parent:  # the parent ended before the call
            os._exit(1)
        return
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(1)


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
