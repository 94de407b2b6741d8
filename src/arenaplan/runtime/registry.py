"""The runtimes arenaplan plans for, by name, and the one place their spellings are read.

A runtime registers itself (``register``) or is built in: ``BUILT_IN`` names the
module that holds each built-in runtime's instance (``RUNTIME``), imported the first
time the runtime is asked for, so that the planner's core imports no runtime package
and a plan that never asks for a runtime imports none. The first built-in runtime is
the default runtime.
"""

from __future__ import annotations

import importlib

from arenaplan.errors import UsageError
from arenaplan.ir.model import Model
from arenaplan.runtime.interface import Runtime
from arenaplan.runtime.spec import Deployment, KernelSet, Profile

# runtime name -> module holding ``RUNTIME``, the first the default
BUILT_IN: dict[str, str] = {
    "tflm": "arenaplan.tflm.runtime",
    "executorch": "arenaplan.executorch.runtime",
}
DEFAULT_RUNTIME = next(iter(BUILT_IN))
# a model file's format (``Model.file_format``) -> the built-in runtime that runs it
FORMAT_RUNTIME: dict[str, str] = {"tflite": "tflm", "pte": "executorch"}

_REGISTERED: dict[str, Runtime] = {}


def register(runtime: Runtime) -> Runtime:
    """Make ``runtime`` known by its name (replacing one of that name); returns it."""
    _REGISTERED[runtime.name] = runtime
    return runtime


def unregister(name: str) -> None:
    """Forget a registered runtime (a built-in one is found again when asked for)."""
    _REGISTERED.pop(name, None)


def get(name: str) -> Runtime:
    """The runtime called ``name``; UsageError naming the known ones if there is none."""
    found = _REGISTERED.get(name)
    if found is not None:
        return found
    module = BUILT_IN.get(name)
    if module is None:
        known = ", ".join(sorted({*BUILT_IN, *_REGISTERED}))
        raise UsageError(f"unknown runtime {name!r} (known: {known})")
    return register(importlib.import_module(module).RUNTIME)


def runtime_name_for(model: Model) -> str:
    """The runtime a model's file is for (its format's built-in runtime)."""
    return FORMAT_RUNTIME.get(model.file_format, DEFAULT_RUNTIME)


def runtime_of(value: KernelSet | Profile | Deployment | None) -> Runtime:
    """The runtime a kernel set, a profile or a deployment belongs to (None: the
    default runtime)."""
    return get(DEFAULT_RUNTIME if value is None else value.runtime)


def kernels_named(text: object, runtime: str = DEFAULT_RUNTIME) -> KernelSet | None:
    """The kernel set ``runtime`` spells ``text`` (None: no such set)."""
    return next((k for k in get(runtime).kernel_sets() if k.name == text), None)


def profile_named(text: object, runtime: str = DEFAULT_RUNTIME) -> Profile | None:
    """The build profile ``runtime`` spells ``text`` (None: no such profile)."""
    return next((p for p in get(runtime).profiles() if p.name == text), None)


def kernel_names(runtime: str = DEFAULT_RUNTIME) -> tuple[str, ...]:
    return tuple(k.name for k in get(runtime).kernel_sets())


def profile_names(runtime: str = DEFAULT_RUNTIME) -> tuple[str, ...]:
    return tuple(p.name for p in get(runtime).profiles())


def parse_kernels(text: str, runtime: str = DEFAULT_RUNTIME) -> KernelSet:
    """The kernel set ``runtime`` spells ``text``; UsageError naming the known ones."""
    found = kernels_named(text, runtime)
    if found is None:
        known = ", ".join(kernel_names(runtime))
        raise UsageError(f"unknown kernels {text!r} (known: {known})")
    return found


def parse_profile(text: str, runtime: str = DEFAULT_RUNTIME) -> Profile:
    """The build profile ``runtime`` spells ``text``; UsageError naming the known ones."""
    found = profile_named(text, runtime)
    if found is None:
        known = ", ".join(profile_names(runtime))
        raise UsageError(f"unknown profile {text!r} (known: {known})")
    return found


def default_kernels(runtime: str = DEFAULT_RUNTIME) -> KernelSet:
    return get(runtime).default_kernels()


def default_profile(runtime: str = DEFAULT_RUNTIME) -> Profile:
    return get(runtime).default_profile()


def default_deployment(runtime: str = DEFAULT_RUNTIME) -> Deployment:
    return Deployment(default_kernels(runtime), default_profile(runtime))


def or_default(kernels: KernelSet | None) -> KernelSet:
    """``kernels``, or the default runtime's default kernels when None."""
    return kernels if kernels is not None else default_kernels()
