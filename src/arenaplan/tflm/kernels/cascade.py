"""arenaplan's own custom kernel, ``ARENAPLAN_CASCADE`` (src/arenaplan/firmware/
arenaplan_cascade.cc, docs/cascade.md): a chain of operators run row by row.

- tail: Init's OpData, one int32 (the scratch buffer's index); no options struct,
  nothing in Prepare: the chain is read from the custom options in place and the
  quantisation data from constant tensors;
- scratch: one request of the bytes the chain's header names (none for 0);
- refuses: what the kernel's Prepare checks is what the pass writes;
- in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Kernel, OpRule, OpView, ScratchView, Unmodelled

OPDATA_BYTES = 4  # struct OpData { int32_t scratch_index; }
_SCRATCH_WORD = 2  # header word: scratch bytes


def _chain_header(custom: dict) -> tuple[int, ...]:
    blob = custom.get("chain")
    if not isinstance(blob, (bytes, bytearray)) or len(blob) < 16:
        raise Unmodelled("a cascade without its chain")
    return tuple(int.from_bytes(blob[k : k + 4], "little", signed=True) for k in range(0, 16, 4))


def _opdata(v: OpView) -> list[int]:
    return [OPDATA_BYTES]


def _scratch(ctx: ScratchView) -> list[int]:
    bytes_ = _chain_header(ctx.view().custom())[_SCRATCH_WORD]
    return [bytes_] if bytes_ > 0 else []


CUSTOM = {"ARENAPLAN_CASCADE": Kernel(OpRule(init_extra=_opdata), scratch=_scratch)}
