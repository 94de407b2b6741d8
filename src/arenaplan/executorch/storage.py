"""Views and state in a program read from a ``.pte`` (``reader.pte_reader``).

A tensor the IR marks ``is_variable`` is read before any instruction writes it. In a
program ExecuTorch planned, such a tensor is either a view, lying inside the bytes
of a tensor written before its first read (the one written last, when several
enclose it), or state kept across calls (a mutable buffer), which nothing written
before its first read may touch. Offsets and sizes are bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from arenaplan.allocation.packing import align_up
from arenaplan.errors import UnsupportedModelError
from arenaplan.executorch.simulate import own_plan_problems, plan_problems
from arenaplan.ir.model import Model, Subgraph

Key = tuple[int, int]  # (subgraph, tensor)


@dataclass(frozen=True, slots=True)
class Storage:
    """``views``: member -> (base, delta): the member lies ``delta`` bytes into its
    base (the root of a chain of views); ``state``: tensors holding state;
    ``where``: each tensor's (memory id, offset) in the program's own plan."""

    views: dict[Key, tuple[Key, int]]
    state: frozenset[Key]
    where: dict[Key, tuple[int, int]]


_CACHE: dict[int, tuple[Model, Storage]] = {}  # id(model) -> (model, its storage)
_CACHED = 8  # models kept


def storage_of(model: Model) -> Storage:
    """The views and state of ``model`` (made once per model). The program's own plan
    must be right (``simulate.own_plan_problems``): views are read from it."""
    found = _CACHE.get(id(model))
    if found is not None and found[0] is model:
        return found[1]
    given = model
    model = in_program_order(model)
    problems = own_plan_problems(model)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UnsupportedModelError(
            f"the program's own memory plan is wrong, ExecuTorch would compute garbage: "
            f"{problems[0]}{more}; export it again with ExecuTorch's planner"
        )
    storage = _storage(model)
    problems = plan_problems(model, _apart(model, storage))
    if problems:
        raise UnsupportedModelError(
            f"the program's views cannot be told from its own plan: {problems[0]}"
        )
    if len(_CACHE) >= _CACHED:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[id(given)] = (given, storage)
    return storage


def in_program_order(model: Model) -> Model:
    """``model`` with each method's operators in the program's order (the order its
    own plan is for), renumbered; itself when they are (a pass may have moved them:
    each keeps its instruction's index as ``source``)."""
    if all(op.source in (-1, op.index) for sg in model.subgraphs for op in sg.operators):
        return model
    subgraphs = []
    for sg in model.subgraphs:
        ops = sorted(sg.operators, key=lambda op: op.in_file)
        ops = [replace(op, index=k) for k, op in enumerate(ops)]
        subgraphs.append(replace(sg, operators=tuple(ops)))
    return replace(model, subgraphs=tuple(subgraphs))


def _apart(model: Model, storage: Storage) -> dict[Key, tuple[int, int]]:
    """Every tensor in bytes of its own but the views, which lie in their bases: a
    plan the program must run under exactly as under its own, if the views are right."""
    places, top = {}, 0
    for key in sorted(storage.where):
        if key not in storage.views:
            places[key] = (1, top)
            top += align_up(model.subgraphs[key[0]].tensors[key[1]].nbytes, 16)
    for key, (base, delta) in storage.views.items():
        places[key] = (places[base][0], places[base][1] + delta)
    return places


def _storage(model: Model) -> Storage:
    offsets = model.stored_plan or ()
    memories = model.stored_memory or (1,) * len(offsets)
    where = {
        key: (memories[i], offsets[i])
        for i, key in enumerate(model.tensor_keys())
        if i < len(offsets) and offsets[i] >= 0
    }
    views: dict[Key, tuple[Key, int]] = {}
    state: set[Key] = set()
    for sg in model.subgraphs:
        _subgraph_storage(sg, where, views, state)
    return Storage(views, frozenset(state), where)


def _subgraph_storage(
    sg: Subgraph, where: dict[Key, tuple[int, int]], views: dict, state: set
) -> None:
    s = sg.index
    written: dict[int, int] = {t: -1 for t in sg.inputs}  # tensor -> first writer
    first_read: dict[int, int] = {}
    for op in sg.operators:
        for t in op.outputs:
            written.setdefault(t, op.index)
        for t in op.inputs:
            first_read.setdefault(t, op.index)
    early = [t.index for t in sg.tensors if t.is_variable and (s, t.index) in where]
    for v in sorted(early, key=lambda t: first_read.get(t, -1)):
        base = _enclosing(sg, v, first_read.get(v, -1), written, where)
        if base is None:
            state.add((s, v))
            continue
        root, delta = views.get((s, base), ((s, base), 0))
        views[(s, v)] = (root, delta + where[(s, v)][1] - where[(s, base)][1])
        written[v] = written[base]


def _enclosing(sg: Subgraph, v: int, read: int, written: dict[int, int], where: dict) -> int | None:
    """The tensor written last before op ``read`` whose bytes hold all of ``v``'s."""
    s = sg.index
    memory, offset = where[(s, v)]
    end = offset + sg.tensors[v].nbytes
    best: tuple[int, int] | None = None
    for w, at in written.items():
        if w == v or at >= read or (s, w) not in where:
            continue
        wm, wo = where[(s, w)]
        encloses = wm == memory and wo <= offset and end <= wo + sg.tensors[w].nbytes
        if encloses and (best is None or at > best[0]):
            best = (at, w)
    return None if best is None else best[1]
