"""One size syntax for every option and target file; durations and counts checked."""

from __future__ import annotations

import argparse

import pytest

from arenaplan.errors import TargetError, UsageError
from arenaplan.units import count_arg, parse_size, seconds_arg, size_arg


def test_sizes_decimal_and_binary_units() -> None:
    assert parse_size("512KiB", "x") == 524288 and parse_size("2MB", "x") == 2_000_000
    assert parse_size(64, "x") == 64 and parse_size("1.5 MiB", "x") == 1572864
    assert parse_size("32kB", "x") == 32_000 and parse_size("1GiB", "x") == 1 << 30
    assert parse_size("0", "x", minimum=0) == 0 and parse_size(" 4 KiB ", "x") == 4096


@pytest.mark.parametrize("text", ["32Kib", "32kb", "32KIB", "32kib", "2mb", "1Gb", "32K", "8b"])
def test_only_the_documented_unit_spellings_are_read(text: str) -> None:
    """``32Kib`` was read as 32,768 B: a lower-case b is bits, KIB is a guess."""
    with pytest.raises(UsageError) as info:
        parse_size(text, "--memory sram")
    message = str(info.value)
    assert message.startswith(f"--memory sram: {text!r}: unknown unit") and "\n" not in message
    assert "KB (or kB), MB, GB" in message and "KiB, MiB, GiB" in message


@pytest.mark.parametrize("text", ["0", "-1", "-4KiB", "1.5", "0.1KiB", "12 apples", "", "nan"])
def test_bad_sizes_are_one_line_errors(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_size(text, "--capacity")
    assert str(info.value).startswith("--capacity: ") and "\n" not in str(info.value)


def test_target_files_get_their_own_error() -> None:
    with pytest.raises(TargetError):
        parse_size(0, "memory 'sram' capacity", error=TargetError)


def test_argparse_types_reject_with_a_reason() -> None:
    assert size_arg()("32KiB") == 32768
    for bad, parse in (("-1", size_arg()), ("nan", seconds_arg), ("inf", seconds_arg)):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)
    assert seconds_arg("0.5") == 0.5
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1"):
        count_arg(1, 5)("0")


def test_counts_and_durations_have_upper_limits() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="at most 5"):
        count_arg(1, 5)("6")
    assert count_arg(1, 5)("5") == 5
    with pytest.raises(argparse.ArgumentTypeError, match="one week"):
        seconds_arg("1e9")
