"""``--kernel-source DIR``: the C++ of arenaplan's own kernels, for a firmware to compile.

The sources ship in the package (``arenaplan/firmware``); the registration snippet
says what a firmware adds to its op resolver (docs/cascade.md).
"""

from __future__ import annotations

from importlib import resources

from arenaplan.ir.cascade_format import OPCODE
from arenaplan.ir.model import Model

SOURCES = ("arenaplan_cascade.h", "arenaplan_cascade.cc")
REGISTER = "register_cascade.txt"
REGISTER_LINE = f'resolver.AddCustom("{OPCODE}", tflite::Register_{OPCODE}());'
REGISTER_TEXT = f"""\
// arenaplan's cascade kernel: compile arenaplan_cascade.cc with TFLM (its
// include paths and flags), then add it to the op resolver the model runs with:
#include "arenaplan_cascade.h"

// one more operator than the resolver held before
static tflite::MicroMutableOpResolver<kOperatorCount + 1> resolver;
{REGISTER_LINE}
"""


def kernel_files() -> dict[str, bytes]:
    """File name -> contents of every file ``--kernel-source`` writes."""
    folder = resources.files("arenaplan.firmware")
    files = {name: folder.joinpath(name).read_bytes() for name in SOURCES}
    files[REGISTER] = REGISTER_TEXT.encode()
    return files


def needs_kernel(model: Model) -> bool:
    """``model`` has an operator that runs arenaplan's cascade kernel."""
    return any(
        op.is_custom and op.opcode == OPCODE for sg in model.subgraphs for op in sg.operators
    )


def firmware_lines(written_to: str | None) -> tuple[str, str]:
    """The summary's last lines for a model that needs the cascade kernel: which
    kernel, where its source is (``written_to``: the ``--kernel-source`` folder, or
    None: the option that writes it), and the line that registers it."""
    if written_to is None:
        source = "--kernel-source DIR writes its source (arenaplan_cascade.h, .cc)"
    else:
        source = f"its source is in {written_to} (arenaplan_cascade.h, .cc, {REGISTER})"
    return (
        f"the model needs arenaplan's kernel {OPCODE} (TFLM without it stops: didn't find "
        f"op for custom opcode): compile arenaplan_cascade.cc with TFLM; {source}",
        f"register it in the firmware's op resolver: {REGISTER_LINE}",
    )
