"""Perfect packings: problems whose lower bound leaves no byte free.

When the buffers' area (bytes x steps) equals the bound times the steps they
span, a packing at the bound is a tiling of that rectangle: at every step the
live buffers fill [0, bound) exactly. Searching offsets buffer by buffer is
hopeless there (the order of the buffers live at the first step is only pinned
down much later), so this module rebuilds the tiling bottom-up instead: it
merges buffers into *blocks*, rectangles whose inside is fixed, by rules a
tiling suggests, until none applies, and hands the few blocks left to the
exact search at the bound. Rules, in the order they are tried (each merge
restricts the packings, so whatever is found is a packing of the buffers; a
wrong merge can only make the bound unreachable, never a packing invalid):

- *chain*: at a step boundary, the only block of a size ending there and the
  only block of that size starting there sit at one offset, one after the other;
- *stack to match*: blocks starting at a boundary with one lifetime whose sizes
  add up to the size of a block ending there (or the mirror) are stacked, so
  the chain rule joins them next;
- *pinwheel*: five blocks around a centre that no straight cut separates
  (bottom, right, top, left, centre) form their rectangle;
- *group match*: all the blocks of one lifetime, stacked, and all of the
  lifetime that ends just before it, stacked, when their totals are equal;
- *complete a pinwheel*: four blocks of a pinwheel are there, so the fifth's
  lifetime and size follow; two or more blocks of that lifetime adding up to
  that size are stacked, so the pinwheel rule joins the five next (a pinwheel's
  member cut across, into pieces of one lifetime, waits for this: no block across
  a boundary has its size);
- *stack a lifetime*: the blocks sharing a lifetime (the first such lifetime
  in an order that differs from one attempt to the next).

Six attempts: with the last rule (fewer blocks, may merge too much), taking
lifetimes in three orders, then without it; then in two passes: first every rule
except stack-to-match (its subset sums can stack blocks that no packing keeps
together while the buffers are still small), then the four attempts on the
blocks that pass leaves. The first attempt, when the greedy orders do not pack
its blocks, bans chains the rule joined one by one, busiest boundary first (two
blocks of one size can meet at a boundary by chance: joined, they misbuild the
tiling), keeping a ban that leaves fewer blocks (or, when it alone does not,
with a chain it newly joined: freed, its blocks can meet others by chance), each
try judged by the greedy orders alone (and, when a ban kept leaves few blocks, a
short exact search); then the exact search on the fewest blocks. The last
attempt is that again, smallest size first and without stack-to-match (the bans
kept depend on the order; where sizes are small, subset sums misbuild too). Each
attempt has an equal share of the time left; the exact search on blocks without
bans uses a quarter of it (it packs such blocks at once or not for seconds), so
what it leaves goes to the scans after it. The rules run in C (``_tiling.c``): a
reduction takes 10 to 40 ms at 2,000 buffers of a tiling (a fifth of a second
where a fifth of the pieces are missing). A packing of the blocks is found by
the greedy orders or the exact search, unfolded to buffer offsets and checked by
the validator before it is returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenaplan.allocation import _tiling
from arenaplan.allocation.deadline import Deadline
from arenaplan.allocation.exact import SearchParams, check_capacity
from arenaplan.allocation.heuristics import best_greedy
from arenaplan.allocation.packing import Columns, seconds_left
from arenaplan.allocation.problem import Buffer, Problem
from arenaplan.allocation.validate import check_solution

# Attempts, each with an equal share of the time left: the last rule taking the
# lifetimes from the earliest, from the latest, from the shortest; then without
# it. The number is what _tiling.reduce calls the order.
ATTEMPTS = {"earliest": 1, "latest": 2, "shortest": 3, "": 0}
TWO_PASS = "two-pass"  # no stack-to-match, then ATTEMPTS on the blocks
BANS = "bans"  # "earliest", then banning chains it joined, busiest boundary first
BANS_BY_SIZE = "bans by size"  # the same without stack-to-match, smallest size first
# A ban that leaves this many blocks or fewer gets the exact search for this
# long (seconds) as well as the greedy orders: blocks of a tiling this few are
# packed at once when they can be (fine-2500: 44 blocks at once, 48 not in 3 s).
QUICK_BLOCKS, QUICK_SECONDS = 64, 0.1
# Shares of an attempt's time: a ban scan's for scanning (the exact search on
# the fewest blocks has the rest); the exact search's in an attempt without bans
# (on blocks a tiling's rules leave it packs at once or not in seconds; what is
# not used passes on to the attempts after).
SCAN_SHARE, EXACT_SHARE = 0.75, 0.25
# Chains a ban newly joined, tried banned with it when it alone leaves no fewer
# blocks (fine-2000, seed 300: one such pair, then 79 blocks packed at once).
PAIRED = 4


@dataclass(frozen=True, slots=True)
class Blocks:
    """The blocks left when no rule applies (int64 columns: inclusive steps,
    bytes), and for each buffer the block holding it (int32, -1 for a size of 0)
    and its offset in that block (int64 bytes); ``joined``: the (boundary, size)
    keys the chain rule joined, in order (int64, k x 2; boundary: the later part's
    first step)."""

    first: np.ndarray
    last: np.ndarray
    size: np.ndarray
    block: np.ndarray
    at: np.ndarray
    joined: np.ndarray


def is_perfect(problem: Problem, bound: int) -> bool:
    """Does a packing at ``bound`` leave no byte free (and can blocks keep every
    buffer aligned: every size a multiple of every alignment)?"""
    cols = Columns.of(problem)  # numpy columns: a million buffers in milliseconds
    used = cols.size > 0
    if not used.any() or (cols.fixed >= 0).any():
        return False
    size, align_of = cols.size[used], cols.align[used]
    align = int(align_of.max())
    if (align % align_of).any() or (size % align).any():
        return False
    first, last = cols.first[used], cols.last[used]
    span = int(last.max()) - int(first.min()) + 1
    area = sum((size * (last - first + 1)).tolist(), 0) if _fits_int64(size, span) else None
    if area is None:  # products beyond int64: Python integers
        rows = zip(size.tolist(), first.tolist(), last.tolist(), strict=True)
        area = sum(s * (b - a + 1) for s, a, b in rows)
    return area == bound * span


def _fits_int64(size: np.ndarray, span: int) -> bool:
    """Is every size x width product below 2**63 (a width is at most ``span``)?"""
    return int(size.max()) * span < 1 << 63


def perfect_packing(
    problem: Problem,
    bound: int,
    deadline: Deadline,
    params: SearchParams | None = None,
    two_pass: bool = True,
) -> list[int] | None:
    """Offsets of a packing at ``bound`` of a perfect problem (``is_perfect``),
    or None when no attempt finds one in time (``two_pass``: the attempts as
    the module says; else ``ATTEMPTS`` alone, as inside the two-pass attempt)."""
    params = params or SearchParams()
    outer = [BANS, *list(ATTEMPTS)[1:], TWO_PASS, BANS_BY_SIZE]
    attempts = outer if two_pass else list(ATTEMPTS)
    for k, stack in enumerate(attempts):
        left = deadline.left()
        if deadline.expired("tiling"):
            return None
        last = k == len(attempts) - 1
        own = deadline if left is None or last else Deadline.after(left / (len(attempts) - k))
        if stack == TWO_PASS:
            offsets = _two_pass(problem, bound, own, params)
        elif stack in (BANS, BANS_BY_SIZE):
            offsets = _banning_chains(problem, bound, own, params, stack == BANS)
        else:
            blocks = reduce_blocks(problem, stack, own)
            offsets = (
                None
                if blocks is None
                else _solve_blocks(problem, blocks, bound, own, params, EXACT_SHARE)
            )
        if offsets is not None:
            return offsets
    return None


def _two_pass(
    problem: Problem, bound: int, deadline: Deadline, params: SearchParams
) -> list[int] | None:
    """Every rule except stack-to-match, then the four attempts on the blocks left."""
    blocks = reduce_blocks(problem, "", deadline, match=False)
    if blocks is None:
        return None
    placed = perfect_packing(block_problem(problem, blocks), bound, deadline, params, False)
    return None if placed is None else _unfolded(problem, blocks, placed, bound)


def _banning_chains(
    problem: Problem, bound: int, deadline: Deadline, params: SearchParams, busiest: bool = True
) -> list[int] | None:
    """The "earliest" attempt, then, when the greedy orders do not pack its blocks,
    banning chains the rule joined, busiest boundary first (``_next_key``; not
    ``busiest``: smallest size first, and the rules without stack-to-match, whose
    subset sums misbuild where sizes are small): two blocks of one size can meet
    at a boundary by chance, and the chain rule then joins what no packing keeps
    together. Each key is tried with the bans kept so far, judged
    by the greedy orders on the blocks left; a ban that leaves fewer blocks is
    kept (a wrong join stalls the rules), and the chains its blocks joined become
    candidates. For ``SCAN_SHARE`` of the time, then the exact search on the fewest
    blocks."""
    left = deadline.left()
    scan = deadline if left is None else Deadline.after(left * SCAN_SHARE)
    blocks = reduce_blocks(problem, "earliest", deadline, match=busiest)
    if blocks is None:
        return None
    busy = _busy(problem) if busiest else {}
    packed, blocks = _scan_bans(problem, bound, blocks, scan, busy, params, busiest)
    if packed is not None or deadline.expired("tiling"):
        return packed
    return _solve_blocks(problem, blocks, bound, deadline, params)


def _scan_bans(
    problem: Problem,
    bound: int,
    blocks: Blocks,
    scan: Deadline,
    busy: dict[int, int],
    params: SearchParams,
    match: bool = True,
) -> tuple[list[int] | None, Blocks]:
    """Offsets when the greedy orders pack ``blocks`` or the blocks of a ban (each
    key tried with the bans kept so far, the rules with stack-to-match or not as
    ``blocks`` were made, until ``scan`` passes), or the exact search does within
    ``QUICK_SECONDS`` (the first blocks and each ban kept, when ``QUICK_BLOCKS`` or
    fewer); else None, and the fewest blocks found."""
    bans: list[tuple[int, int]] = []
    tried: set[tuple[int, int]] = set()
    found: Blocks | None = blocks
    keys: list[tuple[int, int]] = []  # the keys found was made with, beyond bans
    while found is not None:
        fewer = not keys or len(found.first) < len(blocks.first)
        quick = fewer and len(found.first) <= QUICK_BLOCKS
        packed = _solve_blocks(problem, found, bound, scan, params, most=QUICK_SECONDS, exact=quick)
        if packed is not None:
            return packed, found
        if keys and fewer:
            bans += keys
            blocks = found
        key = _next_key(blocks, tried, busy)
        if key is None or scan.expired("tiling"):
            break
        tried.add(key)
        found, keys = _banned(problem, blocks, bans, key, scan, match)
    return None, blocks


def _banned(
    problem: Problem,
    blocks: Blocks,
    bans: list[tuple[int, int]],
    key: tuple[int, int],
    scan: Deadline,
    match: bool,
) -> tuple[Blocks | None, list[tuple[int, int]]]:
    """The blocks with ``key`` banned beside ``bans``, and the keys banned beyond
    ``bans``. When they are no fewer than ``blocks``, ``key`` is tried again with
    each of the first ``PAIRED`` chains joined then and not in ``blocks`` (smallest
    size first): the two blocks a wrong join held, once free, can meet others by
    chance. The first of these that leaves fewer blocks, else ``key`` alone."""
    found = reduce_blocks(problem, "earliest", scan, match, [*bans, key])
    if found is None or len(found.first) < len(blocks.first):
        return found, [key]
    new = _joined(found) - _joined(blocks)
    for other in sorted(new, key=lambda k: (k[1], k[0]))[:PAIRED]:
        pair = reduce_blocks(problem, "earliest", scan, match, [*bans, key, other])
        if pair is None or len(pair.first) < len(blocks.first):
            return pair, [key, other]
    return found, [key]


def _joined(blocks: Blocks) -> set[tuple[int, int]]:
    """The (boundary, size) keys the chain rule joined to make ``blocks``."""
    return {(int(b), int(s)) for b, s in blocks.joined.tolist()}


def _next_key(
    blocks: Blocks, tried: set[tuple[int, int]], busy: dict[int, int]
) -> tuple[int, int] | None:
    """The chain ``blocks`` joined, not tried, at the busiest boundary (``busy``:
    where one buffer ends and one starts, a join is all but always right), then
    the smallest."""
    keys = _joined(blocks) - tried
    return min(keys, key=lambda k: (-busy.get(k[0], 0), k[1], k[0]), default=None)


def _busy(problem: Problem) -> dict[int, int]:
    """For each step boundary, the fewer of the buffers that end just before it
    and of those that start at it (a chance meeting of two sizes needs several)."""
    cols = Columns.of(problem)
    used = cols.size > 0
    ends = dict(zip(*np.unique(cols.last[used] + 1, return_counts=True), strict=True))
    starts = dict(zip(*np.unique(cols.first[used], return_counts=True), strict=True))
    return {int(k): int(min(n, ends[k])) for k, n in starts.items() if k in ends}


def reduce_blocks(
    problem: Problem,
    stack: str,
    deadline: Deadline,
    match: bool = True,
    banned: Sequence[tuple[int, int]] = (),
) -> Blocks | None:
    """The blocks left when no rule applies (None if ``deadline`` passed first);
    ``stack``: which lifetime the last rule stacks first (see ``ATTEMPTS``), or ""
    for no such rule; ``match``: whether stack-to-match runs; ``banned``: the
    (boundary, size) keys the chain rule does not join (boundary: the later
    block's first step)."""
    cols = Columns.of(problem)
    order, seconds = ATTEMPTS[stack], seconds_left(deadline)
    no = np.asarray(banned, dtype=np.int64).reshape(-1)
    got = _tiling.reduce(cols.first, cols.last, cols.size, order, seconds, match, no)
    if got is None:
        deadline.expired("tiling")
        return None
    first, last, size = (np.frombuffer(raw, dtype=np.int64) for raw in got[:3])
    block = np.frombuffer(got[3], dtype=np.int32)
    joined = np.frombuffer(got[5], dtype=np.int64).reshape(-1, 2)
    return Blocks(first, last, size, block, np.frombuffer(got[4], dtype=np.int64), joined)


def block_problem(problem: Problem, blocks: Blocks) -> Problem:
    """The blocks as buffers, each aligned as the most aligned buffer."""
    align = max((b.alignment for b in problem.buffers if b.size > 0), default=1)
    rows = zip(blocks.first.tolist(), blocks.last.tolist(), blocks.size.tolist(), strict=True)
    return Problem(tuple(Buffer(f"block{i}", *row, align) for i, row in enumerate(rows)))


def _unfolded(problem: Problem, blocks: Blocks, placed: Sequence[int], bound: int) -> list[int]:
    """The buffers' offsets with each block at its offset in ``placed``, checked."""
    base = np.asarray([*placed, 0], dtype=np.int64)  # block -1 (a size of 0) at 0
    offsets = (base[blocks.block] + np.where(blocks.block >= 0, blocks.at, 0)).tolist()
    check_solution(Problem(problem.buffers, bound), offsets)  # never an unchecked packing
    return offsets


def _solve_blocks(
    problem: Problem,
    blocks: Blocks,
    bound: int,
    deadline: Deadline,
    params: SearchParams,
    share: float = 1.0,
    most: float | None = None,
    exact: bool = True,
) -> list[int] | None:
    """The buffers' offsets when the greedy orders pack ``blocks`` at ``bound``,
    or (``exact``, and time is left) the exact search does, for ``share`` of the
    time left and at most ``most`` seconds; else None."""
    reduced = block_problem(problem, blocks)
    greedy = best_greedy(reduced, bound, deadline)
    placed: Sequence[int] | None = None if greedy is None else greedy[1]
    left = deadline.left()
    if placed is None and exact and left != 0.0:
        seconds = None if left is None else left * share
        if most is not None:
            seconds = most if seconds is None else min(most, seconds)
        placed = check_capacity(reduced, bound, params, seconds).offsets
    return None if placed is None else _unfolded(problem, blocks, placed, bound)
