"""Pictures and the HTML report of a plan."""

from __future__ import annotations

import dataclasses
import functools
import html
import itertools
import json
import re
import stat
from pathlib import Path

import pytest
from testkit import build_profile, model_path

import arenaplan.export.picture as picture
from arenaplan.cli import main
from arenaplan.export.figures import figures_of
from arenaplan.export.report import html_report
from arenaplan.export.summary import find_peak
from arenaplan.placement import Plan, PlanOptions, TensorPlacement, plan_model
from arenaplan.placement.planner import layout_plan
from arenaplan.placement.tiers import laid_out_offsets, place_tiers, region_bases
from arenaplan.reader import load_model
from arenaplan.targets import load_builtin
from arenaplan.tflm.tail import predict_tail

pytest.importorskip(
    "matplotlib", reason="pictures need matplotlib (pip install 'arenaplan[report]')"
)

PERSISTENT = "persistent (TFLM tail, predicted)"


@functools.cache
def planned(stem: str):
    _, model = load_model(model_path(stem))
    return model, plan_model(model)


@functools.cache
def spread(stem: str, target_name: str, memory: str, capacity: int):
    """(model, laid-out plan, where, regions) of a plan spread over a target's memories."""
    _, model = load_model(model_path(stem))
    target = load_builtin(target_name)
    tiers = place_tiers(model, target, {memory: capacity})
    plan = layout_plan(model, laid_out_offsets(tiers, target), "tiers", PlanOptions())
    names = [m.name for m in target.memories if m.name in tiers.heights]
    bases = region_bases(tiers, names)
    regions = [
        (n, bases[n], tiers.heights[n], capacity if n == memory else target.memory(n).capacity)
        for n in names
        if tiers.heights[n] > 0
    ]
    return model, plan, tiers.memory_of, regions


@pytest.fixture
def figures(monkeypatch):
    """The figures ``render``/``render_memories`` draw, kept instead of saved."""
    caught = []

    def keep(plt, fig, fmt):
        caught.append(fig)
        fig.canvas.draw()  # lay out, so that extents are final
        return b""

    monkeypatch.setattr(picture, "save", keep)
    yield caught
    plt = picture.pyplot()
    for fig in caught:
        plt.close(fig)


def rectangles(ax) -> list:
    import matplotlib.patches as mpatches

    return [p for p in ax.patches if isinstance(p, mpatches.Rectangle)]


def tensor_boxes(ax) -> list:
    """Tensor rectangles: not hatched (scratch is ///, the persistent arena ...)."""
    return [p for p in rectangles(ax) if not p.get_hatch()]


def persistent_boxes(ax) -> list:
    return [p for p in rectangles(ax) if p.get_label().startswith(PERSISTENT)]


def legend_texts(ax) -> list[str]:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


# --- through the command line -----------------------------------------------------


def test_picture_and_report_files(tmp_path: Path) -> None:
    src = model_path("tflite-micro__keyword_scrambled")
    png, svg, report = tmp_path / "p.png", tmp_path / "p.svg", tmp_path / "r.html"
    argv = [
        "plan",
        str(src),
        "-q",
        "--picture",
        str(png),
        "--report",
        str(report),
        "--target",
        "generic",
    ]
    assert main(argv) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert stat.S_IMODE(png.stat().st_mode) & 0o044  # readable by others, like any file
    text = report.read_text()
    assert "<svg" in text and "Operators on generic" in text and "SVDF" in text
    assert "What the firmware sets" in text and "TFLM tail, profile" in text
    assert main(["plan", str(src), "-q", "--picture", str(svg)]) == 0
    first = svg.read_bytes()
    assert main(["plan", str(src), "-q", "--picture", str(svg)]) == 0
    assert svg.read_bytes() == first  # deterministic
    # 16 tensors and 14 scratch buffers, each one rectangle path in the picture
    assert first.count(b"<path") >= 30


