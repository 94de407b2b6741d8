"""The tiling rebuild's rules in Python, as they were before ``_tiling.c``: the
oracle the C rules are held to (the same blocks, the same buffers in each at the
same offsets). ``arenaplan.allocation.tiling`` says what each rule does."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from arenaplan.allocation.problem import Problem

DP_BITS = 1 << 22
DP_ITEMS = 64
LIFETIME_ORDERS = {
    "earliest": lambda life: life,
    "latest": lambda life: (-life[1], -life[0]),
    "shortest": lambda life: (life[1] - life[0], life),
}


@dataclass(eq=False, slots=True)
class Block:
    """A rectangle of the tiling: steps [first, last], ``size`` bytes. ``kind``
    "buffer" (``parts`` is its index), "stack" (parts one above the other, the
    first lowest), "chain" (parts one after the other in time, at one offset) or
    "pinwheel" (parts bottom, right, top, left, centre)."""

    first: int
    last: int
    size: int
    kind: str
    parts: tuple[Block, ...] | int


def _unfold(block: Block, base: int, out: list[int]) -> None:
    """Offsets (bytes) of the buffers inside ``block`` placed at ``base`` (a stack
    of work, not recursion: chains of chains nest as deep as the buffers)."""
    todo = [(block, base)]
    while todo:
        b, at = todo.pop()
        if isinstance(b.parts, int):
            out[b.parts] = at
        elif b.kind == "chain":
            todo += [(part, at) for part in b.parts]
        elif b.kind == "stack":
            for part in b.parts:
                todo.append((part, at))
                at += part.size
        else:  # pinwheel: bottom, right at the base; top above right; left, centre above bottom
            bottom, right, top, left, centre = b.parts
            todo += [(bottom, at), (right, at), (top, at + right.size)]
            todo += [(left, at + bottom.size), (centre, at + bottom.size)]


def reduce_blocks(
    problem: Problem,
    stack: str,
    match: bool = True,
    banned: Iterable[tuple[int, int]] = (),
    joined: list[tuple[int, int]] | None = None,
) -> list[Block]:
    """The blocks left when no rule applies; ``stack``: which lifetime the last
    rule stacks first, or "" for no such rule; ``match``: whether stack-to-match
    runs; ``banned``: (boundary, size) keys the chain rule does not join;
    ``joined`` (when given) gets the keys it joins, in order."""
    blocks = {
        i: Block(b.first, b.last, b.size, "buffer", i)
        for i, b in enumerate(problem.buffers)
        if b.size > 0
    }
    pool = _Pool(blocks)
    no = set(banned)
    keys: list[tuple[int, int]] = [] if joined is None else joined
    rules = [lambda pool: _chain(pool, no, keys), _stack_to_match, _pinwheel, _group_match,
             _pinwheel_complete]  # fmt: skip
    if not match:
        rules.remove(_stack_to_match)
    if stack:
        rules.append(lambda pool: _stack_lifetime(pool, LIFETIME_ORDERS[stack]))
    while any(rule(pool) for rule in rules):
        pass
    return pool.blocks()


class _Pool:
    """The blocks not merged yet, in a deterministic order."""

    def __init__(self, blocks: dict[int, Block]) -> None:
        self.live: dict[int, Block] = dict(blocks)  # key: creation number
        self.key = {id(b): k for k, b in blocks.items()}
        self.next = max(blocks, default=-1) + 1

    def blocks(self) -> list[Block]:
        return list(self.live.values())

    def merge(self, parts: Iterable[Block], block: Block) -> Block:
        for p in parts:
            del self.live[self.key.pop(id(p))]
        self.live[self.next] = block
        self.key[id(block)] = self.next
        self.next += 1
        return block

    def by(self, key) -> dict:
        out: dict = defaultdict(list)
        for block in self.live.values():
            out[key(block)].append(block)
        return out


def _stacked(parts: list[Block]) -> Block:
    if len(parts) == 1:
        return parts[0]
    return Block(parts[0].first, parts[0].last, sum(p.size for p in parts), "stack", tuple(parts))


def _chain(pool: _Pool, banned: set[tuple[int, int]], joined: list[tuple[int, int]]) -> bool:
    """The only block of a size ending at a boundary and the only one starting there
    (not for a (boundary, size) key in ``banned``; the keys joined go to ``joined``)."""
    ends = pool.by(lambda b: (b.last + 1, b.size))
    starts = pool.by(lambda b: (b.first, b.size))
    merged = False
    used: set[int] = set()
    for key, before in sorted(ends.items()):
        after = starts.get(key, [])
        if key in banned:
            continue
        if len(before) == 1 and len(after) == 1 and not {id(before[0]), id(after[0])} & used:
            a, b = before[0], after[0]
            used |= {id(a), id(b)}
            joined.append(key)
            pool.merge((a, b), Block(a.first, b.last, a.size, "chain", (a, b)))
            merged = True
    return merged


def _stack_to_match(pool: _Pool) -> bool:
    """Blocks of one lifetime next to a boundary that add up to a block across it
    (every such group found in one pass, each block in one group at most)."""
    ends, starts = pool.by(lambda b: b.last + 1), pool.by(lambda b: b.first)
    used: set[int] = set()
    for k in sorted(set(ends) & set(starts)):
        for side, other, key in ((ends[k], starts[k], "last"), (starts[k], ends[k], "first")):
            by_key = defaultdict(list)
            for b in other:
                by_key[getattr(b, key)].append(b)
            groups = [g for _, g in sorted(by_key.items()) if len(g) > 1]
            totals = [sum(b.size for b in g) for g in groups]
            for x in side:
                if id(x) in used:
                    continue
                for group, total in zip(groups, totals, strict=True):
                    if total < x.size:
                        continue
                    free = [b for b in group if id(b) not in used]
                    found = _subset_sum(free, x.size) if len(free) > 1 else None
                    if found:
                        used |= {id(b) for b in found}
                        pool.merge(found, _stacked(found))
                        break
    return bool(used)


def _subset_sum(items: list[Block], target: int) -> list[Block] | None:
    """At least two of ``items`` whose sizes add up to ``target`` (bitset dynamic
    programming over sizes / their gcd), or None."""
    items = [b for b in items if b.size <= target][:DP_ITEMS]
    if len(items) < 2 or sum(b.size for b in items) < target:
        return None
    g = math.gcd(*(b.size for b in items))
    if target % g or target // g > DP_BITS:
        return None
    goal, mask = target // g, (1 << (target // g + 1)) - 1
    layers = [1]  # bit s of layers[i]: some subset of the first i items sums to s
    for b in items:
        layers.append((layers[-1] | (layers[-1] << (b.size // g))) & mask)
    if not (layers[-1] >> goal) & 1:
        return None
    chosen, rest = [], goal
    for i in range(len(items), 0, -1):
        if not (layers[i - 1] >> rest) & 1:  # item i-1 is needed
            chosen.append(items[i - 1])
            rest -= items[i - 1].size // g
    return chosen if len(chosen) >= 2 and rest == 0 else None


def _pinwheel(pool: _Pool) -> bool:
    """Five blocks around a centre: bottom [f, c-1], left [f, a-1] above it,
    centre [a, c-1] above bottom, right [c, l] as high as bottom + centre, top
    [a, l] above right; together the rectangle [f, l]. Every such five found in
    one pass, each block in one at most."""
    by_last, by_first = pool.by(lambda b: b.last), pool.by(lambda b: b.first)
    by_life = pool.by(lambda b: (b.first, b.last))
    used: set[int] = set()
    for centre in pool.blocks():
        five = None if id(centre) in used else _pinwheel_around(centre, by_last, by_first, by_life)
        if five is not None and not {id(b) for b in five} & used:
            used |= {id(b) for b in five}
            bottom, _, top, left, _ = five
            size = bottom.size + left.size
            pool.merge(five, Block(bottom.first, top.last, size, "pinwheel", five))
    return bool(used)


def _pinwheel_around(centre: Block, by_last, by_first, by_life) -> tuple[Block, ...] | None:
    """(bottom, right, top, left, centre) of a pinwheel around ``centre``, or None."""
    for bottom in by_last.get(centre.last, []):
        if bottom.first >= centre.first:
            continue
        for left in by_life.get((bottom.first, centre.first - 1), []):
            for top in by_first.get(centre.first, []):
                if top.last <= centre.last:
                    continue
                for right in by_life.get((centre.last + 1, top.last), []):
                    five = (bottom, right, top, left, centre)
                    if len({id(b) for b in five}) == 5 and _pinwheel_sizes(*five):
                        return five
    return None


def _pinwheel_sizes(bottom: Block, right: Block, top: Block, left: Block, centre: Block) -> bool:
    """Right reaches the centre's top; both sides reach the same height."""
    return _sizes_fit(
        {"bottom": bottom.size, "right": right.size, "top": top.size, "left": left.size,
         "centre": centre.size}
    )  # fmt: skip


