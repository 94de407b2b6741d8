"""How each stage of a cascade steps with CMSIS-NN kernels, chosen by the time model.

A convolution or pool stage computes ``block_rows`` rows per CMSIS-NN call (a step);
a CONV_2D may run another way (word 38: CMSIS-NN's im2col convolution itself, or the
kernel's pointwise loop over a folded bias). Larger steps make fewer calls, which
costs instructions per call (``CascadeKernel.instructions``, measured per build), and larger
rings, which cost arena bytes. The options of a chain (``Steps``: rows per step and
path of every stage) are compared by the time model's estimated instructions of the
cascade (``CascadeKernel.instructions``) and by the bytes it asks TFLM for, its scratch and
work buffer (``requests``, each rounded to 16 as TFLM's planner places them):

- ``least``: every stage one row per step, each convolution by its fastest path at
  one row: the fewest bytes the chain takes (the rings the row order needs);
- ``fastest``: the fewest instructions within ``room`` bytes, searched from an
  option that fits: the same rows per step for every stage (one row; the fewest rows
  of at least ``STEP_PIXELS`` output pixels that fill CMSIS-NN's pixel groups; the
  whole tensor), then each stage alone to a larger step (``STEP_ROWS``, those of
  ``STEP_PIXELS``, all its rows) while that pays and fits, until none does (at most
  ``PASSES`` rounds over the stages).

With the reference kernels every stage keeps one row per step and path 0: the
kernel computes rows one at a time there and larger steps only grow the rings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.allocation.packing import align_up
from arenaplan.ir.cascade_format import (
    BLOCK_ROWS,
    CONV_PATH,
    DIL_H,
    DIL_W,
    ELEMENT_TYPE,
    ELEMENT_TYPES,
    FILTER_H,
    FILTER_W,
    KIND,
    KIND_NAMES,
    KINDS,
    OUT_H,
    OUT_W,
    PAD_LEFT,
    PAD_TOP,
    PATH_IM2COL,
    PATH_POINTWISE,
    PATH_WRAPPER,
    ChainBlob,
    is_pointwise,
)
from arenaplan.ir.model import Subgraph
from arenaplan.passes.cascade_chain import (
    Chain,
    Steps,
    block_rows,
    cascade_kernel,
    chain_of,
    folded_bias,
    paired_steps,
    uniform_steps,
)
from arenaplan.passes.cascade_stage import Uncascadable, stage_of
from arenaplan.runtime.registry import runtime_of
from arenaplan.runtime.spec import KernelSet

STEP_PIXELS = (16, 32, 64, 128, 256, 512)  # output pixels of a step tried, at least
STEP_ROWS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)  # rows of a step tried (and all)
PASSES = 3  # rounds of the per-stage search at most


@dataclass(frozen=True, slots=True)
class Option:
    """One way to run a chain: the chain, the bytes it asks TFLM for (scratch and work
    buffer, each rounded to 16) and its estimated instructions."""

    chain: Chain
    requests: int
    instructions: float


def requests(chain: Chain, kernels: KernelSet | None) -> int:
    """Bytes of the kernel's scratch requests for ``chain`` in a build of ``kernels``,
    each rounded up to the runtime's alignment as its planner does."""
    work = cascade_kernel(kernels).work_bytes(ChainBlob(chain.scratch, chain.records))
    align = runtime_of(kernels).alignment
    return align_up(chain.scratch, align) + align_up(work, align)


