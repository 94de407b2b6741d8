"""The best plan wins: ``--fit`` and a pass list with cascade compare the plan with
cascades against the plans without them (and without bands) and keep the smallest
whole arena (the head with ``--objective head``); ``--fit SIZE`` succeeds whenever
any of those lists reaches SIZE, and never gives more than reorder,inplace,bands.

Planned without proof (``prove=False``): the choice is the pipeline's, whatever
runtime is installed; the proofs of cascaded models are tests/tflm's."""

from __future__ import annotations

import pytest
from kits.keras_like import KERAS_LIKE
from kits.opmodels import SHAPED

from arenaplan.builder.demo import demo_model
from arenaplan.builder.ds_cnn import ds_cnn
from arenaplan.errors import ArenaplanError
from arenaplan.passes import make_pass, run_passes
from arenaplan.pipeline import PlanRequest, run_plan
from arenaplan.pipeline.request import Source
from arenaplan.pipeline.rewrite import candidates, run_rewrites
from arenaplan.reader import read_model_bytes

MODELS = {
    "demo": demo_model,
    "ds_cnn_m": lambda: ds_cnn("M"),
    **KERAS_LIKE,
    "keras_residual_relu_int8": SHAPED["keras_residual_relu_int8"],
}
BANDS = ("reorder", "inplace", "bands")
ALL = ("cascade", *BANDS)


def _source(name: str) -> Source:
    data = MODELS[name]()
    return Source(data, read_model_bytes(data), f"{name}.tflite")


def _whole(source: Source, **options) -> int:
    """The whole arena (head + tail) of the plan ``options`` ask for."""
    done = run_plan(PlanRequest(source, prove=False, **options))
    (array,) = done.figures.arrays
    return array.bytes


def test_candidates_put_the_stock_kernels_first_for_ties() -> None:
    assert candidates(BANDS) == [BANDS]
    assert candidates(ALL) == [BANDS, ("cascade", "reorder", "inplace"), ALL]
    assert candidates(("cascade",)) == [(), ("cascade",)]


@pytest.mark.parametrize("name", list(MODELS))
def test_passes_with_cascade_never_lose_to_the_passes_without(name: str) -> None:
    source = _source(name)
    assert _whole(source, passes=ALL) <= _whole(source, passes=BANDS)
    assert _whole(source, passes=("cascade",)) <= _whole(source)


@pytest.mark.parametrize("name", list(MODELS))
def test_fit_reaches_what_bands_alone_reach_and_never_more(name: str) -> None:
    source = _source(name)
    bands = _whole(source, passes=BANDS)
    assert _whole(source, fit=bands) <= bands


def test_fit_below_every_list_names_the_size() -> None:
    source = _source("keras_residual_relu_int8")
    below = min(_whole(source, passes=ALL), _whole(source, passes=BANDS)) - 1
    with pytest.raises(ArenaplanError, match="--fit"):
        _whole(source, fit=below)


def test_fit_by_the_head_compares_heads() -> None:
    source = _source("bn_classifier")
    heads = []
    for passes in (BANDS, ALL):
        done = run_plan(PlanRequest(source, prove=False, passes=passes, objective="head"))
        heads.append(done.figures.head)
    fitted = run_plan(PlanRequest(source, prove=False, fit=min(heads), objective="head"))
    assert fitted.figures.head <= min(heads)


def test_lists_that_share_passes_run_them_once_with_the_same_result() -> None:
    """``run_rewrites`` reuses (cascade, reorder, inplace) for the list with bands:
    the same models, records and origins as each list run on its own."""
    model = _source("demo").model
    lists = candidates(ALL)
    for names, rw in zip(lists, run_rewrites(model, lists, {}), strict=True):
        alone, records = run_passes(model, [make_pass(n, {}) for n in names])
        assert rw.model == alone and [r.name for r in rw.records] == list(names)
        assert [r.origin for r in rw.records] == [r.origin for r in records]


def test_the_summary_and_the_json_say_which_list_was_kept(tmp_path, capsys) -> None:
    import json

    from arenaplan.cli import main

    model, plan_json = tmp_path / "bn.tflite", tmp_path / "plan.json"
    model.write_bytes(MODELS["bn_classifier"]())
    cmd = ["plan", str(model), "--passes", ",".join(ALL), "--json", str(plan_json)]
    assert main([*cmd, "-o", str(tmp_path / "out.tflite"), "--write-unproven"]) == 0
    lists = json.loads(plan_json.read_text())["pass_lists"]
    assert sorted(tuple(x["passes"]) for x in lists) == sorted(candidates(ALL))
    assert [x["estimate"] for x in lists] == sorted(x["estimate"] for x in lists)
    assert [x["kept"] for x in lists] == [True, False, False]
    out = "".join(capsys.readouterr().out.split())
    assert "passlistsplanned(wholearena):" in out and f"kept{','.join(lists[0]['passes'])}" in out
