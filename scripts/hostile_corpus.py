"""Hostile-input corpus: seeded bad inputs through every command of arenaplan.

The corpus (``generate``; the same seed gives the same files, byte for byte):

- corrupted models: byte-level mutations (bit flips, zeroed ranges, inflated
  lengths, redirected flatbuffer offsets, truncation) of the models the project
  builds (demo, DS-CNN M, MobileNetV1 0.25, a small int8 net) and of the real models
  of ../shared/models;
- structurally wrong models written with the project's own writer: a cycle, a use
  before definition, an output shape that does not follow from the inputs, a dim of
  2**31-1, zero and negative dims, a tensor index out of range, an operator writing
  a constant, two producers of one tensor, an empty subgraph, no subgraphs, no
  operators, an unknown custom operator, a builtin TFLM does not have; constants
  whose buffers hold more bytes than their shapes say (TFLM reads only those: each
  command must do as it does with the exact buffers) or fewer (refused in one line);
- bad command lines per command: out-of-range numbers, nan and inf, unknown names,
  outputs that are not regular files (a FIFO, a socket, a symbolic link, a folder,
  all made inside the corpus folder; never a device), the input as output, missing
  folders, an input that is a FIFO or a folder;
- bad side inputs: target TOMLs (nan, inf, negative, zero, missing fields), profiler
  logs for ``calibrate`` (header only, zero, negative and huge ticks, unknown tags),
  minimalloc CSVs for ``solve`` (negative, overlapping, huge).

Each case is one command line with a command and a class. The runner (``run_case``)
runs it in process through ``arenaplan.cli.main`` under a SIGALRM time limit, or, for
a subset, as a child process (real exit statuses, signals, a SIGKILL in the middle
after which the command's whole process group must end), and checks: the exit status
is not 70 (internal error) nor a signal and is one the case allows; no traceback; a
one-line message for exit 2; no hang (the time limit is a failure); on failure the
case's output folder is exactly as before; no temporary file left; no file given
as an input, nor any file outside the case's output folder, created, changed or
removed. It prints a table of counts per command and class.

    python scripts/hostile_corpus.py                      # the CI-sized corpus
    python scripts/hostile_corpus.py --size full          # 1,500 mutations, 4 commands each
    python scripts/hostile_corpus.py --size full --seed 7 --keep /tmp/corpus --timeout 120

Exit status 0 when every case passes, 1 otherwise (each bad case printed with its
command line, relative to the corpus folder it prints).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:  # run from a clone without an install
    sys.path.insert(0, str(SRC))

from arenaplan.builder import demo_model  # noqa: E402
from arenaplan.builder.ds_cnn import ds_cnn  # noqa: E402
from arenaplan.builder.int8_net import Int8Net  # noqa: E402
from arenaplan.builder.mobilenet import mobilenet_v1  # noqa: E402
from arenaplan.export.tflite_writer import write_model  # noqa: E402
from arenaplan.ir.dtypes import DType  # noqa: E402
from arenaplan.ir.model import Model, Operator, Subgraph  # noqa: E402
from arenaplan.reader import read_model_bytes  # noqa: E402

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
TARGETS = Path(__file__).resolve().parents[1] / "src" / "arenaplan" / "targets" / "builtin"
ANY = (0, 1, 2, 3)  # exits a case may end with unless it says otherwise
REFUSED = (2,)
TMP_MARK = ".arenaplan-"  # temporary and probe files of arenaplan's outputs carry it
EXIT_INTERNAL = 70
SIZES = {  # corpus sizes: mutated models, commands each mutated model goes through
    "ci": {"mutations": 160, "per_model": 2, "shared_max_bytes": 60_000},
    "full": {"mutations": 1500, "per_model": 4, "shared_max_bytes": 10**9},
}


@dataclass(frozen=True)
class Case:
    """One command line of the corpus; paths are relative to the corpus folder."""

    id: str  # unique; also the name of the case's output folder under out/
    command: str  # the table's row (an arenaplan command and its main options)
    klass: str  # the kind of hostile input
    argv: tuple[str, ...]
    inputs: tuple[str, ...] = ()  # files the case reads: must be unchanged after it
    expect: tuple[int, ...] = ANY  # exit statuses it may end with
    child: bool = False  # run as a child process, not in process
    kill_after: float = 0.0  # child: SIGKILL it after these seconds, then run it again
    tflm: bool = False  # needs the TFLM runtime (verify, or a rewrite proven in it)
    shared: bool = False  # made from ../shared/models

    @property
    def out(self) -> str:
        return f"out/{self.id}"


# ---------------------------------------------------------------- corrupted models


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One corruption of ``data`` (the kinds a fuzzer of flatbuffers tries): its kind
    and the bytes."""
    b = bytearray(data)
    n = len(b)
    kind = rng.choice(("flip", "zero", "inflate", "offset", "truncate"))
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(n)] ^= 1 << rng.randrange(8)
    elif kind == "zero":
        at, width = rng.randrange(n), rng.randint(1, 64)
        b[at : at + width] = bytes(len(b[at : at + width]))
    elif kind == "inflate":  # a vector length or count made huge
        at = rng.randrange(0, n - 4) & ~3
        value = rng.choice((0x7FFFFFFF, 0xFFFFFFFF, 1 << 20, rng.randrange(1 << 31)))
        b[at : at + 4] = value.to_bytes(4, "little")
    elif kind == "offset":  # a flatbuffer offset pointed somewhere else in the file
        at = rng.randrange(0, n - 4) & ~3
        b[at : at + 4] = (rng.randrange(n) & ~3).to_bytes(4, "little")
    else:
        del b[rng.randrange(8, n) :]
    return kind, bytes(b)


def small_int8_net() -> bytes:
    """A small int8 network: CONV 3x3 -> DEPTHWISE 3x3 -> ADD (residual) -> MAX_POOL
    -> RESHAPE -> FULLY_CONNECTED, 16 x 16 x 4 input."""
    n = Int8Net("hostile_int8_net")
    x = n.act((1, 16, 16, 4))
    same = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"}
    y = n.act((1, 16, 16, 8))
    n.b.add_operator("CONV_2D", [x, n.weights((8, 3, 3, 4), 0), n.bias(8)], [y], same)
    d = n.act((1, 16, 16, 8))
    dw = n.weights((1, 3, 3, 8), 3)
    n.b.add_operator("DEPTHWISE_CONV_2D", [y, dw, n.bias(8)], [d], {**same, "depth_multiplier": 1})
    s = n.act((1, 16, 16, 8))
    n.b.add_operator("ADD", [y, d], [s])
    p = n.act((1, 8, 8, 8))
    pool = {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2}
    n.b.add_operator("MAX_POOL_2D", [s], [p], pool)
    shape = n.b.add_tensor("shape", (2,), DType.INT32, data=np.array([1, 512], np.int32))
    r = n.act((1, 512))
    n.b.add_operator("RESHAPE", [p, shape], [r], {"new_shape": (1, 512)})
    out = n.act((1, 10))
    n.b.add_operator("FULLY_CONNECTED", [r, n.weights((10, 512), 0), n.bias(10)], [out])
    n.b.set_io([x], [out])
    return n.b.finish()


