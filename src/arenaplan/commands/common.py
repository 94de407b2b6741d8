"""Options and checks shared by several sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from arenaplan.errors import UsageError
from arenaplan.placement.memories import check_within, target_memory
from arenaplan.targets import Target, load_builtin, load_target
from arenaplan.tflm.kernel_sets import KERNEL_WORDS, KERNELS, REFERENCE
from arenaplan.units import parse_size


def add_target_options(p: argparse.ArgumentParser, default: str | None, what: str) -> None:
    """``--target NAME`` or ``--target-file FILE`` (not both)."""
    shown = f" (default {default})" if default else ""
    p.add_argument(
        "--target",
        default=None,
        metavar="NAME",
        help=f"built-in target{shown}: {what} (list them with: arenaplan targets)",
    )
    p.add_argument(
        "--target-file", type=Path, metavar="FILE", help="your own target TOML file instead"
    )
    p.set_defaults(target_default=default)


def target_from_args(args: argparse.Namespace) -> Target | None:
    """The target the options name; None when neither is given and there is no default."""
    if args.target is not None and args.target_file is not None:
        raise UsageError("give --target or --target-file, not both")
    if args.target_file is not None:
        return load_target(args.target_file)
    name = args.target or args.target_default
    return load_builtin(name) if name else None


def add_kernels_option(p: argparse.ArgumentParser, default: str) -> None:
    """``--kernels``: which TFLM kernels the build runs (their scratch requests and
    tail differ); ``default`` says where the default comes from."""
    words = "; ".join(f"{k}: {KERNEL_WORDS[k]}" for k in KERNELS)
    p.add_argument(
        "--kernels",
        choices=KERNELS,
        default=None,
        help=f"the TFLM kernels the build runs ({words}; default: {default})",
    )


def kernels_from_args(args: argparse.Namespace, target: Target | None = None) -> str:
    """The kernels asked for: ``--kernels``, else the target's, else the reference ones."""
    if args.kernels is not None:
        return args.kernels
    return target.kernels if target is not None else REFERENCE


def parse_memories(specs: list[str], target: Target | None) -> dict[str, int]:
    """``["sram=256KiB", ...]`` -> capacities (bytes) of memories that hold activations,
    each no larger than the memory really is."""
    if specs and target is None:
        raise UsageError("--memory needs --target")
    caps: dict[str, int] = {}
    for spec in specs:
        name, sep, size = spec.partition("=")
        if not sep:
            raise UsageError(f"--memory {spec!r}: expected NAME=SIZE, e.g. sram=256KiB")
        memory = target_memory(target, name, "activations", f"--memory {spec}")  # type: ignore[arg-type]
        if name in caps:
            raise UsageError(f"--memory {name} is given twice")
        caps[name] = parse_size(size, f"--memory {name}")
        check_within(caps[name], memory, target, f"--memory {spec}")  # type: ignore[arg-type]
    return caps
