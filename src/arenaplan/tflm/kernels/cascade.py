"""arenaplan's own custom kernel, ``ARENAPLAN_CASCADE`` (src/arenaplan/firmware/
arenaplan_cascade.cc, docs/cascade.md): a chain of operators run row by row.

Sources: the kernel above, and of TFLM tensorflow/lite/micro/micro_context.h (the
AllocatePersistentBuffer and RequestScratchBufferInArena it calls).

- tail: Init's OpData, two int16 (the scratch buffers' indices); no options struct,
  nothing in Prepare: the chain is read from the custom options in place and the
  quantisation data from constant tensors;
- Prepare's temporaries: one at a time (each input or output it checks is
  allocated, checked and freed before the next);
- scratch: one request of the bytes the chain's header names (none for 0); in a
  CMSIS-NN build a second one, the work buffer (``tflm.cmsis_nn.cascade``);
- refuses: what the kernel's Prepare checks is what the pass writes;
- in place: none.
"""

from __future__ import annotations

from arenaplan.ir.cascade_format import OPCODE, decode
from arenaplan.tflm.facts import Kernel, OpRule, OpView, ScratchView

OPDATA_BYTES = 4  # struct OpData { int16_t scratch_index, work_index; }


def _opdata(v: OpView) -> list[int]:
    return [OPDATA_BYTES]


def _scratch(ctx: ScratchView) -> list[int]:
    scratch = decode(ctx.op).scratch
    return [scratch] if scratch > 0 else []


CUSTOM = {OPCODE: Kernel(OpRule(init_extra=_opdata), scratch=_scratch, one_temporary=True)}
