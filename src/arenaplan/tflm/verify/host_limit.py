"""What this machine runs: a model's tensors must fit the host's memory to run in TFLM.

``verify`` runs both models in TFLM here, with random inputs: TFLM allocates the arena
and every tensor's data. A model whose tensors outside the flatbuffer add up to more
than ``HOST_LIMIT`` bytes (the arena with no reuse at all, an upper bound of what TFLM
needs) is refused before it runs: no microcontroller holds that much, and running it
here would take the machine's memory and minutes of interpreted work.
"""

from __future__ import annotations

from arenaplan.errors import UsageError
from arenaplan.ir.model import Model

HOST_LIMIT = 1 << 30  # bytes: 1 GiB of tensors outside the flatbuffer, all subgraphs


def check_runs_here(model: Model, name: str) -> None:
    """Refuse (one line) a model whose non-constant tensors exceed ``HOST_LIMIT`` bytes."""
    total = sum(t.nbytes for sg in model.subgraphs for t in sg.tensors if not t.is_constant)
    if total > HOST_LIMIT:
        raise UsageError(
            f"{name}: its tensors outside the flatbuffer add up to {total:,} B, more than "
            f"the {HOST_LIMIT:,} B (1 GiB) verify runs in TFLM on this machine"
        )
