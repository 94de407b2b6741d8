"""Every bad input: one line on stderr, a non-zero exit, no file written, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import model_path

import arenaplan.commands.plan as plan_command
from arenaplan.cli import EXIT_INTERNAL, main
from arenaplan.errors import PassError

HELLO = "tflite-micro__hello_world_int8"
VWW = "mlcommons-tiny__vww_96_int8"


def _fails(argv: list[str], capsys, code: int = 2) -> str:
    """Run ``argv``; it must exit with ``code`` and one line on stderr. Returns the line."""
    got = main(argv)
    err = capsys.readouterr().err
    assert got == code, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _only(folder: Path, *names: str) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


def test_argument_parser_errors_are_one_line(capsys) -> None:
    err = _fails(["plan"], capsys)
    assert "arenaplan plan --help" in err
    assert "invalid choice" in _fails(["plan", "x.tflite", "--allocator", "best"], capsys)
    assert "positive number of seconds" in _fails(
        ["plan", "x.tflite", "--time-limit", "nan"], capsys
    )
    assert "positive number of seconds" in _fails(["solve", "x.csv", "--time-limit", "-1"], capsys)


def test_an_unexpected_exception_is_one_line_naming_the_input(monkeypatch, capsys) -> None:
    def broken(*_args, **_kwargs):
        raise RuntimeError("something nobody foresaw\nsecond line")

    monkeypatch.setattr(plan_command, "run_plan", broken)
    src = model_path(HELLO)
    err = _fails(["plan", str(src)], capsys, code=EXIT_INTERNAL)
    assert str(src) in err and "RuntimeError: something nobody foresaw" in err
    assert "report" in err


def test_a_plan_the_validator_refuses_is_an_internal_error(monkeypatch, capsys) -> None:
    """The planner's tensor bytes halved (``tflm.sizes``): the validator, with sizes of
    its own, refuses the plan. That is arenaplan's bug, not bad input: exit 70."""
    import arenaplan.tflm.sizes as sizes

    real = sizes._subgraph_bytes
    monkeypatch.setattr(sizes, "_subgraph_bytes", lambda sg: tuple(b // 2 for b in real(sg)))
    src = model_path(VWW)
    err = _fails(["plan", str(src)], capsys, code=EXIT_INTERNAL)
    assert f"internal error in 'plan' on {src}: invalid plan: " in err
    assert "This is a bug in arenaplan; please report it" in err


@pytest.mark.parametrize("where", ["dir", "missing", "proc", "file-as-dir"])
def test_unwritable_outputs_are_refused_before_any_work(tmp_path: Path, capsys, where) -> None:
    target = {
        "dir": tmp_path,
        "missing": tmp_path / "nodir" / "o.tflite",
        "proc": Path("/proc/arenaplan-test.tflite"),
        "file-as-dir": tmp_path / "a.txt" / "o.tflite",
    }[where]
    (tmp_path / "a.txt").write_text("x")
    _fails(["plan", str(model_path(HELLO)), "-o", str(target)], capsys)
    _only(tmp_path, "a.txt")


def test_nothing_is_written_unless_everything_succeeds(tmp_path: Path, capsys) -> None:
    src = model_path(HELLO)
    out = tmp_path / "a.tflite"
    _fails(["plan", str(src), "-o", str(out), "--picture", str(tmp_path / "no/p.png")], capsys)
    err = _fails(["plan", str(src), "-o", str(out), "--json", str(out)], capsys)
    assert "both name" in err
    _fails(["plan", str(src), "-o", str(out), "--header", str(tmp_path)], capsys)
    _only(tmp_path)


def test_json_to_standard_output(capsys) -> None:
    assert main(["plan", str(model_path(HELLO)), "--json", "-"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["arena"]["size"] == 32
    assert "cannot go to standard output" in _fails(
        ["plan", str(model_path(HELLO)), "-o", "-"], capsys
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "imxrt1170", "--memory", "tcm=1"], "the smallest tensor of this model"),
        (["--target", "esp32s3", "--memory", "flash=32KiB"], "may not hold activations"),
        (["--target", "esp32s3", "--memory", "sram=4MiB"], "has only 524,288 B (512 KiB)"),
        (["--target", "esp32s3", "--memory", "sram=1KB", "--memory", "sram=2KB"], "twice"),
        (["--target", "generic", "--target-file", "t.toml"], "not both"),
        (["--planner-cpp", "p.h"], "--planner-cpp needs --target"),
        (["--arena-memory", "sram"], "--arena-memory needs --target"),
        (
            ["--target", "imxrt1170", "--memory", "ocram=32KiB", "--arena-memory", "ocram"],
            "--arena-memory ocram: the arena needs 55,296 B (54 KiB), ocram has 32,768 B",
        ),
        (["--target", "esp32s3", "--arena-memory", "flash"], "may not hold activations"),
    ],
)
def test_plan_options_are_checked(tmp_path: Path, capsys, argv, message) -> None:
    out = tmp_path / "o.tflite"
    err = _fails(["plan", str(model_path(VWW)), "-o", str(out), *argv], capsys)
    assert message in err
    _only(tmp_path)


def test_sizes_take_one_syntax(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "p.csv"
    csv.write_text("id,lower,upper,size\na,0,2,1024\nb,1,3,1024\n")
    assert main(["solve", str(csv), "--capacity", "2KiB", "-q"]) == 0
    assert main(["solve", str(csv), "--capacity", "2KB"]) == 1  # 2,000 < 2,048
    assert "infeasible" in capsys.readouterr().out
    assert "zero or more" in _fails(["solve", str(csv), "--capacity", "-1"], capsys)
    assert "unknown unit 'Kib'" in _fails(["solve", str(csv), "--capacity", "2Kib"], capsys)
    argv = ["plan", str(model_path(HELLO)), "--target", "esp32s3", "--memory", "sram=32Kib"]
    assert "--memory sram: '32Kib': unknown unit 'Kib'" in _fails(argv, capsys)


def test_solve_refuses_values_beyond_its_integers(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "p.csv"
    for column, row in (
        ("size", "a,0,2,9223372036854775808"),
        ("lower", "a,-9223372036854775809,2,4"),
    ):
        csv.write_text(f"id,lower,upper,size\n{row}\n")
        err = _fails(["solve", str(csv)], capsys)
        assert f"row 2: {column}" in err and "out of range" in err
    csv.write_text("id,lower,upper,size\na,0,2,4611686018427387000\nb,0,2,4611686018427387000\n")
    assert "2**62" in _fails(["solve", str(csv)], capsys)
    csv.write_text("id,lower,upper,size,alignment\na,0,2,8,3\n")
    assert "power of two" in _fails(["solve", str(csv)], capsys)


def test_solve_accepts_a_spreadsheet_byte_order_mark(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "p.csv"
    csv.write_bytes(b"\xef\xbb\xbfid,lower,upper,size\na,0,2,8\n")
    assert main(["solve", str(csv)]) == 0
    assert "height 8" in capsys.readouterr().out


def test_a_fixed_buffer_above_the_capacity_is_infeasible(tmp_path: Path, capsys) -> None:
    """Found by brute force: an empty buffer fixed at 16 with capacity 15."""
    csv = tmp_path / "p.csv"
    csv.write_text(
        "id,lower,upper,size,alignment,offset\n"
        "b0,6,10,0,1,16\nb1,8,10,2,1,\nb2,7,8,8,1,\nb3,6,8,4,1,\nb4,5,7,7,1,\n"
    )
    assert main(["solve", str(csv), "--capacity", "15", "-o", str(tmp_path / "s.csv")]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "infeasible" in out and "b0" in out and "above the capacity" in out
    assert not (tmp_path / "s.csv").exists()


def test_two_overlapping_fixed_buffers_are_refused_at_once(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "p.csv"
    rows = [f"f{k},0,4,16,1,{k * 8}" for k in range(2)] + [f"x{k},0,3,16,1," for k in range(300)]
    csv.write_text("id,lower,upper,size,alignment,offset\n" + "\n".join(rows) + "\n")
    assert main(["solve", str(csv), "--capacity", "100000", "--time-limit", "20"]) == 1
    assert "f0 and f1 overlap" in " ".join(capsys.readouterr().out.split())


def test_demo_out_dir_naming_a_file(tmp_path: Path, capsys) -> None:
    (tmp_path / "f").write_text("x")
    assert "is a file" in _fails(["demo", "--out-dir", str(tmp_path / "f")], capsys)


def test_demo_without_the_runtime_says_how_to_install_it(tmp_path: Path, capsys, monkeypatch):
    import arenaplan.tflm.verify.prove as verify

    monkeypatch.setattr(verify, "tflm_available", lambda: False)
    assert main(["demo", "--out-dir", str(tmp_path)]) == 0
    assert "pip install 'arenaplan[tflm]'" in " ".join(capsys.readouterr().out.split())


def test_the_summary_speaks_plainly_and_ends_with_the_arena(capsys) -> None:
    assert main(["plan", str(model_path(VWW))]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "The head holds" in out and "The tail holds" in out and "A scope is" in out
    assert out.endswith(
        "set the tensor arena to 82,228 bytes (profile arm32: 32-bit ARM, arm-none-eabi-gcc)"
    )
    assert main(["plan", str(model_path(VWW)), "--target", "esp32s3"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(profile int32: other 32-bit targets), in sram" in out


def test_a_spread_plan_claims_no_saving(tmp_path: Path, capsys) -> None:
    js = tmp_path / "p.json"
    argv = ["plan", str(model_path(VWW)), "--target", "imxrt1170", "--memory", "tcm=32KiB"]
    assert main([*argv, "--json", str(js)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "saves" not in out and "no like-for-like saving" in out
    memories = {t["memory"] for t in json.loads(js.read_text())["tensors"]}
    assert memories == {"tcm", "ocram"}


@pytest.mark.parametrize(
    ("stem", "why"),
    [
        ("arm-ml-examples__basic_lstm_quantized_small", "FILL: dims (input 0) is not constant"),
        ("mlcommons-tiny__kws_ref_model_float32", "hybrid (FLOAT32 input, INT8 weights)"),
    ],
)
def test_a_model_tflm_refuses_gets_no_saving_claim(tmp_path: Path, capsys, stem, why) -> None:
    pytest.importorskip(
        "matplotlib", reason="pictures need matplotlib (pip install 'arenaplan[report]')"
    )
    js, report = tmp_path / "p.json", tmp_path / "r.html"
    assert main(["plan", str(model_path(stem)), "--json", str(js), "--report", str(report)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "TFLM's reference kernels will refuse this model" in out and why in out
    assert "saves" not in out
    assert any(why in r for r in json.loads(js.read_text())["tflm_refuses"])
    page = report.read_text()
    assert why in page and "saves" not in page


def test_a_pass_that_breaks_the_model_is_an_internal_error(monkeypatch, capsys) -> None:
    """The verifier refuses a pass's own output: arenaplan's bug, exit 70, one line."""
    import arenaplan.passes.pipeline as pipeline

    def fails_after_the_first_pass(model) -> None:
        # verify_ir judges the passes' outputs only (the input: check_model, which passes)
        raise PassError("operator 0 CONV_2D: made up")

    monkeypatch.setattr(pipeline, "verify_ir", fails_after_the_first_pass)
    src = model_path(VWW)
    err = _fails(["plan", str(src), "--passes", "reorder"], capsys, code=EXIT_INTERNAL)
    assert "pass reorder broke the model: operator 0 CONV_2D: made up" in err
    assert "This is a bug in arenaplan" in err and len(err.strip().splitlines()) == 1


def test_arena_memory_against_a_spread_weights_plan_is_one_line(tmp_path: Path, capsys) -> None:
    """--weights keeps the weight buffers in the fastest memory; with it too small the
    activations spread, so an arena elsewhere is refused, saying what to do."""
    argv = ["plan", str(model_path(VWW)), "-o", str(tmp_path / "o.tflite"), "--target"]
    argv += ["imxrt1170", "--memory", "tcm=32KiB", "--arena-memory", "ocram", "--weights", "auto"]
    err = _fails(argv, capsys)
    assert "--arena-memory ocram: the weights plan keeps its weight buffers in tcm" in err
    assert "leave --arena-memory out" in err
    _only(tmp_path)
