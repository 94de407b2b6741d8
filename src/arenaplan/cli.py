"""The ``arenaplan`` command line: the only place errors become exit codes.

Exit status: 0 success; 1 verification found different outputs, or a capacity
is proven infeasible; 2 bad input or usage (one line on stderr, no traceback, no
output file); 3 TFLM refuses the model (so it cannot be verified), or the time
limit came before an answer; 70 an internal error (a bug in arenaplan: one line
naming the input, asking for a report); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from arenaplan import __version__
from arenaplan.commands import (
    calibrate,
    demo,
    explore,
    inspect,
    passes,
    plan,
    profile,
    solve,
    sweep,
    targets,
    verify,
)
from arenaplan.errors import ArenaplanError

EXIT_USAGE = 2
EXIT_INTERNAL = 70  # sysexits.h EX_SOFTWARE
EXIT_INTERRUPTED = 130


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, like every other error."""

    def error(self, message: str) -> NoReturn:
        print(f"arenaplan: error: {message} (see: {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="arenaplan",
        description="Plan the TFLM tensor arena of a .tflite model offline, and prove it.",
    )
    parser.add_argument("--version", action="version", version=f"arenaplan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (
        plan,
        verify,
        inspect,
        passes,
        solve,
        sweep,
        explore,
        targets,
        calibrate,
        profile,
        demo,
    ):
        module.register(sub)
    return parser


def _inputs(args: argparse.Namespace) -> str:
    """The input files a command was given, for the internal-error line."""
    names = [
        str(v)
        for k, v in vars(args).items()
        if isinstance(v, Path) and k in ("model", "problem", "original", "planned", "file")
    ]
    return ", ".join(names) if names else "no input file"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    console = Console(highlight=False)
    try:
        return int(args.run(args, console) or 0)
    except ArenaplanError as exc:
        print(f"arenaplan: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("arenaplan: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of our output went away (| head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # the guard of last resort: never a traceback
        what = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        print(
            f"arenaplan: internal error in '{args.command}' on {_inputs(args)}: {what}. "
            "This is a bug in arenaplan; please report it with the command line and the input.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
