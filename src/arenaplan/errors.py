"""The one error hierarchy of arenaplan.

Every error says what is wrong and where (file, subgraph, operator, tensor, byte
offset). Only the command line turns them into exit codes and one-line messages.
"""

from __future__ import annotations


class ArenaplanError(Exception):
    """Base of every error arenaplan raises on purpose."""

    exit_code = 2


class UsageError(ArenaplanError):
    """A bad command-line argument or option value."""


class ModelFormatError(ArenaplanError):
    """The input is not a readable TFLite model (corrupt, truncated, wrong kind)."""


class UnsupportedModelError(ArenaplanError):
    """The model is valid TFLite but uses something arenaplan cannot plan."""


class AllocationError(ArenaplanError):
    """An allocation problem is malformed or cannot be solved as asked."""


class PlanValidationError(ArenaplanError):
    """A plan arenaplan made breaks an invariant; ``problems`` lists every named reason.

    The validator judges the planner's own output, never the user's input (``verify``
    reports a wrong offline plan in a model it is given as a finding, not with this
    error): so it is a bug in arenaplan, and the command line says so (exit 70)."""

    exit_code = 70

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = "; ".join(problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        super().__init__(f"invalid plan: {shown}{more}")


class TargetError(ArenaplanError):
    """A target description (TOML) is missing, malformed or inconsistent."""


class RuntimeUnavailableError(ArenaplanError):
    """The TFLM runtime (PyPI ``tflite-micro``) is not installed."""


class TflmRefusesError(ArenaplanError):
    """TFLM refuses the model, so nothing made from it can be proven there (exit 3)."""

    exit_code = 3


class VerificationError(ArenaplanError):
    """Running the planned model in TFLM failed or gave different outputs."""


class PassError(ArenaplanError):
    """A graph rewrite produced an invalid model: names the pass and the operator.

    The IR is checked before the first pass (a model that fails there is bad input,
    ``ModelFormatError``), so this judges a pass's own output: a bug in arenaplan
    (exit 70), like ``PlanValidationError``."""

    exit_code = 70
