"""arenaplan beside Arm's Vela and XMOS's xformer on the models of keras_zoo.py.

    python benchmarks/peers_zoo.py [--models DIR] [--only NAME,...] [--arenaplan CMD]
        [--vela CMD] [--xcore-opt CMD] [--write-unproven] [--no-fit] [--json OUT]

Runs in arenaplan's environment (the PyPI ``tflite-micro`` runtime checks that TFLM
runs each model); Vela (``pip install ethos-u-vela==5.2.0``) and xformer (``pip
install xmos-ai-tools==1.4.2``, whose ``xcore-opt`` it runs) may sit in virtual
environments of their own: give their commands with --vela and --xcore-opt (a
command not found leaves its columns empty). The models are the ``*.tflite`` of
``benchmarks/keras_zoo.py``'s folder (default ``~/.cache/arenaplan/keras_zoo``).
Per model, in bytes, TFLM's arm32 profile and reference kernels:

    naive head      ``arenaplan plan MODEL``: the head without passes (= the lower
                    bound of ``arenaplan inspect`` when the plan is optimal), and
                    whole = head + TFLM's predicted tail
    bands           ``--passes reorder,inplace,bands``: head and whole
    fit             ``--fit N`` with N = Vela's SRAM for the model (when measured):
                    head and whole, or the error arenaplan printed
    cascade         ``--passes cascade,reorder,inplace --kernel-source TMP`` (and
                    ``--write-unproven`` with that option: TFLM built from source
                    proves a cascade; without the build arenaplan plans the model
                    as it is; a build whose kernel is older than the tree's fails
                    the proof, and ``ARENAPLAN_TFLM_BUILD=/nonexistent`` with
                    ``--write-unproven`` then gives the figures, unproven)
    Vela SRAM       ``vela MODEL --optimise Size``: its "Total SRAM used" (KiB x
                    1,024, to the two decimals it prints) with Vela's defaults (Ethos_U55_256,
                    Ethos_U55_High_End_Embedded, Shared_Sram); and the operators it
                    leaves to the CPU (TFLM), whose arena it does not count
    xformer         ``xcore-opt MODEL``: the "Tensor arena size" it prints (its whole
                    arena, persistent part included); and the same with the
                    operation split that ``xcore-opt --xcore-run-memory-analysis``
                    suggests (``--xcore-op-split-tensor-arena=1 --xcore-op-split-top-op
                    ...``), when it suggests one

Then, per model, the operators the cascade pass leaves outside every cascade:
``arenaplan plan MODEL --passes cascade``'s note and stats, and every operator no
chain takes with the pass's own reason (``passes.cascade.chain_stops``, as
``python benchmarks/cascade.py --stops --models DIR`` counts them), by kind and
input types. A failing arenaplan command's exit status and its last lines are printed
as they are.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arenaplan.passes.cascade import chain_stops
from arenaplan.reader import read_model_bytes

DEFAULT_MODELS = Path.home() / ".cache" / "arenaplan" / "keras_zoo"
PROFILE = "arm32"
BANDS = "reorder,inplace,bands"
CASCADE = "cascade,reorder,inplace"
# the figures of the held-out models each one stands for (None: not given)
ISSUE = {
    "mobilenet_v2_0.35_96": {"naive": None, "vela": 62_208, "xformer": 150_320},
    "resnet8_32": {"naive": None, "vela": 35_840, "xformer": 37_016},
    "bn_classifier": {
        "naive": 153_600,
        "bands": (100_432, 115_972),
        "vela": 84_480,
        "xformer": 112_424,
    },
    "residual_fullres": {"naive": 262_144, "whole": 263_284, "vela": 169_984, "xformer": 264_824},
    "unet_denoiser_int16": {"naive": 13_440, "whole": 25_216},
}
RUN_TFLM = """
import sys, numpy as np
from tflite_micro.python.tflite_micro import runtime
it = runtime.Interpreter.from_file(sys.argv[1], arena_size=8 << 20)
rng = np.random.default_rng(0)
i = 0
while True:
    try:
        d = it.get_input_details(i)
    except Exception:
        break
    t = np.dtype(d["dtype"])
    if t.kind == "f":
        x = rng.random(d["shape"]).astype(t)
    else:
        x = rng.integers(np.iinfo(t).min, np.iinfo(t).max, d["shape"], dtype=t)
    it.set_input(x, i)
    i += 1
