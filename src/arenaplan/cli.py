"""The ``arenaplan`` command line: the only place errors become exit codes.

Exit status: 0 success; 1 verification found different outputs, or a capacity
is proven infeasible; 2 bad input or usage (one line on stderr, no traceback, no
partial output file); 3 TFLM refuses the model (so it cannot be verified), or
the time limit came before an answer.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

from arenaplan import __version__
from arenaplan.commands import demo, inspect, plan, solve, sweep, targets, verify
from arenaplan.errors import ArenaplanError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arenaplan",
        description="Plan the TFLM tensor arena of a .tflite model offline, and prove it.",
    )
    parser.add_argument("--version", action="version", version=f"arenaplan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (plan, verify, inspect, solve, sweep, targets, demo):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console(highlight=False)
    try:
        return int(args.run(args, console) or 0)
    except ArenaplanError as exc:
        print(f"arenaplan: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("arenaplan: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
