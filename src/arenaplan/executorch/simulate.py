"""The independent check of a plan of a ``.pte`` program: run it over symbolic bytes.

It shares no logic with the planner: no lifetimes, no views, no state, no order
constraints. Each method's instructions run twice (two calls: what state a call
leaves, the next reads) in the program's own order with the tensors where the
program's own plan puts them, then in the model's order (a pass may have moved
them) where the new plan does. Every byte holds the write that put it there (which
call, which instruction of the program, which tensor, which byte of it); an
instruction writes its outputs and the inputs it says it writes too
(``written_inputs``; a delegate call: all of them). Each tensor an instruction
reads must hold the same writes in the second run as in the first (where the
first holds any: bytes it never wrote are not compared), and so must the outputs
at the end of each call. The tensors one instruction names must not share bytes
under the new plan unless they share the same bytes under the program's own (a
view and its base). The program's own plan, in its own order, is trusted:
ExecuTorch made it.

Offsets and sizes are bytes; a placement is (memory id, offset).
"""

from __future__ import annotations

import math

import numpy as np

from arenaplan.ir.model import Model, Operator, Subgraph

Key = tuple[int, int]  # (subgraph, tensor)
Place = tuple[int, int]  # (memory id, offset)
CALLS = 2
MAX_SAID = 8  # problems said per method


def stored_places(model: Model) -> dict[Key, Place]:
    """Where the program's own plan puts each tensor that has bytes in a pool."""
    offsets = model.stored_plan or ()
    memories = model.stored_memory or (1,) * len(offsets)
    keys = model.tensor_keys()
    return {keys[i]: (memories[i], o) for i, o in enumerate(offsets) if o >= 0}


def pool_reach(
    model: Model, places: dict[Key, Place], memory: int = 1, subgraph: int | None = None
) -> int:
    """The bytes the tensors at ``places`` reach in ``memory`` (of one subgraph, or the
    most over all of them); 0 when none is there."""
    return max(
        (
            offset + model.subgraphs[s].tensors[t].nbytes
            for (s, t), (m, offset) in places.items()
            if m == memory and subgraph in (None, s)
        ),
        default=0,
    )


def pool_reaches(model: Model, places: dict[Key, Place]) -> dict[int, int]:
    """``pool_reach`` of every memory id ``places`` uses, in memory id order."""
    return {m: pool_reach(model, places, m) for m in sorted({m for m, _ in places.values()})}


def plan_problems(model: Model, new: dict[Key, Place]) -> list[str]:
    """Every problem of placing the program's pooled tensors at ``new``, one line each."""
    own = stored_places(model)
    found = [f"tensor {k} has no place in the new plan" for k in own if k not in new]
    found += [f"tensor {k} is placed but the program pools it nowhere" for k in new if k not in own]
    if found:
        return found
    for sg in model.subgraphs:
        found += _method_problems(sg, own, new)
    return found


