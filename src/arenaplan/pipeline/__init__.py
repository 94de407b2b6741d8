"""The planning pipeline in one function: ``run_plan(PlanRequest) -> PlanResult``.

Every command that plans (plan, explore, sweep, demo) and the benchmarks call it;
it reads nothing from the command line and writes no file.
"""

from arenaplan.pipeline.prove import planned_model_bytes
from arenaplan.pipeline.request import PlanRequest, PlanResult, Source, Wanted, read_source
from arenaplan.pipeline.run import run_plan

__all__ = [
    "PlanRequest",
    "PlanResult",
    "Source",
    "Wanted",
    "planned_model_bytes",
    "read_source",
    "run_plan",
]