def huge_conv(rows: int = 2**31 - 1) -> bytes:
    """One SAME, stride-1 CONV_2D whose input and output have ``rows`` rows: shapes
    that follow from each other, in a file of under a kilobyte."""
    n = Int8Net("hostile_huge_conv")
    x = n.act((1, rows, 1, 1))
    y = n.act((1, rows, 1, 1))
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "NONE"}
    n.b.add_operator("CONV_2D", [x, n.weights((1, 3, 3, 1), 0), n.bias(1)], [y], opts)
    n.b.set_io([x], [y])
    return n.b.finish()


def built_models() -> dict[str, bytes]:
    """The models the project builds, by name (deterministic bytes)."""
    return {
        "demo": demo_model(),
        "ds_cnn_m": ds_cnn("M"),
        "mobilenet_v1_025_32": mobilenet_v1(0.25, 32, 1, 10),
        "int8_net": small_int8_net(),
    }


# ---------------------------------------------------------------- wrong models


def _with_ops(model: Model, ops: Sequence[Operator], **changes) -> Model:
    sg = model.subgraphs[0]
    ops = tuple(replace(op, index=k) for k, op in enumerate(ops))
    return replace(model, subgraphs=(replace(sg, operators=ops, **changes),))


def _with_shape(model: Model, tensor: int, shape: tuple[int, ...]) -> Model:
    sg = model.subgraphs[0]
    tensors = list(sg.tensors)
    tensors[tensor] = replace(tensors[tensor], shape=shape)
    return replace(model, subgraphs=(replace(sg, tensors=tuple(tensors)),))


def _first(model: Model, opcode: str) -> Operator:
    return next(op for op in model.subgraphs[0].operators if op.opcode == opcode)


def wrong_models(model: Model) -> dict[str, Model]:
    """Structurally wrong variants of a built model (first operator a CONV_2D reading
    the subgraph input), by class name."""
    sg = model.subgraphs[0]
    ops = list(sg.operators)
    conv = _first(model, "CONV_2D")
    out = sg.tensors[conv.outputs[0]]
    weights = next(i for i in conv.inputs if sg.tensors[i].is_constant)
    swapped = [ops[1], ops[0], *ops[2:]]
    cycle = [replace(ops[0], inputs=(ops[1].outputs[0], *ops[0].inputs[1:])), *ops[1:]]
    wide = (*out.shape[:-1], out.shape[-1] + 3)
    n = len(sg.tensors)
    custom = replace(ops[-1], opcode="HOSTILE_UNKNOWN_OP", is_custom=True, custom_options=b"x")
    return {
        "use-before-def": _with_ops(model, swapped),
        "cycle": _with_ops(model, cycle),
        "shape-mismatch": _with_shape(model, conv.outputs[0], wide),
        "dim-2^31-1": _with_shape(model, sg.inputs[0], (1, 2**31 - 1, *out.shape[2:])),
        "zero-dim": _with_shape(model, conv.outputs[0], (*out.shape[:-1], 0)),
        "negative-dim": _with_shape(model, conv.outputs[0], (*out.shape[:-1], -7)),
        "index-out-of-range": _with_ops(
            model, [replace(ops[0], inputs=(n + 5, *ops[0].inputs[1:])), *ops[1:]]
        ),
        "output-out-of-range": _with_ops(model, ops, outputs=(n + 9,)),
        "writes-constant": _with_ops(model, [replace(ops[0], outputs=(weights,)), *ops[1:]]),
        "two-producers": _with_ops(model, [*ops, replace(ops[-1], index=len(ops))]),
        "no-operators": _with_ops(model, [], outputs=sg.inputs),
        "unknown-custom-op": _with_ops(model, [*ops[:-1], custom]),
        "unsupported-builtin": _with_ops(
            model, [*ops[:-1], replace(ops[-1], opcode="LSH_PROJECTION")]
        ),
    }


def _with_buffers(model: Model, buffers: Sequence[bytes]) -> Model:
    return replace(model, buffers=tuple(buffers), buffer_sizes=tuple(len(b) for b in buffers))


def constant_buffer_models(model: Model) -> dict[str, Model]:
    """``model`` with every constant's buffer longer than its shape says (alternately
    7 bytes more, and up to 64 KiB: a filter of 3 x 3 x C elements in 65,536 bytes,
    sizes no element count divides), and with its first weight's buffer a byte short."""
    consts = sorted({t.buffer for sg in model.subgraphs for t in sg.tensors if t.is_constant})
    longer = list(model.buffers)
    for k, b in enumerate(consts):
        extra = 7 if k % 2 else max(7, 65_536 - len(longer[b]))
        longer[b] += bytes((i * 37 + 11) % 256 for i in range(extra))
    conv = _first(model, "CONV_2D")
    weights = next(model.subgraphs[0].tensors[i] for i in conv.inputs[1:2])
    shorter = list(model.buffers)
    shorter[weights.buffer] = shorter[weights.buffer][:-1]
    return {
        "constant-longer": _with_buffers(model, longer),
        "constant-shorter": _with_buffers(model, shorter),
    }


def _empty_models(model: Model) -> dict[str, Model]:
    empty = Subgraph(0, "empty", (), (), (), ())
    return {
        "empty-subgraph": replace(model, subgraphs=(empty,)),
        "no-subgraphs": replace(model, subgraphs=()),
    }


# ---------------------------------------------------------------- side inputs


def _sub(text: str, old: str, new: str, count: int = 1) -> str:
    if old not in text:
        raise ValueError(f"corpus template lost {old!r}")
    return text.replace(old, new, count)


def bad_targets() -> dict[str, tuple[str, tuple[int, ...]]]:
    """Target TOML files by class: (text, exits allowed)."""
    g = (TARGETS / "generic.toml").read_text()
    x = (TARGETS / "xcore_ai.toml").read_text()
    first_memory = g.index("[[memory]]")
    return {
        "valid": (g, (0,)),
        "clock-nan": (_sub(g, "clock_hz = 120e6", "clock_hz = nan"), REFUSED),
        "clock-inf": (_sub(g, "clock_hz = 120e6", "clock_hz = inf"), REFUSED),
        "clock-1e400": (_sub(g, "clock_hz = 120e6", "clock_hz = 1e400"), REFUSED),
        "clock-zero": (_sub(g, "clock_hz = 120e6", "clock_hz = 0"), REFUSED),
        "clock-negative": (_sub(g, "clock_hz = 120e6", "clock_hz = -120e6"), REFUSED),
        "clock-string": (_sub(g, "clock_hz = 120e6", 'clock_hz = "fast"'), REFUSED),
        "latency-nan": (_sub(g, "latency = 1\n", "latency = nan\n"), REFUSED),
        "latency-negative": (_sub(g, "latency = 1\n", "latency = -4\n"), REFUSED),
        "capacity-negative": (_sub(g, '"640KiB"', '"-640KiB"'), REFUSED),
        "capacity-zero": (_sub(g, '"640KiB"', '"0"'), REFUSED),
        "capacity-huge": (_sub(g, '"640KiB"', '"99999999999999999999999999GiB"'), REFUSED),
        "capacity-nan": (_sub(g, '"640KiB"', '"nanKiB"'), REFUSED),
        "bandwidth-zero": (_sub(g, "read_bandwidth = 480e6", "read_bandwidth = 0"), REFUSED),
        "bandwidth-inf": (_sub(g, "read_bandwidth = 480e6", "read_bandwidth = inf"), REFUSED),
        "rate-inf": (_sub(g, "conv = 0.25", "conv = inf"), REFUSED),
        "rate-nan": (_sub(g, "conv = 0.25", "conv = nan"), REFUSED),
        "rate-zero": (_sub(g, "conv = 0.25", "conv = 0"), REFUSED),
        "rate-negative": (_sub(g, "conv = 0.25", "conv = -1"), REFUSED),
        "holds-unknown": (
            _sub(g, 'holds = ["activations", "persistent"]', 'holds = ["x"]'),
            REFUSED,
        ),
        "no-memories": (g[:first_memory], REFUSED),
        "no-name": (_sub(g, 'name = "generic"\n', ""), REFUSED),
        "duplicate-memory": (_sub(g, 'name = "external"', 'name = "sram"'), REFUSED),
        "syntax-error": (_sub(g, "clock_hz = 120e6", "clock_hz = = 3"), REFUSED),
        "empty": ("", REFUSED),
        "binary": ("\x00\x01\x02\xff" * 8, REFUSED),
        "line-bytes-zero": (_sub(x, "line_bytes = 32", "line_bytes = 0"), REFUSED),
        "cache-negative": (_sub(x, 'cache_bytes = "2KiB"', 'cache_bytes = "-2KiB"'), REFUSED),
        "copy-rate-nan": (_sub(x, "copy_rate = 49e6", "copy_rate = nan"), REFUSED),
    }


