"""arenaplan's cascade kernel as one kernel set of a runtime runs it: the facts the
cascade passes and the cost model read (``Runtime.cascade``).

Records are stage records of ``ir.cascade_format`` (one tuple of ints per stage).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arenaplan.ir.cascade_format import ChainBlob

Records = Sequence[Sequence[int]]


@dataclass(frozen=True, slots=True)
class CascadeKernel:
    """The cascade kernel in one kernel set.

    ``optimised``: its int8 convolutions call an optimised library (CMSIS-NN), so a
    stage's steps are chosen by the time model and must fill the library's pixel
    groups; False: the plain loops of the reference kernels, one row per step.
    """

    optimised: bool
    pixel_group: int  # output pixels the library's convolution computes at once (1: none)
    paired: bool  # the fewest pixels of a step that keeps the fast path are two
    windowed: Callable[[tuple[int, ...]], bool]  # a stage record the library runs windowed
    work_bytes: Callable[[ChainBlob], int]  # bytes of the library's buffers for a chain
    instructions: Callable[[Records], float]  # estimated instructions of one invoke
    extra_instructions: Callable[[Records], float]  # beyond the operators replaced
    extra_work: Callable[[Records], int]  # extra_instructions as convolution MACs