def _sizes_fit(s: dict[str, int]) -> bool:
    return (
        s["right"] == s["bottom"] + s["centre"] and s["bottom"] + s["left"] == s["right"] + s["top"]
    )


def _group_match(pool: _Pool) -> bool:
    """All blocks of one lifetime and all of the lifetime ending just before it,
    with equal totals: stacked each, then chained."""
    by_life = pool.by(lambda b: (b.first, b.last))
    ending = defaultdict(list)
    for life in by_life:
        ending[life[1] + 1].append(life)
    for life, after in sorted(by_life.items()):
        for before_life in sorted(ending.get(life[0], [])):
            before = by_life[before_life]
            if len(before) + len(after) < 3:
                continue
            if sum(b.size for b in before) != sum(b.size for b in after):
                continue
            a, b = _stacked(before), _stacked(after)
            pool.merge([*before, *after], Block(a.first, b.last, a.size, "chain", (a, b)))
            return True
    return False


def _pinwheel_complete(pool: _Pool) -> bool:
    """Four blocks of a pinwheel, the fifth's lifetime and size following from them,
    and two or more blocks of that lifetime adding up to that size: those stacked
    (every such found in one pass, each block in one at most). Times: left
    [f, a-1], bottom [f, c-1], centre [a, c-1], top [a, l], right [c, l]."""
    by_first, by_last = pool.by(lambda b: b.first), pool.by(lambda b: b.last)
    by_life = pool.by(lambda b: (b.first, b.last))
    used: set[int] = set()

    def complete(have: dict[str, Block], missing: str, life: tuple[int, int]) -> None:
        need = _fifth_size(have, missing)
        if need is None or {id(b) for b in have.values()} & used:
            return
        group = [b for b in by_life.get(life, []) if id(b) not in used]
        found = _subset_sum(group, need) if len(group) > 1 else None
        if found:
            used.update(id(b) for b in found)
            pool.merge(found, _stacked(found))

    blocks = pool.blocks()  # those live when the pass starts
    for centre in blocks:
        a, c = centre.first, centre.last + 1
        tops = [t for t in by_first.get(a, []) if t.last >= c]
        bottoms = [b for b in by_last.get(c - 1, []) if b.first < a]
        for top in tops:
            for right in by_life.get((c, top.last), []):
                four = {"centre": centre, "top": top, "right": right}
                for left in by_last.get(a - 1, []):
                    complete({**four, "left": left}, "bottom", (left.first, c - 1))
                for bottom in bottoms:
                    complete({**four, "bottom": bottom}, "left", (bottom.first, a - 1))
        for bottom in bottoms:
            for left in by_life.get((bottom.first, a - 1), []):
                four = {"centre": centre, "bottom": bottom, "left": left}
                for top in tops:
                    complete({**four, "top": top}, "right", (c, top.last))
                for right in by_first.get(c, []):
                    complete({**four, "right": right}, "top", (a, right.last))
    for bottom in blocks:
        f, c = bottom.first, bottom.last + 1
        for left in by_first.get(f, []):
            a = left.last + 1
            if a >= c:
                continue
            for right in by_first.get(c, []):
                for top in by_life.get((a, right.last), []):
                    four = {"bottom": bottom, "left": left, "right": right, "top": top}
                    complete(four, "centre", (a, c - 1))
    return bool(used)


def _fifth_size(have: dict[str, Block], missing: str) -> int | None:
    """The missing member's size, when the four are distinct and their sizes agree
    (right = bottom + centre, bottom + left = right + top)."""
    if len({id(b) for b in have.values()}) < 4:
        return None
    s = {role: b.size for role, b in have.items()}
    s[missing] = {  # from one relation; _sizes_fit checks the other
        "centre": lambda: s["right"] - s["bottom"],
        "bottom": lambda: s["right"] - s["centre"],
        "left": lambda: s["right"] + s["top"] - s["bottom"],
        "right": lambda: s["bottom"] + s["centre"],
        "top": lambda: s["bottom"] + s["left"] - s["right"],
    }[missing]()
    return s[missing] if s[missing] > 0 and _sizes_fit(s) else None


def _stack_lifetime(pool: _Pool, key) -> bool:
    """The blocks of the first lifetime (by ``key`` of (first, last)) that several
    share, stacked."""
    groups = pool.by(lambda b: (b.first, b.last))
    for life in sorted(groups, key=key):
        group = groups[life]
        if len(group) > 1:
            pool.merge(group, _stacked(group))
            return True
    return False