def profiler_logs(model: Model) -> dict[str, tuple[str, tuple[int, ...]]]:
    """MicroProfiler logs of ``model`` for ``calibrate``, by class: (text, exits allowed).
    The valid one has two invocations of every operator, 10**6 + 10**4 x index ticks."""
    ops = [op.opcode for op in model.subgraphs[0].operators]
    head = ["application output", "MicroInterpreter ready"]

    def log(ticks: Callable[[int], str], tags: Sequence[str] = ops) -> str:
        lines = [
            f"{tag} took {ticks(k)} ticks (0 ms)." for _ in range(2) for k, tag in enumerate(tags)
        ]
        return "\n".join([*head, *lines]) + "\n"

    csv_header = '"Event","Tag","Ticks"'
    return {
        "valid": (log(lambda k: str(1_000_000 + 10_000 * k)), (0,)),
        "header-only-csv": ("\n".join([*head, csv_header]) + "\n", REFUSED),
        "zero-ticks": (log(lambda k: "0"), REFUSED),
        "negative-ticks": (log(lambda k: str(-1000 - k)), REFUSED),
        "huge-ticks": (log(lambda k: "1" + "0" * 40), REFUSED),
        "unknown-tags": (
            log(lambda k: "1000", [f"NOT_AN_OP_{k}" for k in range(len(ops))]),
            REFUSED,
        ),
        "no-profiler-output": ("nothing here\n", REFUSED),
        "empty": ("", REFUSED),
        "binary": ("\x00\xff\xfe" * 40, REFUSED),
        "csv-bad-ticks": (
            "\n".join([*head, csv_header, "0,CONV_2D,nan", "1,CONV_2D,-5"]) + "\n",
            REFUSED,
        ),
    }


def minimalloc_csvs() -> dict[str, tuple[str, tuple[int, ...]]]:
    """Problems for ``solve``, by class: (text, exits allowed)."""
    h = "id,lower,upper,size\n"
    return {
        "valid": (h + "a,0,3,4\nb,1,4,8\nc,3,5,4\n", (0,)),
        "negative-size": (h + "a,0,3,-4\n", REFUSED),
        "negative-lower": (h + "a,-5,3,4\n", (0, 2)),  # a lifetime may start before 0
        "empty-lifetime": (h + "a,3,3,4\n", REFUSED),
        "overlapping-fixed": (
            "id,lower,upper,size,alignment,offset\na,0,4,8,1,0\nb,1,3,8,1,4\n",
            (1, 2),
        ),
        "huge-size": (h + f"a,0,1,{2**63}\n", REFUSED),
        "huge-offset": (f"id,lower,upper,size,alignment,offset\na,0,1,4,1,{2**70}\n", REFUSED),
        "huge-sum": (h + "".join(f"b{k},0,2,{2**61}\n" for k in range(8)), ANY),
        "huge-lifetime": (h + f"a,0,{2**63},4\n", REFUSED),
        "alignment-three": ("id,lower,upper,size,alignment\na,0,1,4,3\n", REFUSED),
        "alignment-zero": ("id,lower,upper,size,alignment\na,0,1,4,0\n", REFUSED),
        "not-integer": (h + "a,0,1,1e3\n", REFUSED),
        "nan": (h + "a,0,1,nan\n", REFUSED),
        "missing-column": ("id,lower,upper\na,0,1\n", REFUSED),
        "duplicate-id": (h + "a,0,1,4\na,1,2,4\n", REFUSED),
        "header-only": (h, (0, 2)),
        "empty": ("", REFUSED),
        "binary": ("\x00\xff" * 30, REFUSED),
    }


# ---------------------------------------------------------------- the corpus


class _Corpus:
    """Collects the corpus's files and cases while it is generated."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cases: list[Case] = []

    def file(self, rel: str, data: bytes | str) -> str:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return rel

    def add(self, command: str, klass: str, argv: Sequence[str], **kw) -> Case:
        """A case; ``{out}`` in ``argv`` is its output folder (created, empty)."""
        slug = re.sub(r"[^a-z0-9]+", "-", f"{command} {klass}".lower()).strip("-")
        cid = f"{len(self.cases):05d}-{slug}"[:80]
        case = Case(
            cid, command, klass, tuple(a.replace("{out}", f"out/{cid}") for a in argv), **kw
        )
        (self.root / case.out).mkdir(parents=True)
        self.cases.append(case)
        return case

    def fixture(self, case: Case, name: str, kind: str) -> str:
        """A non-regular file (or a stale temporary file) in ``case``'s output folder."""
        path = self.root / case.out / name
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        elif kind == "socket":
            with _chdir(path.parent), socket.socket(socket.AF_UNIX) as s:
                s.bind(name)  # a relative name: sockaddr_un holds at most 108 bytes
        elif kind == "symlink":  # to a regular file beside the folder: must stay as it is
            victim = self.root / case.out / "victim.txt"
            victim.write_text("must not change\n")
            path.symlink_to("victim.txt")
        elif kind == "stale":  # what a killed run of the output leaves
            path.write_bytes(b"half a model")
        return f"{case.out}/{name}"


@contextlib.contextmanager
def _chdir(folder: Path) -> Iterator[None]:
    here = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(here)


