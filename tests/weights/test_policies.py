"""Weights read in place, copied whole or per output-channel group, planned with the
activations (weights/staging.py, passes/stage.py, weights/policies*.py, plan --weights).
Models are built here with the project's writer; the TFLM proofs also run shared models
(skipped with a reason without ../shared or the TFLM runtime)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from kits.weights_models import chain
from testkit import model_path, need_prover

from arenaplan.analysis.buffers import StagingRequest
from arenaplan.cli import main
from arenaplan.errors import AllocationError, PlanValidationError, TargetError, UsageError
from arenaplan.export.figures import weights_totals
from arenaplan.export.tflite_writer import write_model
from arenaplan.passes.stage import Stage, staged_index
from arenaplan.pipeline import PlanRequest, read_source, run_plan
from arenaplan.placement import PlanOptions, check_plan, plan_model
from arenaplan.reader import read_model_bytes
from arenaplan.targets.load import load_builtin, parse_target
from arenaplan.tflm.verify.prove import prove
from arenaplan.tflm.verify.runner import tflm_available
from arenaplan.weights.plan import plan_weights
from arenaplan.weights.policies import Policy, WeightCosts, parse_weights
from arenaplan.weights.staging import operator_weights

needs_tflm = pytest.mark.skipif(
    not tflm_available(), reason="the TFLM runtime is not installed (pip install 'arenaplan[tflm]')"
)


def target(read: str = "copy", copy: str = "blocking", rate: float = 10e6, latency: float = 0):
    return parse_target(
        {
            "name": "t",
            "clock_hz": 100e6,
            "compute": {"default": 1.0},
            "memory": [
                {"name": "sram", "capacity": "256KiB", "read_bandwidth": 1e9,
                 "write_bandwidth": 1e9, "latency": 1, "holds": ["activations", "persistent"]},
                {"name": "flash", "capacity": "1MiB", "read_bandwidth": 50e6,
                 "write_bandwidth": 0, "latency": 20, "holds": ["weights"], "read": read,
                 "copy": copy, "copy_rate": rate, "copy_latency": latency},
            ],
        },
        "test",
    )  # fmt: skip


# ---- targets say how weights are read --------------------------------------------


def test_target_reads_and_copies() -> None:
    t = target("copy", "dma", 10e6, 50)
    flash = t.memory("flash")
    assert (flash.read, flash.copy, flash.copy_rate, flash.copy_latency) == (
        "copy",
        "dma",
        10e6,
        50,
    )
    assert flash.copy_seconds(1000, 2, t.clock_hz) == pytest.approx(1000 / 10e6 + 2 * 50 / 100e6)
    assert t.memory("sram").read == "in-place"  # the default
    assert load_builtin("xcore_ai").memory("flash").read == "copy"
    assert load_builtin("imxrt1170").memory("flash").copy == "dma"


@pytest.mark.parametrize("key,value", [("read", "mapped"), ("copy", "cpu")])
def test_target_bad_read_or_copy_is_one_line(key: str, value: str) -> None:
    t = {"name": "t", "clock_hz": 1e6, "memory": [
        {"name": "m", "capacity": 1024, "read_bandwidth": 1, "write_bandwidth": 1,
         "latency": 1, "holds": ["activations", "weights"], key: value}]}  # fmt: skip
    with pytest.raises(TargetError, match=f"{key} must be one of") as err:
        parse_target(t, "x.toml")
    assert "\n" not in str(err.value)


# ---- weights and groups ----------------------------------------------------------


def test_operator_weights_and_groups() -> None:
    m = read_model_bytes(chain())
    conv, dw, fc = operator_weights(m)
    assert (conv.bytes, conv.channels, conv.per_channel) == (40 * 72 + 160, 40, (72, 4))
    assert conv.groups(16) == 3 and conv.group_bytes(16) == 16 * 76
    assert (dw.channels, dw.per_channel) == (40, (9, 4))  # group-contiguous layout
    assert dw.group_bytes(16) == 144 + 64 and dw.group_bytes(5) == 48 + 20  # 45 -> 48
    assert (fc.channels, fc.per_channel, fc.groups(16)) == (20, (1440, 4), 2)
    assert conv.group_bytes(64) == conv.bytes  # a group larger than the operator


@pytest.mark.parametrize(
    "text,policy",
    [
        ("in-place", Policy("in-place")),
        ("whole", Policy("whole")),
        ("groups", Policy("groups", 16)),
        ("groups:8,double", Policy("groups", 8, True)),
        ("auto", None),
    ],
)
def test_parse_weights(text: str, policy: Policy | None) -> None:
    assert parse_weights(text) == policy


@pytest.mark.parametrize("text", ["groups:0", "groups:x", "whole,double", "streamed", ""])
def test_parse_weights_refuses(text: str) -> None:
    with pytest.raises(UsageError, match="expected auto"):
        parse_weights(text)


def test_policy_costs_follow_the_formulas() -> None:
    m = read_model_bytes(chain())
    costs = WeightCosts(m, target("copy", "blocking", 10e6, 100))
    conv = costs.ops[0]
    t_d = costs._in_dest(conv)
    whole = costs.choice(conv, Policy("whole"))
    assert whole.seconds == pytest.approx(t_d + conv.bytes / 10e6 + 2 * 100 / 100e6)  # 2 tensors
    assert (whole.ram, whole.first) == (-(-conv.bytes // 16) * 16, conv.op)
    groups = costs.choice(conv, Policy("groups", 16))
    assert groups.seconds == pytest.approx(t_d + conv.bytes / 10e6 + 3 * 100 / 100e6)
    assert groups.ram == 16 * 76
    # a DMA: whole copies are prefetched over the operator ahead, groups overlap compute
    dma = WeightCosts(m, target("copy", "dma", 10e6, 0))
    fc = dma.ops[2]
    t_prev, t_fc = dma.base[fc.op - 1], dma._in_dest(fc)
    c = fc.bytes / 10e6
    assert dma.choice(fc, Policy("whole")).seconds == pytest.approx(t_fc + max(0, c - t_prev))
    assert dma.choice(fc, Policy("whole")).first == fc.op - 1
    double = dma.choice(fc, Policy("groups", 16, True))
    g = c / 2
    assert double.seconds == pytest.approx(t_fc + max(0, g - t_prev) + max(0, g - t_fc / 2))
    assert double.ram == 2 * (-(-16 * 1444 // 16) * 16)


def test_time_model_copies_what_cannot_be_read_in_place() -> None:
    """Weights in a memory that is not mapped are charged as a blocking copy of each
    tensor before its operator, then read from RAM: the ``whole`` policy's time."""
    m = read_model_bytes(chain())
    costs = WeightCosts(m, target("copy", "blocking", 10e6, 100))
    for w in costs.ops:
        whole = costs.choice(w, Policy("whole"))
        assert costs.base[w.op] == pytest.approx(whole.seconds)
    mapped = WeightCosts(m, target("in-place", "blocking", 10e6, 100))
    assert mapped.base != costs.base  # read in place: latency stalls instead of copies


