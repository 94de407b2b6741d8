"""Record what every ``arenaplan`` command line writes, and compare two records.

A refactor that must change no output byte is checked by recording the tree
before it and the tree after it, then comparing the two records:

    python scripts/same_outputs.py record --src /path/to/old-tree --out /tmp/rec/old
    python scripts/same_outputs.py record --src /path/to/new-tree --out /tmp/rec/new
    python scripts/same_outputs.py compare /tmp/rec/old /tmp/rec/new

``record`` runs a fixed list of cases (``CASES``). A case is one or more command
lines run in its own fresh folder ``OUT/cases/<name>``, with ``PYTHONPATH=SRC/src``
and the inputs copied into that folder under short relative names, so no absolute
path of SRC or OUT reaches an output. For each command it stores the exit code,
stdout and stderr; for the case, every file left in its folder (name, SHA-256;
the files are kept). All of it goes to ``OUT/manifest.json``.

Wall-clock figures the tool prints ("planned in 7.4 ms", solve's and explore's
seconds, solve --json's "seconds", explore's progress bar and the ``seconds``
column of its results.sqlite) and any remaining SRC/OUT path are replaced by
placeholders before hashing; the raw streams are kept beside the manifest
(``OUT/cases/<name>.raw``) for inspection. Cases marked ``timing=True`` depend on a
solver's time limit on a loaded machine: ``compare`` reports their differences
separately and does not fail on them.

The record depends on the machine as well as the tree: whether TFLM's native builds
are in the cache decides whether CMSIS-NN rewrites are proven (two cases set
``ARENAPLAN_TFLM_BUILD`` to a missing folder to record the unproven path). Compare
records made on the same machine.

``compare A B`` prints each case whose exit code, stdout, stderr or files differ,
with the first lines of a stream's diff, and exits 1 if any non-timing case
differs, else 0 with a one-line summary.

The cases need the shared models (``--models``, default ../shared/models beside the
clone) and the minimalloc benchmark (``--benchmarks``, default ../shared/benchmarks); the
tree under test must have its C extensions built (``_search``, ``_sweep``). A
record takes 10-20 minutes with ``--jobs 2`` on a loaded two-core machine.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"  # ../shared beside the clone

RUN = "import sys; from arenaplan.cli import main; sys.exit(main())"
TIMEOUT_S = 900  # per command line
MODEL = "m.tflite"  # the name every case's model is copied to

# Models the option combinations run on; every shared model gets the basic cases.
VWW = "mlcommons-tiny__vww_96_int8"
KWS = "mlcommons-tiny__kws_ref_model"
HELLO = "tflite-micro__hello_world_int8"
DSCNN = "arm-ml-examples__ds_cnn_s_quantized"
CONV = "tflite-micro__test_conv_model"
TARGETS = ("cortex_m55_ethos_u55", "esp32s3", "generic", "imxrt1170", "xcore_ai")

# A target file of our own for --target-file (sweep, plan): a small two-memory part.
TARGET_TOML = """\
name = "tiny"
description = "two memories, one of them small"
clock_hz = 100e6
tflm_profile = "arm32"
kernels = "reference"

[compute]
conv = 0.5
depthwise = 0.25
fully_connected = 0.5
elementwise = 1.0
default = 0.5

[[memory]]
name = "sram"
capacity = "96KiB"
read_bandwidth = 400e6
write_bandwidth = 400e6
latency = 1
holds = ["activations", "persistent", "weights"]