# Commands that read a model: (argv, exits allowed on a model the verifier refuses,
# needs TFLM); "M" is the model, "{out}" the case's output folder.
MODEL_COMMANDS: dict[str, tuple[tuple[str, ...], tuple[int, ...], bool]] = {
    "plan": (("plan", "M"), REFUSED, False),
    "plan -o --json --header": (
        (
            "plan",
            "M",
            "-q",
            "-o",
            "{out}/o.tflite",
            "--json",
            "{out}/o.json",
            "--header",
            "{out}/o.h",
        ),
        REFUSED,
        False,
    ),
    "plan --target --memory --planner-cpp": (
        (
            "plan",
            "M",
            "-q",
            "--target",
            "imxrt1170",
            "--memory",
            "tcm=16KiB",
            "--planner-cpp",
            "{out}/p.h",
            "--report",
            "{out}/r.html",
        ),
        REFUSED,
        False,
    ),
    "plan --target xcore_ai --weights auto": (
        (
            "plan",
            "M",
            "-q",
            "--target",
            "xcore_ai",
            "--weights",
            "auto",
            "-o",
            "{out}/o.tflite",
            "--weights-blob",
            "{out}/w.bin",
            "--schedule",
            "{out}/fetch.h",
        ),
        REFUSED,
        False,
    ),
    "plan --passes": (
        ("plan", "M", "-q", "--passes", "reorder,inplace,bands", "-o", "{out}/o.tflite"),
        REFUSED,
        True,
    ),
    "plan --fit": (("plan", "M", "-q", "--fit", "4KiB", "-o", "{out}/o.tflite"), REFUSED, True),
    "inspect --all": (("inspect", "M", "--all"), (0, 2), False),
    "verify": (("verify", "M", "M", "--trials", "1"), (1, 2, 3), True),
    "profile": (("profile", "M", "--json", "{out}/t.json"), REFUSED, False),
    "sweep": (("sweep", "M", "--target", "generic", "--points", "3"), REFUSED, False),
    "explore": (
        (
            "explore",
            "M",
            "--target",
            "generic",
            "--sram",
            "4KiB,64KiB",
            "--out",
            "{out}/ex",
            "-q",
            "--backend",
            "inprocess",
        ),
        REFUSED,
        False,
    ),
    "calibrate": (
        ("calibrate", "side/logs/valid.log", "--model", "M", "-o", "{out}/t.toml"),
        REFUSED,
        False,
    ),
}
# Commands the wrong models go through besides: the weights blob's index in the JSON
# (the blob read every constant's buffer whole). Kept apart so that the mutated
# models meet the same commands as before (round-robin over MODEL_COMMANDS).
WRONG_MODEL_COMMANDS = {
    **MODEL_COMMANDS,
    "plan --target imxrt1170 --weights groups --json": (
        (
            "plan",
            "M",
            "-q",
            "--target",
            "imxrt1170",
            "--weights",
            "groups:8",
            "-o",
            "{out}/o.tflite",
            "--json",
            "{out}/o.json",
        ),
        REFUSED,
        False,
    ),
}
# Classes of wrong models that a model verifier must refuse (the others may plan; the
# consistent 2**31-1-row convolution is within TFLM's 32-bit counts: it is profiled and
# swept as estimates, found to fit no target by plan, refused by verify as too big to
# run here, and must not hang any of them).
INVALID = {
    "use-before-def",
    "cycle",
    "shape-mismatch",
    "dim-2^31-1",
    "negative-dim",
    "index-out-of-range",
    "output-out-of-range",
    "writes-constant",
    "two-producers",
    "constant-shorter",
    "empty-file",
    "not-a-model",
}


# Classes of models every command must take as it takes the same model with exact
# buffers (TFLM reads only the bytes a constant's shape says): what each command ends
# with on the exact models (the demo's profiler log does not fit them; the MobileNet
# does not fit 4 KiB).
AS_EXACT = {"constant-longer"}
EXACT_EXITS = {"plan --fit": (0, 2), "calibrate": REFUSED}


def _model_case(c: _Corpus, command: str, klass: str, model: str, shared: bool) -> None:
    argv, refused, tflm = WRONG_MODEL_COMMANDS[command]
    expect = refused if klass in INVALID else ANY
    if klass in AS_EXACT:
        expect = EXACT_EXITS.get(command, (0,))
    inputs = (model, "side/logs/valid.log") if command == "calibrate" else (model,)
    c.add(
        command,
        klass,
        [model if a == "M" else a for a in argv],
        inputs=inputs,
        expect=expect,
        tflm=tflm,
        shared=shared,
    )


def generate(
    root: Path,
    seed: int = 22,
    size: str = "ci",
    models: Path | None = None,
    programs: Path | None = None,
) -> list[Case]:
    """Write the corpus into the empty folder ``root``; its cases (also in cases.json).

    ``models``: a folder of real .tflite models to mutate as well (None: built ones only);
    ``programs``: a folder of ExecuTorch ``.pte`` programs to mutate (None: no .pte class).
    The same arguments give the same files, byte for byte."""
    rng = random.Random(seed)
    limits = SIZES[size]
    c = _Corpus(root)
    built = built_models()
    demo = c.file("models/demo.tflite", built["demo"])
    demo_ir = read_model_bytes(built["demo"])
    for klass, (text, _) in profiler_logs(demo_ir).items():
        c.file(f"side/logs/{klass}.log", text)
    _wrong_model_cases(c, built)
    _mutation_cases(c, rng, built, models, limits)
    _command_line_cases(c, demo)
    _side_input_cases(c, demo)
    _process_cases(c, built)
    if programs is not None and programs.is_dir():
        _program_cases(c, random.Random(seed + 1), programs, limits)
    c.file("cases.json", json.dumps([asdict(k) for k in c.cases], indent=1, sort_keys=True) + "\n")
    return c.cases


def _wrong_model_cases(c: _Corpus, built: dict[str, bytes]) -> None:
    wrong: dict[str, bytes] = {"huge-consistent": huge_conv()}
    for name in ("demo", "int8_net"):
        base = read_model_bytes(built[name])
        for klass, model in {**wrong_models(base), **_empty_models(base)}.items():
            wrong[f"{klass}/{name}"] = write_model(model)
    for name in ("int8_net", "mobilenet_v1_025_32"):
        for klass, model in constant_buffer_models(read_model_bytes(built[name])).items():
            wrong[f"{klass}/{name}"] = write_model(model)
    wrong["empty-file"] = b""
    wrong["not-a-model"] = b"TFL3" + bytes(range(256)) * 4
    for key, data in wrong.items():
        klass = key.split("/")[0]
        rel = c.file(f"models/wrong/{key.replace('/', '.')}.tflite", data)
        for command in WRONG_MODEL_COMMANDS:
            _model_case(c, command, klass, rel, shared=False)


def _mutation_cases(
    c: _Corpus, rng: random.Random, built: dict[str, bytes], models: Path | None, limits: dict
) -> None:
    bases = {f"built.{k}": (v, False) for k, v in sorted(built.items())}
    if models is not None and models.is_dir():
        for p in sorted(models.glob("*.tflite")):
            if p.stat().st_size <= limits["shared_max_bytes"]:
                bases[f"shared.{p.stem}"] = (p.read_bytes(), True)
    names = sorted(bases)
    commands = list(MODEL_COMMANDS)
    per = limits["per_model"] or len(commands)
    for k in range(limits["mutations"]):
        name = names[k % len(names)]
        data, shared = bases[name]
        kind, corrupted = mutate(data, rng)
        rel = c.file(f"models/mutated/{k:05d}.{name}.tflite", corrupted)
        for j in range(per):
            _model_case(c, commands[(k * per + j) % len(commands)], f"bytes-{kind}", rel, shared)


