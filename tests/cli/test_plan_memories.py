"""``plan --target --memory``: a plan over several memories, verified in TFLM."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from testkit import model_path

from arenaplan.cli import main
from arenaplan.reader import read_model
from arenaplan.targets import load_builtin


def test_fits_the_fast_memory_stays_one_arena(tmp_path: Path, capsys) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    js = tmp_path / "p.json"
    assert main(["plan", str(src), "--target", "imxrt1170", "--json", str(js)]) == 0
    assert "memories of imxrt1170" in capsys.readouterr().out
    assert json.loads(js.read_text())["arena"]["size"] == 55296


def test_spreads_over_memories_and_runs_bit_exact(tmp_path: Path, capsys) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    out = tmp_path / "vww.tflite"
    assert (
        main(["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=32KiB", "-o", str(out)])
        == 0
    )
    text = " ".join(capsys.readouterr().out.split())
    assert "ocram" in text and "memories end to end" in text
    assert read_model(out).stored_plan is not None
    pytest.importorskip(
        "tflite_micro", reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
    )
    from arenaplan.tflm.verify import compare_models

    report = compare_models(src.read_bytes(), out.read_bytes(), trials=2)
    assert report.identical
    plan_json = tmp_path / "p.json"
    main(
        [
            "plan",
            str(src),
            "-q",
            "--target",
            "imxrt1170",
            "--memory",
            "tcm=32KiB",
            "--json",
            str(plan_json),
        ]
    )
    head = json.loads(plan_json.read_text())["arena"]["size"]
    assert report.planned.head == head > 32 * 1024  # 55,296 B live at the peak: not all in tcm


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--memory", "tcm=1KiB"], "--memory needs --target"),
        (["--target", "imxrt1170", "--memory", "tcm"], "expected NAME=SIZE"),
        (["--target", "imxrt1170", "--memory", "dram=1KiB"], "no memory 'dram'"),
        (["--target", "imxrt1170", "--memory", "tcm=lots"], "'lots' is not a size"),
    ],
)
def test_memory_option_errors(argv: list[str], message: str, capsys) -> None:
    src = model_path("tflite-micro__hello_world_int8")
    assert main(["plan", str(src), *argv]) == 2
    assert message in capsys.readouterr().err


def test_persistent_arena_advice(capsys) -> None:
    src = model_path("mlcommons-tiny__vww_96_int8")
    assert main(["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=100KiB"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # i.MX RT1170 runs CMSIS-NN with DSP: its tail (26,980 B), not the reference one (26,932)
    assert "arm32 tail 26,980 B) fits beside the head: one arena of 82,276 B in tcm" in out
    assert main(["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=64KiB"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "goes to ocram, the non-persistent arena to tcm (two arenas" in out


def test_spread_plan_last_line_lists_every_memory_as_planner_cpp_sizes_it(
    tmp_path: Path, capsys
) -> None:
    """A plan spread over tcm and ocram whose persistent data cannot join tcm: the last
    line gives each memory's bytes in the split arena, the very arrays --planner-cpp
    writes (activations in tcm and ocram; TFLM's temporaries and persistent data in
    ocram), and the advice sends to --planner-cpp, not to --header (which refuses)."""
    src = model_path("mlcommons-tiny__vww_96_int8")
    argv = ["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=32KiB"]
    header = tmp_path / "planner.h"
    assert main([*argv, "--planner-cpp", str(header)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    text = header.read_text()
    tcm = int(re.search(r"uint8_t arenaplan_tcm\[(\d+)\]", text).group(1))
    ocram = int(re.search(r"uint8_t arenaplan_ocram\[(\d+)\]", text).group(1))
    persistent = int(re.search(r"uint8_t arenaplan_persistent_ocram\[(\d+)\]", text).group(1))
    temporary = int(re.search(r"kTemporaryBytes = (\d+);", text).group(1))
    tail = int(re.search(r"kTailBytes = (\d+);", text).group(1))
    assert temporary + tail == persistent
    assert (
        f"split arena (--planner-cpp writes it): tcm {tcm:,} B (activations); "
        f"ocram {ocram + persistent:,} B (activations {ocram:,} B + TFLM's temporaries "
        f"{temporary:,} B + persistent data {tail:,} B) (profile arm32:"
    ) in out
    assert "--header writes" not in out and "--header cannot write it" in out
    assert main([*argv, "--header", str(tmp_path / "arena.h")]) == 2  # as the advice says
    assert "--planner-cpp" in capsys.readouterr().err


def test_spread_plan_with_one_arena_in_the_fast_memory_lists_the_others(capsys) -> None:
    """Spread, but the tail fits beside tcm's share: one arena in tcm, and the last
    line lists the other memory's array too (its bytes are the placement's)."""
    src = model_path("tflite-micro__micro_speech_quantized")
    argv = ["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=2976"]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "fits beside the head: one arena of 2,836 B in tcm" in out
    assert "set the tensor arena to 2,836 bytes" in out
    assert "the other memories' arrays (--planner-cpp writes them): ocram 4,000 B" in out


@pytest.mark.parametrize(
    ("time_model", "label", "not_label"),
    [
        ("stall", "stall-model estimate", "roofline"),
        ("roofline", "roofline estimate", "stall-model"),
    ],
)
def test_spread_plan_latency_names_the_time_model_that_made_it(
    tmp_path: Path, capsys, time_model: str, label: str, not_label: str
) -> None:
    """The i.MX RT1170 as built in, and the same chip with the roofline as its time
    model: the latency says which of the two made it."""
    toml = Path(__file__).parents[2] / "src/arenaplan/targets/builtin/imxrt1170.toml"
    text = toml.read_text().replace(
        'kernels = "cmsis_nn+dsp"', f'kernels = "cmsis_nn+dsp"\ntime_model = "{time_model}"'
    )
    target = tmp_path / "chip.toml"
    target.write_text(text)
    src = model_path("mlcommons-tiny__vww_96_int8")
    argv = ["plan", str(src), "--target-file", str(target), "--memory", "tcm=32KiB"]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    latency = out[out.index("estimated latency") :].split(";")[0]
    assert label in latency and not_label not in latency


def test_arena_memory_holds_the_whole_arena(tmp_path: Path, capsys) -> None:
    """``--arena-memory ocram`` with tcm too small for the arena: every activation in
    ocram (no spread over tcm), the header's arena in ocram's section, the latency
    that of activations in ocram (slower than in tcm)."""
    src = model_path("mlcommons-tiny__vww_96_int8")
    header, js = tmp_path / "arena.h", tmp_path / "plan.json"
    argv = ["plan", str(src), "--target", "imxrt1170", "--memory", "tcm=32KiB"]
    assert main([*argv, "--arena-memory", "ocram", "--header", str(header), "--json", str(js)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    fw = json.loads(js.read_text())["firmware"]
    assert fw["layout"] == "one" and list(fw["memories"]) == ["ocram"]
    assert json.loads(js.read_text())["arena"]["strategy"] != "tiers"
    assert f"set the tensor arena to {fw['arrays'][0]['bytes']:,} bytes" in out
    assert out.rstrip().endswith("in ocram")
    ocram = load_builtin("imxrt1170").memory("ocram").section
    assert f'section("{ocram}")' in header.read_text()
    assert main(["plan", str(src), "--target", "imxrt1170", "-q", "--json", str(js)]) == 0
    in_tcm = json.loads(js.read_text())["firmware"]["latency_seconds"]
    assert fw["latency_seconds"] > in_tcm


def test_planning_room_that_does_not_fit_is_the_split_arena(tmp_path: Path, capsys) -> None:
    """hello_world's head (32 B) fits 288 B of sram, but a non-persistent arena must
    also hold TFLM's planning room (560 B): not two arenas then, the split arena, whose
    persistent array (in external) holds TFLM's temporaries; --planner-cpp writes the
    very arrays the last line gives, and --header refuses in one line."""
    src = model_path("tflite-micro__hello_world_int8")
    js, header = tmp_path / "plan.json", tmp_path / "planner.h"
    argv = ["plan", str(src), "--target", "generic", "--memory", "sram=288"]
    assert main([*argv, "--json", str(js), "--planner-cpp", str(header)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    fw = json.loads(js.read_text())["firmware"]
    assert fw["layout"] == "split"
    sram, external = fw["memories"]["sram"], fw["memories"]["external"]
    assert sram <= 288 and fw["arrays"][-1]["memory"] == "external"
    assert f"sram {sram:,} B (activations)" in out and f"external {external:,} B" in out
    text = header.read_text()
    assert re.search(rf"uint8_t arenaplan_persistent_external\[{external}\]", text)
    assert main([*argv, "-q", "--header", str(tmp_path / "arena.h")]) == 2
    err = capsys.readouterr().err
    assert "split arena" in err and len(err.strip().splitlines()) == 1


def test_an_arena_elsewhere_takes_its_kernel_scratch_with_it() -> None:
    """TFLM places kernel scratch in its arena: with the arena in ocram, the latency
    counts the scratch accesses there too (keyword_scrambled's kernel scratch, whose
    accesses the reference traffic model counts, on imxrt1170)."""
    from arenaplan.cost.roofline import default_memory
    from arenaplan.cost.timing import SCRATCH, Timer
    from arenaplan.export.figures import placed_seconds

    model = read_model(model_path("tflite-micro__keyword_scrambled"))
    target = load_builtin("imxrt1170")
    where = default_memory(model, target, activations="ocram")
    timer = Timer(model, target, "ocram")
    scratch_fast = sum(t.seconds for t in timer.times(where))
    scratch_there = sum(t.seconds for t in timer.times(where | {SCRATCH: "ocram"}))
    assert scratch_there > scratch_fast  # the model has scratch, ocram is slower
    assert placed_seconds(model, target, "ocram", "ocram") == scratch_there
    assert placed_seconds(model, target, "tcm", "tcm") == sum(
        t.seconds for t in Timer(model, target, "tcm").times(default_memory(model, target))
    )
