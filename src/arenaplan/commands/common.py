"""Options and checks shared by several sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from arenaplan.errors import UsageError
from arenaplan.placement.memories import check_within, target_memory
from arenaplan.runtime.registry import (
    DEFAULT_RUNTIME,
    default_kernels,
    get,
    kernel_names,
    parse_kernels,
    parse_profile,
    profile_names,
)
from arenaplan.runtime.spec import KernelSet, Profile
from arenaplan.targets import Target, load_builtin, load_target
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
    """``--kernels``: which kernels the runtime's build runs (their scratch requests
    and tail differ); ``default`` says where the default comes from."""
    runtime = get(DEFAULT_RUNTIME)
    words = "; ".join(f"{k.name}: {runtime.kernel_words(k)}" for k in runtime.kernel_sets())
    p.add_argument(
        "--kernels",
        choices=kernel_names(),
        default=None,
        help=f"the {runtime.title} kernels the build runs ({words}; default: {default})",
    )


def add_profile_option(p: argparse.ArgumentParser, help_text: str) -> None:
    """``--profile``: the build profile of the runtime (its spellings, sorted)."""
    p.add_argument("--profile", choices=sorted(profile_names()), help=help_text)


def kernels_from_args(args: argparse.Namespace, target: Target | None = None) -> KernelSet:
    """The kernels asked for: ``--kernels``, else the target's, else the default ones."""
    if args.kernels is not None:
        return parse_kernels(args.kernels)
    return target.kernels if target is not None else default_kernels()


def kernels_asked(args: argparse.Namespace) -> KernelSet | None:
    """``--kernels`` as a value (None: not given)."""
    return parse_kernels(args.kernels) if args.kernels is not None else None


def profile_asked(args: argparse.Namespace) -> Profile | None:
    """``--profile`` as a value (None: not given)."""
    return parse_profile(args.profile) if args.profile is not None else None


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
