"""``inplace``: let operators write their output over an input that dies there.

The pass does not change the graph: aliasing is a decision of the planner, not a
rewrite. It exists so that ``--passes inplace`` is listed and selected, and says
how many operators could write over an input; the command layer turns the chosen
passes into planner options with ``alias_options``. Which kernels are safe, and
why, for each kernels variant, is in docs/inplace.md (``tflm.alias_rules.INPLACE_RULES``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from arenaplan.ir.model import Model
from arenaplan.passes.base import PassResult
from arenaplan.runtime.records import INPLACE
from arenaplan.runtime.registry import default_kernels, runtime_of
from arenaplan.runtime.spec import KernelSet

# pass name -> the alias kinds (``PlanOptions.alias_kinds``) it asks the planner for:
# bands cuts tensors into row bands with STRIDED_SLICE and joins them with
# CONCATENATION, which pay off only as views
ALIASES_OF_PASS: dict[str, frozenset[str]] = {
    "inplace": frozenset({"inplace"}),
    "bands": frozenset({"views"}),
}


@dataclass(frozen=True, slots=True)
class InPlace:
    """``clobber_inputs``: an operator may also write over a graph input (the
    application fills the inputs again before every invoke). ``kernels``: the kernels
    the build runs (``tflm.kernel_sets``), whose in-place rules apply."""

    name: ClassVar[str] = "inplace"
    summary: ClassVar[str] = (
        "plan operator outputs over inputs that die there, for TFLM kernels safe in place"
    )
    clobber_inputs: bool = False
    kernels: KernelSet = field(default_factory=default_kernels)

    def run(self, model: Model) -> PassResult:
        runtime, kernels = runtime_of(self.kernels), self.kernels
        found = runtime.alias_candidates(model, ("inplace",), self.clobber_inputs, kernels)
        found = found.aliases

        ops = len({a.op for a in found if a.kind == INPLACE})
        where = "" if self.clobber_inputs else " (graph inputs kept)"
        note = f"{ops} operator{'s' if ops != 1 else ''} may write over an input{where}"
        return PassResult(model, False, note, {"inplace_operators": ops})


def alias_options(pass_names: Iterable[str], clobber: bool = False) -> tuple[frozenset[str], bool]:
    """(``PlanOptions.alias_kinds``, ``PlanOptions.clobber_inputs``) for the chosen passes:
    ``kinds, clobber = alias_options(names, clobber)``; then
    ``PlanOptions(..., alias_kinds=kinds, clobber_inputs=clobber)``."""
    kinds: set[str] = set()
    for name in pass_names:
        kinds |= ALIASES_OF_PASS.get(name, frozenset())
    return frozenset(kinds), clobber
