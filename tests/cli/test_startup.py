"""Start-up: --help imports no command module, a command imports only its own."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import model_path

import arenaplan.commands
from arenaplan.cli import COMMANDS, build_parser

# Packages too slow to import for a line of help (each tens of milliseconds).
HEAVY = (
    "numpy",
    "matplotlib",
    "rich",
    "flatbuffers",
    "tflite",
    "tflite_micro",
    "scipy",
    "ortools",
    "sortedcontainers",
)


def _modules_after(argv: list[str]) -> tuple[int, set[str]]:
    """Exit status of ``arenaplan ARGV`` in a fresh interpreter, and the modules it imported."""
    probe = (
        "import io, json, sys\n"
        "from contextlib import redirect_stderr, redirect_stdout\n"
        "from arenaplan.cli import main\n"
        "with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):\n"
        f"    status = main({argv!r})\n"
        "print(json.dumps([status, sorted(sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    status, modules = json.loads(done.stdout)
    return status, set(modules)


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def _commands(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.startswith("arenaplan.commands."))


@pytest.mark.parametrize("argv", [["--help"], [], ["no-such-command"], ["--version"]])
def test_help_and_usage_errors_import_no_command_nor_heavy_package(argv: list[str]) -> None:
    status, modules = _modules_after(argv)
    assert status in (0, 2)
    assert _commands(modules) == []
    assert _heavy(modules) == []


def test_plan_imports_no_other_command_nor_plotting_nor_calibration(tmp_path: Path) -> None:
    model = model_path("tflite-micro__hello_world_int8")
    status, modules = _modules_after(["plan", str(model), "-o", str(tmp_path / "out.tflite")])
    assert status == 0
    others = {module for name, (module, _) in COMMANDS.items() if name != "plan"}
    assert others.isdisjoint(modules)
    assert not any(m.split(".")[0] == "matplotlib" for m in modules)
    assert "arenaplan.cost.calibration" not in modules


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_listing_is_the_same_whichever_command_is_registered(name: str) -> None:
    """The table's help line of each command is the one its module registers."""
    assert build_parser(name).format_help() == build_parser().format_help()


def test_every_command_module_is_in_the_table() -> None:
    found = set()
    for info in pkgutil.iter_modules(arenaplan.commands.__path__):
        module = importlib.import_module(f"arenaplan.commands.{info.name}")
        if hasattr(module, "register"):
            found.add(module.__name__)
    assert found == {module for module, _ in COMMANDS.values()}