[[memory]]
name = "dram"
capacity = "8MiB"
read_bandwidth = 50e6
write_bandwidth = 50e6
latency = 30
holds = ["activations", "persistent", "weights"]
"""
TOML = (("t.toml", TARGET_TOML.encode()),)


@dataclass(frozen=True)
class Case:
    """Command lines (argv after ``arenaplan``) run in order in one folder."""

    name: str
    steps: tuple[tuple[str, ...], ...]
    model: str | None = None  # shared model stem copied to m.tflite
    files: tuple[tuple[str, bytes], ...] = ()  # (name, content) written first
    shared: tuple[tuple[str, str], ...] = ()  # (name, path under --benchmarks)
    timing: bool = False  # depends on a time limit: differences do not fail
    env: tuple[tuple[str, str], ...] = ()  # extra environment (relative paths: the folder's)


def _one(name: str, *argv: str, **kw) -> Case:
    return Case(name, (tuple(argv),), **kw)


def _basic_cases(models: list[str]) -> list[Case]:
    out = []
    for m in models:
        args = ("-o", "p.tflite", "--json", "p.json", "--header", "p.h")
        out.append(_one(f"plan-basic--{m}", "plan", MODEL, *args, model=m))
        out.append(_one(f"inspect--{m}", "inspect", MODEL, model=m))
        report = ("--report", "r.html", "--picture", "p.svg", "-q")
        out.append(_one(f"plan-report--{m}", "plan", MODEL, *report, model=m))
        target = ("--target", "imxrt1170", "--json", "p.json", "--planner-cpp", "p.cc")
        out.append(_one(f"plan-imxrt1170--{m}", "plan", MODEL, *target, model=m))
        passes = ("--passes", "reorder,inplace,bands", "-o", "p.tflite", "--json", "p.json")
        out.append(_one(f"plan-passes--{m}", "plan", MODEL, *passes, model=m))
    return out


def _plan_rich(m: str) -> list[Case]:
    def p(tag: str, *argv: str, files: tuple = ()) -> Case:
        return _one(f"plan-{tag}--{m}", "plan", MODEL, *argv, model=m, files=files)

    cases = [
        p("picture-report", "--picture", "p.svg", "--report", "r.html", "--json", "-"),
        p("png", "-o", "p.tflite", "--picture", "p.png", "-q"),
        p("json", "--json", "p.json"),
        p("cmsis", "--kernels", "cmsis_nn", "--json", "p.json", "--header", "p.h"),
        p("dsp", "--kernels", "cmsis_nn+dsp", "--json", "p.json"),
        p("mve", "--kernels", "cmsis_nn+mve", "--json", "p.json"),
        p("int32", "--profile", "int32", "--header", "p.h"),
        p("pypi", "--profile", "pypi", "--header", "p.h", "-o", "p.tflite"),
        p("greedy", "--allocator", "greedy", "--json", "p.json"),
        p("tflm-greedy", "--allocator", "tflm-greedy", "--json", "p.json"),
        p("exact", "--allocator", "exact", "--time-limit", "30", "--json", "p.json"),
        p("portfolio", "--allocator", "portfolio", "--time-limit", "30", "--json", "p.json"),
    ]
    for t in TARGETS:
        files = ("--json", "p.json", "--header", "p.h", "--planner-cpp", "p.cc", "-o", "p.tflite")
        cases.append(p(f"target-{t}", "--target", t, *files))
    tcm = ("--target", "imxrt1170", "--memory", "tcm=32KiB")
    cases += [
        p("spread", *tcm, "--json", "p.json", "--planner-cpp", "p.cc", "--report", "r.html"),
        p("arena-ocram", "--target", "imxrt1170", "--arena-memory", "ocram", "--json", "p.json"),
        p(
            "persistent-ocram",
            *("--target", "imxrt1170", "--persistent-memory", "ocram"),
            *("--header", "p.h", "--planner-cpp", "p.cc", "--json", "p.json"),
        ),
        p("esp-sram", "--target", "esp32s3", "--memory", "sram=64KiB", "--json", "p.json"),
        p("weights-whole", "--target", "imxrt1170", "--weights", "whole", "--json", "p.json"),
        p(
            "weights-groups",
            *("--target", "imxrt1170", "--weights", "groups:8", "--json", "p.json"),
            *("--weights-blob", "w.bin", "--schedule", "s.h", "-o", "p.tflite"),
        ),
        p(
            "weights-double",
            *("--target", "imxrt1170", "--weights", "groups:16,double"),
            *("--weights-blob", "w.bin", "--schedule", "s.h", "--json", "p.json"),
        ),
        p("weights-inplace", "--target", "esp32s3", "--weights", "in-place", "--json", "p.json"),
        p(
            "weights-auto",
            *("--target", "xcore_ai", "--weights", "auto", "--report", "r.html"),
            *("--json", "p.json", "--weights-blob", "w.bin", "--schedule", "s.h"),
        ),
        p("target-file", "--target-file", "t.toml", "--json", "p.json", files=TOML),
    ]
    return cases


# No TFLM built from source: CMSIS-NN rewrites cannot be proven (a folder never made).
NO_BUILDS = (("ARENAPLAN_TFLM_BUILD", "no-builds"),)


def _rewrite_cases() -> list[Case]:
    """Rewrites are proven in TFLM: few, on small models."""
    out = "-o", "p.tflite", "--json", "p.json"
    return [
        _one("passes-list", "passes"),
        _one(f"plan-bands--{CONV}", "plan", MODEL, "--passes", "bands", *out, model=CONV),
        _one(
            f"plan-bands-inplace--{CONV}",
            *("plan", MODEL, "--passes", "bands,inplace", *out),
            model=CONV,
        ),
        _one(f"plan-reorder--{KWS}", "plan", MODEL, "--passes", "reorder", *out, model=KWS),
        _one(
            f"plan-inplace-clobber--{DSCNN}",
            *("plan", MODEL, "--passes", "inplace", "--clobber-inputs", *out),
            model=DSCNN,
        ),
        _one(
            f"plan-fit--{CONV}",
            "plan",
            MODEL,
            "--fit",
            "9000",
            "--profile",
            "arm32",
            *out,
            model=CONV,
        ),
        _one(f"plan-fit-too-small--{CONV}", "plan", MODEL, "--fit", "1KiB", *out, model=CONV),
        _one(
            f"plan-max-extra-macs--{CONV}",
            *("plan", MODEL, "--passes", "bands", "--max-extra-macs", "30", *out),
            model=CONV,
        ),
        _one(
            f"plan-cmsis-unproven--{CONV}",
            *("plan", MODEL, "--passes", "bands", "--kernels", "cmsis_nn", "--write-unproven"),
            *out,
            model=CONV,
        ),
        _one(
            f"plan-all-passes--{HELLO}",
            "plan",
            MODEL,
            "--passes",
            "reorder,inplace,bands",
            *out,
            model=HELLO,
        ),
        Case(
            f"verify--{HELLO}",
            (("plan", MODEL, "-o", "p.tflite", "-q"), ("verify", MODEL, "p.tflite")),
            model=HELLO,
        ),
        _one(
            f"plan-cmsis-bands--{KWS}",
            *("plan", MODEL, "--passes", "bands,inplace", "--kernels", "cmsis_nn", *out),
            model=KWS,
        ),
        _one(
            f"plan-dsp-inplace--{DSCNN}",
            *("plan", MODEL, "--passes", "inplace", "--kernels", "cmsis_nn+dsp", *out),
            model=DSCNN,
        ),
        _one(
            f"plan-mve-bands--{CONV}",
            *("plan", MODEL, "--passes", "bands", "--kernels", "cmsis_nn+mve", *out),
            model=CONV,
        ),
        _one(
            f"plan-weights-passes--{DSCNN}",
            *("plan", MODEL, "--target", "imxrt1170", "--weights", "whole"),
            *("--passes", "inplace", "--clobber-inputs", *out),
            model=DSCNN,
        ),
        _one(
            f"plan-weights-proof--{VWW}",
            *("plan", MODEL, "--target", "generic", "--weights", "whole", *out),
            model=VWW,
        ),
        Case(
            f"verify-trials--{KWS}",
            (
                ("plan", MODEL, "-o", "p.tflite", "-q"),
                ("verify", MODEL, "p.tflite", "--trials", "2", "--seed", "7"),
            ),
            model=KWS,
        ),
        _one(
            f"plan-cmsis-no-build--{CONV}",
            *("plan", MODEL, "--passes", "bands", "--kernels", "cmsis_nn", *out),
            model=CONV,
            env=NO_BUILDS,
        ),
        _one(
            f"plan-cmsis-no-build-unproven--{CONV}",
            *("plan", MODEL, "--passes", "bands", "--kernels", "cmsis_nn", "--write-unproven"),
            *out,
            model=CONV,
            env=NO_BUILDS,
        ),
        _one("demo-no-verify", "demo", "--out-dir", "d", "--no-verify"),
        _one("demo", "demo", "--out-dir", "d"),
    ]


# MicroProfiler Log() output of DSCNN's operators, two invocations, under two placements
# of xcore_ai (made-up ticks, slower in LPDDR).
DSCNN_OPS = (
    ("QUANTIZE", "RESHAPE")
    + ("CONV_2D", "DEPTHWISE_CONV_2D") * 4
    + ("CONV_2D", "AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX", "DEQUANTIZE")
)
TICKS = {
    "CONV_2D": 400000,
    "DEPTHWISE_CONV_2D": 90000,
    "FULLY_CONNECTED": 3000,
    "AVERAGE_POOL_2D": 8000,
}
CALIBRATE_RUNS = tuple(
    f"run_{m}.log@activations={m},persistent={m},weights={m}" for m in ("sram", "lpddr")
)


def _calibrate_logs() -> tuple[tuple[str, bytes], ...]:
    logs = []
    for memory, factor in (("sram", 1.0), ("lpddr", 1.7)):
        lines = ["MicroInterpreter ready"]
        for run in range(2):
            for k, op in enumerate(DSCNN_OPS):
                ticks = round(TICKS.get(op, 500) * factor * (1 + 0.01 * k) + 7 * run)
                lines.append(f"{op} took {ticks} ticks (0 ms).")
        logs.append((f"run_{memory}.log", ("\n".join(lines) + "\n").encode()))
    return tuple(logs)


POOL = ("--target", "imxrt1170", "--sram", "2KiB..64KiB:4", "--out", "x")


def _other_cases() -> list[Case]:
    solve = (("p.csv", "minimalloc/input.12.csv"),)
    hard = (("p.csv", "minimalloc/D.1048576.csv"),)
    cases = [
        _one("targets", "targets"),
        *[_one(f"targets-{t}", "targets", t) for t in TARGETS],
        _one("targets-file", "targets", "--file", "t.toml", files=TOML),
        _one("targets-unknown", "targets", "nowhere"),
        _one("solve", "solve", "p.csv", "-o", "s.csv", shared=solve),
        _one("solve-json", "solve", "p.csv", "--json", shared=solve),
        _one("solve-cap-ok", "solve", "p.csv", "--capacity", "12", "-q", shared=solve),
        _one("solve-cap-infeasible", "solve", "p.csv", "--capacity", "11", shared=solve),
        _one(
            "solve-disable",
            "solve",
            "p.csv",
            "--disable",
            "canonical,dominance",
            "-o",
            "s.csv",
            shared=solve,
        ),
        _one("solve-disable-bad", "solve", "p.csv", "--disable", "magic", shared=solve),
        _one("solve-time-limit-bad", "solve", "p.csv", "--time-limit", "-1", shared=solve),
        _one("solve-capacity-bad", "solve", "p.csv", "--capacity", "-1", shared=solve),
        _one(
            "solve-hard-time-limit",
            "solve",
            "p.csv",
            "--capacity",
            "986112",
            "--time-limit",
            "0.3",
            "-q",
            shared=hard,
            timing=True,
        ),
        _one(
            "solve-bad-csv",
            "solve",
            "p.csv",
            "-o",
            "s.csv",
            files=(("p.csv", b"id,lower,upper\na,0,1\n"),),
        ),
        _one(
            "solve-2kb",
            "solve",
            "p.csv",
            "--capacity",
            "2KB",
            files=(("p.csv", b"id,lower,upper,size\na,0,2,1024\nb,1,3,1024\n"),),
        ),
    ]
    for m in (VWW, KWS):
        cases.append(_one(f"sweep--{m}", "sweep", MODEL, "--points", "4", model=m))
    cases += [
        _one(
            f"sweep-esp-svg--{VWW}",
            "sweep",
            MODEL,
            "--target",
            "esp32s3",
            "--points",
            "4",
            "--plot",
            "p.svg",
            model=VWW,
        ),
        _one(
            f"sweep-png--{HELLO}", "sweep", MODEL, "--points", "3", "--plot", "p.png", model=HELLO
        ),
        _one(
            f"sweep-target-file--{DSCNN}",
            "sweep",
            MODEL,
            "--target-file",
            "t.toml",
            "--points",
            "4",
            model=DSCNN,
            files=TOML,
        ),
        _one(f"sweep-points-bad--{HELLO}", "sweep", MODEL, "--points", "1", model=HELLO),
        _one(f"sweep-points-many--{HELLO}", "sweep", MODEL, "--points", "40", model=HELLO),
        _one(f"sweep-gif--{HELLO}", "sweep", MODEL, "--plot", "p.gif", model=HELLO),
        _one(f"sweep-target-unknown--{HELLO}", "sweep", MODEL, "--target", "nowhere", model=HELLO),
        Case(
            f"explore--{HELLO}",
            (
                (
                    "explore",
                    MODEL,
                    "--target",
                    "generic,esp32s3",
                    "--sram",
                    "4KiB,64KiB",
                    "--passes",
                    "none,bands",
                    "--weights",
                    "none,auto",
                    "--out",
                    "x",
                    "--backend",
                    "inprocess",
                    "--time-limit",
                    "10",
                    "-q",
                ),
                ("explore", "--report", "x", "-o", "x.html", "-q"),
            ),
            model=HELLO,
        ),
        Case(  # the default backend, a process pool
            f"explore-pool--{CONV}",
            (
                ("explore", MODEL, *POOL),
                ("explore", MODEL, *POOL, "-q"),  # a rerun: every task done
            ),
            model=CONV,
        ),
        _one(f"explore-workers--{CONV}", "explore", MODEL, *POOL, "--workers", "2", model=CONV),
        _one(f"profile--{KWS}", "profile", MODEL, model=KWS),
        _one(f"profile-json-all--{VWW}", "profile", MODEL, "--all", "--json", "t.json", model=VWW),
        _one(f"profile-stdout--{HELLO}", "profile", MODEL, "--json", "-", model=HELLO),
        _one(
            f"inspect-all-cmsis--{DSCNN}",
            "inspect",
            MODEL,
            "--all",
            "--kernels",
            "cmsis_nn",
            model=DSCNN,
        ),
        _one(
            f"inspect-all-mve--{VWW}",
            "inspect",
            MODEL,
            "--all",
            "--kernels",
            "cmsis_nn+mve",
            model=VWW,
        ),
        Case(
            f"calibrate--{DSCNN}",
            (
                ("calibrate", *CALIBRATE_RUNS, "--model", MODEL, "-o", "t.toml"),
                ("plan", MODEL, "--target-file", "t.toml", "--report", "r.html", "-q"),
            ),
            model=DSCNN,
            files=_calibrate_logs(),
        ),
        _one(
            f"calibrate-per-opcode--{DSCNN}",
            *("calibrate", *CALIBRATE_RUNS, "--model", MODEL, "-o", "t.toml", "--per-opcode"),
            *("--ticks-per-second", "300e6"),
            model=DSCNN,
            files=_calibrate_logs(),
        ),
        _one(
            f"calibrate-bad-memory--{DSCNN}",
            *("calibrate", "run_sram.log@activations=ddr", "--model", MODEL, "-o", "t.toml"),
            model=DSCNN,
            files=_calibrate_logs(),
        ),
        _one(
            f"calibrate-no-log--{VWW}",
            "calibrate",
            "run.log",
            "--model",
            MODEL,
            "-o",
            "t.toml",
            model=VWW,
        ),
        _one(
            f"calibrate-empty--{VWW}",
            "calibrate",
            "e.log",
            "--model",
            MODEL,
            "-o",
            "t.toml",
            model=VWW,
            files=(("e.log", b"nothing here\n"),),
        ),
        _one("demo-out-is-file", "demo", "--out-dir", "f", files=(("f", b"x"),)),
        _one("no-command"),
        _one("version", "--version"),
    ]
    return cases


def _error_cases() -> list[Case]:
    def e(tag: str, *argv: str, model: str | None = HELLO, files=()) -> Case:
        return _one(f"error-{tag}", "plan", *argv, model=model, files=files)

    junk = (("bad.tflite", b"hello, this is not a model at all\n"),)
    return [
        e("allocator", MODEL, "--allocator", "best"),
        e("time-limit-nan", MODEL, "--time-limit", "nan"),
        e("missing-file", "nope.tflite", model=None),
        e("empty-file", "bad.tflite", "-o", "o.tflite", files=(("bad.tflite", b""),)),
        e("text-file", "bad.tflite", "-o", "o.tflite", "--json", "p.json", files=junk),
        e("png-file", "bad.tflite", files=(("bad.tflite", b"\x89PNG\r\n\x1a\n" + bytes(64)),)),
        e("outside", "bad.tflite", files=(("bad.tflite", b"\x10\x00\x00\x00TFL3"),)),
        e("overwrite-input", MODEL, "-o", MODEL),
        e("json-is-output", MODEL, "-o", "a.tflite", "--json", "a.tflite"),
        e("picture-missing-dir", MODEL, "-o", "a.tflite", "--picture", "no/p.png"),
        e("picture-gif", MODEL, "--picture", "p.gif"),
        e("header-is-dir", MODEL, "-o", "a.tflite", "--header", "."),
        e("output-stdout", MODEL, "-o", "-"),
        e("json-stdout", MODEL, "--json", "-"),
        e("memory-no-target", MODEL, "--memory", "tcm=1KiB"),
        e("memory-no-eq", MODEL, "--target", "imxrt1170", "--memory", "tcm"),
        e("memory-unknown", MODEL, "--target", "imxrt1170", "--memory", "dram=1KiB"),
        e("memory-not-size", MODEL, "--target", "imxrt1170", "--memory", "tcm=lots"),
        e("memory-tiny", MODEL, "--target", "imxrt1170", "--memory", "tcm=1", model=VWW),
        e("memory-flash", MODEL, "--target", "esp32s3", "--memory", "flash=32KiB"),
        e("memory-too-big", MODEL, "--target", "esp32s3", "--memory", "sram=4MiB"),
        e(
            "memory-twice",
            MODEL,
            "--target",
            "esp32s3",
            "--memory",
            "sram=1KB",
            "--memory",
            "sram=2KB",
        ),
        e("target-and-file", MODEL, "--target", "generic", "--target-file", "t.toml"),
        e("target-unknown", MODEL, "--target", "nowhere"),
        e("planner-cpp-no-target", MODEL, "--planner-cpp", "p.h"),
        e("arena-memory-no-target", MODEL, "--arena-memory", "sram"),
        e(
            "arena-memory-not-fast",
            MODEL,
            "--target",
            "imxrt1170",
            "--memory",
            "tcm=32KiB",
            "--arena-memory",
            "ocram",
            model=VWW,
        ),
        e("arena-memory-flash", MODEL, "--target", "esp32s3", "--arena-memory", "flash"),
        e("persistent-no-target", MODEL, "--persistent-memory", "sram"),
        e("passes-unknown", MODEL, "--passes", "bands,fold"),
        e("max-extra-macs-bad", MODEL, "--max-extra-macs", "ten"),
        e("fit-bad", MODEL, "--fit", "lots"),
        e("weights-no-target", MODEL, "--weights", "auto"),
        e("weights-bogus", MODEL, "--target", "xcore_ai", "--weights", "bogus"),
        e("weights-inplace-unmapped", MODEL, "--target", "xcore_ai", "--weights", "in-place"),
        e("weights-fit", MODEL, "--target", "xcore_ai", "--weights", "auto", "--fit", "64KiB"),
        e("schedule-no-weights", MODEL, "--target", "xcore_ai", "--schedule", "f.h"),
        e("kernels-bad", MODEL, "--kernels", "fast"),
        e("profile-bad", MODEL, "--profile", "x86"),
        e("unknown-option", MODEL, "--frobnicate"),
        _one("error-inspect-missing", "inspect", "nope.tflite"),
        _one("error-inspect-text", "inspect", "bad.tflite", files=junk),
        _one("error-verify-missing", "verify", "a.tflite", "b.tflite"),
        _one("error-sweep-missing", "sweep", "nope.tflite"),
        _one("error-profile-text", "profile", "bad.tflite", files=junk),
    ]


def all_cases(models_dir: Path) -> list[Case]:
    """The fixed list; names are unique and safe as folder names."""
    shared = sorted(p.stem for p in models_dir.glob("*.tflite"))
    cases = _basic_cases(shared)
    for m in (VWW, KWS, HELLO, DSCNN):
        cases += _plan_rich(m)
    cases += _rewrite_cases() + _other_cases() + _error_cases()
    names = [c.name for c in cases]
    if len(names) != len(set(names)):
        raise SystemExit(
            f"duplicate case names: {sorted({n for n in names if names.count(n) > 1})}"
        )
    return cases


# ---- normalising ------------------------------------------------------------------

# Wall-clock figures the tool prints: they differ from run to run by nature.
_TIMES = [
    (re.compile(r"planned in \d+(?:\.\d+)? ms"), "planned in <T> ms"),
    (re.compile(r"nodes, \d+(?:\.\d+)? s"), "nodes, <T> s"),
    (re.compile(r"^ *\d+\.\ds cap", re.M), "<T>s cap"),
    (re.compile(r"buffers in \d+\.\d+ s"), "buffers in <T> s"),
    (re.compile(r'"seconds": [0-9.e+-]+'), '"seconds": "<T>"'),  # solve --json
    (re.compile(r"[0-9.]+ tasks/s"), "<R> tasks/s"),  # explore's progress bar
    (re.compile(r"\d+:\d\d:\d\d eta [-\d:]+"), "<T> eta <T>"),
    (
        re.compile(r"in \d+\.\d s on (\w+); \d+\.\d s of work: \d+\.\d+x one process"),
        r"in <T> s on \1; <T> s of work: <X>x one process",
    ),
]


def normalise(text: str, roots: list[str]) -> str:
    for root in sorted(roots, key=len, reverse=True):
        text = text.replace(root, "<ROOT>")
    for pattern, repl in _TIMES:
        text = pattern.sub(repl, text)
    return text


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- recording --------------------------------------------------------------------


@dataclass
class Env:
    src: Path  # the tree under test
    out: Path  # the record's folder
    models: Path
    benchmarks: Path
    roots: list[str] = field(default_factory=list)


def _prepare(case: Case, folder: Path, env: Env) -> set[str]:
    """Fresh folder with the case's inputs; returns the inputs' names."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    inputs = set()
    if case.model:
        shutil.copyfile(env.models / f"{case.model}.tflite", folder / MODEL)
        inputs.add(MODEL)
    for name, rel in case.shared:
        shutil.copyfile(env.benchmarks / rel, folder / name)
        inputs.add(name)
    for name, content in case.files:
        (folder / name).write_bytes(content)
        inputs.add(name)
    return inputs


