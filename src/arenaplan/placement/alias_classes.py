"""Alias classes: tensors that share bytes, each class one buffer for the allocator.

An accepted alias ties two planned tensors: ``offset(tensor) = offset(base) +
delta``. The ties are kept in a union-find whose links carry byte shifts. Each
class becomes one allocation buffer, live over the hull of its members'
lifetimes and as large as their extent; each member lies at the class offset
plus its shift. Below, x is a slice view of a, and y an in-place output over x::

    addr ^   class buffer: hull of the lifetimes x extent of the members
         |  +-------------------------------+
         |  | a          |                  |
         |  |   +--------+--------+         |
         |  |   | x = a[16:48]    | y       |
         |  +---+--------+--------+---------+
         +---------------------------------------> time (scopes)

An alias is dropped, with the reason, when merging its two classes would make
two members overlap in time (inclusive scopes) and space (16-aligned bytes)
without being that alias's own pair: a view is read-only, so nothing else may
write its bytes while it lives, and an in-place output may only write over the
input it replaces. That is safety. One more drop is a choice: a class holds its
whole extent over its whole hull, so an alias that would raise the peak of live
bytes (tensors and scratch, the plan's lower bound) is dropped too: e.g. a
QUANTIZE float32 -> int8 in place keeps the float bytes while the int8 output
lives on. The slice views of one tensor, and the views into one CONCATENATION,
are first tried together (one band alone may raise the peak that all of them
lower), then one by one. The allocator never learns about any of this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenaplan.allocation.problem import Buffer
from arenaplan.analysis.buffers import ArenaItems
from arenaplan.runtime.records import CONCAT_VIEW, SLICE_VIEW, Alias


@dataclass(frozen=True, slots=True)
class AliasLayout:
    """The classes of ``items.tensors`` under the accepted aliases.

    ``buffers``: one per class (aligned sizes), ordered by each class's first
    tensor; with no alias they are exactly ``items.tensor_buffers``. ``raw``: the
    same with unaligned member bytes (for the tensor-only bound). ``class_of[k]``
    and ``shift[k]`` (bytes from the class start) place ``items.tensors[k]``.
    ``aliases``: accepted, in the order tried; ``dropped``: (alias, reason).
    """

    buffers: tuple[Buffer, ...]
    raw: tuple[Buffer, ...]
    class_of: tuple[int, ...]
    shift: tuple[int, ...]
    aliases: tuple[Alias, ...]
    dropped: tuple[tuple[Alias, str], ...]

    def tensor_offsets(self, class_offsets: Sequence[int]) -> tuple[int, ...]:
        """Each tensor's offset, from one offset per class."""
        return tuple(class_offsets[c] + s for c, s in zip(self.class_of, self.shift, strict=True))


class _UnionFind:
    """Tensors (indices into the items' tensors) with ``offset(k) = offset(parent) + up``.

    ``rect[root]``: the class's (first, last, low, high): its hull in scopes and its
    bytes relative to the root, half-open. ``live[s + 1]``: bytes the classes and
    the scratch buffers hold at scope s (each class its whole rectangle; a scope
    may be -1, "never set")."""

    def __init__(self, buffers: Sequence[Buffer], scratch: Sequence[Buffer]) -> None:
        self.buffers = buffers
        self.parent = list(range(len(buffers)))
        self.up = [0] * len(buffers)
        self.members = {k: [k] for k in range(len(buffers))}
        # ties not tried yet, (u, v, delta) by pair: a merge may already put such a
        # pair at its own delta (the later tie then only confirms it)
        self.pending: dict[frozenset[int], set[tuple[int, int, int]]] = {}
        self.rect = {k: (b.first, b.last, 0, b.size) for k, b in enumerate(buffers)}
        top = max((b.last for b in (*buffers, *scratch)), default=0)
        self.live = np.zeros(top + 3, dtype=np.int64)
        for b in (*buffers, *scratch):
            self.live[b.first + 1 : b.last + 2] += b.size

    def find(self, k: int) -> tuple[int, int]:
        """(root, offset of k from the root)."""
        path = []
        while self.parent[k] != k:
            path.append(k)
            k = self.parent[k]
        root, shift = k, 0
        for j in reversed(path):  # nearest the root first
            shift += self.up[j]
            self.parent[j], self.up[j] = root, shift
        return root, self.up[path[0]] if path else 0

    def peak(self) -> int:
        return int(self.live.max())

    def state(self) -> tuple:
        return (
            list(self.parent),
            list(self.up),
            {k: list(v) for k, v in self.members.items()},
            dict(self.rect),
            self.live.copy(),
        )

    def restore(self, state: tuple) -> None:
        self.parent, self.up, self.members, self.rect, self.live = state

    def join(self, u: int, v: int, delta: int, limit: int | None) -> str | None:
        """Tie ``offset(u) = offset(v) + delta`` unless the peak of live bytes would
        exceed ``limit`` (None: no limit); the reason it cannot be, or None."""
        ru, su = self.find(u)
        rv, sv = self.find(v)
        shift = sv + delta - su  # offset(ru) - offset(rv)
        if ru == rv:
            return None if shift == 0 else "it contradicts the aliases already accepted"
        clash = self._clash(ru, rv, shift, {u, v})
        if clash:
            return clash
        a, b = self.rect[ru], self.rect[rv]
        merged = (
            min(a[0], b[0]),
            max(a[1], b[1]),
            min(a[2] + shift, b[2]),
            max(a[3] + shift, b[3]),
        )
        live = self.live.copy()
        for first, last, low, high in (a, b):
            live[first + 1 : last + 2] -= high - low
        live[merged[0] + 1 : merged[1] + 2] += merged[3] - merged[2]
        if limit is not None and live.max() > limit:
            return f"its class would raise the peak of live bytes from {limit} to {live.max()}"
        self.live = live
        self.parent[ru], self.up[ru] = rv, shift
        self.members[rv].extend(self.members.pop(ru))
        self.rect[rv] = merged
        del self.rect[ru]
        return None

    def _clash(self, ru: int, rv: int, shift: int, pair: set[int]) -> str | None:
        there = [(b, self.find(b)[1]) for b in self.members[rv]]
        for a in self.members[ru]:
            pa = self.find(a)[1] + shift
            ba = self.buffers[a]
            for b, pb in there:
                bb = self.buffers[b]
                if {a, b} == pair or not ba.overlaps_in_time(bb):
                    continue
                ties = self.pending.get(frozenset((a, b)), ())
                if (a, b, pa - pb) in ties or (b, a, pb - pa) in ties:
                    continue  # a tie still to come justifies this pair
                if pa < pb + bb.size and pb < pa + ba.size:
                    return (
                        f"{ba.id} would overlap {bb.id} at step {max(ba.first, bb.first)} "
                        "with no rule for that pair"
                    )
        return None


