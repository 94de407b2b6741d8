"""The proof of a re-planned ``.pte``: both programs run in ExecuTorch's own runtime.

Each method of the original and of the planned program runs on the same random
inputs (``TRIALS`` input sets, ``CALLS`` calls each, so that state a call leaves is
read by the next); the outputs must be bit-identical, the fences around the pools
intact, and no byte written beyond the planned pool. The measured head is the most
bytes of the default pool any method wrote; the measured tail the most bytes of
its method allocator (ExecuTorch's own structures, on this machine's build).
"""

from __future__ import annotations

from arenaplan.errors import RuntimeUnavailableError
from arenaplan.executorch import native, simulate
from arenaplan.executorch.method_bytes import largest_method
from arenaplan.ir.model import Model, Subgraph
from arenaplan.reader.pte_format import read_program
from arenaplan.reader.pte_reader import read_pte_bytes
from arenaplan.runtime.proof import Proof
from arenaplan.runtime.report import Measurement, Prediction, VerifyReport

RUNNER_WORDS = "ExecuTorch 1.5.1 (its C++ runtime, on this machine)"
TRIALS = 2  # random input sets
CALLS = 2  # calls per input set


def prove_program(original: bytes, planned: bytes) -> Proof:
    why = native.unavailable()
    if why is None:
        try:
            native.runner()
        except RuntimeUnavailableError as exc:
            why = str(exc)
    if why is not None:
        return Proof(why, runtime=RUNNER_WORDS, trials=TRIALS, unavailable=True)
    model = read_pte_bytes(original)
    head = tail = 0
    for sg in model.subgraphs:
        for trial in range(TRIALS):
            try:
                given, mine = _run_both(original, planned, sg, 1000 * sg.index + trial)
            except _NotRun as exc:
                refused = exc.which == "original"
                reason = f"ExecuTorch does not run the {exc.which} method {sg.name!r}: {exc}"
                return Proof(reason, runtime=RUNNER_WORDS, trials=TRIALS, refused=refused)
            reason = _differs(sg.name, given, mine)
            if reason is not None:
                return Proof(reason, runtime=RUNNER_WORDS, trials=TRIALS)
            if mine.pools:
                head = max(head, mine.pools[0][1] + 1)
            tail = max(tail, mine.method_allocator)
    return Proof(None, runtime=RUNNER_WORDS, trials=TRIALS, head=head, tail=tail)


class _NotRun(Exception):
    """ExecuTorch did not run ``which`` program ("original" or "planned"): its words."""

    def __init__(self, which: str, words: str) -> None:
        super().__init__(words)
        self.which = which


def _run_both(
    original: bytes, planned: bytes, sg: Subgraph, seed: int
) -> tuple[native.Run, native.Run]:
    """Method ``sg`` of both programs run on the same random inputs (``seed``)."""
    inputs = native.random_inputs(sg, seed=seed)
    runs = []
    for which, program in (("original", original), ("planned", planned)):
        try:
            runs.append(native.run_method(program, sg.name, inputs, CALLS))
        except RuntimeError as exc:
            raise _NotRun(which, str(exc)) from None
    return runs[0], runs[1]


def _differs(method: str, given: native.Run, mine: native.Run) -> str | None:
    if not mine.guards:
        return f"method {method!r} wrote outside its pools"
    for k, (size, highest) in enumerate(mine.pools):
        if highest >= size:
            return f"method {method!r} wrote byte {highest} of pool {k + 1} ({size} B)"
    for c, (a, b) in enumerate(zip(given.outputs, mine.outputs, strict=True)):
        if a != b:
            return f"method {method!r}: outputs differ from the original's at call {c + 1}"
    return None


def verify_programs(original: bytes, planned: bytes, trials: int, seed: int) -> VerifyReport:
    """``arenaplan verify`` of two programs: every method of both run on the same
    ``trials`` random input sets (``CALLS`` calls each); outputs compared bit for bit;
    heads and tails measured against arenaplan's figures for each (the bytes the
    program's tensors reach in the default pool; the tail is not modelled)."""
    why = native.unavailable()
    if why is not None:
        return _report(trials, refused=why)
    native.runner()  # RuntimeUnavailableError: one line
    ir, planned_ir = read_pte_bytes(original), read_pte_bytes(planned)
    if [sg.name for sg in ir.subgraphs] != [sg.name for sg in planned_ir.subgraphs]:
        return _report(trials, failed="the two programs do not have the same methods")
    runs: list[tuple[native.Run, native.Run]] = []
    for sg in ir.subgraphs:
        for trial in range(trials):
            try:
                given, mine = _run_both(original, planned, sg, seed + 1000 * sg.index + trial)
            except _NotRun as exc:
                if exc.which == "original":
                    return _report(trials, refused=f"ExecuTorch refuses the original: {exc}")
                return _report(trials, failed=f"ExecuTorch fails on the planned program: {exc}")
            reason = _differs(sg.name, given, mine)
            if reason is not None:
                return _report(trials, mismatch=reason, runs=[(given, mine)])
            runs.append((given, mine))
    figures = (_reach(ir, original), _reach(planned_ir, planned))
    return _report(trials, runs=runs, figures=figures)


def _reach(model: Model, data: bytes) -> Prediction:
    """arenaplan's figures for a program (``data``): the bytes its tensors reach in
    its pools (in each the most over its methods, summed over the pools) and the
    method allocator's bytes on this 64-bit host (the largest method's)."""
    top = sum(simulate.pool_reaches(model, simulate.stored_places(model)).values())
    tail, unmodelled = largest_method(read_program(data), 8)
    return Prediction(top, tail, top, not_modelled=unmodelled)


def _report(
    trials: int,
    *,
    refused: str | None = None,
    failed: str | None = None,
    mismatch: str | None = None,
    runs: list[tuple[native.Run, native.Run]] = (),  # type: ignore[assignment]
    figures: tuple[Prediction, Prediction] | None = None,
) -> VerifyReport:
    def measured(k: int) -> Measurement | None:
        if not runs:
            return None
        heads = [sum(top + 1 for _, top in r[k].pools) for r in runs]
        return Measurement(max(heads, default=0), max(r[k].method_allocator for r in runs))

    return VerifyReport(
        trials=trials,
        identical=mismatch is None and refused is None and failed is None,
        mismatch=mismatch,
        original=measured(0),
        planned=measured(1),
        smallest_arena=0,
        predicted=figures[1] if figures else None,
        refused=refused,
        failed=failed,
        original_predicted=figures[0] if figures else None,
    )