def test_in_place_refused_where_weights_are_not_mapped() -> None:
    m = read_model_bytes(chain())
    with pytest.raises(UsageError, match="not memory-mapped"):
        WeightCosts(m, target("copy")).forced(Policy("in-place"))
    assert all(c.ram == 0 for c in WeightCosts(m, target("in-place")).forced(Policy("in-place")))


# ---- one plan --------------------------------------------------------------------


def test_stage_pass_copies_before_each_operator() -> None:
    m = read_model_bytes(chain())
    stage = Stage((0, 3), early=(3,))
    out = stage.run(m).model
    names = [op.opcode for op in out.subgraphs[0].operators]
    # conv's two copies before it; the FC's two before the RESHAPE ahead of it
    assert names == ["RESHAPE", "RESHAPE", "CONV_2D", "DEPTHWISE_CONV_2D", "RESHAPE",
                     "RESHAPE", "RESHAPE", "FULLY_CONNECTED"]  # fmt: skip
    assert staged_index(m, stage) == [2, 3, 6, 7]
    sg = out.subgraphs[0]
    assert not any(sg.tensors[i].is_constant for i in sg.operators[2].inputs[1:])
    # the copies are new; every operator of the model comes from itself
    assert stage.run(m).origin == (None, None, 0, 1, None, None, 2, 3)


