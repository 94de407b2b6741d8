"""The planning pipeline: ``run_plan(PlanRequest) -> PlanResult``.

Order of work: check the capacities against the model, rewrite (the passes asked
for), plan the head (``placement``), fit it to the target's memories, plan the
weights (``weights``) when a policy is given, prove what changed in the plan's
runtime (``pipeline.prove``) and try the next best when it is not proven (the next
rewrite, the model as given, without the weight copies), check ``fit``, then render
the outputs asked for in memory (``pipeline.outputs``). Nothing is written here: the
caller writes ``PlanResult.files`` once all succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from arenaplan.errors import ArenaplanError, PlanValidationError, UsageError
from arenaplan.export.figures import Figures, check_chosen, figures_of
from arenaplan.export.rewrite_effect import rewrite_effect
from arenaplan.ir.model import Model
from arenaplan.passes.base import compose, identity
from arenaplan.pipeline.outputs import render
from arenaplan.pipeline.prove import passed_over, with_proof
from arenaplan.pipeline.request import Notify, Planned, PlanRequest, PlanResult
from arenaplan.pipeline.rewrite import (
    FIT_CASCADE,
    FIT_PASSES,
    Rewrite,
    candidates,
    check_fit,
    fit_figure,
    run_rewrites,
)
from arenaplan.placement import PlanOptions, plan_model
from arenaplan.placement.memories import check_arena_memory, check_capacities, fit_to_target
from arenaplan.runtime.registry import (
    default_kernels,
    default_profile,
    get,
    runtime_name_for,
    runtime_of,
)
from arenaplan.runtime.spec import Deployment, KernelSet, Profile
from arenaplan.weights.plan import plan_weights
from arenaplan.weights.policies import parse_weights

if TYPE_CHECKING:
    from arenaplan.export.rewrite_effect import RewriteEffect
    from arenaplan.passes.base import Origin
    from arenaplan.runtime.proof import Proof
    from arenaplan.weights.plan import Score, WeightsPlan


def _ignore(_line: str) -> None:
    """The default ``notify``: warnings are dropped."""


def run_plan(request: PlanRequest, notify: Notify = _ignore) -> PlanResult:
    """Plan ``request``; ``notify`` receives each warning (a rewrite or copies not
    proven) once the plan stands (none when it fails: the error is the one line).
    Raises ``ArenaplanError`` on bad input or no plan."""
    target, model = request.target, request.source.model
    runtime = runtime_of(_kernels(request))
    refused = [name for name in request.passes if not runtime.takes_pass(name)]
    if refused or (request.weights and not runtime.rewrites):
        what = f"--passes {refused[0]}" if refused else "--weights"
        raise UsageError(
            f"{what} rewrites TFLite models; {runtime.title} programs are planned as exported"
        )
    if target is not None and request.check_memories:
        check_capacities(model, target, request.caps)
    profile = _profile(request)
    said: list[str] = []  # warnings, said once the plan stands: a refusal is one line
    done = _first_standing(request, profile, said.append)
    if request.fit is not None:
        head_only = objective_of(request) == "head"
        records = done.rewrite.records if done.rewrite else ()
        check_fit(request.fit, done.model, done.plan, profile, head_only, records)
    said += [f"arenaplan: {line}" for line in runtime.advice(done.model, done.plan)]
    result = PlanResult.of(done, _figures(request, done), _effect(request, done))
    if request.outputs is not None:
        result = replace(result, refusals=runtime_of(done.plan.kernels).refusals(done.model))
        result = render(request, result)
    for line in said:  # the plan and its outputs stand
        notify(line)
    return result


def _effect(request: PlanRequest, done: Planned) -> RewriteEffect | None:
    """What a proven rewrite changed (None: no rewrite replaced the model as given)."""
    if done.before is None:
        return None

    before = (request.source.model, done.before)
    return rewrite_effect(before, (done.model, done.plan), done.profile, request.target)


def _figures(request: PlanRequest, done: Planned) -> Figures:
    """The one set of figures every surface shows; a memory ``--persistent-memory``
    names must have room for what they put there."""
    target = request.target
    figures = figures_of(
        done.model,
        done.plan,
        done.profile,
        target,
        request.caps,
        done.tiers,
        arena_memory=done.arena.name if done.arena is not None else None,
        persistent_memory=request.persistent_memory,
        seconds=done.weights.seconds if done.weights is not None else None,
    )
    if target is not None and request.persistent_memory is not None:
        check_chosen(figures, target, request.caps, request.persistent_memory)
    wp = done.weights
    if wp is None:
        return figures
    if wp.baseline_plan is not None:  # the baseline policy's own plan, its own figures
        baseline = _score(request, done.profile)(wp.baseline_plan)
    else:  # this plan is the baseline's, or the baseline does not fit
        baseline = figures.latency if wp.baseline_total is not None else None
    return replace(figures, baseline=(wp.baseline, baseline))


def _score(request: PlanRequest, profile: Profile) -> Score:
    """The latency of a weights plan as ``figures_of`` gives it (TFLM's persistent
    data where its arrays go): what ``auto`` compares plans by."""
    target = request.target

    def seconds(wp: WeightsPlan) -> float:
        arena = request.arena_memory if wp.tiers is None else None
        figures = figures_of(
            wp.model,
            wp.plan,
            profile,
            target,
            request.caps,
            wp.tiers,
            arena_memory=arena,
            persistent_memory=request.persistent_memory,
            seconds=wp.seconds,
        )
        if figures.latency is None:  # the figures of a plan for a target are timed
            raise PlanValidationError(["the figures of a plan for a target have no latency"])
        return figures.latency

    return seconds


def objective_of(request: PlanRequest) -> str:
    """What the bands pass minimises and ``fit`` bounds: the one asked for, else the
    head alone when the persistent part lives in a memory of its own, else the arena
    (head + tail)."""
    return request.objective or ("head" if request.persistent_memory else "arena")


def deployment_of(request: PlanRequest) -> Deployment:
    """What the plan is for: the kernels and build profile asked for, else the
    target's, else the default runtime's defaults."""
    return Deployment(_kernels(request), _profile(request))


Chosen = TypeVar("Chosen", KernelSet, Profile)


def _profile(request: PlanRequest) -> Profile:
    target = request.target
    return _chosen(request, request.profile, target and target.profile, default_profile)


def _kernels(request: PlanRequest) -> KernelSet:
    target = request.target
    return _chosen(request, request.kernels, target and target.kernels, default_kernels)


def _chosen(
    request: PlanRequest,
    asked: Chosen | None,
    targets: Chosen | None,
    default: Callable[[str], Chosen],
) -> Chosen:
    """What was asked for (a kernel set or a profile), else the target's (``targets``)
    when it is for the model's runtime, else that runtime's ``default``."""
    runtime = _model_runtime(request, asked)
    if asked is not None:
        return asked
    if targets is not None and targets.runtime == runtime:
        return targets
    return default(runtime)


def _model_runtime(request: PlanRequest, asked: KernelSet | Profile | None) -> str:
    """The runtime the model's file is for; kernels or a profile of a runtime that
    runs no model of this format are refused."""
    model = request.source.model
    runtime = runtime_name_for(model)
    if asked is not None and runtime_of(asked).file_format != model.file_format:
        title = get(runtime).title
        raise UsageError(f"{asked} is {runtime_of(asked).title}'s; this model is {title}'s")
    return runtime


def pass_names(request: PlanRequest) -> tuple[str, ...]:
    """The passes to run: those asked for, else with ``fit`` reorder, inplace, bands,
    after cascade where a cascaded model can be proven (TFLM built from source)."""
    if request.passes or request.fit is None:
        return request.passes
    kernels = _kernels(request)
    runtime = runtime_of(kernels)
    if not runtime.rewrites:
        return ()
    if runtime.cascade(kernels) is None:
        return FIT_PASSES
    if request.prove and runtime.proof_available(kernels, own=True)[1] is not None:
        return FIT_PASSES
    return FIT_CASCADE


def _rewrites(
    request: PlanRequest, kernels: KernelSet, profile: Profile, lists: list[tuple[str, ...]]
) -> list[Rewrite]:
    """Run each pass list of ``lists``; the bands minimise ``objective_of(request)``."""
    objective = objective_of(request)
    options = {
        "max_extra_macs": request.max_extra_macs,
        "fit": request.fit,
        "clobber_inputs": request.clobber_inputs,
        "profile": profile,
        "objective": objective,
        "kernels": kernels,
    }
    if request.step_pixels is not None:
        options["step_pixels"] = request.step_pixels
    return run_rewrites(request.source.model, lists, options)


def _ranked(
    request: PlanRequest, profile: Profile, options: PlanOptions
) -> list[tuple[Rewrite, Planned]]:
    """Each pass list ``candidates`` gives for the passes asked for, run and planned
    (not proven), best first: the least figure ``fit`` bounds, ties in the order of
    ``candidates``. A list whose plan is refused (the target's memories) drops out,
    unless every one is: then the first refusal is the error."""
    head_only = objective_of(request) == "head"
    scored: list[tuple[int, int, Rewrite, Planned]] = []
    refused: list[ArenaplanError] = []
    lists = candidates(pass_names(request))
    for k, rw in enumerate(_rewrites(request, options.kernels, profile, lists)):
        try:
            done = _fit(request, rw.model, _with_aliases(options, rw), profile)
        except ArenaplanError as exc:
            if exc.exit_code == PlanValidationError.exit_code:  # a bug: never hidden
                raise
            refused.append(exc)
            continue
        done = replace(done, rewrite=rw, origin=_moved(rw.origin, request.source.model))
        scored.append((fit_figure(done.model, done.plan, profile, head_only), k, rw, done))
    if not scored:
        raise refused[0]
    ranked = sorted(scored, key=lambda x: x[:2])
    compared = tuple((lists[k], figure) for figure, k, _, _ in ranked) if len(lists) > 1 else ()
    return [(rw, replace(done, compared=compared)) for _, _, rw, done in ranked]


def _with_aliases(options: PlanOptions, rw: Rewrite) -> PlanOptions:
    return replace(options, alias_kinds=rw.alias_kinds, clobber_inputs=rw.clobber_inputs)


def _fit(request: PlanRequest, model: Model, options: PlanOptions, profile: Profile) -> Planned:
    """Plan ``model`` and fit it to the target's memories (no proof, no bytes)."""
    plan, target = plan_model(model, options), request.target
    result = Planned(request.source, model, plan, profile)
    if target is None:
        return result
    chosen = request.arena_memory
    if chosen is not None and chosen != target.fastest().name:  # the whole arena there
        arena = check_arena_memory(chosen, plan, target, request.caps, None)
        return replace(result, arena=arena)
    plan, tiers = fit_to_target(model, plan, target, request.caps, options, request.lay_out)
    arena = check_arena_memory(request.arena_memory, plan, target, request.caps, tiers)
    return replace(result, plan=plan, tiers=tiers, arena=arena)


@dataclass(frozen=True, slots=True)
class _Try:
    """One model to plan, in the order tried: a rewrite (``rewrite``; None: the model
    as given) planned with the weights policy or without (``weights``). ``ranked``:
    the rewrite's plan without weights, as ``_ranked`` made it."""

    rewrite: Rewrite | None
    ranked: Planned | None
    weights: bool


def _tries(request: PlanRequest, profile: Profile, options: PlanOptions) -> list[_Try]:
    """Each rewrite the passes asked for give, best first, then the model as given,
    all with the weights policy when there is one; then, with a policy, the model as
    given without it (its copies may be what cannot be proven). The last needs no
    proof, so some try always stands."""
    weights = request.weights is not None and request.target is not None
    ranked = _ranked(request, profile, options) if pass_names(request) else []
    tries = [_Try(rw, done, weights) for rw, done in ranked]
    tries.append(_Try(None, None, weights))
    if weights:
        tries.append(_Try(None, None, False))
    return tries


def _planned(request: PlanRequest, profile: Profile, options: PlanOptions, t: _Try) -> Planned:
    """The plan of try ``t`` (not proven)."""
    rw, original = t.rewrite, request.source.model
    if t.weights and rw is None:
        return _weights_of(request, original, options, profile)
    if t.weights and rw is not None:
        done = _weights_of(request, rw.model, _with_aliases(options, rw), profile, rw.origin)
        return replace(done, rewrite=rw)
    if t.ranked is not None:
        return t.ranked
    return _fit(request, original, options, profile)


def _first_standing(request: PlanRequest, profile: Profile, notify: Notify) -> Planned:
    """Rewrite and plan, then prove: the first try (``_tries``) whose proof stands, or
    that has nothing to prove, is kept; each one passed over is said through
    ``notify``. Without ``prove`` the first try is kept as planned."""
    options = PlanOptions(
        allocator=request.allocator, time_limit=request.time_limit, kernels=_kernels(request)
    )
    tries = _tries(request, profile, options)
    failed: Proof | None = None  # the last proof that did not stand
    for k, t in enumerate(tries):
        done = _planned(request, profile, options, t)
        if not request.prove:
            return done
        done = with_proof(request, done)
        proof = done.proof
        if proof is None:  # nothing changed: the plan of a model as given
            return done if done.weights is not None else replace(done, proof=failed)
        if proof.proven or (proof.unavailable and request.write_unproven):
            return _kept(request, options, done, notify)
        failed = proof
        notify(passed_over(done, proof, tries[k + 1].weights, tries[k + 1].rewrite is not None))
    raise PlanValidationError(["no try stands, though the last has nothing to prove"])


def _kept(request: PlanRequest, options: PlanOptions, done: Planned, notify: Notify) -> Planned:
    """A try whose proof stands or that is written unproven (said through
    ``notify``); a rewrite without weights keeps the plan of the model as given, for
    what the rewrite changed."""
    proof = done.proof
    if proof is not None and not proof.proven:
        what = "weight copies" if done.weights is not None else "rewrite"
        notify(f"arenaplan: {what} written UNPROVEN: {proof.reason}")
    if done.weights is not None:
        return done
    return replace(done, before=plan_model(request.source.model, options))


def _weights_of(
    request: PlanRequest,
    model: Model,
    options: PlanOptions,
    profile: Profile,
    origin: Origin | None = None,
) -> Planned:
    """The weights plan of ``model`` (not proven); ``origin``: ``model``'s from the
    model as given (None: it is that model)."""
    target, weights = request.target, request.weights
    if target is None or weights is None:  # a weights try needs both
        raise PlanValidationError(["a weights plan without a target or a policy"])
    policy = parse_weights(weights)
    wp = plan_weights(model, target, policy, request.caps, options, _score(request, profile))
    came = wp.origin if origin is None else compose(origin, wp.origin)
    arena = check_arena_memory(request.arena_memory, wp.plan, target, request.caps, wp.tiers)
    origin_moved = _moved(came, request.source.model)
    return Planned(
        request.source, wp.model, wp.plan, profile, wp.tiers, arena, weights=wp, origin=origin_moved
    )


def _moved(origin: Origin, original: Model) -> Origin | None:
    """``origin`` (from ``original``), or None when it is the identity: the model has
    the operators of the model as given, in their order (``PlanResult.origin``)."""

    return None if origin == identity(original) else origin