PROGRAM_COMMANDS = {  # what a .pte goes through: plan and write it, read it
    "plan .pte -o --json": ("plan", "M", "-q", "-o", "{out}/o.pte", "--json", "{out}/o.json"),
    "inspect .pte": ("inspect", "M", "--all"),
    # reordered, spread over two memories, with its header
    "plan .pte --passes reorder --target --header": (
        *("plan", "M", "-q", "--passes", "reorder", "--target", "imxrt1170"),
        *("--memory", "tcm=16KiB", "-o", "{out}/o.pte", "--header", "{out}/o.h"),
    ),
}
PROGRAM_MUTATIONS = {"ci": 60, "full": 600}


def _program_cases(c: _Corpus, rng: random.Random, programs: Path, limits: dict) -> None:
    """ExecuTorch programs: mutated (the same corruptions as models), cut, a program
    whose own plan is wrong, and bytes that only begin like a program."""
    bases = {p.stem: p.read_bytes() for p in sorted(programs.glob("*.pte"))}
    wrong = {k: bases.pop(k) for k in list(bases) if k.endswith("overlap")}
    names = sorted(bases)
    for k in range(PROGRAM_MUTATIONS["full" if limits["mutations"] > 160 else "ci"]):
        name = names[k % len(names)]
        kind, corrupted = mutate(bases[name], rng)
        rel = c.file(f"models/pte/{k:05d}.{name}.pte", corrupted)
        command = list(PROGRAM_COMMANDS)[k % len(PROGRAM_COMMANDS)]
        argv = [rel if a == "M" else a for a in PROGRAM_COMMANDS[command]]
        c.add(command, f"pte-{kind}", argv, inputs=(rel,), expect=ANY)
    cases = {f"own-plan-wrong.{k}": v for k, v in wrong.items()}
    cases["header-only"] = bases[names[0]][:40]
    cases["identifier-only"] = b"\0\0\0\0ET12" + bytes(64)
    for key, data in cases.items():
        rel = c.file(f"models/pte/wrong.{key}.pte", data)
        argv = [rel if a == "M" else a for a in PROGRAM_COMMANDS["plan .pte -o --json"]]
        klass = f"pte-{key.split('.')[0]}"
        c.add("plan .pte -o --json", klass, argv, inputs=(rel,), expect=REFUSED)


def _command_line_cases(c: _Corpus, m: str) -> None:
    """Bad command lines of every command, on the valid demo model ``m``."""
    plan = ("plan", m, "-q")
    plan_options = {
        "time-limit-nan": ("--time-limit", "nan"),
        "time-limit-negative": ("--time-limit", "-1"),
        "time-limit-inf": ("--time-limit", "inf"),
        "time-limit-huge": ("--time-limit", "1e30"),
        "max-extra-macs-nan": ("--passes", "bands", "--max-extra-macs", "nan"),
        "max-extra-macs-negative": ("--passes", "bands", "--max-extra-macs", "-5"),
        "max-extra-macs-1e400": ("--passes", "bands", "--max-extra-macs", "1e400"),
        "fit-zero": ("--fit", "0"),
        "fit-negative": ("--fit", "-1KiB"),
        "fit-nan": ("--fit", "nanKiB"),
        "fit-beyond-any-memory": ("--fit", "1" + "0" * 40),
        "memory-nan": ("--target", "generic", "--memory", "sram=nan"),
        "memory-unknown": ("--target", "generic", "--memory", "nope=1KiB"),
        "memory-beyond-real": ("--target", "generic", "--memory", "sram=64GiB"),
        "memory-no-target": ("--memory", "sram=8KiB"),
        "target-unknown": ("--target", "nope"),
        "target-file-missing": ("--target-file", "side/missing.toml"),
        "passes-unknown": ("--passes", "nope"),
        "passes-empty": ("--passes", ",,"),
        "step-pixels-negative": ("--passes", "cascade", "--step-pixels", "-1"),
        "step-pixels-huge": ("--passes", "cascade", "--step-pixels", "99999999999"),
        "weights-groups-zero": ("--target", "generic", "--weights", "groups:0"),
        "weights-groups-huge": ("--target", "generic", "--weights", "groups:99999999999"),
        "weights-unknown": ("--target", "generic", "--weights", "bogus"),
        "weights-no-target": ("--weights", "auto"),
        "allocator-unknown": ("--allocator", "nope"),
        "kernels-unknown": ("--kernels", "nope"),
        "arena-memory-unknown": ("--target", "generic", "--arena-memory", "nope"),
        "two-stdout": ("--json", "-", "--header", "-"),
        "picture-bad-suffix": ("--picture", "{out}/p.txt"),
    }
    for klass, extra in plan_options.items():
        # a size beyond every memory is met by any plan: refusing it is also right
        expect = (0, 2) if klass == "fit-beyond-any-memory" else REFUSED
        c.add(
            "plan (options)",
            klass,
            [*plan, *extra, "-o", "{out}/o.tflite"],
            inputs=(m,),
            expect=expect,
        )
    _output_cases(c, "plan (outputs)", lambda o: [*plan, "-o", o], m)
    _output_cases(c, "plan --json (outputs)", lambda o: [*plan, "--json", o], m)
    _output_cases(c, "plan --report (outputs)", lambda o: [*plan, "--report", o], m)
    _output_cases(c, "profile --json (outputs)", lambda o: ["profile", m, "--json", o], m)
    _output_cases(
        c,
        "solve -o (outputs)",
        lambda o: ["solve", "side/csv/valid.csv", "-o", o],
        "side/csv/valid.csv",
    )
    calib = ["calibrate", "side/logs/valid.log", "--model", m, "-o"]
    _output_cases(c, "calibrate -o (outputs)", lambda o: [*calib, o], m)
    case = c.add(
        "plan (outputs)",
        "same-file-twice",
        [*plan, "-o", "{out}/o", "--json", "{out}/o"],
        inputs=(m,),
        expect=REFUSED,
    )
    case = c.add(
        "plan (outputs)",
        "kernel-source-missing",
        [*plan, "--kernel-source", "{out}/nowhere"],
        inputs=(m,),
        expect=REFUSED,
    )
    case = c.add(
        "plan (outputs)",
        "kernel-source-fifo",
        [*plan, "--kernel-source", "{out}/fifo"],
        inputs=(m,),
        expect=REFUSED,
    )
    c.fixture(case, "fifo", "fifo")
    case = c.add(
        "plan (outputs)",
        "stale-temporary",
        [*plan, "-o", "{out}/o.tflite"],
        inputs=(m,),
        expect=(0,),
    )
    c.fixture(case, ".o.tflite.k1ll3d.arenaplan-tmp", "stale")
    _input_cases(c, m)
    for klass, argv, expect in _other_command_lines(m):
        case = c.add(argv[0] if argv else "arenaplan", klass, argv, inputs=(m,), expect=expect)
        if klass.endswith("-fifo"):  # the option's file: a FIFO already there
            c.fixture(case, "fifo.svg", "fifo")


def _output_cases(c: _Corpus, command: str, argv: Callable[[str], list[str]], model: str) -> None:
    """Outputs that are not regular files, or cannot be written, for one option."""
    for klass in ("fifo", "socket", "symlink", "dir"):
        case = c.add(
            command, f"output-{klass}", argv(f"{{out}}/{klass}"), inputs=(model,), expect=REFUSED
        )
        c.fixture(case, klass, klass)
    c.add(
        command, "output-missing-folder", argv("{out}/missing/x"), inputs=(model,), expect=REFUSED
    )
    c.add(command, "output-is-input", argv(model), inputs=(model,), expect=REFUSED)