def test_bad_picture_name_and_target(tmp_path: Path, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    assert main(["plan", str(src), "--picture", str(tmp_path / "p.gif")]) == 2
    assert "must end in .png or .svg" in capsys.readouterr().err
    assert main(["plan", str(src), "--report", str(tmp_path / "r.html"), "--target", "mars"]) == 2
    assert "unknown target 'mars'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_several_memories_get_one_panel_each(tmp_path: Path) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    svg, report = tmp_path / "p.svg", tmp_path / "r.html"
    assert (
        main(
            [
                "plan",
                str(src),
                "-q",
                "--target",
                "imxrt1170",
                "--memory",
                "tcm=32KiB",
                "--picture",
                str(svg),
                "--report",
                str(report),
            ]
        )
        == 0
    )
    text = svg.read_text()
    assert "tcm: " in text and "ocram: " in text and "capacity 32,768 B" in text
    page = report.read_text()
    assert "as placed" in page and "activations in" in page and "ocram 1" in page


# --- the picture ------------------------------------------------------------------


def test_address_axis_is_in_kib(figures) -> None:
    _, plan = planned("mlcommons-tiny__vww_96_int8")
    picture.render(plan, "t", "png")
    ax = figures[-1].axes[0]
    assert "(KiB)" in ax.get_ylabel()
    top = max(plan.arena, plan.tflm_greedy)  # TFLM's planner's line is drawn too
    assert ax.get_ylim()[1] == pytest.approx(top * 1.05 / 1024, rel=0.01)
    offsets = {t.offset / 1024 for t in plan.tensors}
    assert {p.get_y() for p in tensor_boxes(ax)} <= offsets
    _, plan2, _, regions = spread("mlcommons-tiny__vww_96_int8", "imxrt1170", "tcm", 32768)
    picture.render_memories(plan2, regions, "t", "png")
    for ax in figures[-1].axes:
        assert ax.get_ylabel().endswith("(KiB)") and ax.get_ylim()[1] < 100


def _outside(ax) -> bool:
    legend = ax.get_legend()
    return not legend.get_window_extent().overlaps(ax.get_window_extent())


def test_legends_sit_outside_the_data_and_name_the_scratch(figures) -> None:
    _, plan = planned("tflite-micro__keyword_scrambled")  # 14 kernel scratch buffers
    picture.render(plan, "t", "svg")
    ax = figures[-1].axes[0]
    assert _outside(ax)
    assert "kernel scratch (placed by TFLM at run time)" in legend_texts(ax)
    _, plan2, _, regions = spread("mlcommons-tiny__vww_96_int8", "imxrt1170", "tcm", 32768)
    picture.render_memories(plan2, regions, "t", "svg", persistent=("ocram", 1000))
    for ax in figures[-1].axes:
        assert _outside(ax)


def test_largest_buffers_carry_index_and_kib_inside(figures) -> None:
    _, plan = planned("mlcommons-tiny__vww_96_int8")
    picture.render(plan, "t", "png")
    ax = figures[-1].axes[0]
    labels = [t for t in ax.texts if re.fullmatch(r"t\d+\s[\d.]+ KiB", t.get_text())]
    assert 4 <= len(labels) <= picture.LABELLED
    largest = max(plan.tensors, key=lambda t: (t.last - t.first + 1) * t.size)
    want = f"t{largest.index} {largest.bytes / 1024:.1f} KiB"
    assert want in [" ".join(t.get_text().split()) for t in labels]
    boxes = [p.get_window_extent() for p in tensor_boxes(ax)]
    for text in labels:
        inner = text.get_window_extent()
        assert any(
            b.x0 - 1 <= inner.x0
            and inner.x1 <= b.x1 + 1
            and b.y0 - 1 <= inner.y0
            and inner.y1 <= b.y1 + 1
            for b in boxes
        ), text.get_text()


def _touch(a, b) -> bool:
    """Neighbours as drawn: scopes touching (bars 0.9 wide, 0.1 apart) or
    overlapping, addresses touching or overlapping."""
    eps = 1e-9
    ax0, ax1, bx0, bx1 = a.get_x(), a.get_x() + a.get_width(), b.get_x(), b.get_x() + b.get_width()
    ay0, ay1, by0, by1 = (
        a.get_y(),
        a.get_y() + a.get_height(),
        b.get_y(),
        b.get_y() + b.get_height(),
    )
    in_time = ax0 <= bx1 + 0.1 + eps and bx0 <= ax1 + 0.1 + eps
    return in_time and ay0 <= by1 + eps and by0 <= ay1 + eps


@pytest.mark.parametrize(
    "stem",
    [
        "tflite-micro__keyword_scrambled",
        "mlcommons-tiny__vww_96_int8",
        "mlcommons-tiny__pretrainedResnet_quant",
        "tflite-micro__audio_preprocessor_int8",
        "arm-ml-examples__basic_lstm_quantized_small",
    ],
)
def test_neighbouring_rectangles_never_share_a_colour(stem: str, figures) -> None:
    _, plan = planned(stem)
    picture.render(plan, "t", "png")
    boxes = tensor_boxes(figures[-1].axes[0])
    assert len(boxes) == len(plan.tensors)
    clashes = [
        (a.get_xy(), b.get_xy())
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if _touch(a, b) and a.get_facecolor() == b.get_facecolor()
    ]
    assert clashes == []
    assert len({b.get_facecolor() for b in boxes}) >= min(len(boxes), 8)  # the palette is used


def test_twenty_first_neighbour_gets_its_own_colour(figures) -> None:
    # one long tensor under twenty short ones side by side: all its neighbours,
    # so a palette cycled by index (20 colours) gives the last one its colour
    long = TensorPlacement(0, 0, "long", 320, 320, 0, 0, 20)
    short = [TensorPlacement(0, k, f"s{k}", 16, 16, 320, k, k) for k in range(1, 21)]
    plan = Plan((long, *short), (), 336, 336, 336, 336, 16, "x", "x", (), 0.0)
    picture.render(plan, "t", "png")
    boxes = tensor_boxes(figures[-1].axes[0])
    assert len(boxes) == 21
    colours = [b.get_facecolor() for b in boxes]
    assert colours[0] not in colours[1:]
    assert all(a != b for a, b in itertools.pairwise(colours[1:]))


def test_colouring_is_greedy_over_the_palette() -> None:
    # one long buffer under twelve short ones side by side: all neighbours of it
    boxes = [picture.Box(0, 11, 0, 64, "long")]
    boxes += [picture.Box(k, k, 64, 32, f"t{k}") for k in range(12)]
    got = picture.colours(boxes)
    for i, a in enumerate(boxes):
        for j, b in enumerate(boxes):
            if i < j and picture.neighbours(a, b):
                assert got[i] != got[j]
    assert not picture.neighbours(picture.Box(0, 0, 0, 16, "a"), picture.Box(2, 2, 0, 16, "b"))
    assert picture.neighbours(picture.Box(0, 0, 0, 16, "a"), picture.Box(1, 1, 16, 16, "b"))


def test_persistent_arena_sits_on_top_of_one_arena(figures) -> None:
    model, plan = planned("mlcommons-tiny__vww_96_int8")
    tail = predict_tail(model, "arm32")
    picture.render(plan, "t", "png", persistent=(None, tail))
    (ax,) = figures[-1].axes
    (block,) = persistent_boxes(ax)
    assert block.get_y() == pytest.approx(plan.arena / 1024)
    assert block.get_height() == pytest.approx(tail / 1024)
    assert f"{PERSISTENT} {tail:,} B" in legend_texts(ax)
    assert ax.get_ylim()[1] >= (plan.arena + tail) / 1024
    # a tail much larger than the head is cut at the top, and says so
    model, plan = planned("tflite-micro__keyword_scrambled")
    tail = predict_tail(model, "arm32")
    picture.render(plan, "t", "png", persistent=(None, tail))
    (ax,) = figures[-1].axes
    assert ax.get_ylim()[1] < (plan.arena + tail) / 1024
    assert any("continues above" in t.get_text() for t in ax.texts)


def test_persistent_arena_of_two_arenas_gets_its_memorys_panel(figures) -> None:
    _, plan = planned("mlcommons-tiny__vww_96_int8")
    picture.render(plan, "t", "png", persistent=("ocram", 26932), memory="tcm")
    head, side = figures[-1].axes
    assert persistent_boxes(head) == []
    (block,) = persistent_boxes(side)
    assert block.get_y() == 0 and block.get_height() == pytest.approx(26932 / 1024)
    assert "ocram" in side.get_title() and "tcm" in head.get_ylabel()
    picture.render(plan, "t", "png", persistent=("tcm", 26932), memory="tcm")
    (ax,) = figures[-1].axes  # the arena's own memory: one arena
    assert persistent_boxes(ax)[0].get_y() == pytest.approx(plan.arena / 1024)


def test_persistent_arena_in_a_spread_plan(figures) -> None:
    _, plan, _, regions = spread("mlcommons-tiny__vww_96_int8", "imxrt1170", "tcm", 32768)
    used = {name: u for name, _, u, _ in regions}
    assert list(used) == ["tcm", "ocram"]
    picture.render_memories(plan, regions, "t", "svg", persistent=("ocram", 5000))
    tcm, ocram = figures[-1].axes
    assert persistent_boxes(tcm) == []
    assert persistent_boxes(ocram)[0].get_y() == pytest.approx(used["ocram"] / 1024)
    picture.render_memories(plan, regions, "t", "svg", persistent=(None, 5000))
    tcm, ocram = figures[-1].axes
    assert persistent_boxes(tcm)[0].get_y() == pytest.approx(used["tcm"] / 1024)
    picture.render_memories(plan, regions, "t", "svg", persistent=("hyperram", 5000))
    *_, hyper = figures[-1].axes  # a memory with no activations: a panel of its own
    assert len(figures[-1].axes) == 3 and "hyperram" in hyper.get_title()
    assert persistent_boxes(hyper)[0].get_y() == 0


def test_pictures_are_byte_identical_reruns() -> None:
    _, plan = planned("tflite-micro__keyword_scrambled")
    _, plan2, _, regions = spread("mlcommons-tiny__vww_96_int8", "imxrt1170", "tcm", 32768)
    for fmt in ("png", "svg"):
        one = picture.render(plan, "t", fmt, persistent=(None, 12500))
        assert one == picture.render(plan, "t", fmt, persistent=(None, 12500))
        many = picture.render_memories(plan2, regions, "t", fmt, persistent=("ocram", 900))
        assert many == picture.render_memories(plan2, regions, "t", fmt, persistent=("ocram", 900))
    assert b"Date" not in picture.render(plan, "t", "svg")


# --- the report -------------------------------------------------------------------


def _cells(*cells: str) -> str:
    """A row's cells as the report writes them (alignment classes dropped)."""
    return "".join(f"<td>{html.escape(c)}</td>" for c in cells)


def _plain(page: str) -> str:
    return re.sub(r" class='text'", "", page)


def test_report_lists_every_tensor_and_the_peak() -> None:
    model, plan = planned("tflite-micro__keyword_scrambled")
    page = _plain(
        html_report(
            model, plan, "ks.tflite", None, figures=figures_of(model, plan, build_profile("arm32"))
        )
    )
    for t in plan.tensors:
        row = _cells(
            str(t.subgraph),
            str(t.index),
            t.name,
            f"{t.bytes:,}",
            f"{t.offset:,}",
            f"[{t.first}, {t.last}]",
        )
        assert row in page, t
    peak = find_peak(model, plan)
    assert f"scope {peak.scope}: {peak.live_bytes:,} B live" in page
    for label, size, off in peak.tensors:
        assert _cells(label, f"{off:,}", f"{size:,}") in page


def test_report_claims_the_saving_only_where_it_holds() -> None:
    model, plan = planned("mlcommons-tiny__vww_96_int8")  # TFLM 73,728 B, ours 55,296 B
    figures = figures_of(model, plan, build_profile("arm32"))
    page = html_report(model, plan, "vww.tflite", None, figures=figures)
    assert "saves 18,432 B (25.0%) against TFLM's planner" in page
    refused = html_report(
        model, plan, "vww.tflite", None, refusal="op <CUSTOM> & friends", figures=figures
    )
    assert "op &lt;CUSTOM&gt; &amp; friends" in refused and "<CUSTOM>" not in refused
    top = refused.index("will refuse this model")
    assert top < refused.index("<table") and top < refused.index("<svg")
    assert "saves" not in refused and "73,728" not in refused  # not in the picture either


def test_report_of_a_spread_plan_has_the_memories() -> None:
    model, plan, where, regions = spread("mlcommons-tiny__vww_96_int8", "imxrt1170", "tcm", 32768)
    page = _plain(
        html_report(
            model,
            plan,
            "vww.tflite",
            None,
            where,
            regions,
            persistent=("ocram", 26932),
            figures=figures_of(model, plan, build_profile("arm32")),
        )
    )
    counts = {m: list(where.values()).count(m) for m, *_ in regions}
    for memory, base, used, capacity in regions:
        row = _cells(memory, f"{capacity:,}", f"{used:,}", str(counts[memory]))
        assert row + f"<td>{base:,}..{base + used:,}</td>" in page
    bases = {m: b for m, b, *_ in regions}
    for t in plan.tensors:
        m = where[(t.subgraph, t.index)]
        assert _cells(f"[{t.first}, {t.last}]", m, f"{t.offset - bases[m]:,}") in page
    assert "saves" not in page  # TFLM's own planner has one arena: no comparison
    assert "persistent (TFLM tail, predicted) 26,932 B" in page  # the picture's legend


def test_report_is_self_contained_and_escaped() -> None:
    model, plan = planned("tflite-micro__keyword_scrambled")
    first = plan.tensors[0]
    odd = dataclasses.replace(first, name="<img onerror=alert(1)>&\"'")
    plan = dataclasses.replace(plan, tensors=(odd, *plan.tensors[1:]))
    generic = load_builtin("generic")
    figures = figures_of(model, plan, build_profile("arm32"), generic)
    page = html_report(model, plan, "<b>name</b>.tflite", generic, figures=figures)
    assert "<img" not in page and "<b>name" not in page
    assert "&lt;img onerror=alert(1)&gt;&amp;&quot;&#x27;" in page
    assert "&lt;b&gt;name&lt;/b&gt;.tflite" in page
    for external in ("<script", "<link", "<iframe", "<object", "<img"):
        assert external not in page.lower(), external
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert not re.search(r"url\((?!#)", page)  # only the picture's own clip paths


def test_report_of_a_spread_plan_says_why_its_head_is_larger() -> None:
    """Right under the figures: the memories and their bytes, the head as their regions
    end to end (so not comparable with TFLM's one arena), and the fastest memory's
    share against the capacity asked for; no comparison with TFLM's planner."""
    done = _run("mlcommons-tiny__vww_96_int8", "imxrt1170", caps={"tcm": 32768})
    assert done.tiers is not None
    page = done.files["report"].decode()
    note = page[page.index("This plan spreads") : page.index("<h2>Time x address")]
    assert page.index("TFLM tail, profile") < page.index("This plan spreads")
    heights = {m: h for m, h in done.tiers.heights.items() if h}
    assert set(heights) == {"tcm", "ocram"}
    for memory, used in heights.items():
        assert f"{memory} {used:,} B" in note
    assert "lays those memories end to end in TFLM's one head, so that TFLM can check it" in note
    head = f"the head figure above, {done.plan.arena:,} B, is therefore the sum of the regions"
    assert head in note
    assert done.plan.arena == sum(heights.values())
    assert "not comparable with TFLM's single arena" in note
    assert f"The fastest memory, tcm, holds only {heights['tcm']:,} B" in note
    assert "with the 32,768 B capacity asked for it" in note
    for claim in ("saves", "worse", "more than TFLM"):
        assert claim not in page
    alone = _run("mlcommons-tiny__vww_96_int8", "imxrt1170").files["report"].decode()
    assert "This plan spreads" not in alone and "end to end" not in alone


# --- operator numbers of a rewritten model ----------------------------------------

NEW = {
    "STRIDED_SLICE": "new: a band's rows",
    "PAD": "new: a band's padding",
    "CONCATENATION": "new: joins the bands",
    "RESHAPE": "new: weight copy",
}


def _run(stem: str, target: str | None = None, **request):
    """``run_plan`` with the JSON and the report rendered (no proof: the rewrite kept)."""
    from arenaplan.pipeline import PlanRequest, Wanted, read_source, run_plan

    src = read_source(model_path(stem))
    wanted = Wanted(json=True, report=True)
    chosen = load_builtin(target) if target else None
    return run_plan(PlanRequest(src, chosen, prove=False, outputs=wanted, **request))


def _original_cells(done) -> list[str]:
    """Each operator of the model planned: its number in the model as given, or why
    it is new; checked against the model as given (same opcode)."""
    given = [op for sg in done.source.model.subgraphs for op in sg.operators]
    ops = [op for sg in done.model.subgraphs for op in sg.operators]
    cells = []
    for op, came in zip(ops, done.origin, strict=True):
        assert came is None or given[came].opcode == op.opcode
        cells.append(NEW[op.opcode] if came is None else str(came))
    return cells


@pytest.mark.parametrize("target", ["imxrt1170", None])
def test_report_of_a_rewritten_model_maps_its_operators(target: str | None) -> None:
    done = _run("mlcommons-tiny__vww_96_int8", target, passes=("reorder", "inplace", "bands"))
    assert done.origin is not None and None in done.origin
    page = _plain(done.files["report"].decode())
    cells = _original_cells(done)
    ops = done.model.subgraphs[0].operators
    for op, cell in zip(ops, cells, strict=True):
        assert f"<tr>{_cells(str(op.index), cell, op.opcode)}" in page, (op.index, cell)
    assert {"new: a band's rows", "new: joins the bands"} <= set(cells)
    assert cells != [str(k) for k in range(len(ops))]  # numbers moved
    assert "<th>original op</th>" in page
    assert (
        "This table numbers the operators of the model as planned (pass bands changed them), "
        "as do the scopes in this report. “original op” is the operator's number in "
        "mlcommons-tiny__vww_96_int8.tflite as given"
    ) in page
    plan = json.loads(done.files["json"])
    assert plan["operator_origin"] == list(done.origin)
    assert len(plan["operator_origin"]) == plan["operators"] == done.model.operator_count


def test_report_of_weight_copies_names_both_numbers() -> None:
    """``--weights whole``: the RESHAPE copies are new; the weights table gives each
    operator's number in the model planned (as the operator table and fetch.h) and in
    the model as given."""
    done = _run("arm-ml-examples__ds_cnn_s_quantized", "imxrt1170", weights="whole")
    wp = done.weights
    assert wp is not None and done.origin is not None
    page = _plain(done.files["report"].decode())
    cells = _original_cells(done)
    assert "new: weight copy" in cells
    ops = done.model.subgraphs[0].operators
    for op, cell in zip(ops, cells, strict=True):
        assert f"<tr>{_cells(str(op.index), cell, op.opcode)}" in page, (op.index, cell)
    weights = page[page.index("<h2>Weights</h2>") : page.index("<h2>Operators")]
    assert "“operator” numbers the operators of the model as planned" in weights
    for c in wp.choices:
        planned = done.origin.index(c.op)  # no passes: the model planned is the one given
        assert planned != c.op
        assert f"<tr>{_cells(str(planned), str(c.op), c.weights.opcode)}" in weights
    assert "(weight copies changed them)" in page
    also = "as do the scopes in this report, the weights table's “operator” and fetch.h's op"
    assert also in page
    assert json.loads(done.files["json"])["operator_origin"] == list(done.origin)


@pytest.mark.parametrize(
    "request_", [{}, {"passes": ("inplace",)}, {"weights": "groups:8"}], ids=str
)
def test_operators_as_given_get_no_map(request_: dict) -> None:
    """No rewrite moved an operator and no copy was inserted: no map, in the JSON or
    the report (their bytes as before)."""
    done = _run("mlcommons-tiny__vww_96_int8", "imxrt1170", **request_)
    assert done.origin is None
    assert "operator_origin" not in json.loads(done.files["json"])
    page = done.files["report"].decode()
    assert "original op" not in page and "numbers the operators" not in page
