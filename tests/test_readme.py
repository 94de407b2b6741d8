"""The README works as written: every command of its shell blocks runs, in a folder where
``arenaplan demo`` ran, and writes the files it names; the set-up commands are the ones
``.ci/run`` runs; every relative link of the README and docs/ reaches a file."""

from __future__ import annotations

import importlib.util
import itertools
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

SETUP_DEMO = "pip install '.[tflm]' && arenaplan demo"
CI_MARKER = "# --- the README's test command ---"
# Options whose value is a file or folder the command writes ("-": standard output).
WRITES = {
    "-o",
    "--json",
    "--picture",
    "--report",
    "--plot",
    "--header",
    "--planner-cpp",
    "--weights-blob",
    "--schedule",
    "--out",
}
DRAWS = {"--picture", "--report", "--plot"}  # need matplotlib (the extra `report`)
OWN_MODEL = "my_model.tflite"  # the README's "your own model": the demo's model here
NO_RUNTIME = "the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def shell_blocks(text: str) -> list[list[str]]:
    """The lines of every fenced ``sh`` block, dedented, one command a line."""
    blocks: list[list[str]] = []
    lines: list[str] | None = None  # the open block's lines; None outside a block
    shell = False  # the open block is a shell block (other blocks show output)
    for line in text.splitlines():
        fence = FENCE.match(line)
        if fence and lines is None:
            lines, shell = [], fence.group(2) in ("sh", "shell", "bash")
        elif fence:
            if shell:
                blocks.append([x for x in lines if x and not x.startswith("#")])
            lines = None
        elif lines is not None:
            lines.append(line.strip())
    return blocks


def setup_commands() -> list[str]:
    return [c for block in shell_blocks(README.read_text()) for c in block if "pip install" in c]


def arenaplan_blocks() -> list[list[str]]:
    blocks = shell_blocks(README.read_text())
    return [b for b in blocks if b and not any("pip install" in c for c in b)]


def ci_test_command() -> str:
    """The test command of ``.ci/run``: the first ``pip install`` line after its marker,
    without the ``||`` that handles its failure."""
    lines = CI_RUN.read_text().splitlines()
    start = lines.index(CI_MARKER)
    line = next(x for x in lines[start:] if x.startswith("pip install"))
    return line.removesuffix("||").strip()


def has_runtime() -> bool:
    return importlib.util.find_spec("tflite_micro") is not None


def arenaplan() -> list[str]:
    """The console script beside this Python, else the module."""
    script = Path(sys.executable).with_name("arenaplan")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "arenaplan.cli"]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*arenaplan(), *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where ``arenaplan demo`` ran, as set-up command 1 leaves it."""
    folder = tmp_path_factory.mktemp("demo")
    done = run(["arenaplan", "demo"], folder)
    assert done.returncode == 0, done.stderr
    for name in ("demo.tflite", "demo.planned.tflite", "demo.plan.json"):
        assert (folder / "arenaplan-demo" / name).is_file()
    if has_runtime():  # the README says the demo verifies the plan in TFLM
        assert "every predicted figure measured exactly" in done.stdout, done.stdout
    return folder


def test_setup_commands_are_the_demo_and_ci() -> None:
    commands = setup_commands()
    assert len(commands) == 2, commands
    assert commands[0] == SETUP_DEMO
    # .ci/run adds --quiet to pip; otherwise it runs the README's command as written
    assert ci_test_command().replace(" --quiet", "") == commands[1]


def test_readme_has_commands() -> None:
    blocks = arenaplan_blocks()
    assert len(blocks) >= 6
    for block in blocks:
        for command in block:
            assert shlex.split(command)[0] == "arenaplan", command


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=" ; ".join(b)[:60]) for b in arenaplan_blocks()]
)
def test_readme_block_runs(block: list[str], demo_dir: Path, tmp_path: Path) -> None:
    shutil.copytree(demo_dir / "arenaplan-demo", tmp_path / "arenaplan-demo")
    shutil.copy(tmp_path / "arenaplan-demo" / "demo.tflite", tmp_path / OWN_MODEL)
    for command in block:
        argv = shlex.split(command)
        if argv[1] == "verify" and not has_runtime():
            pytest.skip(NO_RUNTIME)
        if DRAWS & set(argv) and importlib.util.find_spec("matplotlib") is None:
            pytest.skip("pictures need matplotlib (pip install 'arenaplan[report]')")
        done = run(argv, tmp_path)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        if argv[1] == "plan" and "--passes" in argv and has_runtime():  # proven, it says
            assert "proven in TFLM" in done.stdout, done.stdout
        for option, value in itertools.pairwise(argv):
            if option in WRITES and value != "-":
                assert (tmp_path / value).exists(), f"{command}: {value} not written"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_a_file(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