def _input_cases(c: _Corpus, m: str) -> None:
    """Model inputs that are not model files: a FIFO (nobody writes it), a folder, nothing."""
    for command in ("plan -o --json --header", "inspect --all", "profile", "sweep", "explore"):
        argv, _, _ = MODEL_COMMANDS[command]
        kinds = [("input-dir", "dir"), ("input-missing", "missing")]
        if command in ("plan -o --json --header", "explore"):  # the model reader's two paths
            kinds.append(("input-fifo", "fifo"))
        for klass, name in kinds:
            case = c.add(
                command, klass, [a if a != "M" else f"{{out}}/{name}" for a in argv], expect=REFUSED
            )
            if klass != "input-missing":
                c.fixture(case, name, name)
    case = c.add("targets", "input-fifo", ["targets", "--file", "{out}/fifo"], expect=REFUSED)
    c.fixture(case, "fifo", "fifo")
    case = c.add("solve", "input-fifo", ["solve", "{out}/fifo"], expect=REFUSED)
    c.fixture(case, "fifo", "fifo")


def _other_command_lines(m: str) -> list[tuple[str, list[str], tuple[int, ...]]]:
    """(class, argv, exits allowed) of every other command's bad options."""
    ex = ["explore", m, "--target", "generic", "--out", "{out}/ex", "-q", "--backend", "inprocess"]
    csv = "side/csv/valid.csv"
    log = ["calibrate", "side/logs/valid.log", "--model", m, "-o", "{out}/t.toml"]
    return [
        ("no-command", [], REFUSED),
        ("unknown-command", ["nope"], REFUSED),
        ("kernels-unknown", ["inspect", m, "--kernels", "nope"], REFUSED),
        ("trials-zero", ["verify", m, m, "--trials", "0"], REFUSED),
        ("trials-huge", ["verify", m, m, "--trials", "10001"], REFUSED),
        ("trials-nan", ["verify", m, m, "--trials", "nan"], REFUSED),
        ("seed-negative", ["verify", m, m, "--seed", "-1"], REFUSED),
        ("seed-huge", ["verify", m, m, "--seed", str(2**32)], REFUSED),
        ("build-unknown", ["verify", m, m, "--build", "nope"], REFUSED),
        ("variant-unknown", ["profile", m, "--measure", "--variant", "nope"], (2, 3)),
        ("points-zero", ["sweep", m, "--points", "0"], REFUSED),
        ("points-one", ["sweep", m, "--points", "1"], REFUSED),
        ("points-huge", ["sweep", m, "--points", "1001"], REFUSED),
        ("points-nan", ["sweep", m, "--points", "nan"], REFUSED),
        ("target-unknown", ["sweep", m, "--target", "nope"], REFUSED),
        ("weights-unknown", ["sweep", m, "--weights", "groups:0"], REFUSED),
        ("plot-fifo", ["sweep", m, "--points", "2", "--plot", "{out}/fifo.svg"], REFUSED),
        ("sram-zero", [*ex, "--sram", "0..0:1"], REFUSED),
        ("sram-huge-count", [*ex, "--sram", "1KiB..2KiB:1000000000"], REFUSED),
        ("sram-nan", [*ex, "--sram", "nan"], REFUSED),
        ("sram-reversed", [*ex, "--sram", "16KiB..1KiB:3"], REFUSED),
        ("sram-beyond-real", [*ex, "--sram", "64GiB"], REFUSED),
        ("workers-zero", [*ex, "--sram", "4KiB", "--workers", "0"], REFUSED),
        ("workers-huge", [*ex, "--sram", "4KiB", "--workers", "1025"], REFUSED),
        ("target-unknown", [*ex, "--sram", "4KiB", "--target", "nope"], REFUSED),
        ("passes-unknown", [*ex, "--sram", "4KiB", "--passes", "nope"], REFUSED),
        ("weights-unknown", [*ex, "--sram", "4KiB", "--weights", "nope"], REFUSED),
        ("time-limit-nan", [*ex, "--sram", "4KiB", "--time-limit", "nan"], REFUSED),
        (
            "no-models",
            ["explore", "--target", "generic", "--sram", "4KiB", "--out", "{out}/ex", "-q"],
            REFUSED,
        ),
        ("report-missing", ["explore", "--report", "{out}/nowhere", "-o", "{out}/r.html"], REFUSED),
        ("report-empty-folder", ["explore", "--report", "{out}", "-o", "{out}/r.html"], REFUSED),
        ("ticks-per-second-zero", [*log, "--ticks-per-second", "0"], REFUSED),
        ("ticks-per-second-nan", [*log, "--ticks-per-second", "nan"], REFUSED),
        ("ticks-per-second-inf", [*log, "--ticks-per-second", "inf"], REFUSED),
        ("ticks-per-second-negative", [*log, "--ticks-per-second", "-5"], REFUSED),
        (
            "placement-unknown-memory",
            [
                "calibrate",
                "side/logs/valid.log@activations=nowhere",
                "--model",
                m,
                "-o",
                "{out}/t.toml",
            ],
            REFUSED,
        ),
        (
            "placement-unknown-what",
            ["calibrate", "side/logs/valid.log@bogus=sram", "--model", m, "-o", "{out}/t.toml"],
            REFUSED,
        ),
        (
            "log-missing",
            ["calibrate", "side/logs/none.log", "--model", m, "-o", "{out}/t.toml"],
            REFUSED,
        ),
        ("capacity-2^63", ["solve", csv, "--capacity", str(2**63)], REFUSED),
        ("capacity-negative", ["solve", csv, "--capacity", "-1"], REFUSED),
        ("capacity-nan", ["solve", csv, "--capacity", "nan"], REFUSED),
        ("time-limit-nan", ["solve", csv, "--time-limit", "nan"], REFUSED),
        ("time-limit-negative", ["solve", csv, "--time-limit", "-1"], REFUSED),
        ("time-limit-huge", ["solve", csv, "--time-limit", "1e30"], REFUSED),
        ("disable-unknown", ["solve", csv, "--disable", "nope"], REFUSED),
        ("name-unknown", ["targets", "nope"], REFUSED),
        ("file-missing", ["targets", "--file", "side/missing.toml"], REFUSED),
        ("file-dir", ["targets", "--file", "side"], REFUSED),
        ("extra-argument", ["passes", "extra"], REFUSED),
    ]


