"""Under ``python -O`` arenaplan plans the same and its checks still raise.

``python -O`` strips every ``assert``: a check written as one would vanish there
(docs/style.md, principle 4), so the project's checks raise its own errors instead.
These tests run the command line and a slice of the suite in a child ``python -O``
and hold it to the same results. Under -O a test file's own ``assert`` statements
vanish too: the slice run there holds its checks with ``pytest.raises``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import model_path

import arenaplan

ROOT = Path(__file__).resolve().parents[1]  # the repository: the suite's files
SRC = Path(arenaplan.__file__).resolve().parents[1]  # the package under test


def _python(*args: str, optimised: bool, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    flags = ["-O"] if optimised else []
    return subprocess.run(
        [sys.executable, *flags, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_child_runs_without_asserts(tmp_path: Path) -> None:
    """What the other tests rely on: ``-O`` reaches the child and strips asserts."""
    done = _python("-c", "assert False", optimised=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("stem", "options"),
    [
        ("mlcommons-tiny__kws_ref_model", []),
        (
            "arm-ml-examples__ds_cnn_s_quantized",
            ["--target", "generic", "--passes", "cascade", "--write-unproven"],
        ),
    ],
)
def test_plan_under_optimised_python_writes_the_same_model(
    tmp_path: Path, stem: str, options: list[str]
) -> None:
    model = model_path(stem)
    written = {}
    for optimised in (False, True):
        out = tmp_path / f"{'O' if optimised else 'plain'}.tflite"
        args = ["-m", "arenaplan", "plan", str(model), "-o", str(out), "-q", *options]
        done = _python(*args, optimised=optimised, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        written[optimised] = out.read_bytes()
    assert written[True] == written[False]


def test_checks_raise_under_optimised_python() -> None:
    """The row check of ``passes.cascade_rows`` (once an ``assert``) raises under -O."""
    test = ROOT / "tests" / "passes" / "test_cascade_rows.py"
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(test)]
    done = _python(*args, "--rootdir", str(ROOT), optimised=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout and "failed" not in done.stdout
