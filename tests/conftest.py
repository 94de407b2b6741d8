"""Tests against TFLM built from source (``python scripts/build_tflm.py``) run the real
kernels natively, under qemu-arm and under valgrind: minutes, not seconds. They run
when ``ARENAPLAN_NATIVE=1`` (or ``ARENAPLAN_TFLM_BUILD`` names the builds); otherwise
the builds are looked for where none are, and each such test skips with a reason
naming the build it needs."""

from __future__ import annotations

import os

if os.environ.get("ARENAPLAN_NATIVE") != "1" and "ARENAPLAN_TFLM_BUILD" not in os.environ:
    os.environ["ARENAPLAN_TFLM_BUILD"] = "/nonexistent (ARENAPLAN_NATIVE=1 runs these tests)"
