"""The ``arenaplan`` command line: the only place errors become exit codes.

Exit status: 0 success; 1 verification found different outputs, or a capacity
is proven infeasible; 2 bad input or usage (one line on stderr, no traceback, no
output file); 3 TFLM refuses the model (so it cannot be verified, nor weight copies
proven), or the time limit came before an answer; 70 an internal error (a bug in
arenaplan, such as a plan its own validator refuses: one line naming the input,
asking for a report); 130 interrupted (Ctrl-C); 143 or 129 ended by SIGTERM or SIGHUP
(temporary files removed, no output half written).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from arenaplan import __version__
from arenaplan.errors import ArenaplanError

# Each command: the module whose ``register`` adds its parser, and the one-line help
# that module passes (a test holds the two equal). The order is that of the listing.
# Only the module of the command being run is imported, so a command, or --help,
# never pays for another's imports.
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("arenaplan.commands.plan", "plan the arena and write it into the model"),
    "verify": (
        "arenaplan.commands.verify",
        "run original and planned models in TFLM, compare outputs and figures",
    ),
    "inspect": ("arenaplan.commands.inspect", "list a model's subgraphs, operators and tensors"),
    "passes": ("arenaplan.commands.passes", "list the graph rewrites (--passes of plan)"),
    "solve": ("arenaplan.commands.solve", "exact offset assignment of a minimalloc CSV problem"),
    "sweep": ("arenaplan.commands.sweep", "estimated latency against the fast memory's size"),
    "explore": (
        "arenaplan.commands.explore",
        "sweep models x targets x SRAM sizes x options; or report a sweep",
    ),
    "targets": ("arenaplan.commands.targets", "list the built-in targets, or show one"),
    "calibrate": (
        "arenaplan.commands.calibrate",
        "fit a target's compute rates and memory latencies to profiler logs",
    ),
    "profile": (
        "arenaplan.commands.profile",
        "bytes each operator moves, per tensor (predicted, and measured)",
    ),
    "demo": ("arenaplan.commands.demo", "plan and verify a built-in example model end to end"),
}

EXIT_USAGE = 2
EXIT_INTERNAL = 70  # sysexits.h EX_SOFTWARE
EXIT_INTERRUPTED = 130


class Terminated(BaseException):
    """SIGTERM or SIGHUP came: raised like KeyboardInterrupt, so every ``finally`` and
    cleanup runs (temporary files removed, workers ended) before the exit."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_terminated(signum: int, _frame: object) -> None:
    raise Terminated(signum)


@contextmanager
def _ending_on_signals() -> Iterator[None]:
    """While inside: SIGTERM and SIGHUP end the run as Ctrl-C does. The handlers before
    are put back after (main thread only: elsewhere, handlers cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, like every other error."""

    def error(self, message: str) -> NoReturn:
        print(f"arenaplan: error: {message} (see: {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def named_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (the options
    before a command take no value), or None."""
    word = next((w for w in argv if not w.startswith("-")), None)
    return word if word in COMMANDS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with ``command``'s own options; every other command is a bare
    name and its help line, enough to list it and to refuse a misspelt one."""
    parser = OneLineParser(
        prog="arenaplan",
        description="Plan the TFLM tensor arena of a .tflite model offline, and prove it.",
    )
    parser.add_argument("--version", action="version", version=f"arenaplan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_line) in COMMANDS.items():
        if name == command:
            importlib.import_module(module).register(sub)
        else:
            sub.add_parser(name, help=help_line)
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
    whole_process = argv is None  # the program itself, not a call from Python
    if whole_process:  # before numpy loads: its OpenBLAS would start a thread a core
        # that spins waiting for work; arenaplan does no linear algebra, and on a
        # busy machine those threads take CPU from the run
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(named_command(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    args.whole_process = whole_process  # time limits then count from the process's start
    from rich.console import Console  # after parsing: --help and usage errors need none

    console = Console(highlight=False)
    try:
        with _ending_on_signals():
            return int(args.run(args, console) or 0)
    except ArenaplanError as exc:
        if exc.exit_code == EXIT_INTERNAL:  # arenaplan refused its own result: a bug
            return _internal_error(args, str(exc))
        print(f"arenaplan: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("arenaplan: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated as exc:
        print(f"arenaplan: ended by {exc}", file=sys.stderr)
        return 128 + exc.signum
    except BrokenPipeError:  # the reader of our output went away (| head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # the guard of last resort: never a traceback
        return _internal_error(args, f"{type(exc).__name__}: {exc}")


def _internal_error(args: argparse.Namespace, what: str) -> int:
    """One line naming the command and its input, asking for a report."""
    what = what.splitlines()[0][:300] if what else "(no message)"
    print(
        f"arenaplan: internal error in '{args.command}' on {_inputs(args)}: {what}. "
        "This is a bug in arenaplan; please report it with the command line and the input.",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
