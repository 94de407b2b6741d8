"""Pieces of the C headers arenaplan writes for firmware (each runtime's own header
says what its arrays are for): the include guard, and the arrays themselves, each
16-byte aligned in its linker section, defined in the one source file that defines
``ARENAPLAN_DEFINE_<what>`` and declared ``extern`` everywhere else. C and C++."""

from __future__ import annotations

import re
from collections.abc import Sequence

Array = tuple[str, str, str]  # (linker section, "": none; array name; size, a macro)


def header_guard(name: str) -> str:
    """The include guard of the header for file ``name``."""
    return "ARENAPLAN_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper() + "_H"


def array_lines(define: str, arrays: Sequence[Array]) -> list[str]:
    """The arrays, defined under ``#ifdef ARENAPLAN_DEFINE_<define>``, else declared."""
    macro = f"ARENAPLAN_DEFINE_{define}"
    lines = ["#ifdef __cplusplus", 'extern "C" {', "#endif"]
    lines.append(f"#ifdef {macro} /* in exactly one source file */")
    for section, array, size in arrays:
        where = f', section("{section}")' if section else ""
        lines += [f"__attribute__((aligned(16){where}))", f"uint8_t {array}[{size}];"]
    lines.append("#else")
    lines += [f"extern uint8_t {array}[{size}];" for _, array, size in arrays]
    lines += [f"#endif /* {macro} */", "#ifdef __cplusplus", "}", "#endif", ""]
    return lines
