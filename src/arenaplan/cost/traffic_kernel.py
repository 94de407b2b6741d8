"""What a kernel model is written with: the counts of one operator being modelled
(:class:`KernelCounts`), the name of the kernel path it takes (:func:`kernel_path`),
the filter taps of a window (:func:`tap_count`) and a memcpy offset's alignment.

Shared by the models of TFLM's reference kernels (``cost.traffic_tflm``), of the
``ARENAPLAN_CASCADE`` operator (``cost.traffic_cascade``) and of xcore.ai's kernels
(``cost.traffic_xcore``, the tap count); it imports none of them. Units as in
``cost.traffic``: accesses and bytes of one invoke, per key.
"""

from __future__ import annotations

from collections.abc import Callable

from arenaplan.cost.traffic_counts import Build, Key, OperatorCounts, Traffic, memcpy_traffic
from arenaplan.ir.model import Model, Operator, Subgraph, Tensor


def tap_count(out_size: int, in_size: int, k: int, stride: int, pad: int, dil: int = 1) -> int:
    """Sum over output positions of the filter taps that fall inside the input:
    the pairs (o, f), 0 <= o < out_size, 0 <= f < k, with 0 <= o*stride - pad +
    f*dil < in_size. Counted in closed form (floor sums, a number of steps
    logarithmic in the sizes), so neither a tall output nor a tall filter is looped
    over. A stride or dilation below 1 is not a window (ValueError)."""
    if stride < 1 or dil < 1:
        raise ValueError(f"stride {stride} and dilation {dil} must be at least 1")
    if out_size <= 0 or k <= 0 or in_size <= 0:
        return 0
    return _pairs_at_most(out_size, k, stride, dil, in_size - 1 + pad) - _pairs_at_most(
        out_size, k, stride, dil, pad - 1
    )


def _pairs_at_most(n_out: int, n_taps: int, stride: int, dil: int, x: int) -> int:
    """How many (o, f), 0 <= o < n_out, 0 <= f < n_taps, have o*stride + f*dil <= x.

    Tap f counts min(n_out, (x - f*dil) // stride + 1) outputs while f*dil <= x:
    all n_out up to tap ``full``, then a floor sum over the taps up to ``last``."""
    if x < 0:
        return 0
    last = min(n_taps - 1, x // dil)  # the last tap with f*dil <= x
    reach = x - (n_out - 1) * stride  # tap f counts every output while f*dil <= reach
    full = min(last, reach // dil) if reach >= 0 else -1
    count = (full + 1) * n_out
    m = last - full  # taps full+1 .. last, taken as f = last - j, j = 0 .. m-1
    if m > 0:
        count += m + _floor_sum(m, stride, dil, x - dil * last)
    return count


def _floor_sum(n: int, m: int, a: int, b: int) -> int:
    """Sum of (a*j + b) // m over j in [0, n), for a, b >= 0 and m >= 1, in a number of
    steps logarithmic in m and a (Euclid's algorithm on the line's slope: the whole
    parts of a/m and b/m are summed directly, then the points under the line are
    counted along the other axis)."""
    total = 0
    while n > 0:
        if a >= m:
            total += (a // m) * (n * (n - 1) // 2)
            a %= m
        if b >= m:
            total += (b // m) * n
            b %= m
        top = a * n + b  # a, b < m now: the line's height at j = n
        if top < m:
            break
        n, b, m, a = top // m, top % m, a, m
    return total


class KernelCounts(OperatorCounts):
    """One TFLM kernel being modelled: its build, the tensors' sizes, the path taken."""

    def __init__(self, model: Model, sg: Subgraph, op: Operator, build: Build, sizes) -> None:
        super().__init__(model, sg, op)
        self.build = build
        self.sizes = sizes
        self.vars: dict[str, int] = {}
        self.kernel = op.opcode

    def nbytes(self, t: Tensor) -> int:
        return self.sizes[self.sg.index][t.index]

    def elements(self, t: Tensor) -> int:
        return self.nbytes(t) // max(t.dtype.itemsize, 1)

    def opt(self, name: str, default=None):
        return self.op.options.get(name, default)

    # traffic
    def load(self, t: Tensor | Key | None, n: int, width: int | None = None) -> None:
        if t is None:
            return
        if isinstance(t, Tensor):
            self.add(self.key(t), Traffic.reads(n, width or t.dtype.itemsize))
        else:
            self.add(t, Traffic.reads(n, width or 1))

    def store(self, t: Tensor | Key | None, n: int, width: int | None = None) -> None:
        if t is None:
            return
        if isinstance(t, Tensor):
            self.add(self.key(t), Traffic.writes(n, width or t.dtype.itemsize))
        else:
            self.add(t, Traffic.writes(n, width or 1))

    def copy(
        self,
        dst: Tensor | Key,
        dst_off: int,
        src: Tensor | Key,
        src_off: int,
        n: int,
        times: int = 1,
    ) -> None:
        """A memcpy of ``n`` bytes, offsets in bytes from 16-aligned bases; ``times``
        such copies at offsets of the same alignment."""
        t_load, t_store = memcpy_traffic(n, alignment(dst_off), alignment(src_off), self.build)
        self.add(self.key(src) if isinstance(src, Tensor) else src, t_load.times(times))
        self.add(self.key(dst) if isinstance(dst, Tensor) else dst, t_store.times(times))

    def scratch(self, k: int) -> Key:
        return ("scratch", self.sg.index, self.op.index, k)


def alignment(offset: int) -> int:
    """The alignment of a 16-aligned base plus ``offset`` bytes."""
    offset %= 16
    return 16 if offset == 0 else offset & -offset


Kernel = Callable[[KernelCounts], None]  # a kernel model: adds an operator's traffic to its counts


def kernel_path(c: KernelCounts, *parts: str) -> None:
    """Name the kernel path the operator takes: its opcode, then ``parts``, by "/"."""
    c.kernel = "/".join((c.op.opcode, *parts))