class _Bytes:
    """The pools of one plan in granules of ``grain`` bytes (every offset of both plans
    is a multiple, so two tensors share a granule only if they share a byte): per
    memory, which write each granule holds (-1: none) and which granule of it."""

    def __init__(self, sg: Subgraph, places: dict[Key, Place], grain: int) -> None:
        self.sg, self.places, self.grain = sg, places, grain
        top: dict[int, int] = {}
        for (s, t), (memory, offset) in places.items():
            if s == sg.index:
                end = -(-(offset + sg.tensors[t].nbytes) // grain)
                top[memory] = max(top.get(memory, 0), end)
        self.event = {m: np.full(n, -1, np.int32) for m, n in top.items()}
        self.part = {m: np.zeros(n, np.int32) for m, n in top.items()}

    def span(self, t: int) -> tuple[int, int, int] | None:
        """(memory, first granule, granules) of tensor ``t``; None: not pooled."""
        found = self.places.get((self.sg.index, t))
        n = self.sg.tensors[t].nbytes
        if found is None or n == 0:
            return None
        first = found[1] // self.grain
        return found[0], first, -(-(found[1] + n) // self.grain) - first

    def write(self, t: int, event: int) -> None:
        span = self.span(t)
        if span is not None:
            memory, first, n = span
            self.event[memory][first : first + n] = event
            self.part[memory][first : first + n] = np.arange(n)

    def held(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        memory, first, n = self.span(t)  # type: ignore[misc]
        return self.event[memory][first : first + n], self.part[memory][first : first + n]


def _grain(sg: Subgraph, *plans: dict[Key, Place]) -> int:
    """The largest granule (at most 16 bytes) dividing every offset of ``plans``."""
    offsets = [o for plan in plans for (s, _), (_, o) in plan.items() if s == sg.index]
    return math.gcd(16, *offsets)


def _method_problems(
    sg: Subgraph, own: dict[Key, Place], new: dict[Key, Place], shared: bool = True
) -> list[str]:
    """The problems of ``new`` (operators in ``sg``'s order) against ``own`` (in the
    program's order). ``shared`` (checking a new plan): no tensor of an instruction
    shares bytes with another under ``new`` unless it does under ``own``. Without it
    (checking the program's own plan against one where nothing shares): a view (or
    state) may share bytes with the tensors of its instruction."""
    grain = _grain(sg, own, new)
    found: list[str] = []
    for op in sg.operators:
        found += _shared(sg, op, own, new, views=not shared)
    events: dict[tuple, int] = {}
    given = sorted(sg.operators, key=lambda op: op.in_file)
    seen = _run(sg, given, _Bytes(sg, own, grain), events, None, found)
    _run(sg, sg.operators, _Bytes(sg, new, grain), events, seen, found)
    said = [f for f in found if f]
    return said[:MAX_SAID]


Held = tuple[np.ndarray, np.ndarray]  # per granule: the write it holds, which granule of it


def _run(
    sg: Subgraph,
    ops: list[Operator] | tuple[Operator, ...],
    pools: _Bytes,
    events: dict[tuple, int],
    seen: dict[tuple, Held] | None,
    found: list[str],
) -> dict[tuple, Held]:
    """Run ``ops`` for ``CALLS`` calls over ``pools``; what each read held, by
    (call, instruction, tensor) (an output: (call, "output", tensor)). ``seen``: what
    the first run's reads held, to compare with (problems go to ``found``)."""
    held: dict[tuple, Held] = {}

    def read(key: tuple, t: int, where: str) -> None:
        if pools.span(t) is None:
            return
        held[key] = tuple(a.copy() for a in pools.held(t))  # type: ignore[assignment]
        if seen is not None and key in seen:
            found.append(_differ(seen[key], held[key], events, pools, t, where, key[0]))

    for call in range(CALLS):
        for t in sg.inputs:
            pools.write(t, events.setdefault(("input", call, t), len(events)))
        for op in ops:
            k = op.in_file
            where = f"method {sg.name!r} instruction {k} ({op.opcode})"
            for t in dict.fromkeys(op.inputs):
                read((call, k, t), t, where)
            for t in _writes(op):
                pools.write(t, events.setdefault((call, k, t), len(events)))
        for t in sg.outputs:
            read((call, "output", t), t, f"method {sg.name!r} output")
    return held


def _writes(op: Operator) -> tuple[int, ...]:
    again = op.options.get("written_inputs", ())
    if op.opcode.startswith("delegate:"):
        again = tuple(t for t in op.inputs if t >= 0)
    return tuple(dict.fromkeys((*op.outputs, *again)))  # type: ignore[misc]


def _differ(
    first: Held, second: Held, events: dict, pools: _Bytes, t: int, where: str, call: int
) -> str:
    """ "" when tensor ``t`` holds the same writes in both runs, else why not."""
    ea, ba = first
    eb, bb = second
    if len(ea) != len(eb):  # a grain apart: the same bytes, so the same granules
        return f"{where}, call {call + 1}: tensor {t} spans other granules"
    differ = (ea >= 0) & ((ea != eb) | (ba != bb))
    if not differ.any():
        return ""
    k = int(np.argmax(differ))
    names = {v: k for k, v in events.items()}
    got = _words(names.get(int(eb[k]), "nothing"), pools.sg)
    wanted = _words(names[int(ea[k])], pools.sg)
    return (
        f"{where}, call {call + 1}: tensor {t} ({pools.sg.tensors[t].name}) byte "
        f"{k * pools.grain} holds {got}, not {wanted}"
    )


def _words(what, sg: Subgraph) -> str:
    if what == "nothing":
        return "nothing written"
    if what[0] == "input":
        return f"input tensor {what[2]}"
    call, op, t = what
    return f"tensor {t} as instruction {op} wrote it in call {call + 1}"


def _shared(
    sg: Subgraph, op: Operator, own: dict[Key, Place], new: dict[Key, Place], views: bool
) -> list[str]:
    """Tensors of one instruction that share bytes under the new plan but not, or not
    the same bytes, under the program's own; ``views``: a tensor read before it is
    written (a view, or state) may share (checking the program's own plan)."""
    s, found = sg.index, []
    named = [t for t in dict.fromkeys((*op.inputs, *op.outputs)) if (s, t) in new]
    if views:
        named = [t for t in named if not sg.tensors[t].is_variable]
    for i, x in enumerate(named):
        for y in named[i + 1 :]:
            if not _meet(sg, new[(s, x)], new[(s, y)], x, y):
                continue
            same = _meet(sg, own[(s, x)], own[(s, y)], x, y) and (
                new[(s, x)][1] - new[(s, y)][1] == own[(s, x)][1] - own[(s, y)][1]
            )
            if not same:
                found.append(
                    f"method {sg.name!r} instruction {op.index} ({op.opcode}): tensors {x} "
                    f"and {y} share bytes"
                )
    return found


def _meet(sg: Subgraph, p: Place, q: Place, x: int, y: int) -> bool:
    if p[0] != q[0]:
        return False
    return p[1] < q[1] + sg.tensors[y].nbytes and q[1] < p[1] + sg.tensors[x].nbytes


def own_plan_problems(model: Model) -> list[str]:
    """What is wrong with the program's own plan: it is run against a plan where no
    two tensors share a byte (trusted: it cannot be wrong), reads compared where
    that plan holds writes (a view reads bytes nobody wrote there: not compared)."""
    own = stored_places(model)
    apart: dict[Key, Place] = {}
    top = 0
    for key in sorted(own):
        apart[key] = (1, top)
        s, t = key
        top += model.subgraphs[s].tensors[t].nbytes
    found = []
    for sg in model.subgraphs:
        found += _method_problems(sg, apart, own, shared=False)
    return found
