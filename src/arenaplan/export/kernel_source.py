"""``--kernel-source DIR``: the C++ of arenaplan's own kernels, for a firmware to compile.

The sources ship in the package (``arenaplan/firmware``); the registration snippet
says what a firmware adds to its op resolver (docs/cascade.md).
"""

from __future__ import annotations

from importlib import resources

SOURCES = ("arenaplan_cascade.h", "arenaplan_cascade.cc")
REGISTER = "register_cascade.txt"
REGISTER_TEXT = """\
// arenaplan's cascade kernel: compile arenaplan_cascade.cc with TFLM (its
// include paths and flags), then add it to the op resolver the model runs with:
#include "arenaplan_cascade.h"

// one more operator than the resolver held before
static tflite::MicroMutableOpResolver<kOperatorCount + 1> resolver;
resolver.AddCustom("ARENAPLAN_CASCADE", tflite::Register_ARENAPLAN_CASCADE());
"""


def kernel_files() -> dict[str, bytes]:
    """File name -> contents of every file ``--kernel-source`` writes."""
    folder = resources.files("arenaplan.firmware")
    files = {name: folder.joinpath(name).read_bytes() for name in SOURCES}
    files[REGISTER] = REGISTER_TEXT.encode()
    return files