def _run_step(argv: tuple[str, ...], folder: Path, env: Env, extra: dict[str, str]) -> dict:
    environ = dict(os.environ, PYTHONPATH=str(env.src / "src"), COLUMNS="200", LINES="50")
    environ.update(extra)
    environ.pop("PYTHONSTARTUP", None)
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUN, *argv],
            cwd=folder,
            env=environ,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = "timeout", exc.stdout or b"", exc.stderr or b""
    seconds = time.monotonic() - start
    text_out = normalise(out.decode("utf-8", "replace"), env.roots)
    text_err = normalise(err.decode("utf-8", "replace"), env.roots)
    return {
        "argv": list(argv),
        "exit": code,
        "stdout": text_out,
        "stderr": text_err,
        "raw_out": out.decode("utf-8", "replace"),
        "raw_err": err.decode("utf-8", "replace"),
        "seconds": round(seconds, 2),
    }


def _sqlite_dump(path: Path) -> bytes:
    """Every table's rows in key order, the wall-clock column ``seconds`` blanked."""
    lines = []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        tables = db.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
        for name, sql in tables:
            lines.append(f"{name}: {sql}")
            if not (sql or "").startswith("CREATE TABLE"):
                continue
            cursor = db.execute(f'SELECT * FROM "{name}" ORDER BY 1')
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                values = ["<T>" if c == "seconds" else v for c, v in zip(columns, row, strict=True)]
                lines.append(repr(values))
    return "\n".join(lines).encode()


