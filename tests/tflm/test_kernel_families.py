"""TFLM's facts are organised like TFLM: every operator the engines know is stated in
exactly one family module of ``tflm.kernels`` (and a CMSIS-NN kernel in exactly one
module of ``tflm.cmsis_nn``), and each module names, in its docstring, TFLM source
files that exist in the source bundle of ../shared/third_party."""

from __future__ import annotations

import importlib
import pkgutil
import re
import tarfile
from collections import Counter
from types import ModuleType

import pytest
from testkit import SHARED

from arenaplan.tflm import alias_rules, cmsis_nn, kernels, refusals, scratch, tail
from arenaplan.tflm.kernel_sets import KERNELS

BUNDLES = sorted((SHARED / "third_party").glob("tflite-micro-*-src.tar.xz"))
# a path inside the bundle: TFLM's tree, its Signal library, its Python package
SOURCE = re.compile(r"\b(?:tensorflow|signal|python)/[\w/.+-]+\.(?:cc|h|c)\b")
NOT_MODELLED = {"TFLM_DECODE"}  # registered custom codes no module states (yet)


def _modules(package: ModuleType) -> list[ModuleType]:
    """Every module of ``package`` but its ``__init__``."""
    names = [m.name for m in pkgutil.iter_modules(package.__path__)]
    return [importlib.import_module(f"{package.__name__}.{name}") for name in sorted(names)]


def _stated(modules: list[ModuleType], kind: str) -> Counter[str]:
    """How many of ``modules`` state each operator in their ``kind`` table."""
    return Counter(name for m in modules for name in getattr(m, kind, {}))


FAMILIES = [m for m in _modules(kernels) if hasattr(m, "BUILTIN") or hasattr(m, "CUSTOM")]
CMSIS_FILES = [m for m in _modules(cmsis_nn) if hasattr(m, "KERNELS")]


def test_every_family_module_is_in_the_registry() -> None:
    assert set(FAMILIES) == set(kernels.FAMILIES)
    assert set(CMSIS_FILES) == set(cmsis_nn.FILES)
    helpers = {m.__name__.rsplit(".", 1)[1] for m in _modules(kernels)} - {
        m.__name__.rsplit(".", 1)[1] for m in FAMILIES
    }
    assert helpers == {"common"}  # what several kernels allocate alike


def test_every_operator_is_stated_in_exactly_one_family_module() -> None:
    builtin, custom = _stated(FAMILIES, "BUILTIN"), _stated(FAMILIES, "CUSTOM")
    assert {name for name, n in (builtin + custom).items() if n != 1} == set()
    assert not set(builtin) & set(custom)  # the engines look some rules up by name alone
    known = (
        set(tail.BUILTIN)
        | set(tail.CUSTOM)
        | set(scratch.RULES)
        | set(refusals.RULES)
        | set(alias_rules.INPLACE_KERNELS)
        | {name for k in KERNELS for name in alias_rules.INPLACE_RULES[k]}
        | set(alias_rules.VIEW_KERNELS.values())
        | set(cmsis_nn.KERNELS)
        | set(cmsis_nn.INPLACE_READ)
    )
    assert known - set(builtin) - set(custom) == set()
    assert set(refusals.REGISTERED_BUILTINS) == set(builtin)
    own = set(refusals.ARENAPLAN_CUSTOM)
    assert (set(refusals.REGISTERED_CUSTOM) | own) - NOT_MODELLED == set(custom)


def test_every_cmsis_nn_kernel_is_stated_in_exactly_one_module() -> None:
    stated = _stated(CMSIS_FILES, "KERNELS")
    assert {name for name, n in stated.items() if n != 1} == set()
    assert set(stated) == set(cmsis_nn.KERNELS)
    assert set(stated) <= set(kernels.BUILTIN)  # each replaces a reference kernel


@pytest.fixture(scope="module")
def bundle() -> frozenset[str]:
    """The paths inside the TFLM source bundle."""
    if not BUNDLES:
        pytest.skip(f"../shared is absent (no TFLM source bundle in {SHARED / 'third_party'})")
    with tarfile.open(BUNDLES[-1]) as tar:
        return frozenset(name.split("/", 1)[1] for name in tar.getnames() if "/" in name)


@pytest.mark.parametrize(
    "module", [*_modules(kernels), *_modules(cmsis_nn)], ids=lambda m: m.__name__
)
def test_each_module_names_tflm_sources_that_exist(module: ModuleType, bundle) -> None:
    named = SOURCE.findall(module.__doc__ or "")
    assert named, f"{module.__name__}: its docstring names no TFLM source file"
    missing = sorted(path for path in named if path not in bundle)
    assert not missing, f"{module.__name__} names files the bundle lacks: {missing}"
