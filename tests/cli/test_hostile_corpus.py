"""The hostile-input corpus (``scripts/hostile_corpus.py``) through every command.

A seeded corpus of corrupted and structurally wrong models, bad command lines, outputs
that are not regular files and bad target files, logs and CSVs; every case must end
with an exit status it allows (never 70, never a signal), no traceback, one line for
exit 2, within the time limit, nothing written when it fails, no temporary file left,
its inputs unchanged. A failure lists every bad case with the command line that
reproduces it. The bigger run: ``python scripts/hostile_corpus.py --size full``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from kits.pte import ABSENT, pte_dir
from testkit import MODEL_PATHS, MODELS_DIR, SHARED_ABSENT

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "hostile_corpus.py"
SEED = 22
TIMEOUT = 20.0  # seconds before a case counts as a hang (each takes under 5 when sound)
# cases that run TFLM: --fit rewrites, plans and proves several pass lists (about 10 s
# on a quiet machine for the largest; three times that beside another job)
TIMEOUT_TFLM = 60.0


def _load_script():
    spec = importlib.util.spec_from_file_location("hostile_corpus", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["hostile_corpus"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


hc = _load_script()


def _tflm_absent() -> str | None:
    """Why the TFLM cases cannot run here, or None."""
    if importlib.util.find_spec("tflite_micro") is None:
        return "tflite-micro is absent (pip install '.[tflm]'): corpus cases needing TFLM skipped"
    return None


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("corpus")
    models = MODELS_DIR if MODEL_PATHS else None
    return root, hc.generate(root, SEED, "ci", models, pte_dir())


def _run(
    corpus: tuple[Path, list], chosen: Callable[[object], bool], timeout: float = TIMEOUT
) -> list:
    root, cases = corpus
    results = hc.run_corpus([k for k in cases if chosen(k)], root, timeout)
    print(hc.table(results))
    bad = [r.line(root) for r in results if r.problems]
    assert not bad, f"{len(bad)} of {len(results)} cases failed:\n" + "\n".join(bad)
    return results


def test_executorch_programs(corpus) -> None:
    """Corrupted, cut and wrongly planned ``.pte`` programs: one line or a plan."""
    if not any(k.klass.startswith("pte-") for k in corpus[1]):
        pytest.skip(ABSENT)
    results = _run(corpus, lambda k: k.klass.startswith("pte-"))
    assert {0, 2} <= {r.code for r in results}


def test_built_models_command_lines_and_side_inputs(corpus) -> None:
    results = _run(corpus, lambda k: not (k.shared or k.tflm or k.klass.startswith("pte-")))
    mutated = [r.code for r in results if r.case.klass.startswith("bytes-")]
    assert 0 in mutated and 2 in mutated  # corruptions that plan and ones refused


@pytest.mark.skipif(not MODEL_PATHS, reason=SHARED_ABSENT)
def test_corrupted_shared_models(corpus) -> None:
    _run(corpus, lambda k: k.shared and not k.tflm)


@pytest.mark.skipif(_tflm_absent() is not None, reason=str(_tflm_absent()))
def test_cases_that_run_tflm(corpus) -> None:
    _run(corpus, lambda k: k.tflm, TIMEOUT_TFLM)


def test_the_same_seed_gives_the_same_files(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    cases = [hc.generate(folder, SEED, "ci", None) for folder in (first, second)]
    assert cases[0] == cases[1]
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert len(files) > 100
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel
    other = tmp_path / "c"
    hc.generate(other, SEED + 1, "ci", None)
    mutated = sorted((other / "models" / "mutated").iterdir())
    assert any(p.read_bytes() != (first / p.relative_to(other)).read_bytes() for p in mutated)


def test_a_sound_case_passes_and_a_broken_one_is_caught(tmp_path: Path) -> None:
    """The judge itself: a plan that succeeds is sound; a case expecting another exit,
    an output folder written on failure, are failures."""
    cases = hc.generate(tmp_path, SEED, "ci", None)
    valid = next(k for k in cases if k.klass == "stale-temporary")
    assert hc.run_case(valid, tmp_path, TIMEOUT).problems == []
    wrong = next(k for k in cases if k.klass == "output-missing-folder")
    expecting_success = replace(wrong, expect=(0,))
    assert "exit 2, expected 0" in hc.run_case(expecting_success, tmp_path, TIMEOUT).problems
    r = hc.Result(valid, 2, "arenaplan: error: x\n")
    hc._judge_files(r, {}, {"o.tflite": ("file", 3, "ab")})
    assert r.problems == ["wrote o.tflite although it failed (exit 2)"]
    r = hc.Result(valid, 0, "")
    hc._judge_files(r, {}, {"o.tflite": ("file", 3, "ab"), "stray.bin": ("file", 1, "cd")})
    assert r.problems == ["wrote stray.bin, which no option names"]
