"""TFLM built from source (scripts/build_tflm.py): the same answers as the PyPI runtime.

Each case is skipped, naming the build command, when its variant is not built. The
figures (head and tail per model per variant) are printed: ``pytest -s`` shows them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from testkit import STATEFUL_LSTM, TFLM_REFUSES, model_params

from arenaplan.placement import plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.tflm.offline_plan import with_offline_plan
from arenaplan.tflm.verify.inputs import random_inputs
from arenaplan.tflm.verify.native import VARIANTS, NativeRunner, native_available
from arenaplan.tflm.verify.runner import GENEROUS_ARENA, RunResult, TflmRunner, tflm_available

# ARM variant -> the host variant that compiles the same kernels (the same outputs)
ARM_HOST = {
    "arm32-reference": "host-reference",
    "arm32-cmsis_nn": "host-cmsis_nn",
    "arm32-int32-reference": "host-reference",
    "m55-cmsis_nn": "host-cmsis_nn",
}
# Cortex-M55 code has FPv5's fused multiply-add, into which GCC contracts a * b + c by
# default (-ffp-contract=fast): its float kernels round once where the host's (x86-64
# without FMA) and the soft-float Cortex-M4's round twice, so float outputs agree to a
# few units in the last place; integer outputs stay bit-identical.
FUSED_MULTIPLY_ADD = {"m55-cmsis_nn"}
FMA_RTOL = 1e-5  # relative: float32 results of a few accumulations, dozens of ULPs


def _need(variant: str) -> None:
    why = native_available(variant)
    if why is not None:
        pytest.skip(why)


def _inputs(data: bytes) -> tuple[list[list[np.ndarray]], int]:
    ir = read_model_bytes(data)
    return random_inputs(ir, 2, seed=0), len(ir.subgraphs[0].outputs)


@cache
def _native(variant: str, path: Path) -> RunResult:
    data = path.read_bytes()
    inputs, n_outputs = _inputs(data)
    return NativeRunner(variant).run(data, GENEROUS_ARENA, inputs, n_outputs)


def _same_outputs(a: RunResult, b: RunResult, float_rtol: float = 0.0) -> bool:
    """Bit-identical outputs; float ones within ``float_rtol`` when it is above 0."""
    if len(a.outputs) != len(b.outputs):
        return False
    for trial_a, trial_b in zip(a.outputs, b.outputs, strict=True):
        for x, y in zip(trial_a, trial_b, strict=True):
            if x.dtype != y.dtype or x.shape != y.shape:
                return False
            if float_rtol and x.dtype.kind == "f":
                if not np.allclose(x, y, rtol=float_rtol, atol=0.0):
                    return False
            elif x.tobytes() != y.tobytes():
                return False
    return True


@pytest.fixture(scope="module")
def pypi_runner():
    if not tflm_available():
        pytest.skip("the TFLM runtime is not installed (pip install 'arenaplan[tflm]')")
    with TflmRunner() as runner:
        yield runner


@cache
def _planned(path: Path) -> tuple[bytes, list[int]]:
    data = path.read_bytes()
    plan = plan_model(read_model_bytes(data))
    return with_offline_plan(data, plan.tensor_offsets), list(plan.tensor_offsets)


@pytest.mark.parametrize("path", model_params())
def test_host_reference_is_the_pypi_runtime_bit_for_bit_with_the_same_head(
    path: Path, pypi_runner: TflmRunner
) -> None:
    _need("host-reference")
    data = path.read_bytes()
    inputs, n_outputs = _inputs(data)
    pypi = pypi_runner.run(data, GENEROUS_ARENA, inputs, n_outputs)
    native = _native("host-reference", path)
    if path.stem in TFLM_REFUSES:
        assert not pypi.ok and not native.ok, native.error
        print(f"\n{path.stem}: refused by both: {native.error}")
        return
    assert pypi.ok and native.ok, native.error
    assert _same_outputs(native, pypi)
    assert native.measurement.head == pypi.measurement.head
    print(
        f"\n{path.stem}: head {native.measurement.head} (PyPI {pypi.measurement.head}), "
        f"tail {native.measurement.tail} (PyPI {pypi.measurement.tail})"
    )


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("path", model_params())
def test_every_variant_runs_every_model_and_measures_head_and_tail(
    path: Path, variant: str
) -> None:
    _need(variant)
    result = _native(variant, path)
    if path.stem in TFLM_REFUSES:
        assert not result.ok
        print(f"\n{variant} {path.stem}: refused: {result.error}")
        return
    assert result.ok, result.error
    assert result.outputs and all(len(trial) for trial in result.outputs)
    m = result.measurement
    print(f"\n{variant} {path.stem}: head {m.head} tail {m.tail}")


@pytest.mark.parametrize("variant", list(ARM_HOST))
@pytest.mark.parametrize("path", model_params())
def test_arm_under_qemu_gives_the_host_outputs(path: Path, variant: str) -> None:
    _need(variant)
    _need(ARM_HOST[variant])
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    arm, host = _native(variant, path), _native(ARM_HOST[variant], path)
    assert arm.ok and host.ok, arm.error or host.error
    assert _same_outputs(arm, host, FMA_RTOL if variant in FUSED_MULTIPLY_ADD else 0.0)


@pytest.mark.parametrize("path", model_params())
def test_cmsis_nn_gives_the_reference_outputs(path: Path) -> None:
    _need("host-reference")
    _need("host-cmsis_nn")
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    ref, cmsis = _native("host-reference", path), _native("host-cmsis_nn", path)
    assert ref.ok and cmsis.ok, ref.error or cmsis.error
    first = [RunResult(r.outputs[:1], None, r.measurement, "") for r in (ref, cmsis)]
    assert _same_outputs(*first)
    assert _same_outputs(ref, cmsis) != (path.stem in STATEFUL_LSTM)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("path", model_params())
def test_tensor_offsets_are_the_offline_plan(path: Path, variant: str) -> None:
    """With our offline plan, TFLM puts every planned tensor where the plan says."""
    _need(variant)
    if path.stem in TFLM_REFUSES:
        pytest.skip("TFLM refuses this model (models README): nothing to run")
    planned, offsets = _planned(path)
    with NativeRunner(variant) as runner:
        run = runner.run_native(planned, GENEROUS_ARENA, [], 1)
    assert run.result.ok, run.result.error
    flat = [offset for subgraph in run.tensor_offsets for offset in subgraph]
    assert len(flat) == len(offsets)
    for k, (want, got) in enumerate(zip(offsets, flat, strict=True)):
        if want >= 0:
            assert got == want, f"tensor {k}: TFLM put it at {got}, the plan at {want}"


def test_a_too_small_arena_is_a_failure_not_a_crash() -> None:
    _need("host-reference")
    data = next(p for p in _model_paths() if p.stem == "mlcommons-tiny__vww_96_int8").read_bytes()
    result = NativeRunner("host-reference").run(data, 1024, [], 1)
    assert not result.ok and "failed to allocate" in result.error


def test_absent_variant_names_the_build_command(tmp_path: Path) -> None:
    why = native_available("arm32-cmsis_nn", tmp_path)
    assert why is not None and "scripts/build_tflm.py --variants arm32-cmsis_nn" in why
    assert "unknown" in native_available("riscv", tmp_path)


def test_an_absent_emulator_is_named_with_its_package(tmp_path: Path, monkeypatch) -> None:
    from arenaplan.tflm.verify import native

    for variant in ("arm32-int32-reference", "m55-cmsis_nn"):
        runner = native.runner_path(variant, tmp_path)
        runner.parent.mkdir(parents=True)
        runner.touch()
    monkeypatch.setattr(native.shutil, "which", lambda name: None)
    assert native_available("m55-cmsis_nn", tmp_path) == (
        "qemu-system-arm is absent, TFLM m55-cmsis_nn cannot run: apt-get install qemu-system-arm"
    )
    assert "apt-get install qemu-user" in native_available("arm32-int32-reference", tmp_path)


def test_each_variant_runs_its_own_way() -> None:
    """The host runs its program; qemu-arm the Cortex-M4 ones; qemu-system-arm boots
    the Cortex-M55 one on the AN547 board, the command line through semihosting."""
    from arenaplan.tflm.verify.native import command

    program, args = Path("/b/tflm_runner"), ["m.tflite", "64", "r.json", "out.bin"]
    assert command(VARIANTS["host-cmsis_nn"], program, args) == [str(program), *args]
    user = command(VARIANTS["arm32-int32-reference"], program, args)
    assert user[:3] == ["qemu-arm", "-cpu", "cortex-a15"] and user[3:] == [str(program), *args]
    system = command(VARIANTS["m55-cmsis_nn"], program, args)
    assert system[:3] == ["qemu-system-arm", "-M", "mps3-an547"]
    assert system[-2:] == ["-kernel", str(program)]
    words = "arg=tflm_runner,arg=m.tflite,arg=64,arg=r.json,arg=out.bin"
    assert f"enable=on,target=native,{words}" in system


def _model_paths() -> list[Path]:
    paths = [p.values[0] for p in model_params() if p.values[0] is not None]
    if not paths:
        pytest.skip("../shared/models is absent (CI has it beside the clone)")
    return paths
