"""Tests against TFLM built from source run the real kernels natively, under qemu and
under valgrind. They find the builds where ``python scripts/build_tflm.py`` leaves
them (``arenaplan.tflm.verify.native.build_root``: the user's cache, keyed by the source
bundle's hash; ``$ARENAPLAN_TFLM_BUILD`` to look elsewhere) and run whenever those
builds are there; ``bash scripts/native_lane.sh`` makes every build they need. Without
a build, each such test skips with a reason naming the command that makes it, and the
end of the run prints one line per group of skipped tests with that reason."""

from __future__ import annotations

from collections import Counter

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per distinct skip reason, with the number of tests it skipped."""
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons[str(longrepr[2]).removeprefix("Skipped: ")] += 1
    if not reasons:
        return
    terminalreporter.section("skipped, by reason")
    for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        terminalreporter.write_line(f"{n:5d} skipped: {reason}")


# TFLM's real headers and kernel sources for the C++ tests (tests/kits/tflm_headers.py)
from kits.tflm_headers import tflm_headers, tflm_kernels  # noqa: E402, F401
