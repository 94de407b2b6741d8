"""Signals that end a run (Ctrl-C, ``kill``, a closed terminal), held back where a run
must not be cut: between the renames of its outputs, inside a process pool's own code.

Python runs a signal's handler in the main thread, whichever thread the system gave the
signal to; so holding back swaps the handlers (a thread's signal mask would not do, as
other threads may exist). Outside the main thread, handlers cannot be set: nothing is
held there.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Held:
    """The ending signals that came while held, in order, and the handlers before."""

    def __init__(self) -> None:
        self.came: list[int] = []
        self.before: dict[int, object] = {}

    def _record(self, signum: int, _frame: object) -> None:
        self.came.append(signum)

    def release(self) -> None:
        """Put the handlers back, then raise the signals that came (their handlers run
        now: KeyboardInterrupt for Ctrl-C, the command line's for SIGTERM and SIGHUP)."""
        for signum, handler in self.before.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self.before = {}
        came, self.came = self.came, []
        for signum in came:
            signal.raise_signal(signum)


@contextmanager
def held(signals: tuple[int, ...] = ENDING) -> Iterator[Held]:
    """Inside: ``signals`` are recorded, not acted on; on leaving (or at ``release``,
    which ends the holding early) they are raised again with the handlers before."""
    hold = Held()
    if threading.current_thread() is threading.main_thread():
        for signum in signals:
            if signal.getsignal(signum) is not None:  # None: a handler Python cannot restore
                hold.before[signum] = signal.signal(signum, hold._record)
    try:
        yield hold
    finally:
        hold.release()


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends (Linux)


def die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent ends, however the parent
    ends (even by SIGKILL). Linux only: False elsewhere, or if the call failed."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