def _side_input_cases(c: _Corpus, m: str) -> None:
    """Target files through every command that takes one; logs through calibrate;
    problems through solve."""
    for klass, (text, expect) in bad_targets().items():
        t = c.file(f"side/targets/{klass}.toml", text)
        log = "side/logs/valid.log"
        for command, argv in (
            ("targets", ["targets", "--file", t]),
            ("plan --target-file", ["plan", m, "-q", "--target-file", t, "-o", "{out}/o.tflite"]),
            ("sweep", ["sweep", m, "--target-file", t, "--points", "2"]),
            (
                "explore",
                [
                    "explore",
                    m,
                    "--target",
                    t,
                    "--sram",
                    "4KiB,16KiB",
                    "--out",
                    "{out}/ex",
                    "-q",
                    "--backend",
                    "inprocess",
                ],
            ),
            (
                "calibrate",
                ["calibrate", log, "--model", m, "--target-file", t, "-o", "{out}/t.toml"],
            ),
        ):
            c.add(command, f"target-{klass}", argv, inputs=(t, m), expect=expect)
    for klass, (_, expect) in profiler_logs(
        read_model_bytes(Path(c.root / m).read_bytes())
    ).items():
        log = f"side/logs/{klass}.log"
        c.add(
            "calibrate",
            f"log-{klass}",
            ["calibrate", log, "--model", m, "-o", "{out}/t.toml"],
            inputs=(log, m),
            expect=expect,
        )
    for klass, (text, expect) in minimalloc_csvs().items():
        p = c.file(f"side/csv/{klass}.csv", text)
        c.add(
            "solve",
            f"csv-{klass}",
            ["solve", p, "-o", "{out}/s.csv", "--time-limit", "5"],
            inputs=(p,),
            expect=expect,
        )
        c.add(
            "solve --capacity",
            f"csv-{klass}",
            ["solve", p, "--capacity", "64", "--time-limit", "5", "-q"],
            inputs=(p,),
            expect=(*expect, 1) if expect != ANY else ANY,
        )


def _process_cases(c: _Corpus, built: dict[str, bytes]) -> None:
    """Child processes: real exit statuses, and commands killed in the middle (their
    process group must end; the next run of the same outputs leaves no temporary file)."""
    ds = c.file("models/ds_cnn_m.tflite", built["ds_cnn_m"])
    mob = c.file("models/mobilenet_v1_025_32.tflite", built["mobilenet_v1_025_32"])
    c.add(
        "plan -o --json --header",
        "child-valid",
        [
            "plan",
            ds,
            "-q",
            "-o",
            "{out}/o.tflite",
            "--json",
            "{out}/o.json",
            "--header",
            "{out}/o.h",
        ],
        inputs=(ds,),
        expect=(0,),
        child=True,
    )
    c.add(
        "inspect --all",
        "child-wrong",
        ["inspect", "models/wrong/cycle.demo.tflite", "--all"],
        inputs=("models/wrong/cycle.demo.tflite",),
        expect=(0, 2),
        child=True,
    )
    c.add(
        "sweep",
        "child-huge",
        ["sweep", "models/wrong/huge-consistent.tflite", "--points", "2"],
        inputs=("models/wrong/huge-consistent.tflite",),
        expect=(0, 2),
        child=True,
    )
    for k, after in enumerate((0.4, 0.9, 1.6)):
        c.add(
            "plan -o --json --header",
            f"killed-{k}",
            [
                "plan",
                mob,
                "-q",
                "--target",
                "xcore_ai",
                "--weights",
                "auto",
                "-o",
                "{out}/o.tflite",
                "--json",
                "{out}/o.json",
                "--header",
                "{out}/o.h",
            ],
            inputs=(mob,),
            expect=(0,),
            child=True,
            kill_after=after,
        )
    for k, after in enumerate((1.5, 3.0)):
        c.add(
            "explore",
            f"killed-pool-{k}",
            [
                "explore",
                ds,
                mob,
                "--target",
                "generic,esp32s3",
                "--sram",
                "4KiB..256KiB:6",
                "--out",
                "{out}/ex",
                "-q",
                "--backend",
                "pool",
                "--workers",
                "2",
            ],
            inputs=(ds, mob),
            expect=(0,),
            child=True,
            kill_after=after,
        )


# ---------------------------------------------------------------- the runner


@dataclass
class Result:
    case: Case
    code: int | None  # exit status; None: it hung; negative: killed by that signal
    stderr: str
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time of the case, for finding slow ones (never judged)

    def line(self, root: Path) -> str:
        argv = " ".join(_quote(a) for a in self.case.argv)
        err = self.stderr.strip().splitlines()
        tail = f" | stderr: {err[-1][:200]}" if err else ""
        where = f"[{self.case.command} / {self.case.klass}] {'; '.join(self.problems)}"
        return f"{where}: (cd {root} && arenaplan {argv}){tail}"


def _quote(word: str) -> str:
    return word if re.fullmatch(r"[\w./:,=+@^-]+", word) else repr(word)


class _Hang(BaseException):
    """Raised by SIGALRM in the case's command (a BaseException: no guard catches it)."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Hang


def run_in_process(argv: Sequence[str], timeout: float) -> tuple[int | None, str]:
    """``arenaplan.cli.main(argv)`` with standard output discarded: (exit status or
    None if it ran out of time, standard error)."""
    from arenaplan.cli import main

    err = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    # A command stopped by the alarm may still wait for a child process (leaving a
    # ``with Popen`` waits for it): 5 s after the alarm, its children are killed.
    watchdog = threading.Timer(timeout + 5.0, _kill_new_children, (_children(),))
    watchdog.daemon = True
    watchdog.start()
    try:
        with (
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(err),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("always")  # each case shows its own warnings
            code: int | None = main(list(argv))
    except _Hang:
        code = None
    except BaseException:  # main let an exception out: a failure to report
        code = EXIT_INTERNAL
        err.write("escaped main: " + traceback.format_exc())
    finally:
        watchdog.cancel()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


def _kill_new_children(before: set[int]) -> None:
    for pid in _children() - before:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def run_child(
    argv: Sequence[str], cwd: Path, timeout: float, kill_after: float = 0.0
) -> tuple[int | None, str, list[str]]:
    """``python -m arenaplan argv`` as a child process in its own process group:
    (exit status, negative for a signal, None if it ran out of time; standard error;
    problems with its process group)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [sys.executable, "-m", "arenaplan", *argv]
    problems: list[str] = []
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
        try:
            code: int | None = proc.wait(timeout=kill_after or timeout)
        except subprocess.TimeoutExpired:
            if not kill_after:
                _kill_group(proc.pid)
                proc.wait()
                code = None
            else:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                code = 0  # killed on purpose: judged by what its group and files do next
                if not _group_ends(proc.pid, 5.0):
                    problems.append("processes of the killed command still run 5 s later")
                    _kill_group(proc.pid)
        err.seek(0)
        text = err.read().decode(errors="replace")
    return code, text, problems


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _group_ends(pgid: int, seconds: float) -> bool:
    """True once no process of group ``pgid`` is left, within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


Snapshot = dict[
    str, tuple[str, int, str]
]  # relative path -> (kind, bytes, sha-256 of a regular file)


def snapshot(folder: Path) -> Snapshot:
    """Every entry under ``folder`` (symbolic links and FIFOs not followed nor opened)."""
    found: Snapshot = {}
    if not folder.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            st = path.lstat()
            kind = _kind(st.st_mode)
            digest = (
                _digest(path) if kind == "file" else (os.readlink(path) if kind == "link" else "")
            )
            found[str(path.relative_to(folder))] = (
                kind,
                st.st_size if kind == "file" else 0,
                digest,
            )
    return found


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "link"),
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "dir"),
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "other"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _names(root: Path) -> set[str]:
    """Entries outside the cases' output folders: the corpus's inputs and its top level."""
    names = {
        str(p.relative_to(root)) for top in ("models", "side") for p in (root / top).rglob("*")
    }
    return names | set(os.listdir(root)) | {f"out/{n}" for n in os.listdir(root / "out")}


def run_case(case: Case, root: Path, timeout: float) -> Result:
    """Run one case of the corpus at ``root`` and judge it."""
    out = root / case.out
    before, names = snapshot(out), _names(root)
    inputs = {rel: _digest(root / rel) for rel in case.inputs if (root / rel).is_file()}
    problems: list[str] = []
    start = time.perf_counter()
    children = _children()
    if case.child:
        code, err, problems = run_child(case.argv, root, timeout, case.kill_after)
        if case.kill_after:  # the next run of the same outputs: it must end well and clean up
            with _chdir(root):
                code, err = run_in_process(case.argv, timeout)
    else:
        with _chdir(root):
            code, err = run_in_process(case.argv, timeout)
    result = Result(case, code, err, problems, time.perf_counter() - start)
    left = _children() - children
    if left:  # killed, so that the next cases run alone
        problems.append(f"left {len(left)} process(es) running: {_command_line(min(left))}")
        _kill_new_children(children)
    _judge_exit(result)
    _judge_files(result, before, snapshot(out))
    if _names(root) != names:
        new, gone = sorted(_names(root) - names), sorted(names - _names(root))
        problems.append(f"files outside its output folder changed: +{new[:3]} -{gone[:3]}")
    for rel, digest in inputs.items():
        if not (root / rel).is_file() or _digest(root / rel) != digest:
            problems.append(f"input {rel} changed")
    return result


def _children() -> set[int]:
    """Live child processes of this one (on Linux; elsewhere none), but for
    multiprocessing's resource tracker, which lives as long as this process."""
    found = set()
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
            pid = int(stat_file.parent.name)
            ours = int(fields[1]) == os.getpid() and fields[0] != "Z"
            if ours and "resource_tracker" not in _command_line(pid):
                found.add(pid)
    return found


