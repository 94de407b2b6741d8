"""Instructions, by class, that each operator executes in CMSIS-NN on a Cortex-M:
the per-path table ``data/kernel_counts.json`` (measured under QEMU by
``scripts/gen_kernel_counts.py`` on one-operator models, fitted per path over the
features of ``tflm.cmsis_nn.paths``).

Classes (``native/qemu_insn_classes.c``): alu, mul, div, load, load_next, store,
multi, multi_regs, branch, taken, lob, vload, vop; ``insns`` is their total
(multi_regs and taken are not instructions: registers moved, branches taken).
Counts are per invoke of one operator, TFLM's dispatch included. Beside them,
``weight_bytes``: the bytes of constants the kernel reads (its weights times the
passes it makes over them), and ``weight_accesses``: the loads that takes.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from arenaplan.ir.model import Model
from arenaplan.tflm.cmsis_nn.paths import kernel_call

# the TFLM build whose counts stand for a CMSIS-NN kernel set's instruction level,
# compiled as TFLM compiles its kernels (-O2, "speed") or for size (-Os, "size")
BUILDS = {"dsp": "arm32-cmsis_nn", "mve": "m55-cmsis_nn"}
SIZE_BUILDS = {"dsp": "arm32-cmsis_nn-os"}
# Output pixels a convolution's inner kernel computes per pass over the weights
# (CMSIS-NN's arm_nn_mat_mult kernels: two columns with DSP, four rows with MVE);
# a depthwise kernel reads its weights again for every output pixel.
PIXELS_PER_PASS = {"dsp": 2, "mve": 4}
ACCESS_BYTES = {"dsp": 4, "mve": 16}  # bytes of one weight load (a word, a vector)


@cache
def _table() -> dict:
    text = resources.files("arenaplan.tflm").joinpath("data/kernel_counts.json").read_text()
    return json.loads(text)


def build_name(level: str, compiled_for: str = "speed") -> str | None:
    """The TFLM build whose counts stand for ``level`` compiled for ``compiled_for``
    (None: the table has none)."""
    name = (SIZE_BUILDS if compiled_for == "size" else BUILDS).get(level)
    return name if name in _table()["builds"] else None


def op_counts(
    model: Model, level: str, compiled_for: str = "speed"
) -> list[dict[str, float] | None]:
    """Every operator's instructions by class (``level``'s build), in the order of
    ``cost.roofline.operator_work``: subgraph by subgraph, in execution order; None
    for an operator whose path the table does not measure (a custom operator such
    as arenaplan's cascade, an activation): the target's compute rates time it."""
    paths = _table()["builds"][build_name(level, compiled_for)]["paths"]
    out = []
    for sg in model.subgraphs:
        for op in sg.operators:
            call = kernel_call(sg, op, level)
            row = paths.get(call.path)
            if row is None:
                out.append(None)
                continue
            x = call.vector()
            counts = {
                c: sum(a * b for a, b in zip(coef, x, strict=True))
                for c, coef in row["classes"].items()
            }
            consts = [sg.tensors[i] for i in op.tensor_inputs() if sg.tensors[i].is_constant]
            weights = sum(t.nbytes for t in consts)
            counts["weight_bytes"] = weights * _passes(call.path, call.pixels, level)
            counts["weight_accesses"] = counts["weight_bytes"] / ACCESS_BYTES[level]
            out.append(counts)
    return out


def _passes(path: str, pixels: int, level: str) -> float:
    """Times a kernel of ``path`` reads its weights."""
    if path.startswith("conv"):
        return max(pixels / PIXELS_PER_PASS[level], 1.0)
    if path.startswith("dw"):
        return max(pixels, 1)
    return 1.0
