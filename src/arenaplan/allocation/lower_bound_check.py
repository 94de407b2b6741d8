"""An independent check of a refutation: replays its search tree with code of its own.

It imports nothing from ``lower_bound``: it takes the problem, the capacity, the
unit and the tree as plain data, works on the problem's own steps (inclusive,
no renumbering) with a numpy matrix of which buffers share a step, and re-derives
at every node what the tree claims:

- the move is legal: the buffer is unplaced, its offset (units) is the highest
  top of the placed buffers it shares a step with (0 if none), (offset, index)
  follows the previous placement's in the order, and it ends within the capacity;
- a node that ends ("step", t): the unplaced buffers live at step t add up to
  more than the capacity minus max(highest placed top live at t, last offset);
- a node that ends ("buffer", i): buffer i is unplaced and its resting offset
  plus its size exceeds the capacity;
- a node that is expanded has as children exactly the legal moves, each once,
  and not every buffer is placed (the tree holds no packing);
- the tree is consumed exactly, from a root with no move.

What it trusts is the argument in ``lower_bound``'s docstring: every packing
within a capacity can be made canonical without rising, and a canonical
sequence is what the tree enumerates. Tests check that argument against a
brute force over all offsets on small problems.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arenaplan.allocation.problem import Problem


class CertificateError(ValueError):
    """The certificate does not prove what it claims; the message says where."""


def check_refutation(
    problem: Problem,
    capacity: int,
    unit: int,
    units: int,
    tree: Sequence[tuple[tuple[int, int], tuple[str, int], int]],
) -> int:
    """Raise ``CertificateError`` unless ``tree`` proves that no packing of
    ``problem`` (alignments and fixed offsets ignored) has height below
    ``(units + 1) * unit`` bytes; returns that bound."""
    _check_units(problem, capacity, unit, units)
    state = _Replay(problem, unit, units)
    if not tree or tree[0][0] != (-1, -1):
        raise CertificateError("the tree does not start at a root with no move")
    # Each stack entry: children still expected below an expanded node.
    stack: list[int] = []
    for k, (move, cut, children) in enumerate(tree):
        if k > 0:
            if not stack:
                raise CertificateError(f"node {k}: the tree goes on after its root closed")
            stack[-1] -= 1
            state.play(k, move)
        state.verify(k, cut, children)
        stack.append(children)
        while stack and stack[-1] == 0:
            stack.pop()
            state.undo()
    if stack:
        raise CertificateError(f"the tree ends with {sum(stack)} children missing")
    return (units + 1) * unit


def _check_units(problem: Problem, capacity: int, unit: int, units: int) -> None:
    if unit < 1 or any(b.size % unit for b in problem.buffers):
        raise CertificateError(f"unit {unit} does not divide every size")
    if units != capacity // unit:
        raise CertificateError(f"{units} units of {unit} bytes is not capacity {capacity}")


class _Replay:
    """The placements along the current path. ``shares[i, j]``: buffers i and j
    are live at a common step (inclusive lifetimes)."""

    def __init__(self, problem: Problem, unit: int, units: int) -> None:
        bufs = problem.buffers
        self.first = np.array([b.first for b in bufs], dtype=np.int64)
        self.last = np.array([b.last for b in bufs], dtype=np.int64)
        self.size = np.array([b.size // unit for b in bufs], dtype=np.int64)
        self.shares = (self.first[:, None] <= self.last[None, :]) & (
            self.first[None, :] <= self.last[:, None]
        )
        self.units = units
        self.needed = self.size > 0  # empty buffers may sit anywhere: not in the tree
        self.on = np.zeros(len(bufs), dtype=bool)
        self.off = np.zeros(len(bufs), dtype=np.int64)
        self.path: list[tuple[int, int]] = []  # (buffer, offset) placed, in order
        self.legal: list[set[tuple[int, int]]] = []  # per open node: moves not yet seen

    def rests(self) -> np.ndarray:
        """For every buffer, the highest top (units) of the placed ones sharing a step."""
        tops = np.where(self.on, self.off + self.size, 0)
        return np.max(np.where(self.shares, tops[None, :], 0), axis=1)

    def previous(self) -> tuple[int, int]:
        if not self.path:
            return (-1, -1)
        i, off = self.path[-1]
        return (off, i)

    def legal_moves(self) -> set[tuple[int, int]]:
        rests = self.rests()
        prev = self.previous()
        return {
            (int(i), int(rests[i]))
            for i in np.flatnonzero(self.needed & ~self.on)
            if (int(rests[i]), int(i)) > prev and rests[i] + self.size[i] <= self.units
        }

    def play(self, k: int, move: tuple[int, int]) -> None:
        i, off = move
        expected = self.legal[-1] if self.legal else set()
        if (i, off) not in expected:
            raise CertificateError(f"node {k}: move {move} is not a legal unseen move there")
        expected.discard((i, off))
        self.on[i], self.off[i] = True, off
        self.path.append((i, off))

    def undo(self) -> None:
        if self.legal:
            left = self.legal.pop()
            if left:
                raise CertificateError(f"legal moves {sorted(left)[:3]} were never searched")
        if self.path:
            i, _ = self.path.pop()
            self.on[i] = False

    def verify(self, k: int, cut: tuple[str, int], children: int) -> None:
        kind, arg = cut
        if kind == "none":
            if bool(np.all(self.on | ~self.needed)):
                raise CertificateError(f"node {k}: every buffer is placed: that is a packing")
            moves = self.legal_moves()
            if len(moves) != children:
                raise CertificateError(f"node {k}: {children} children for {len(moves)} moves")
            self.legal.append(moves)
            return
        if children:
            raise CertificateError(f"node {k}: a cut node with children")
        self.legal.append(set())
        if kind == "step":
            self._verify_step(k, arg)
        elif kind == "buffer":
            self._verify_buffer(k, arg)
        else:
            raise CertificateError(f"node {k}: unknown cut {kind!r}")

    def _verify_step(self, k: int, t: int) -> None:
        live = (self.first <= t) & (t <= self.last)
        top = int(np.max(np.where(live & self.on, self.off + self.size, 0), initial=0))
        low = max(top, self.previous()[0], 0)
        rest = int(np.sum(np.where(live & ~self.on, self.size, 0)))
        if low + rest <= self.units:
            raise CertificateError(f"node {k}: step {t} fits ({low} + {rest} <= {self.units})")

    def _verify_buffer(self, k: int, i: int) -> None:
        if not 0 <= i < len(self.on) or self.on[i] or not self.needed[i]:
            raise CertificateError(f"node {k}: buffer {i} is not an unplaced buffer")
        if int(self.rests()[i]) + int(self.size[i]) <= self.units:
            raise CertificateError(f"node {k}: buffer {i} still fits")