def _command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:120]


def _judge_exit(r: Result) -> None:
    lines = r.stderr.strip().splitlines()
    if r.code is None:
        r.problems.append("hang: no answer within the time limit")
        return
    if r.code < 0:
        r.problems.append(f"killed by signal {-r.code}")
    elif r.code == EXIT_INTERNAL:
        r.problems.append("exit 70 (internal error)")
    elif r.code not in r.case.expect:
        r.problems.append(f"exit {r.code}, expected {'/'.join(map(str, r.case.expect))}")
    if "Traceback" in r.stderr:
        r.problems.append("traceback")
    if r.code == 2 and len(lines) != 1:
        r.problems.append(f"{len(lines)} lines on stderr for exit 2")
    if any("Warning" in line for line in lines):
        r.problems.append("a Python warning on stderr")


def _judge_files(r: Result, before: Snapshot, after: Snapshot) -> None:
    stale = {k for k in before if TMP_MARK in k}
    left = sorted(k for k in after if TMP_MARK in k and k not in stale)
    if left:
        r.problems.append(f"temporary file left: {left[0]}")
    if r.code == 0 and stale & set(after):
        r.problems.append(f"stale temporary file not cleaned: {sorted(stale & set(after))[0]}")
    changed = sorted(k for k, v in before.items() if k not in stale and after.get(k) != v)
    if changed:
        now = after.get(changed[0], ("gone",))[0]
        r.problems.append(f"replaced or changed: {changed[0]} ({before[changed[0]][0]} -> {now})")
    new = sorted(set(after) - set(before))
    if r.code != 0 and not r.case.kill_after and new:
        r.problems.append(f"wrote {new[0]} although it failed (exit {r.code})")
    named = [a.removeprefix(r.case.out + "/") for a in r.case.argv if a.startswith(r.case.out)]
    unnamed = [k for k in new if not any(k == n or k.startswith(n + "/") for n in named)]
    if unnamed:  # a success writes the outputs it was given (or inside a folder given)
        r.problems.append(f"wrote {unnamed[0]}, which no option names")


def run_corpus(
    cases: Sequence[Case],
    root: Path,
    timeout: float = 60.0,
    progress: bool = False,
    log: Path | None = None,
) -> list[Result]:
    """Every case in turn; ``log``: also append each result to it as a JSON line
    (case id, command, class, exit, problems, seconds) as soon as it is judged."""
    results = []
    for k, case in enumerate(cases):
        r = run_case(case, root, timeout)
        results.append(r)
        if log is not None:
            row = {
                "id": case.id,
                "command": case.command,
                "class": case.klass,
                "exit": r.code,
                "problems": r.problems,
                "seconds": round(r.seconds, 2),
                "line": r.line(root),
            }
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
        if progress and (k + 1) % 100 == 0:
            print(f"{k + 1}/{len(cases)} cases", file=sys.stderr)
    return results


def table(results: Sequence[Result]) -> str:
    """Counts per command and class: cases, exits 0/1/2/3, other exits, failures."""
    rows: dict[tuple[str, str], Counter] = {}
    for r in results:
        klass = r.case.klass.split("/")[0]
        count = rows.setdefault((r.case.command, klass), Counter())
        count["cases"] += 1
        count[str(r.code) if r.code in (0, 1, 2, 3) else "other"] += 1
        count["failures"] += bool(r.problems)
    cols = ("cases", "0", "1", "2", "3", "other", "failures")
    width = max(len(f"{c}  {k}") for c, k in rows) if rows else 10
    lines = [f"{'command  class':<{width}} " + " ".join(f"{c:>8}" for c in cols)]
    total: Counter = Counter()
    for (command, klass), count in sorted(rows.items()):
        total.update(count)
        lines.append(
            f"{f'{command}  {klass}':<{width}} " + " ".join(f"{count[c]:>8}" for c in cols)
        )
    lines.append(f"{'all':<{width}} " + " ".join(f"{total[c]:>8}" for c in cols))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--size",
        choices=sorted(SIZES),
        default="ci",
        help="ci (default) or full: mutations "
        + ", ".join(f"{k}: {v['mutations']}" for k, v in SIZES.items()),
    )
    parser.add_argument("--seed", type=int, default=22, help="seed of the corpus (default 22)")
    parser.add_argument(
        "--models",
        type=Path,
        default=DEFAULT_MODELS,
        help="real models to mutate (default ../shared/models)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds a case may take before it counts as a hang (default 60)",
    )
    parser.add_argument(
        "--keep", type=Path, help="write the corpus into this new folder and keep it"
    )
    parser.add_argument(
        "--generate-only", action="store_true", help="write the corpus (needs --keep) and stop"
    )
    parser.add_argument(
        "--results", type=Path, help="append each case's result to this file as a JSON line"
    )
    parser.add_argument("--command", help="run only the cases whose command starts with this")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        root = args.keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="hostile-corpus-"))
        )
        root.mkdir(parents=True, exist_ok=True)
        if any(root.iterdir()):
            parser.error(f"{root} is not empty")
        cases = generate(root.resolve(), args.seed, args.size, args.models)
        print(f"{len(cases)} cases in {root}", file=sys.stderr)
        if args.generate_only:
            return 0
        chosen = [k for k in cases if args.command is None or k.command.startswith(args.command)]
        start = time.perf_counter()
        results = run_corpus(chosen, root.resolve(), args.timeout, True, args.results)
        print(table(results))
        bad = [r for r in results if r.problems]
        print(f"{len(results)} cases in {time.perf_counter() - start:.0f} s; {len(bad)} failed")
        for r in bad:
            print(r.line(root))
        slow = sorted(results, key=lambda r: -r.seconds)[:10]
        print("slowest: " + "; ".join(f"{r.case.id} {r.seconds:.1f} s" for r in slow))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
