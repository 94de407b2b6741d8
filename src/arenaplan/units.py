"""One syntax for sizes everywhere: command-line options and target files.

A size is a whole number of bytes, optionally with a unit: ``B``; decimal
``KB`` (or SI's ``kB``) = 1000, ``MB`` = 1000**2, ``GB`` = 1000**3; binary
``KiB`` = 1024, ``MiB`` = 1024**2, ``GiB`` = 1024**3 (spelt so, a space allowed:
``32KiB``, ``1.5 MiB``, ``2MB``). Any other spelling is refused rather than
guessed: ``32Kib`` or ``32kb`` could mean bits, ``32KIB`` binary or not. A
fractional value must come to whole bytes.
"""

from __future__ import annotations

import argparse
import math
import re
from fractions import Fraction

from arenaplan.errors import ArenaplanError, UsageError

UNITS = {
    "": 1,
    "B": 1,
    "KB": 1000,
    "kB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}
SIZE_HELP = "bytes, or with a unit: 32KiB (1024), 32KB (1000), 1.5MiB"
UNITS_HELP = "B; KB (or kB), MB, GB for powers of 1000; KiB, MiB, GiB for powers of 1024"
_SIZE = re.compile(r"\s*(-?\d{1,30}(?:\.\d{1,30})?)\s*([A-Za-z]*)\s*")  # 30 digits: any size


def parse_size(
    value: object,
    where: str,
    minimum: int = 1,
    error: type[ArenaplanError] = UsageError,
) -> int:
    """Bytes from an integer or a string such as "512KiB" or "2 MB"; at least ``minimum``."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str):
        m = _SIZE.fullmatch(value)
        if not m:
            raise error(f"{where}: {value!r} is not a size ({SIZE_HELP})")
        number, unit = m.groups()
        if unit not in UNITS:
            units = f"units, spelt so: {UNITS_HELP}"
            raise error(f"{where}: {value!r}: unknown unit {unit!r} ({units})")
        exact = Fraction(number) * UNITS[unit]
        if exact.denominator != 1:
            raise error(f"{where}: {value!r} is not a whole number of bytes")
        size = int(exact)
    else:
        raise error(f"{where}: {value!r} is not a size ({SIZE_HELP})")
    if size < minimum:
        least = {0: "zero or more", 1: "positive"}.get(minimum, f"at least {minimum:,} B")
        raise error(f"{where}: a size must be {least}, got {value!r}")
    return size


def size_arg(minimum: int = 1, maximum: int | None = None):
    """An ``argparse`` type for size options (its errors become one usage line);
    ``maximum``: the largest size the option takes (None: any)."""

    def size(text: str) -> int:
        try:
            value = parse_size(text, "size", minimum)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("size: ")) from None
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{text!r} is above the limit of {maximum:,} B")
        return value

    return size


MAX_SECONDS = 7 * 24 * 3600.0  # the longest duration an option takes: one week


def seconds_arg(text: str) -> float:
    """An ``argparse`` type for durations: a finite number of seconds above zero, at most
    ``MAX_SECONDS``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is above the limit of {MAX_SECONDS:,.0f} s (one week)"
        )
    return value


def count_arg(minimum: int, maximum: int):
    """An ``argparse`` type for counts: a whole number from ``minimum`` to ``maximum``
    (every count a user gives has an upper limit, stated in its error)."""

    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    return count


def percent_arg(text: str) -> float:
    """An ``argparse`` type for a share: ``10%`` or ``10`` (percent) -> 0.10."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (e.g. 10%)") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a percentage of 0 or more, got {text!r}")
    return value / 100
