"""The cascade figures the README states are what the planner gives today: each
``NAME: head|whole arena BEFORE -> AFTER B`` of its cascade section, recomputed on the
model the project builds (arm32 profile, TFLM's reference kernels; before: no passes,
after: ``--passes cascade,reorder,inplace``). Proofs in TFLM are the cascade tests'."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from testkit import build_profile

from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.builder.mobilenet import mobilenet_v1, mobilenet_v2
from arenaplan.builder.unet import unet_denoiser
from arenaplan.pipeline import PlanRequest, PlanResult, Source, run_plan
from arenaplan.reader import read_model_bytes

README = Path(__file__).resolve().parents[1] / "README.md"
CASCADE = ("cascade", "reorder", "inplace")
# the README's name of each model -> the model it names
MODELS: dict[str, Callable[[], bytes]] = {
    "MobileNetV1 0.25 96x96x1": lambda: mobilenet_v1(0.25, 96, 1, 2),
    "MobileNetV2 1.0 224": lambda: mobilenet_v2(1.0, 224),
    "DS-CNN M": lambda: ds_cnn("M"),
    "int16x8 U-Net denoiser": unet_denoiser,
}
# "<name>[ (...)]: head|whole arena 1,234 -> 567 B"
FIGURE = re.compile(r"(head|whole arena) ([\d,]+) -> ([\d,]+) B")


def readme_figures() -> dict[str, tuple[str, int, int]]:
    """Per model name: (figure, before, after) as the README's one paragraph says."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    found: dict[str, tuple[str, int, int]] = {}
    for name in MODELS:
        at = text.find(name)
        assert at >= 0, f"the README no longer names {name}"
        match = FIGURE.search(text, at)
        assert match is not None, f"no figure after {name}"
        before, after = (int(x.replace(",", "")) for x in match.group(2, 3))
        found[name] = (match.group(1), before, after)
    return found


def _figure(done: PlanResult, which: str) -> int:
    if which == "head":
        return done.plan.arena
    assert done.figures is not None
    arena = done.figures.array("arena")
    assert arena is not None
    return arena.bytes


@pytest.mark.parametrize("name", list(MODELS))
def test_readme_cascade_figure(name: str) -> None:
    which, before, after = readme_figures()[name]
    data = MODELS[name]()
    source = Source(data, read_model_bytes(data), name)
    plain = run_plan(PlanRequest(source, profile=build_profile("arm32"), prove=False))
    cascaded = run_plan(
        PlanRequest(source, profile=build_profile("arm32"), passes=CASCADE, prove=False)
    )
    assert (_figure(plain, which), _figure(cascaded, which)) == (before, after)