def alias_layout(items: ArenaItems, candidates: Sequence[Alias]) -> AliasLayout:
    """Accept ``candidates`` in order, each unless it clashes; build the classes."""
    index = {key: k for k, key in enumerate(items.tensors)}
    tensors = items.tensor_buffers
    uf = _UnionFind(tensors, items.scratch_buffers)
    accepted: list[Alias] = []
    dropped: list[tuple[Alias, str]] = []

    def tie(alias: Alias) -> tuple[int, int, int] | None:
        u, v = index.get((alias.subgraph, alias.tensor)), index.get((alias.subgraph, alias.base))
        return None if u is None or v is None else (u, v, alias.delta)

    for alias in candidates:
        if (t := tie(alias)) is not None:
            uf.pending.setdefault(frozenset(t[:2]), set()).add(t)

    def join(alias: Alias, limit: int | None) -> str | None:
        t = tie(alias)
        if t is None:
            return "TFLM does not plan both tensors"
        uf.pending.get(frozenset(t[:2]), set()).discard(t)
        return uf.join(*t, limit)

    for group in _groups(candidates):
        if len(group) > 1:  # all together first: one view of a set may pay only with the rest
            before, peak = uf.state(), uf.peak()
            whys = [join(alias, None) for alias in group]
            if uf.peak() <= peak:
                accepted += [a for a, why in zip(group, whys, strict=True) if not why]
                dropped += [(a, why) for a, why in zip(group, whys, strict=True) if why]
                continue
            uf.restore(before)
        for alias in group:
            why = join(alias, uf.peak())
            if why:
                dropped.append((alias, why))
            else:
                accepted.append(alias)
    roots = sorted({uf.find(k)[0] for k in range(len(tensors))}, key=lambda r: min(uf.members[r]))
    buffers, raw = [], []
    class_of = [0] * len(tensors)
    shift = [0] * len(tensors)
    for c, root in enumerate(roots):
        members = sorted(uf.members[root])
        if len(members) == 1:
            k = members[0]
            buffers.append(tensors[k])
            raw.append(_with_size(tensors[k], _bytes(items, k)))
            class_of[k] = c
            continue
        pos = {k: uf.find(k)[1] for k in members}
        low = min(pos.values())
        for k in members:
            class_of[k], shift[k] = c, pos[k] - low
        first = min(tensors[k].first for k in members)
        last = max(tensors[k].last for k in members)
        size = max(shift[k] + tensors[k].size for k in members)
        raw_size = max(shift[k] + _bytes(items, k) for k in members)
        name = f"{tensors[members[0]].id} and {len(members) - 1} aliased"
        buffers.append(Buffer(name, first, last, size, tensors[members[0]].alignment))
        raw.append(Buffer(name, first, last, raw_size))
    return AliasLayout(
        tuple(buffers), tuple(raw), tuple(class_of), tuple(shift), tuple(accepted), tuple(dropped)
    )


def _groups(candidates: Sequence[Alias]) -> list[list[Alias]]:
    """Candidates tried together, in order of first appearance: the slice views of
    one tensor, the views into one CONCATENATION; an in-place alias alone."""
    groups: dict[tuple, list[Alias]] = {}
    for n, a in enumerate(candidates):
        key = {SLICE_VIEW: (a.kind, a.base), CONCAT_VIEW: (a.kind, a.op)}.get(a.kind, (n,))
        groups.setdefault(key, []).append(a)
    return list(groups.values())


def _bytes(items: ArenaItems, k: int) -> int:
    s, t = items.tensors[k]
    return items.sizes[s][t]


def _with_size(b: Buffer, size: int) -> Buffer:
    return Buffer(b.id, b.first, b.last, size)
