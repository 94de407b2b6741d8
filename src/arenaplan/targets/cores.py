"""Cycles of a Cortex-M core per instruction class, from each core's documents.

A count of instructions by class (``tflm.kernel_counts``) becomes cycles at zero
wait states (memory stalls are charged apart, by ``cost.timing``):

    cycles = sum over classes c of count(c) * cost(c)       scalar
           + beats * max(vload, vop)                        vector (MVE)

``taken`` is charged on top of ``branch`` (a taken branch refills the pipeline);
``multi_regs`` on top of ``multi`` (LDM and STM move one register a cycle). A
vector core of ``beats`` cycles per 128-bit instruction overlaps a vector load
with a vector data-processing instruction, so the longer of the two streams
counts. Every figure is from the source named beside the core; what a source
does not give is marked ``assumed`` there and in the label.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenaplan.errors import TargetError

VECTOR = ("vload", "vop")  # the classes a core with MVE times by its beats


@dataclass(frozen=True, slots=True)
class Core:
    """Cycles per instruction class of one core (``costs``), its vector beats
    (cycles per 128-bit MVE instruction; 0: no MVE), where they come from, and
    the CMSIS-NN instruction level its kernels are built for."""

    name: str
    level: str
    costs: dict[str, float]
    beats: float = 0.0
    source: str = ""
    assumed: str = ""

    def cycles(self, counts: dict[str, float]) -> float:
        if not self.beats:  # no MVE: FP loads and operations take their scalar costs
            return sum(counts.get(c, 0.0) * k for c, k in self.costs.items())
        scalar = sum(counts.get(c, 0.0) * k for c, k in self.costs.items() if c not in VECTOR)
        return scalar + self.beats * max(counts.get("vload", 0.0), counts.get("vop", 0.0))


# Cortex-M4 TRM (Arm DDI 0439), "Processor instruction timings", Table 3-1: data
# processing and 32-bit multiply-accumulate 1 cycle; a load 2, one that follows a
# load or store pipelines into 1; a store 1 (write buffer); LDM/STM 1 + N; a branch
# 1 + P with P of 1 to 3 (2 taken here); SDIV/UDIV 2 to 12 (7 taken here).
_M4 = {
    "alu": 1, "mul": 1, "div": 7, "load": 2, "load_next": 1, "store": 1, "multi": 1,
    "multi_regs": 1, "branch": 1, "taken": 2, "lob": 1, "vload": 2, "vop": 1,
}  # fmt: skip

# Cortex-M7 and M85 (LLVM's ARMScheduleM7.td, ARMScheduleM85.td: IssueWidth 2,
# dual issue of most instructions, one multiply-accumulate a cycle, branches
# predicted): half a cycle per instruction but multiplies, a taken branch half more.
_DUAL = {
    "alu": 0.5, "mul": 1, "div": 7, "load": 0.5, "load_next": 0.5, "store": 0.5,
    "multi": 0.5, "multi_regs": 0.5, "branch": 0.5, "taken": 0.5, "lob": 0.5,
    "vload": 1, "vop": 1,  # FP on the M7 (a core with MVE times these by its beats)
}  # fmt: skip

# Cortex-M55 (LLVM's ARMScheduleM55.td: single issue, no branch predictor): the
# M4's scalar table; MVE dual-beat (two 32-bit beats a cycle: 2 cycles per 128-bit
# instruction); low-overhead loops: LE costs nothing once its loop is cached.
_M55 = _M4 | {"lob": 0}

CORES = {
    "cortex-m4": Core(
        "cortex-m4", "dsp", _M4, 0.0,
        "Cortex-M4 TRM (Arm DDI 0439) Table 3-1",
    ),
    "cortex-m33": Core(
        "cortex-m33", "dsp", _M4, 0.0,
        "Cortex-M4 TRM Table 3-1",
        "the M33 TRM gives no instruction timings: the M4's (same 3-stage pipeline) are assumed",
    ),
    "cortex-m7": Core(
        "cortex-m7", "dsp", _DUAL, 0.0,
        "LLVM ARMScheduleM7.td (dual issue)",
        "cycles per class assumed from the issue width, not measured",
    ),
    "cortex-m55": Core(
        "cortex-m55", "mve", _M55, 2.0,
        "Cortex-M4 TRM Table 3-1 (scalar); Cortex-M55 dual-beat MVE",
        "the M55's scalar timings are assumed equal to the M4's",
    ),
    "cortex-m85": Core(
        "cortex-m85", "mve", _DUAL | {"lob": 0}, 2.0,
        "LLVM ARMScheduleM85.td (dual issue); dual-beat MVE as the M55",
        "cycles per class assumed from the issue width, not measured",
    ),
}  # fmt: skip


# the classes that reach a kernel's tensors: one access each. LDM, STM, PUSH and POP
# (``multi``) are left out: they save and restore registers on the stack, which is
# not where the tensors are.
ACCESSES = ("load", "load_next", "store", "vload")


def data_accesses(counts: dict[str, float]) -> float:
    """Loads and stores a count by class makes to tensors (instruction fetch and
    the stack aside)."""
    return sum(counts.get(c, 0.0) for c in ACCESSES)


def core_named(name: str) -> Core:
    try:
        return CORES[name]
    except KeyError:
        known = ", ".join(sorted(CORES))
        raise TargetError(f"unknown core {name!r} (known: {known})") from None
