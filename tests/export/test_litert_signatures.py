"""Signature defs as LiteRT sees them: a model arenaplan wrote lists the same
signatures (keys, input and output names) as the model it came from, and LiteRT's
signature runner gives the original's outputs on it.

LiteRT (``ai-edge-litert`` from PyPI) is TensorFlow's own interpreter: the runtime
that reads signature defs (TFLM ignores them). Its reference kernels run, so that
nothing but the model decides the outputs. Models LiteRT cannot run as given (custom
operators of TFLM's signal library) are skipped with the reason.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from testkit import MODEL_PATHS, SHARED_ABSENT

from arenaplan.builder.demo import demo_model
from arenaplan.export.tflite_writer import write_model
from arenaplan.reader import read_model_bytes

litert = pytest.importorskip(
    "ai_edge_litert.interpreter",
    reason="LiteRT is not installed (pip install -e '.[test]' installs ai-edge-litert)",
)


def _interpreter(data: bytes):
    resolver = litert.OpResolverType.BUILTIN_REF
    return litert.Interpreter(model_content=data, experimental_op_resolver_type=resolver)


def _random_inputs(runner, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, detail in runner.get_input_details().items():
        dtype = np.dtype(detail["dtype"])
        shape = tuple(int(d) for d in detail["shape"])
        if dtype.kind == "f":
            out[name] = rng.uniform(-1, 1, shape).astype(dtype)
        else:
            info = np.iinfo(dtype)
            out[name] = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    return out


def _run_signatures(data: bytes) -> dict[str, dict[str, np.ndarray]]:
    """Each signature's outputs by name on seeded random inputs."""
    it = _interpreter(data)
    outs = {}
    for key in it.get_signature_list():
        runner = it.get_signature_runner(key)
        outs[key] = runner(**_random_inputs(runner))
    return outs


def _signed_shared() -> list:
    if not MODEL_PATHS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=SHARED_ABSENT))]
    signed = [p for p in MODEL_PATHS if read_model_bytes(p.read_bytes()).signature_defs]
    return [pytest.param(p, id=p.stem) for p in signed]


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].keys() == b[key].keys()
        for name in a[key]:
            np.testing.assert_array_equal(a[key][name], b[key][name])


@pytest.mark.parametrize("path", _signed_shared())
def test_a_written_shared_model_lists_and_runs_its_signatures(path: Path) -> None:
    data = path.read_bytes()
    try:
        before = _run_signatures(data)
    except (RuntimeError, ValueError) as exc:
        pytest.skip(f"LiteRT does not run {path.stem} as given: {str(exc).splitlines()[0]}")
    written = write_model(read_model_bytes(data))
    assert _interpreter(written).get_signature_list() == _interpreter(data).get_signature_list()
    _same(_run_signatures(written), before)


def test_a_rewritten_and_planned_model_runs_its_signature_in_litert(tmp_path: Path) -> None:
    """The demo (with a signature def, as the converter writes) rewritten by reorder,
    inplace and bands with stock operators, planned and written by ``arenaplan plan``:
    LiteRT lists the same signature and computes the same outputs through it."""
    source = tmp_path / "demo.tflite"
    source.write_bytes(demo_model())
    out = tmp_path / "demo.planned.tflite"
    cmd = [sys.executable, "-m", "arenaplan", "plan", str(source), "-o", str(out)]
    cmd += ["--passes", "reorder,inplace,bands"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    planned, original = out.read_bytes(), source.read_bytes()
    assert read_model_bytes(planned).operator_count > read_model_bytes(original).operator_count
    assert _interpreter(planned).get_signature_list() == {
        "serving_default": {"inputs": ["input"], "outputs": ["output_0"]}
    }
    _same(_run_signatures(planned), _run_signatures(original))
