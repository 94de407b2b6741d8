"""What the planning pipeline is asked for (``PlanRequest``) and what it gives back
(``PlanResult``): plain data, no command line in them.

Sizes are bytes, times seconds. A request names the model as read (``Source``),
the target and its capacities, the TFLM build (profile, kernels), the passes, the
weights policy, whether the result is to be proven and written (``prove``), and
which outputs to render in memory (``outputs``; None renders none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from arenaplan.errors import PlanValidationError
from arenaplan.ir.model import Model
from arenaplan.placement.plan import Plan
from arenaplan.reader import load_model
from arenaplan.targets import Memory, Target

if TYPE_CHECKING:  # what only some requests use is imported by those that do
    from arenaplan.export.figures import Figures
    from arenaplan.export.rewrite_effect import RewriteEffect
    from arenaplan.passes.base import Origin
    from arenaplan.pipeline.rewrite import Rewrite
    from arenaplan.placement.tiers import TierPlacement
    from arenaplan.verify.prove import Proof
    from arenaplan.weights.blob import WeightsBlob
    from arenaplan.weights.plan import WeightsPlan

Notify = Callable[[str], None]  # receives one line for the user (a warning), as it happens


@dataclass(frozen=True, slots=True)
class Source:
    """A model as read: its bytes (never modified), its IR, and the file name that
    outputs show."""

    data: bytes
    model: Model
    name: str


def read_source(path: Path) -> Source:
    """The model at ``path`` (one line on stderr and exit 2 from the command line if it
    cannot be read, is not a model TFLM could run, or fails the IR verifier: a use
    before definition, a cycle, shapes that do not follow from the inputs)."""
    from arenaplan.ir.verifier import check_model

    data, model = load_model(path)
    check_model(model, str(path))
    return Source(data, model, path.name)


@dataclass(frozen=True, slots=True)
class Wanted:
    """Which outputs to render in memory; ``picture``: "png" or "svg"."""

    model: bool = False  # the planned .tflite (its bytes are always made when proving)
    json: bool = False
    picture: str | None = None
    report: bool = False
    header: bool = False
    planner_cpp: bool = False
    weights_blob: bool = False
    schedule: bool = False


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """One planning job.

    ``caps``: capacity (bytes) of target memories that hold activations, each at most
    the memory's size; ``profile``/``kernels``: the TFLM build (None: the target's,
    else arm32 / the reference kernels); ``passes``: names of passes to run in order
    (empty with ``fit``: reorder, inplace, bands); ``objective``: what bands minimise
    and ``fit`` bounds, "head" or "arena" (None: the head when ``persistent_memory``
    is given, else the arena); ``weights``:
    a ``--weights`` policy (needs a target); ``prove``: prove rewrites and weight
    copies in TFLM and make the planned model's bytes (False: estimates only, for
    sweeps); ``lay_out``: when activations spread over memories, also plan TFLM's one
    head with the memories laid end to end; ``check_memories``: refuse a capacity too
    small to hold anything (an error instead of no fit)."""

    source: Source
    target: Target | None = None
    caps: Mapping[str, int] = field(default_factory=dict)
    profile: str | None = None
    kernels: str | None = None
    allocator: str = "portfolio"
    time_limit: float = 2.0
    passes: tuple[str, ...] = ()
    max_extra_macs: float = 0.10
    fit: int | None = None
    clobber_inputs: bool = False
    objective: str | None = None
    step_pixels: int | None = None  # cascade, CMSIS-NN kernels: uniform steps (None: chosen)
    weights: str | None = None
    arena_memory: str | None = None
    persistent_memory: str | None = None
    write_unproven: bool = False
    prove: bool = True
    lay_out: bool = True
    check_memories: bool = True
    outputs: Wanted | None = None


@dataclass(frozen=True, slots=True)
class PlanResult:
    """The model planned (rewritten if proven, or asked not to prove), its plan and
    what was rendered.

    ``plan``: the plan of TFLM's head (memories laid end to end when spread and laid
    out); ``tiers``: the placement over the target's memories when the plan does not
    fit the fastest; ``arena``: the memory of the non-persistent arena (with a
    target); ``planned``: the model's bytes with the offline plan (empty without
    ``prove``); ``rewrite``: None when no pass ran or the rewrite was not proven;
    ``before``: the plan of the model as given, when a proven rewrite replaced it;
    ``weights``: the weights plan with ``weights``; ``figures``: what every surface
    shows (the arrays to set, each memory's bytes, head, tail, latency); ``effect``:
    head, tail, whole arena and estimated time before and after a proven rewrite;
    ``origin``:
    for each operator of ``model`` (model order), the operator of the model as given
    that it came from (None: inserted, a band's slice, padding or join, or a weight
    copy), or None when ``model`` runs the operators of the model as given in their
    order; ``files``: rendered outputs by ``Wanted`` field name, in the order they are
    to be written."""

    source: Source
    model: Model
    plan: Plan
    profile: str
    tiers: TierPlacement | None = None
    arena: Memory | None = None
    planned: bytes = b""
    rewrite: Rewrite | None = None
    proof: Proof | None = None
    before: Plan | None = None
    weights: WeightsPlan | None = None
    blob: WeightsBlob | None = None
    refusals: tuple[str, ...] = ()
    figures: Figures | None = None
    effect: RewriteEffect | None = None  # a proven rewrite against the model as given
    origin: Origin | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    # the pass lists compared (``pipeline.rewrite.candidates``) with the figure each
    # planned to (the whole arena, or the head), best first; () when one list ran
    compared: tuple[tuple[tuple[str, ...], int], ...] = ()

    def checked_figures(self) -> Figures:
        """``figures``, which ``run_plan`` makes for every plan: their absence is a bug
        in the pipeline (``PlanValidationError``, exit 70)."""
        if self.figures is None:
            raise PlanValidationError([f"the plan of {self.source.name} came without figures"])
        return self.figures
