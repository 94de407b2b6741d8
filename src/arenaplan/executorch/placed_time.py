"""The estimated time of a program where its own plan places its tensors.

To compare two programs' placements over a target's memories (arenaplan's pools
against ExecuTorch's ``BankedGreedy``) both are timed the same way, from what each
program's file says: a tensor in memory id k lies in ``memories[k - 1]``, views
included (a view is in its base's pool); constants where the target keeps its
weights. Seconds, by the target's time model (``cost.timing``).
"""

from __future__ import annotations

from collections.abc import Sequence

from arenaplan.cost.roofline import default_memory
from arenaplan.cost.timing import Timer
from arenaplan.errors import UsageError
from arenaplan.executorch import simulate
from arenaplan.ir.model import Model
from arenaplan.targets.model import Target


def placed_seconds(model: Model, target: Target, memories: Sequence[str]) -> float:
    """Seconds of one call of every method, memory id k in ``memories[k - 1]``."""
    where = default_memory(model, target)
    for key, (memory, _) in simulate.stored_places(model).items():
        if not 1 <= memory <= len(memories):
            raise UsageError(f"memory id {memory} is in none of {', '.join(memories)}")
        where[key] = memories[memory - 1]
    return sum(t.seconds for t in Timer(model, target).times(where))


def pool_sizes(model: Model) -> dict[int, int]:
    """Bytes each memory id's tensors reach (the most over the methods)."""
    return simulate.pool_reaches(model, simulate.stored_places(model))