it.invoke()
print(i)
"""


@dataclass
class Run:
    """One arenaplan command: head, whole, or the error it printed."""

    head: int | None = None
    whole: int | None = None
    rc: int = 0
    error: str = ""
    note: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        if self.head is None:
            return f"exit {self.rc}: {self.error}" if self.rc else "-"
        return f"{self.head:,} / {self.whole:,}" + (f" ({self.note})" if self.note else "")


def _command(text: str | None) -> list[str] | None:
    if not text:
        return None
    parts = shlex.split(text)
    return parts if shutil.which(parts[0]) else None


def arenaplan(cmd: list[str], model: Path, extra: list[str], tmp: Path, quiet: bool = True) -> Run:
    out = tmp / "plan.json"
    out.unlink(missing_ok=True)
    proc = subprocess.run(
        [*cmd, "plan", str(model), "--json", str(out), *(["-q"] if quiet else []), *extra],
        capture_output=True,
        text=True,
    )
    lines = [x for x in (proc.stderr + proc.stdout).splitlines() if x.strip()]
    if proc.returncode or not out.exists():
        return Run(rc=proc.returncode, error=" | ".join(lines[-3:]))
    data = json.loads(out.read_text())
    effect = data.get("rewrite_effect") or {}
    after = effect.get("after")
    if after:
        head, tail = after["head"], after["tail"]
    else:
        fw = data.get("firmware") or {}
        head = fw.get("head", data["arena"]["size"])
        tail = fw.get("tail", data["persistent"][PROFILE]["tail"])
    proof = data.get("proof") or {}
    kept = ",".join(p["name"] for p in data.get("passes") or [] if p.get("changed"))
    if not data.get("passes") or not proof:
        note = ""
    elif proof.get("proven"):
        note = f"passes changed: {kept or 'none'}; proven: {proof.get('runtime')}"
    else:
        note = f"passes changed: {kept or 'none'}; unproven: {proof.get('reason')}"
    if not quiet:  # the line that says which pass list was kept
        lines = [x for x in lines if x.startswith("pass lists planned")]
    if lines:
        note = f"{note}; {lines[-1]}" if note else lines[-1]
    return Run(head, head + tail, proc.returncode, note=note, data=data)


def vela(cmd: list[str], model: Path, tmp: Path) -> tuple[int | None, str]:
    proc = subprocess.run(
        [*cmd, str(model), "--optimise", "Size", "--output-dir", str(tmp / "vela")],
        capture_output=True,
        text=True,
    )
    text = proc.stdout + proc.stderr
    found = re.search(r"Total SRAM used\s+([\d.]+) KiB", text)
    config = re.findall(
        r"(Accelerator configuration|System configuration|Memory mode)\s+(\S+)", text
    )
    cpu = Counter(re.findall(r"^Warning \(supported operators\) operator: (\w+)", text, re.M))
    where = ", ".join(v for _, v in config)
    if not found:
        tail = [x for x in text.splitlines() if x.strip()][-1:] or ["no output"]
        return None, f"exit {proc.returncode}: {tail[0]}"
    on_cpu = ", ".join(f"{k} {v}" for k, v in sorted(cpu.items())) or "none"
    return round(float(found.group(1)) * 1024), f"{where}; on the CPU: {on_cpu}"


def xformer(cmd: list[str], model: Path, tmp: Path) -> tuple[int | None, int | None, str]:
    def arena(options: list[str]) -> tuple[int | None, str]:
        proc = subprocess.run(
            [*cmd, *options, "-o", str(tmp / "x.tflite"), str(model)],
            capture_output=True,
            text=True,
        )
        found = re.search(r"Tensor arena size\s*:\s*(\d+)", proc.stdout + proc.stderr)
        return (int(found.group(1)), "") if found else (None, f"exit {proc.returncode}")

    plain, why = arena([])
    proc = subprocess.run(
        [*cmd, "--xcore-run-memory-analysis", str(model)], capture_output=True, text=True
    )
    found = re.search(r"^(--xcore-op-split-tensor-arena=1 .*)$", proc.stdout, re.M)
    split, options = None, "no split suggested"
    if found:
        options = found.group(1).strip()
        split, _ = arena(options.split())
    return plain, split, why or options


def tflm_runs(model: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", RUN_TFLM, str(model)], capture_output=True, text=True
    )
    if proc.returncode == 0:
        return "yes"
    lines = [x for x in (proc.stderr + proc.stdout).splitlines() if x.strip()]
    return f"no (exit {proc.returncode}: {lines[-1] if lines else ''})"


# ---- the model itself: operators, inputs, signatures, the cascade survey --------------


def describe(path: Path) -> dict[str, Any]:
    import tflite
    from tflite.BuiltinOperator import BuiltinOperator
    from tflite.TensorType import TensorType

    op_names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
    type_names = {v: k for k, v in vars(TensorType).items() if not k.startswith("_")}
    model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    g = model.Subgraphs(0)

    def tensor(i: int) -> tuple[str, str, list[int], bool]:
        t = g.Tensors(i)
        buf = model.Buffers(t.Buffer())
        const = buf is not None and buf.DataLength() > 0
        shape = [t.Shape(j) for j in range(t.ShapeLength())]
        return t.Name().decode(), type_names[t.Type()], shape, const

    ops: Counter[str] = Counter()
    for k in range(g.OperatorsLength()):
        code = model.OperatorCodes(g.Operators(k).OpcodeIndex())
        ops[op_names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "?")] += 1
    ir = read_model_bytes(path.read_bytes())  # what stops chains: the pass's own words
    outside: Counter[str] = Counter()
    sg = ir.subgraphs[0]
    for k, why in chain_stops(sg, ir.buffers):
        op = sg.operators[k]
        sig = ", ".join(
            f"{sg.tensors[i].dtype.name}{list(sg.tensors[i].shape)}"
            f"{' const' if sg.tensors[i].is_constant else ''}"
            for i in op.tensor_inputs()
        )
        outside[f"{op.opcode} ({why}): {sig}"] += 1
    signatures = []
    for s in range(model.SignatureDefsLength()):
        sd = model.SignatureDefs(s)
        signatures.append(
            {
                "key": sd.SignatureKey().decode(),
                "inputs": [sd.Inputs(j).Name().decode() for j in range(sd.InputsLength())],
                "outputs": [sd.Outputs(j).Name().decode() for j in range(sd.OutputsLength())],
            }
        )
    inputs = [tensor(g.Inputs(i))[:3] for i in range(g.InputsLength())]
    outputs = [tensor(g.Outputs(i))[:3] for i in range(g.OutputsLength())]
    return {
        "operators": dict(ops),
        "inputs": inputs,
        "outputs": outputs,
        "signatures": signatures,
        "outside_stages": dict(outside),
    }


def measure(model: Path, args: argparse.Namespace) -> dict[str, Any]:
    cmd = shlex.split(args.arenaplan)
    unproven = ["--write-unproven"] if args.write_unproven else []
    row: dict[str, Any] = {"model": model.name, **describe(model), "tflm": tflm_runs(model)}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        naive = arenaplan(cmd, model, [], tmp)
        row["lower_bound"] = naive.data.get("arena", {}).get("lower_bound")
        row["naive"] = naive
        row["bands"] = arenaplan(cmd, model, ["--passes", BANDS], tmp)
        vela_cmd, xcore_cmd = _command(args.vela), _command(args.xcore_opt)
        row["vela"], row["vela_note"] = vela(vela_cmd, model, tmp) if vela_cmd else (None, "")
        row["xformer"], row["xformer_split"], row["xformer_note"] = (
            xformer(xcore_cmd, model, tmp) if xcore_cmd else (None, None, "")
        )
        if row["vela"] and not args.no_fit:
            row["fit"] = arenaplan(cmd, model, ["--fit", str(row["vela"]), *unproven], tmp)
        kernel = tmp / "kernel"
        kernel.mkdir()
        row["cascade"] = arenaplan(
            cmd, model, ["--passes", CASCADE, "--kernel-source", str(kernel), *unproven], tmp
        )
        survey = arenaplan(cmd, model, ["--passes", "cascade", *unproven], tmp, quiet=False)
        row["cascade_pass"] = [p for p in survey.data.get("passes", []) if p["name"] == "cascade"]
        if not row["cascade_pass"]:  # the cascade changed nothing: no pass was kept
            row["cascade_pass"] = [{"note": survey.note or "no cascade kept"}]
        if survey.rc:
            row["cascade_pass"] = [{"error": survey.text()}]
    return row


def _fmt(x: int | None) -> str:
    return f"{x:,}" if x is not None else "-"


def report(row: dict[str, Any]) -> None:
    name = Path(row["model"]).stem.removesuffix(".float_io")
    issue = ISSUE.get(name, {})
    print(f"\n== {row['model']}")
    print(f"inputs {row['inputs']}  outputs {row['outputs']}")
    for s in row["signatures"]:
        print(f"signature {s['key']!r}: inputs {s['inputs']} outputs {s['outputs']}")
    print("operators: " + ", ".join(f"{k} {v}" for k, v in row["operators"].items()))
    print(f"TFLM (PyPI tflite-micro) runs it: {row['tflm']}")
    naive: Run = row["naive"]
    print(
        f"naive head / whole      {naive.text()}  (lower bound {_fmt(row['lower_bound'])}; "
        f"issue: {_fmt(issue.get('naive'))}"
        f"{' / ' + _fmt(issue['whole']) if 'whole' in issue else ''})"
    )
    bands_issue = issue.get("bands")
    print(
        f"bands head / whole      {row['bands'].text()}"
        + (f"  (issue: {bands_issue[0]:,} / {bands_issue[1]:,})" if bands_issue else "")
    )
    if "fit" in row:
        print(f"--fit {row['vela']:,} head / whole  {row['fit'].text()}")
    print(f"cascade head / whole    {row['cascade'].text()}")
    print(
        f"Vela SRAM               {_fmt(row['vela'])}  ({row['vela_note']}; "
        f"issue: {_fmt(issue.get('vela'))})"
    )
    print(
        f"xformer arena           {_fmt(row['xformer'])}; with its suggested split "
        f"{_fmt(row['xformer_split'])} ({row['xformer_note']}; issue: "
        f"{_fmt(issue.get('xformer'))})"
    )
    for p in row["cascade_pass"]:
        print(f"cascade pass: {p.get('note') or p.get('error')}  stats {p.get('stats', '')}")
    print(f"outside every cascade stage: {sum(row['outside_stages'].values())} operator(s)")
    for what, count in sorted(row["outside_stages"].items()):
        print(f"  {count:3d} x {what}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", help="comma-separated model file stems")
    parser.add_argument("--arenaplan", default="arenaplan", help="arenaplan command")
    parser.add_argument("--vela", default="vela", help="vela command")
    parser.add_argument("--xcore-opt", default="xcore-opt", help="xformer's xcore-opt command")
    parser.add_argument(
        "--write-unproven",
        action="store_true",
        help="pass --write-unproven to the cascade and --fit runs",
    )
    parser.add_argument("--no-fit", action="store_true", help="skip --fit")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    if not _command(args.arenaplan):
        parser.error(f"arenaplan command not found: {args.arenaplan}")
    models = sorted(args.models.glob("*.tflite"))
    if args.only:
        models = [m for m in models if m.name.removesuffix(".tflite") in args.only.split(",")]
    if not models:
        parser.error(f"no models in {args.models}: run benchmarks/keras_zoo.py first")
    rows = []
    for model in models:
        row = measure(model, args)
        report(row)
        sys.stdout.flush()
        rows.append(row)
    if args.json:

        def plain(x: Any) -> Any:
            return {k: v for k, v in vars(x).items() if k != "data"} if isinstance(x, Run) else x

        args.json.write_text(
            json.dumps([{k: plain(v) for k, v in r.items()} for r in rows], indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