def _file_entry(path: Path, env: Env) -> dict:
    data = path.read_bytes()
    entry = {"sha256": _sha(data), "bytes": len(data)}
    if path.suffix == ".sqlite":
        entry["sha256_normalised"] = _sha(_sqlite_dump(path))
        return entry
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return entry
    normal = normalise(text, env.roots).encode()
    if normal != data:
        entry["sha256_normalised"] = _sha(normal)
    return entry


def record_case(case: Case, env: Env) -> dict:
    folder = env.out / "cases" / case.name
    inputs = _prepare(case, folder, env)
    steps = [_run_step(argv, folder, env, dict(case.env)) for argv in case.steps]
    raw = {k: [s.pop(k) for s in steps] for k in ("raw_out", "raw_err")}
    (env.out / "cases" / f"{case.name}.raw").write_text(json.dumps(raw, indent=1))
    files = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.is_file() and name not in inputs:
            files[name] = _file_entry(path, env)
    return {"timing": case.timing, "steps": steps, "files": files}


def record(args: argparse.Namespace) -> int:
    src, out = Path(args.src).resolve(), Path(args.out).resolve()
    env = Env(src, out, Path(args.models), Path(args.benchmarks))
    env.roots = [str(src), str(out), str(env.models.resolve()), str(env.benchmarks.resolve())]
    if out.exists():
        shutil.rmtree(out)
    (out / "cases").mkdir(parents=True)
    cases = [c for c in all_cases(env.models) if re.search(args.only or "", c.name)]
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = dict(
            zip(
                [c.name for c in cases], pool.map(lambda c: record_case(c, env), cases), strict=True
            )
        )
    manifest = {
        "src": "<ROOT>",
        "python": sys.version.split()[0],
        "cases": results,
        "seconds": round(time.monotonic() - start, 1),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    print(f"recorded {len(cases)} cases in {manifest['seconds']:.0f} s into {out}")
    return 0


# ---- comparing --------------------------------------------------------------------


def _file_key(folder: Path, name: str, entry: dict) -> str:
    """The hash compared: of the normalised content when normalising changed it.
    A kept SQLite file is dumped again (records made before its normalisation)."""
    if name.endswith(".sqlite") and (folder / name).exists():
        return _sha(_sqlite_dump(folder / name))
    return entry.get("sha256_normalised", entry["sha256"])


def _stream_diff(a: str, b: str, limit: int = 8) -> list[str]:
    lines = difflib.unified_diff(a.splitlines(), b.splitlines(), "A", "B", lineterm="", n=1)
    return [f"      {line}" for line in list(lines)[2 : 2 + limit]]


def diff_case(a: dict, b: dict, folders: tuple[Path, Path]) -> list[str]:
    """What differs between two records of one case, one line each (plus diffs)."""
    out = []
    if len(a["steps"]) != len(b["steps"]):
        return ["    number of steps"]
    for k, (sa, sb) in enumerate(zip(a["steps"], b["steps"], strict=True)):
        tag = f"step {k + 1} ({' '.join(sa['argv'][:1])})" if len(a["steps"]) > 1 else ""
        if sa["exit"] != sb["exit"]:
            out.append(f"    {tag} exit code {sa['exit']} != {sb['exit']}".replace("  ", " ", 1))
        for stream in ("stdout", "stderr"):
            # normalised again: a record made before a rule was added
            ta, tb = normalise(sa[stream], []), normalise(sb[stream], [])
            if ta != tb:
                out.append(f"    {tag} {stream}".replace("  ", " ", 1))
                out += _stream_diff(ta, tb)
    fa, fb = a["files"], b["files"]
    for name in sorted(set(fa) | set(fb)):
        if name not in fa or name not in fb:
            out.append(f"    file {name} only in {'A' if name in fa else 'B'}")
        elif _file_key(folders[0], name, fa[name]) != _file_key(folders[1], name, fb[name]):
            out.append(f"    file {name} ({fa[name]['bytes']} vs {fb[name]['bytes']} bytes)")
    return out


def compare(args: argparse.Namespace) -> int:
    ra, rb = (
        json.loads((Path(d) / "manifest.json").read_text())["cases"] for d in (args.a, args.b)
    )
    failing, timing = 0, 0
    for name in sorted(set(ra) | set(rb)):
        if name not in ra or name not in rb:
            print(f"{name}: only in {'A' if name in ra else 'B'}")
            failing += 1
            continue
        folders = (Path(args.a) / "cases" / name, Path(args.b) / "cases" / name)
        lines = diff_case(ra[name], rb[name], folders)
        if not lines:
            continue
        is_timing = ra[name]["timing"] or rb[name]["timing"]
        print(f"{name}: differs{' (timing-dependent, not failing)' if is_timing else ''}")
        print("\n".join(lines))
        timing += is_timing
        failing += not is_timing
    total = len(set(ra) | set(rb))
    if failing:
        print(f"{failing} of {total} cases differ ({timing} timing-dependent cases also differ)")
        return 1
    print(f"all {total} cases identical ({timing} timing-dependent cases differ, not failing)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run every case against a tree")
    rec.add_argument("--src", required=True, help="the tree under test (holds src/arenaplan)")
    rec.add_argument("--out", required=True, help="folder of the record (replaced)")
    rec.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    rec.add_argument("--models", default=str(SHARED / "models"))
    rec.add_argument("--benchmarks", default=str(SHARED / "benchmarks"))
    rec.add_argument("--only", help="regular expression: record only the cases it matches")
    cmp = sub.add_parser("compare", help="compare two records")
    cmp.add_argument("a")
    cmp.add_argument("b")
    args = parser.parse_args()
    return record(args) if args.command == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
