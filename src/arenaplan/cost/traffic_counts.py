"""Counting memory accesses: what one operator loads and stores, per key.

:class:`Traffic` holds the loads and stores of one operator to one tensor or block:
``loads``/``stores`` are memory accesses (one instruction's access to one address),
``load_bytes``/``store_bytes`` bytes, and ``load_widths``/``store_widths`` the
accesses by width in bytes (1, 2, 4, 8, 16, 32; 0 for any other width). The keys
(:data:`Key`) are listed in ``cost.traffic``. :class:`OperatorCounts` gathers one
operator's traffic per key while a kernel model counts it (``cost.traffic_tflm``
for TFLM's reference kernels, ``cost.traffic_xcore`` for xcore's lib_nn);
:func:`memcpy_traffic` gives the accesses of the runner's memcpy on a
:class:`Build`. The measured tables of ``data/`` write counts as items, per load or
store and width ("4:1 8:6+2*n / 8:1": :func:`role_items`), which
:func:`items_traffic` evaluates. Every count is an estimate of what the kernels do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from arenaplan.ir.model import Model, Operator, Subgraph, Tensor

Key = tuple  # (subgraph, tensor) or ("persistent", kind, ...), ("scratch", sg, op, k), ("model",)
Widths = tuple[tuple[int, int], ...]


def _merge(a: Widths, b: Widths) -> Widths:
    if not a:
        return b
    if not b:
        return a
    out: dict[int, int] = dict(a)
    for w, n in b:
        out[w] = out.get(w, 0) + n
    return tuple(sorted((w, n) for w, n in out.items() if n))


@dataclass(frozen=True, slots=True)
class Traffic:
    """Loads and stores of one operator to one tensor or block (see the module doc)."""

    loads: int = 0
    stores: int = 0
    load_bytes: int = 0
    store_bytes: int = 0
    load_widths: Widths = ()
    store_widths: Widths = ()

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(
            self.loads + other.loads,
            self.stores + other.stores,
            self.load_bytes + other.load_bytes,
            self.store_bytes + other.store_bytes,
            _merge(self.load_widths, other.load_widths),
            _merge(self.store_widths, other.store_widths),
        )

    @staticmethod
    def reads(n: int, width: int) -> Traffic:
        """``n`` loads of ``width`` bytes each."""
        n = int(n)
        if n <= 0:
            return Traffic()
        return Traffic(n, 0, n * width, 0, ((_wclass(width), n),), ())

    @staticmethod
    def writes(n: int, width: int) -> Traffic:
        """``n`` stores of ``width`` bytes each."""
        n = int(n)
        if n <= 0:
            return Traffic()
        return Traffic(0, n, 0, n * width, (), ((_wclass(width), n),))

    def times(self, n: int) -> Traffic:
        """This traffic repeated ``n`` times (n >= 0)."""
        return Traffic(
            self.loads * n,
            self.stores * n,
            self.load_bytes * n,
            self.store_bytes * n,
            tuple((w, k * n) for w, k in self.load_widths if k * n),
            tuple((w, k * n) for w, k in self.store_widths if k * n),
        )

    @property
    def bytes(self) -> int:
        return self.load_bytes + self.store_bytes

    @property
    def accesses(self) -> int:
        return self.loads + self.stores


def _wclass(width: int) -> int:
    return width if width in (1, 2, 4, 8, 16, 32) else 0


def total(items: Iterable[Traffic]) -> Traffic:
    out = Traffic()
    for t in items:
        out = out + t
    return out


@dataclass(frozen=True, slots=True)
class Build:
    """What the fixed terms depend on: pointer size, the memcpy's widest word."""

    name: str = "host-reference"
    pointer: int = 8
    memcpy_word: int = 8


HOST_REFERENCE = Build()


def memcpy_traffic(nbytes: int, dst_align: int, src_align: int, build: Build = HOST_REFERENCE):
    """(loads, stores) of the runner's memcpy of ``nbytes``: words of 8 (or 4) bytes
    while both pointers are aligned to them, then single bytes."""
    align = math.gcd(dst_align, src_align)
    word = 8 if align % 8 == 0 and build.memcpy_word >= 8 else 4 if align % 4 == 0 else 1
    words, rest = (nbytes // word, nbytes % word) if word > 1 else (0, nbytes)
    t_load = Traffic.reads(words, word) + Traffic.reads(rest, 1)
    t_store = Traffic.writes(words, word) + Traffic.writes(rest, 1)
    return t_load, t_store


class OperatorCounts:
    """One operator being counted: its operands and the traffic found so far, per
    key (the kernel models of TFLM's kernels, ``cost.traffic_tflm``, and of xcore's
    build on it, ``cost.traffic_xcore``)."""

    def __init__(self, model: Model, sg: Subgraph, op: Operator) -> None:
        self.model, self.sg, self.op = model, sg, op
        self.acc: dict[Key, Traffic] = {}

    def i(self, k: int) -> Tensor | None:
        return self.sg.operand(self.op, k)

    def o(self, k: int = 0) -> Tensor | None:
        return self.sg.operand(self.op, k, output=True)

    def key(self, t: Tensor) -> Key:
        return (self.sg.index, t.index)

    def add(self, key: Key, t: Traffic) -> None:
        if t.loads or t.stores:
            self.acc[key] = self.acc[key] + t if key in self.acc else t

    @property
    def op_data(self) -> Key:
        return ("persistent", "op_data", self.sg.index, self.op.index)


Item = tuple[str, int]  # ("L" loads or "S" stores, width in bytes)


def role_items(text: str) -> dict[Item, str]:
    """The items of a measured table's entry (the fixed terms', the RFFT's): "4:1
    8:6+2*n / 8:1" -> {("L", 4): "1", ("L", 8): "6+2*n", ("S", 8): "1"}: per load or
    store and width in bytes, the count of accesses (a number or an expression)."""
    loads, _, stores = text.partition("/")
    out = {}
    for kind, part in (("L", loads), ("S", stores)):
        for item in part.split():
            width, _, count = item.partition(":")
            out[(kind, int(width))] = count
    return out


def role_text(items: dict[Item, str]) -> str:
    """The inverse of :func:`role_items`: widths ascending, loads then "/" stores."""
    parts = [
        " ".join(f"{w}:{items[(kind, w)]}" for _, w in sorted(k for k in items if k[0] == kind))
        for kind in ("L", "S")
    ]
    return parts[0] + (f" / {parts[1]}" if parts[1] else "")


def items_traffic(spec: str, names: dict[str, int]) -> Traffic:
    """The traffic that ``spec`` (items as :func:`role_items` reads them) gives, its
    counts evaluated with ``names``."""
    out = Traffic()
    for (kind, width), count in role_items(spec).items():
        n = eval(count, {"__builtins__": {}}, names)  # our own tables, not input
        out = out + (Traffic.reads if kind == "L" else Traffic.writes)(n, width)
    return out
