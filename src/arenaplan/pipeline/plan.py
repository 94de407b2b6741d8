"""The planning pipeline: ``run_plan(PlanRequest) -> PlanResult``.

Order of work: check the capacities against the model, rewrite (the passes asked
for), plan the head (``placement``), fit it to the target's memories, plan the
weights (``weights``) when a policy is given, prove what changed in TFLM
(``verify.prove``) and fall back to the model as given when it is not proven, check
``fit``, then render the outputs asked for in memory (``pipeline.outputs``). Nothing
is written here: the caller writes ``PlanResult.files`` once all succeeded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from arenaplan.errors import (
    ArenaplanError,
    ModelFormatError,
    PlanValidationError,
    TflmRefusesError,
    UsageError,
)
from arenaplan.export.figures import Figures, check_chosen, figures_of
from arenaplan.export.rewrite_effect import rewrite_effect
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.model import Model
from arenaplan.passes.base import compose, identity
from arenaplan.pipeline.outputs import render
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
from arenaplan.placement import Plan, PlanOptions, plan_model
from arenaplan.placement.memories import check_arena_memory, check_capacities, fit_to_target
from arenaplan.reader import read_model_bytes
from arenaplan.runtime.registry import default_kernels, default_profile, runtime_of
from arenaplan.runtime.spec import Deployment, KernelSet, Profile
from arenaplan.weights.outputs import tflm_head
from arenaplan.weights.plan import plan_weights
from arenaplan.weights.policies import parse_weights

if TYPE_CHECKING:
    from arenaplan.export.rewrite_effect import RewriteEffect
    from arenaplan.passes.base import Origin
    from arenaplan.runtime.proof import Proof
    from arenaplan.weights.plan import Score, WeightsPlan

# Proving (verify.prove, the writer) and weights are imported where a request needs
# them: a plain plan of a small model imports neither.


def _ignore(_line: str) -> None:
    """The default ``notify``: warnings are dropped."""


def run_plan(request: PlanRequest, notify: Notify = _ignore) -> PlanResult:
    """Plan ``request``; ``notify`` receives each warning (a rewrite or copies not
    proven) once the plan stands (none when it fails: the error is the one line).
    Raises ``ArenaplanError`` on bad input or no plan."""
    target, model = request.target, request.source.model
    if target is not None and request.check_memories:
        check_capacities(model, target, request.caps)
    profile = _profile(request)
    said: list[str] = []  # warnings, said once the plan stands: a refusal is one line
    done = _plan(request, profile, said.append)
    if request.fit is not None:
        head_only = objective_of(request) == "head"
        records = done.rewrite.records if done.rewrite else ()
        check_fit(request.fit, done.model, done.plan, profile, head_only, records)
    for line in said:
        notify(line)
    result = PlanResult.of(done, _figures(request, done), _effect(request, done))
    if request.outputs is None:
        return result
    result = replace(result, refusals=runtime_of(done.plan.kernels).refusals(done.model))
    return render(request, result)


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


def _profile(request: PlanRequest) -> Profile:
    if request.profile is not None:
        return request.profile
    return request.target.profile if request.target is not None else default_profile()


def _kernels(request: PlanRequest) -> KernelSet:
    if request.kernels is not None:
        return request.kernels
    return request.target.kernels if request.target is not None else default_kernels()


def pass_names(request: PlanRequest) -> tuple[str, ...]:
    """The passes to run: those asked for, else with ``fit`` reorder, inplace, bands,
    after cascade where a cascaded model can be proven (TFLM built from source)."""
    if request.passes or request.fit is None:
        return request.passes
    kernels = _kernels(request)
    runtime = runtime_of(kernels)
    if runtime.cascade(kernels) is None:
        return FIT_PASSES
    if request.prove and runtime.proof_available(kernels, own=True)[1] is not None:
        return FIT_PASSES
    return FIT_CASCADE


def planned_model_bytes(data: bytes, model: Model, plan: Plan) -> bytes:
    """The model with the plan written in as its runtime takes it (TFLM: the offline
    plan metadata), checked by reading it back (a model arenaplan wrote that does not
    read back is arenaplan's bug, exit 70)."""
    runtime = runtime_of(plan.kernels)
    out = runtime.write_plan(data, plan.offline_offsets)
    try:
        again = read_model_bytes(out)
    except ModelFormatError as exc:
        raise PlanValidationError([f"the written model does not read back: {exc}"]) from None
    if again.subgraphs != model.subgraphs or runtime.read_plan(again) != plan.offline_offsets:
        raise PlanValidationError(
            ["the written model does not read back as the input plus the plan"]
        )
    return out


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
    return replace(options, aliases=rw.aliases, clobber_inputs=rw.clobber_inputs)


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


def _plan(request: PlanRequest, profile: Profile, notify: Notify) -> Planned:
    """Rewrite and plan; a rewrite TFLM does not prove falls back to the model as is."""
    base = PlanOptions(
        allocator=request.allocator, time_limit=request.time_limit, kernels=_kernels(request)
    )
    data, original = request.source.data, request.source.model
    if request.weights is not None and request.target is not None:
        weighed = _plan_weights(request, base, profile, notify)
        if weighed is not None:
            return weighed
    proof = None
    ranked = _ranked(request, profile, base) if pass_names(request) else []
    for k, (rw, done) in enumerate(ranked):
        if not request.prove:
            return done
        plan = done.plan
        if not rw.changed and not plan.aliases:  # the plan of the model as given
            return replace(done, model=original, planned=planned_model_bytes(data, original, plan))

        source = write_model(rw.model) if rw.changed else data
        planned = planned_model_bytes(source, rw.model, plan)
        runtime = runtime_of(plan.kernels)
        own = runtime.uses_own_kernels(rw.model)
        proof = runtime.prove(data, planned, plan.arena, plan.kernels, own)
        if proof.proven or (proof.unavailable and request.write_unproven):
            before = plan_model(original, base)
            if not proof.proven:
                notify(f"arenaplan: rewrite written UNPROVEN: {proof.reason}")
            return replace(done, planned=planned, proof=proof, before=before)
        names = ",".join(r.name for r in rw.records)
        then = "the next best rewrite" if k + 1 < len(ranked) else "the model as it is"
        notify(
            f"arenaplan: the rewrite ({names}) is not proven in TFLM ({proof.reason}); "
            f"planned {then}"
        )
    done = replace(_fit(request, original, base, profile), proof=proof)
    if not request.prove:
        return done
    return replace(done, planned=planned_model_bytes(data, original, done.plan))


def _plan_weights(
    request: PlanRequest, options: PlanOptions, profile: Profile, notify: Notify
) -> Planned | None:
    """Weights policies and activations in one plan of the fastest memory, after the
    passes if any; the model's copies and rewrites proven in TFLM. A rewrite that is
    not proven falls back (said through ``notify``) to the weights of the model as
    given; copies that nothing here can prove (no runtime or build for the kernels),
    to the model as given without them (None), unless ``write_unproven``."""
    if pass_names(request):
        rw = _ranked(request, profile, options)[0][0]
        done = _weights_of(request, rw.model, _with_aliases(options, rw), profile, rw.origin)
        proven = done.proof is None or done.proof.proven
        unavailable = done.proof is not None and done.proof.unavailable
        refused = done.proof is not None and done.proof.refused  # whatever the rewrite
        rewritten = rw.changed or bool(done.plan.aliases)
        kept = proven or refused or (unavailable and request.write_unproven)
        if kept or not (unavailable or rewritten):
            _check_proof(done.proof, request.write_unproven, notify)  # as without passes
            return replace(done, rewrite=rw)
        notify(
            f"arenaplan: the rewrite is not proven in TFLM ({done.proof.reason}); "  # type: ignore[union-attr]
            "planned the weights of the model as it is"
        )
    done = _weights_of(request, request.source.model, options, profile)
    if done.proof is not None and done.proof.unavailable and not request.write_unproven:
        notify(
            f"arenaplan: the weight copies cannot be proven here ({done.proof.reason}); "
            "planned the model as given, without --weights (--write-unproven writes them "
            "unproven)"
        )
        return None
    _check_proof(done.proof, request.write_unproven, notify)
    return done


def _weights_of(
    request: PlanRequest,
    model: Model,
    options: PlanOptions,
    profile: Profile,
    origin: Origin | None = None,
) -> Planned:
    """The weights plan of ``model`` and, when proving, its bytes and proof;
    ``origin``: ``model``'s from the model as given (None: it is that model)."""

    target, weights = request.target, request.weights
    if target is None or weights is None:  # _plan asks for weights only with both
        raise PlanValidationError(["a weights plan without a target or a policy"])
    policy = parse_weights(weights)

    wp = plan_weights(model, target, policy, request.caps, options, _score(request, profile))
    came = wp.origin if origin is None else compose(origin, wp.origin)
    planned, proof = b"", None
    if request.prove:
        data, original = request.source.data, request.source.model
        changed = wp.model is not original
        source = write_model(wp.model) if changed else data
        planned = planned_model_bytes(source, wp.model, wp.plan)
        if changed or wp.plan.aliases:  # nothing to prove when nothing changed
            runtime = runtime_of(wp.plan.kernels)
            own = runtime.uses_own_kernels(wp.model)
            proof = runtime.prove(data, planned, tflm_head(wp.plan), wp.plan.kernels, own)
    arena = check_arena_memory(request.arena_memory, wp.plan, target, request.caps, wp.tiers)
    return Planned(
        request.source,
        wp.model,
        wp.plan,
        profile,
        wp.tiers,
        arena,
        planned,
        proof=proof,
        weights=wp,
        origin=_moved(came, request.source.model),
    )


def _moved(origin: Origin, original: Model) -> Origin | None:
    """``origin`` (from ``original``), or None when it is the identity: the model has
    the operators of the model as given, in their order (``PlanResult.origin``)."""

    return None if origin == identity(original) else origin


def _check_proof(proof: Proof | None, write_unproven: bool, notify: Notify) -> None:
    """A proof that fails is an error, and so is one that nothing here can run (no
    runtime or build for the kernels) unless ``write_unproven``: then the copies are
    written unproven, said through ``notify``. A model TFLM refuses is its own error
    (exit 3), with the reason the proof gives (``verify.compare``: ours, not TFLM's)."""
    if proof is None or proof.proven:
        return
    if proof.refused:
        raise TflmRefusesError(f"the weight copies cannot be proven: {proof.reason}")
    if proof.unavailable and write_unproven:
        notify(f"arenaplan: weight copies written UNPROVEN: {proof.reason}")
        return
    hint = " (--write-unproven writes them unproven)" if proof.unavailable else ""
    raise UsageError(
        f"the model with its weight copies is not proven in TFLM: {proof.reason}{hint}"
    )