class Chooser:
    """The options of one run of operators ``ops`` of ``sg`` for ``kernels``: only its
    int8 windowed stages change (an int16 stage keeps its default steps, which its
    CMSIS-NN product may need: ``paired_steps``; CMSIS-NN's s16 functions are not
    in the time model)."""

    def __init__(
        self,
        sg: Subgraph,
        ops: Sequence[int],
        buffers: Sequence[bytes],
        kernels: KernelSet | None,
    ) -> None:
        self.sg, self.ops, self.buffers, self.kernels = sg, tuple(ops), buffers, kernels
        self.kernel = cascade_kernel(kernels)
        self.stages = [stage_of(sg, sg.operators[i], buffers) for i in ops]
        first = chain_of(sg, ops, buffers, kernels)  # as the chain runs: its records
        self.records = list(first.records)
        self.base = uniform_steps(sg, self.stages, self.records, kernels, 0)
        self.paths = [self._paths(s) for s in range(len(ops))]
        self._seen: dict[Steps, Option | None] = {}

    def _chosen(self, s: int) -> bool:
        """Stage ``s``'s steps are the chooser's: an int8 windowed stage, CMSIS-NN."""
        w = self.records[s]
        int8 = w[ELEMENT_TYPE] == ELEMENT_TYPES["INT8"]
        return self.kernel.optimised and int8 and self.kernel.windowed(w)

    def _paths(self, s: int) -> tuple[int, ...]:
        """Word 38's paths stage ``s`` may take: the wrapper; for an int8 1x1 CONV_2D
        CMSIS-NN's im2col convolution; for a pointwise one whose folded bias fits
        int32 the kernel's pointwise loop."""
        w = self.records[s]
        if not self._chosen(s) or w[KIND] != KINDS["CONV_2D"]:
            return (PATH_WRAPPER,)
        out = [PATH_WRAPPER]
        one_by_one = (w[FILTER_H], w[FILTER_W], w[DIL_H], w[DIL_W]) == (1, 1, 1, 1)
        if one_by_one and w[PAD_TOP] == 0 and w[PAD_LEFT] == 0:
            out.append(PATH_IM2COL)  # the wrapper's 1x1 product sums filters per call
        if is_pointwise(w) and folded_bias(self.sg, self.stages[s], self.buffers) is not None:
            out.append(PATH_POINTWISE)
        return tuple(out)

    def blocks(self, s: int) -> tuple[int, ...]:
        """Rows per step stage ``s`` may take, ascending: ``STEP_ROWS`` below its
        height, the rows of each of ``STEP_PIXELS``, all its rows (the chooser's
        stages; others their default)."""
        w = self.records[s]
        if not self._chosen(s):
            return (max(self.base.block[s], 1),)
        rows = {block_rows("CONV_2D", w[OUT_W], w[OUT_H], self.kernels, p) for p in STEP_PIXELS}
        ladder = {r for r in STEP_ROWS if r < w[OUT_H]}
        return tuple(sorted({1, w[OUT_H], *ladder, *(max(r, 1) for r in rows)}))

    def option(self, steps: Steps) -> Option | None:
        """The chain run as ``steps`` (None: it cannot be)."""
        if steps not in self._seen:
            try:
                chain = chain_of(self.sg, self.ops, self.buffers, self.kernels, steps=steps)
            except Uncascadable:
                self._seen[steps] = None
            else:
                cost = self.kernel.instructions(chain.records)
                self._seen[steps] = Option(chain, requests(chain, self.kernels), cost)
        return self._seen[steps]

    def _best_path(self, blocks: Sequence[int], s: int) -> int:
        """Stage ``s``'s fastest path with ``blocks`` (alone: the others as given)."""
        if len(self.paths[s]) == 1:
            return self.paths[s][0]
        costs = []
        for path in self.paths[s]:
            w = list(self.records[s])
            w[BLOCK_ROWS] = blocks[s] if blocks[s] > 1 else 0
            w[CONV_PATH] = path
            costs.append((self.kernel.instructions([w]), path))

        return min(costs)[1]

    def steps(self, blocks: Sequence[int]) -> Steps:
        """``blocks`` with each stage's fastest path at its rows per step."""
        paths = tuple(self._best_path(blocks, s) for s in range(len(blocks)))
        return Steps(tuple(blocks), paths)

    def least(self) -> Option | None:
        """One row per step everywhere (the default steps of a stage not chosen), each
        stage's fastest path there."""
        return self.option(self.steps([max(b, 1) for b in self.base.block]))

    def fastest(self, room: int) -> Option | None:
        """The fewest estimated instructions within ``room`` bytes of requests (the
        least option when nothing fits)."""
        best = self.least()
        if best is None:
            return None
        for pixels in (*STEP_PIXELS, None):
            blocks = [self.uniform_block(s, pixels) for s in range(len(self.records))]
            trial = self.option(self.steps(blocks))
            best = _better(best, trial, room)
        for _ in range(PASSES):
            before = best
            for s in range(len(self.records)):
                best = self._grow(best, s, room)
            if best is before:
                break
        return best

    def uniform_block(self, s: int, pixels: int | None, every: bool = False) -> int:
        """Stage ``s``'s rows for steps of at least ``pixels`` output pixels (0: one
        row; None: all its rows) if it is the chooser's; ``every``: for any stage, as
        ``block_rows`` gives them (``--step-pixels``: int16 convolutions too); else its
        default steps."""
        w = self.records[s]
        chosen = self._chosen(s)
        if not (chosen or every) or (pixels is None and not chosen):
            return max(self.base.block[s], 1)
        if pixels is None:
            return w[OUT_H]
        kind = "CONV_2D" if chosen else KIND_NAMES[w[KIND]]
        paired = paired_steps(self.sg, self.stages[s])
        return max(block_rows(kind, w[OUT_W], w[OUT_H], self.kernels, pixels, paired), 1)

    def _grow(self, best: Option, s: int, room: int) -> Option:
        """``best`` with stage ``s`` at the larger step that pays most and fits (the
        steps tried in ascending rows, up to the first that does not fit)."""
        blocks = [max(x, 1) for x in best.chain.steps.block]
        for b in self.blocks(s):
            if b <= blocks[s]:
                continue
            trial = self.option(self.steps([*blocks[:s], b, *blocks[s + 1 :]]))
            if trial is not None and trial.requests > room:
                break
            best = _better(best, trial, room)
        return best


def _better(best: Option, trial: Option | None, room: int) -> Option:
    """``trial`` if it fits ``room`` and is faster than ``best`` (or ``best`` does not
    fit and ``trial`` takes fewer bytes), else ``best``."""
    if trial is None:
        return best
    if best.requests > room:
        return trial if trial.requests < best.requests else best
    if trial.requests <= room and trial.instructions < best.instructions:
        return trial
    return best
