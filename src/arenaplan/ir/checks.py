"""The IR verifier run after every pass (``passes.pipeline``).

It shares no code with the passes it checks. Failures raise ``PassError`` naming
the subgraph and operator.
"""

from __future__ import annotations

from arenaplan.ir.model import Model
from arenaplan.ir.verify import check_operators


def verify_ir(model: Model) -> None:
    """Raise ``PassError`` (or ``ModelFormatError``) if ``model`` is not well formed."""
    check_operators(model)