def test_weights_plan_maps_its_copies_back() -> None:
    """``WeightsPlan.origin``: the operators of the model with its copies, each the
    operator of the model planned that it is, the RESHAPE copies new."""
    m = read_model_bytes(chain())
    wp = plan_weights(m, target("copy"), Policy("whole"), None, PlanOptions())
    sg = wp.model.subgraphs[0]
    assert len(wp.origin) == len(sg.operators) > len(m.subgraphs[0].operators)
    for op, i in zip(sg.operators, wp.origin, strict=True):
        if i is None:
            assert op.opcode == "RESHAPE" and sg.tensors[op.inputs[0]].is_constant
        else:
            assert op.opcode == m.subgraphs[0].operators[i].opcode
    assert [i for i in wp.origin if i is not None] == list(range(len(m.subgraphs[0].operators)))
    for c in wp.choices:  # each choice's operator, numbered in the model with copies
        assert wp.origin[wp.planned_op(c.op)] == c.op


def test_group_buffers_are_planned_and_validated() -> None:
    m = read_model_bytes(chain())
    req = (
        StagingRequest(0, 0, 16 * 76, "groups:16"),
        StagingRequest(1, 0, 2 * 16 * 13, "groups:16,double"),
    )
    plan = plan_model(m, PlanOptions(staging=req))
    assert len(plan.staging) == 2 and plan.arena >= plan.lower_bound
    assert plan.staging[0].size == 16 * 76
    # the validator re-derives the sizes and finds overlaps
    small = replace(plan.staging[0], size=16 * 75)
    with pytest.raises(PlanValidationError, match="cannot hold groups:16"):
        check_plan(m, replace(plan, staging=(small, plan.staging[1])))
    tensor = plan.tensors[0]
    clash = replace(plan.staging[0], offset=tensor.offset)
    with pytest.raises(PlanValidationError, match="staging buffer of operator 0"):
        check_plan(m, replace(plan, staging=(clash, plan.staging[1])))


def test_auto_fits_the_capacity_by_giving_up_time() -> None:
    m = read_model_bytes(chain())
    t = target("in-place", "dma", 10e6)
    free = plan_weights(m, t, None, None, PlanOptions())
    tight = plan_weights(m, t, None, {"sram": free.plan.arena - 1024}, PlanOptions())
    assert tight.plan.arena <= free.plan.arena - 1024
    assert tight.seconds >= free.seconds
    with pytest.raises(AllocationError, match="even with every operator"):
        plan_weights(m, target("copy"), None, {"sram": 2048}, PlanOptions())


