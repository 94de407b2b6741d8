"""Where TFLM's kernels let two tensors share bytes: the rules.

An alias (``Alias``) says ``offset(tensor) == offset(base) + delta`` (bytes) and
names the one rule that makes the overlap safe (``docs/inplace.md`` gives, for
each, the kernel source and loop that were read):

  inplace      an operator writes its output over an input that dies at that
               operator: same start address; the kernel reads input element i
               before it writes output element i, in ascending i, and an output
               element is no wider than an input element (``INPLACE_RULES``: the
               rules read for the kernels the plan's variant runs);
  slice-view   a STRIDED_SLICE output that is one contiguous byte range of its
               input lies on that range (the kernel copies each byte onto itself);
  concat-view  a CONCATENATION input lies on its byte range of the output (its
               producer writes it there; the kernel copies each byte onto itself).

Each rule is stated beside the kernel it was read for, in its family module of
``tflm.kernels`` (``Kernel.inplace``, ``Kernel.view``), and for CMSIS-NN in
``tflm.cmsis_nn``; this module gathers them per kernels variant. Where a model's
tensors meet them is found by ``tflm.alias_candidates``. A view needs TFLM's reference
STRIDED_SLICE or CONCATENATION, which every variant runs.
"""

from __future__ import annotations

from dataclasses import replace

from arenaplan.runtime.records import CONCAT_VIEW, INPLACE, SLICE_VIEW, Alias
from arenaplan.tflm import cmsis_nn
from arenaplan.tflm import kernels as families
from arenaplan.tflm.facts import InPlaceRule
from arenaplan.tflm.kernel_sets import KERNELS, cmsis_features

__all__ = [
    "CONCAT_VIEW",
    "INPLACE",
    "INPLACE_KERNELS",
    "INPLACE_RULES",
    "RULES",
    "SLICE_VIEW",
    "VIEW_KERNELS",
    "Alias",
    "InPlaceRule",
    "runs_reference",
    "unread",
]


RULES = (INPLACE, SLICE_VIEW, CONCAT_VIEW)


# TFLM's reference kernels (docs/inplace.md says, for each, which loop was read and why
# it is safe); ``INPLACE_RULES`` below has the table of each kernels variant.
# Every entry also needs equal element counts, an output element no wider than an
# input element, and no INT4 (``tflm.alias_candidates``).
INPLACE_KERNELS: dict[str, InPlaceRule] = {
    name: kernel.inplace for name, kernel in families.BUILTIN.items() if kernel.inplace
}


def runs_reference(kernels: str, opcode: str | None) -> bool:
    """Whether a ``kernels`` build runs TFLM's reference kernel for ``opcode`` (True
    for None: no kernel to ask about)."""
    if opcode is None or cmsis_features(kernels) is None:
        return True
    return not cmsis_nn.is_cmsis_kernel(opcode)


def _variant_rules(kernels: str) -> dict[str, InPlaceRule]:
    """The rules for the kernels a ``kernels`` build runs: the reference table, where
    the build runs the reference kernel; the CMSIS-NN reading of that feature level
    (``cmsis_nn.INPLACE_READ``) where it runs its own; no rule where its own kernel
    was not read."""
    features = cmsis_features(kernels)
    if features is None:
        return dict(INPLACE_KERNELS)
    table: dict[str, InPlaceRule] = {}
    for opcode, rule in INPLACE_KERNELS.items():
        if runs_reference(kernels, opcode):
            table[opcode] = replace(rule, source=f"the reference kernel: {rule.source}")
            continue
        read = cmsis_nn.INPLACE_READ.get(opcode, {}).get(features)
        if read is not None:
            table[opcode] = replace(rule, source=read)
    return table


# kernels variant (``tflm.kernel_sets.KERNELS``) -> opcode -> the rule read for the
# kernel that variant runs; an opcode of ``INPLACE_KERNELS`` missing here is refused
INPLACE_RULES: dict[str, dict[str, InPlaceRule]] = {k: _variant_rules(k) for k in KERNELS}


def unread(kernels: str, opcode: str) -> str:
    """Why ``opcode`` has no in-place rule for ``kernels`` though the reference has one."""
    return (
        f"no in-place rule for {kernels}: CMSIS-NN's {opcode} kernel "
        f"(kernels/cmsis_nn/) was not read at feature level {cmsis_features(kernels)!r}"
    )


# view rule -> the reference kernel it was read for; every variant runs it (a CMSIS-NN
# build too: kernels/cmsis_nn/ has no strided_slice.cc or concatenation.cc)
VIEW_KERNELS: dict[str, str] = {
    kernel.view: name for name, kernel in families.BUILTIN.items() if kernel.view
}