def test_activations_spread_when_the_weight_buffers_leave_too_little() -> None:
    m = read_model_bytes(chain())
    ext = {"name": "ext", "capacity": "1MiB", "read_bandwidth": 1e8, "write_bandwidth": 1e8,
           "latency": 10, "holds": ["activations", "persistent"]}  # fmt: skip
    data = {"name": "t2", "clock_hz": 100e6, "compute": {"default": 1.0}, "memory": [
        {"name": "sram", "capacity": "256KiB", "read_bandwidth": 1e9, "write_bandwidth": 1e9,
         "latency": 1, "holds": ["activations", "persistent"]}, ext,
        {"name": "flash", "capacity": "1MiB", "read_bandwidth": 50e6, "write_bandwidth": 0,
         "latency": 20, "holds": ["weights"], "read": "copy", "copy": "dma"}]}  # fmt: skip
    t = parse_target(data, "t2")
    alone = plan_weights(m, t, Policy("groups"), None, PlanOptions())
    room = alone.plan.arena - 512
    wp = plan_weights(m, t, Policy("groups"), {"sram": room}, PlanOptions())
    assert wp.tiers is not None and wp.tiers.heights["ext"] > 0
    fast = -(-wp.tiers.heights["sram"] // 16) * 16
    assert fast <= room and all(s.offset + s.size <= fast for s in wp.plan.staging)
    check_plan(wp.model, wp.plan)
    with pytest.raises(AllocationError):  # one memory: nowhere to spread
        plan_weights(m, target("copy", "dma"), Policy("groups"), {"sram": room}, PlanOptions())


@pytest.mark.parametrize(
    "stem,target_name",
    [("mlcommons-tiny__vww_96_int8", "imxrt1170"), ("arm-ml-examples__ds_cnn_s_quantized",
     "imxrt1170"), ("arm-ml-examples__cnn_s_quantized", "xcore_ai")],
)  # fmt: skip
def test_auto_is_never_slower_than_a_fixed_policy_that_fits(stem: str, target_name: str) -> None:
    """Weights and memories decided together: at every capacity from a quarter of the
    arena to all of it, auto's estimate is at most every fixed policy's that fits, and
    auto fits where one of them does, within the capacity given."""
    m = read_model_bytes(model_path(stem).read_bytes())
    t = load_builtin(target_name)
    fast = t.fastest().name
    arena = plan_model(m, PlanOptions(kernels=t.kernels)).arena
    fixed = [Policy("whole"), Policy("groups"), Policy("groups", double=True)]
    if t.weights_memory().read == "in-place":
        fixed.append(Policy("in-place"))
    for part in (4, 2, 1):
        caps = {fast: arena // part // 16 * 16}
        options = PlanOptions(kernels=t.kernels)
        others = []
        for policy in fixed:
            try:
                others.append(plan_weights(m, t, policy, caps, options).seconds)
            except AllocationError:
                continue
        auto = plan_weights(m, t, None, caps, options)
        assert auto.seconds <= min(others, default=auto.seconds), (caps, auto.seconds, others)
        head = auto.tiers.heights[fast] if auto.tiers else auto.plan.arena
        assert head <= caps[fast]
        check_plan(auto.model, auto.plan)


# ---- proven in TFLM --------------------------------------------------------------


@needs_tflm
@pytest.mark.parametrize(
    "stem",
    ["arm-ml-examples__cnn_s_quantized", "mlcommons-tiny__ad01_int8", "built", "mobilenet_v2"],
)
def test_whole_copies_run_bit_exact_in_tflm(stem: str) -> None:
    from arenaplan.builder.mobilenet import mobilenet_v2

    built = {"built": chain, "mobilenet_v2": lambda: mobilenet_v2(0.35, 32)}
    data = built[stem]() if stem in built else model_path(stem).read_bytes()
    m = read_model_bytes(data)
    wp = plan_weights(m, target("copy", "dma"), Policy("whole"), None, PlanOptions())
    assert any(op.opcode == "RESHAPE" for op in wp.model.subgraphs[0].operators)
    from arenaplan.pipeline import planned_model_bytes

    planned = planned_model_bytes(write_model(wp.model), wp.model, wp.plan)
    proof = prove(data, planned, wp.plan.arena)
    assert proof.proven, proof.reason


# ---- the command -----------------------------------------------------------------


def test_plan_weights_after_passes_is_proven(tmp_path: Path, capsys) -> None:
    need_prover("cmsis_nn+dsp")  # the i.MX RT1170's kernels
    src = tmp_path / "m.tflite"
    src.write_bytes(chain())
    js = tmp_path / "o.json"
    out = ["-o", str(tmp_path / "o.tflite"), "--json", str(js)]
    passes = ["--passes", "inplace", "--clobber-inputs"]
    rc = main(["plan", str(src), "--target", "imxrt1170", "--weights", "whole", *passes, *out])
    assert rc == 0
    data = json.loads(js.read_text())
    assert [p["name"] for p in data["passes"]] == ["inplace"]
    assert data["weights"]["proof"]["proven"]
    assert "pass inplace" in capsys.readouterr().out


def test_plan_weights_cli(tmp_path: Path, capsys) -> None:
    src = tmp_path / "m.tflite"
    src.write_bytes(chain())
    out, js = tmp_path / "o.tflite", tmp_path / "o.json"
    report = tmp_path / "r.html"
    rc = main(["plan", str(src), "--target", "xcore_ai", "--weights", "auto",
               "-o", str(out), "--json", str(js), "--report", str(report)])  # fmt: skip
    assert rc == 0
    assert "<h2>Weights</h2>" in report.read_text()
    data = json.loads(js.read_text())["weights"]
    assert [o["opcode"] for o in data["operators"]] == [
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "FULLY_CONNECTED",
    ]
    assert data["baseline"] == "whole"  # xcore's flash is not mapped
    staged = {b["operator"] for b in data["staging_buffers"]}
    assert staged and {b["operator"] for b in data["blob_index"]} == staged
    assert {o["policy"] for o in data["operators"]} <= {"whole", "groups:16"}
    printed = " ".join(capsys.readouterr().out.split())
    assert "weights:" in printed
    assert "times: stall-model estimate of xcore.ai's lib_nn kernels" in printed
    assert "estimate of xcore.ai's lib_nn kernels" in report.read_text()


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--weights", "auto"], "--weights needs --target"),
        (["--target", "xcore_ai", "--weights", "bogus"], "expected auto"),
        (["--target", "xcore_ai", "--weights", "in-place"], "not memory-mapped"),
        (["--target", "xcore_ai", "--weights", "auto", "--fit", "64KiB"], "cannot be combined"),
        (["--target", "xcore_ai", "--schedule", "f.h"], "--schedule needs --weights"),
    ],
)
def test_plan_weights_cli_errors(tmp_path: Path, capsys, extra: list[str], message: str) -> None:
    src = tmp_path / "m.tflite"
    src.write_bytes(chain())
    out = tmp_path / "o.tflite"
    rc = main(["plan", str(src), "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert rc != 0 and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


NO_WEIGHTS_TARGET = """\
name = "noweights"
clock_hz = 100e6
[[memory]]
name = "sram"
capacity = "1MiB"
read_bandwidth = 1e9
write_bandwidth = 1e9
latency = 1
holds = ["activations", "persistent"]
"""


@pytest.mark.parametrize("policy", ["auto", "whole", "in-place", "groups"])
def test_a_target_whose_memories_hold_no_weights_is_one_line(tmp_path: Path, capsys, policy):
    src, toml = tmp_path / "m.tflite", tmp_path / "t.toml"
    src.write_bytes(chain())
    toml.write_text(NO_WEIGHTS_TARGET)
    out = tmp_path / "o.tflite"
    rc = main(["plan", str(src), "-o", str(out), "--target-file", str(toml), "--weights", policy])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "'noweights': no memory holds weights" in err
    assert not out.exists()
    assert main(["sweep", str(src), "--target-file", str(toml), "--points", "2"]) == 2
    assert "no memory holds weights" in capsys.readouterr().err


@needs_tflm
@pytest.mark.parametrize("policy", ["auto", "whole"])
@pytest.mark.parametrize(
    "stem,why",
    [
        ("mlcommons-tiny__kws_ref_model_float32", "operator 0 CONV_2D: hybrid (FLOAT32 input"),
        ("uint8", "operator 0 CONV_2D: UINT8 input, UINT8 weights: the kernel takes"),
    ],
)
def test_a_model_tflm_refuses_exits_3_with_our_reason(tmp_path: Path, capsys, policy, stem, why):
    """The weight copies of a model TFLM refuses cannot be proven: exit 3, as documented,
    with the reason ``tflm_refusals`` gives, not TFLM's ("Hybrid models are not
    supported" of a UINT8 convolution)."""
    from kits.refusal_models import CASES

    src = tmp_path / "m.tflite"
    if stem == "uint8":
        src.write_bytes(next(c for c in CASES if c.name == "uint8 CONV_2D").build())
    else:
        src = model_path(stem)
    out = tmp_path / "o.tflite"
    for passes in ([], ["--passes", "inplace"]):
        argv = ["plan", str(src), "--target", "xcore_ai", "--weights", policy, *passes]
        assert main([*argv, "-o", str(out)]) == 3
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Hybrid" not in err, err
        assert "the weight copies cannot be proven: TFLM refuses the original model: " in err
        assert why in err and not out.exists()


def test_the_baseline_total_is_the_baseline_policy_at_the_same_capacities() -> None:
    """ "all whole" is what ``--weights whole`` alone estimates at the same capacities
    (ResNet on xcore.ai with 40 KiB of SRAM: the activations spread, and whole copies
    cost more than unconstrained), by the same figures (TFLM's persistent data where
    it goes), and said not to fit where whole does not fit them."""
    src = read_source(model_path("mlcommons-tiny__pretrainedResnet_quant"))
    t = load_builtin("xcore_ai")

    def figures(weights: str, caps: dict[str, int], target=t):
        request = PlanRequest(src, target, caps, weights=weights, prove=False)
        return run_plan(request).figures

    caps = {"sram": 40 * 1024}
    auto, whole = figures("auto", caps), figures("whole", caps)
    assert whole.baseline == ("whole", whole.latency)
    assert auto.baseline == ("whole", whole.latency)
    free = plan_weights(src.model, t, None, None, PlanOptions(kernels=t.kernels))
    assert whole.latency > free.baseline_total  # the spread costs: not the free figure
    assert f"all whole in the same memories {whole.latency * 1e3:,.3f} ms" in weights_totals(auto)
    assert weights_totals(auto).startswith(f"estimated {auto.latency * 1e3:,.3f} ms")
    one = replace(t, memories=tuple(x for x in t.memories if x.name != "lpddr"))
    options = PlanOptions(kernels=t.kernels)
    tight = {"sram": plan_weights(src.model, one, Policy("groups"), None, options).plan.arena}
    squeezed = figures("groups", tight, one)
    assert squeezed.baseline == ("whole", None)  # whole copies need more than groups' arena
    assert "all whole does not fit the same memories" in weights_totals(squeezed)


def test_the_weights_table_numbers_operators_as_planned_and_as_given(
    tmp_path: Path, capsys
) -> None:
    """After passes that split operators, each row of the terminal's weights table
    names the operator of the model planned (as the JSON's staging buffers and
    fetch.h) and, from the JSON's ``operator_origin``, the one of the model as given."""
    src = model_path("mlcommons-tiny__vww_96_int8")
    js = tmp_path / "p.json"
    argv = ["plan", str(src), "--target", "xcore_ai", "--weights", "whole"]
    assert main([*argv, "--passes", "reorder,bands", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    data = json.loads(js.read_text())
    origin = data["operator_origin"]
    rows = data["weights"]["operators"]
    assert len(set(r["planned_operator"] for r in rows)) == len(rows) > 0
    assert "original" in out
    shown = {
        tuple(c.strip() for c in line.strip("│").split("│")[:3])
        for line in out.splitlines()
        if line.startswith("│")
    }
    for r in rows:
        op = r["planned_operator"]
        came = "new" if origin[op] is None else str(origin[op])
        assert (str(op), came, r["opcode"][:8]) in {(a, b, c[:8]) for a, b, c in shown}, r


def test_a_group_has_an_upper_limit() -> None:
    assert parse_weights("groups:65536") == Policy("groups", 65_536)
    with pytest.raises(UsageError, match="at most 65,536"):
        parse_weights("groups:99999999999")
