"""Memory traffic per operator as xcore.ai runs it: lib_nn's VPU kernels.

On xcore.ai, the xformer converter replaces TFLite's int8 operators by XC
operators that call lib_nn (xmos/lib_nn at commit 52a618797e3e, the paths below
are inside it), so the loops of TFLM's reference kernels (``cost.traffic``)
do not describe what the core loads and stores. This module counts the accesses of
lib_nn's loops for the operators of the *un-transformed* model, per operator, in
the keys and :class:`~arenaplan.cost.traffic_counts.Traffic` form of
``cost.traffic.operator_traffic`` (so ``cost.timing`` can use either).

Kernels (one VPU vector is 32 bytes; "group": 16 output channels or elements):

- CONV_2D, FULLY_CONNECTED (int8): ``src/cpp/Filter2D.cpp`` computes each output
  pixel as MemCpyFn (patch into scratch), then per group of 16 output channels
  AggregateFn and OutputTransformFn. Patch copy (``src/cpp/MemCpyFn.cpp``): none
  when the input channels are a multiple of 32 and no tap falls in the padding
  (DerefInputFn + MatMulDirectFn: the VLDCs read the input itself); otherwise per
  tap ``memcpy`` of the pixel's channels in words (``ImToColPadded``, padded taps
  ``memset``) plus a 32-byte zero tail. Aggregate (``aggregate_fn_generic_int8.S``,
  ``aggregate_fn_direct_int8.S``): per 32 bytes of patch one VLDC of the patch and
  one 32-byte VLMACCR load of weights per output channel of the group. Output
  transform (``output_transform_fn_int8.S``): two 32-byte loads of the packed
  multipliers and biases (xformer's constant; the model's bias tensor stands for
  it), two masked stores of the group's outputs, two halfword parameter loads.
- ADD (``src/asm/add_elementwise.S``): per 16 elements one 16-byte VLMACC load of
  each input, five 32-byte loads of ``nn_add_params_t`` (bias hi/lo, m1, m2,
  shift; lib_tflite_micro keeps them in the operator's persistent data), two
  masked stores.
- MUL (``src/asm/mul_elementwise.S``): per 16 elements input 1 loaded twice (16
  and 32 bytes: VLMACC, then VLDC from the same address, so the last block reads
  16 bytes past the input), input 2 three times (16 bytes), one halfword parameter load, two
  masked stores; zero points, scale and bias are copied to the stack first.
- LOGISTIC, TANH, ... (int8 unary, xformer's XC_lookup; ``src/asm/lookup8.S``):
  per element a byte load of the input, a byte load of the 256-byte table, a byte
  store. The table is a constant of the converted model that ld_flash copies into
  the arena beside the activations; the un-transformed model has no tensor for it,
  so its loads are counted under the operator's second scratch key
  (``("scratch", sg, op, 1)``), a head buffer like the patch scratch.
- SPLIT (xcore's slice copies, ``src/asm/vpu_memcpy.S``): each contiguous run of
  an output moved by 32-byte VLDD/VSTD, its tail by words and bytes.

Where things live in xcore's runtime (the code xformer generates, e.g.
xmos/ai_tools ``examples/audio_network/src/model_audioi16.tflite.cpp``): the
``TfLiteTensor`` and ``TfLiteNode`` arrays are globals (SRAM), so TFLM's own
accesses per operator (node, eval tensors) are not counted; ``AllocatePersistentBuffer``
takes the kernel's op data from the tail of the arena (the persistent arena: only
the parameter loads above reach it); ``GetScratchBuffer`` returns
``tensor_arena + offset``, so the patch scratch lives with the activations; the
flatbuffer without its weights stays in SRAM (``("model",)`` reads are dropped:
the fastest memory costs nothing beyond the compute rates). Weights reach the
arena by ``XC_ld_flash`` before each operator (lib_tflite_micro
``src/tflite-xcore-kernels/xcore_load_weights.cc``), so they are read from the
arena's memory. Stack traffic (the accumulator's VSTR/VSTD, temporary vectors)
is not counted. Other operators and other types use the reference model. Counts
are accesses and bytes per invoke; bytes moved by masked stores are the bytes they
write. Every count is an estimate: lib_nn's loops as its source reads, not
measured on the device.

Extents (:func:`xcore_counts`, :class:`XcoreOp`): the bytes of each scratch and
op-data block the kernels read, and of a tensor read past its end (MUL's first
input), what a cache must hold to reuse them (``cost.timing``); the lookup
table is read at places its input picks (scattered), not in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from arenaplan.cost.traffic import traffic_details
from arenaplan.cost.traffic_counts import Key, OperatorCounts, Traffic
from arenaplan.cost.traffic_kernel import tap_count
from arenaplan.ir.constants import constant_ints
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph

VECTOR = 32  # bytes of one VPU vector register
TABLE = 256  # bytes of XC_lookup's int8 table
GROUP = 16  # output channels (or elements) per VPU group

_LOOKUP = ("LOGISTIC", "TANH", "RELU", "RELU6", "ELU", "HARD_SWISH", "LEAKY_RELU")


class _Op(OperatorCounts):
    """One operator being counted, and the extents of the blocks it reads."""

    def __init__(self, model: Model, sg: Subgraph, op: Operator) -> None:
        super().__init__(model, sg, op)
        self.extents: dict[Key, int] = {}  # bytes of each block read (see XcoreOp)
        self.scattered: set[Key] = set()  # keys read at random places (XcoreOp)

    @property
    def scratch(self) -> Key:
        return ("scratch", self.sg.index, self.op.index, 0)

    @property
    def table(self) -> Key:
        """XC_lookup's table: a head buffer like scratch (see the module doc)."""
        return ("scratch", self.sg.index, self.op.index, 1)

    def extent(self, key: Key, nbytes: int) -> None:
        """The block ``key`` is ``nbytes`` long."""
        self.extents[key] = nbytes

    def masked_stores(self, key: Key, n: int, nbytes: int) -> None:
        """``n`` VSTRPV stores writing ``nbytes`` bytes in all."""
        self.add(key, Traffic(0, n, 0, nbytes, (), ((VECTOR, n),)))


def _words(n: int) -> tuple[Traffic, Traffic]:
    """(loads, stores) of a ``memcpy`` of ``n`` bytes: 4-byte words, then bytes."""
    return (
        Traffic.reads(n // 4, 4) + Traffic.reads(n % 4, 1),
        Traffic.writes(n // 4, 4) + Traffic.writes(n % 4, 1),
    )


def _groups(channels: int) -> int:
    """Groups of 16 output channels (the last may be short): ceil(channels / 16)."""
    return -(-channels // GROUP)


def _inside(out: int, size: int, k: int, stride: int, dil: int, pad: int) -> int:
    """Taps inside the input, summed over output positions (one axis)."""
    return tap_count(out, size, k, stride, pad, dil)


def _pad(padding: str, size: int, out: int, k: int, stride: int, dil: int) -> int:
    if padding != "SAME":
        return 0
    return max((out - 1) * stride + (k - 1) * dil + 1 - size, 0) // 2


def _conv_geometry(c: _Op) -> tuple[int, int, int, int, int, int]:
    """(pixels, taps per pixel, taps inside the input, cin, cout, batch)."""
    x, w, y = c.i(0), c.i(1), c.o()
    if c.op.opcode == "FULLY_CONNECTED":
        cin = w.shape[-1]
        return y.elements // y.shape[-1], 1, y.elements // y.shape[-1], cin, y.shape[-1], 1
    n, ih, iw, cin = x.shape
    _, oh, ow, cout = y.shape
    _, kh, kw, _ = w.shape
    sh, sw = c.op.options.get("stride_h", 1), c.op.options.get("stride_w", 1)
    dh, dw = c.op.options.get("dilation_h_factor", 1), c.op.options.get("dilation_w_factor", 1)
    padding = c.op.options.get("padding", "SAME")
    ph, pw = _pad(padding, ih, oh, kh, sh, dh), _pad(padding, iw, ow, kw, sw, dw)
    inside = _inside(oh, ih, kh, sh, dh, ph) * _inside(ow, iw, kw, sw, dw, pw)
    return oh * ow, kh * kw, inside, cin, cout, n


def _conv(c: _Op) -> None:
    """Filter2D over every output pixel (``src/cpp/Filter2D.cpp``)."""
    x, w, b, y = c.i(0), c.i(1), c.i(2), c.o()
    pixels, taps, inside, cin, cout, batch = _conv_geometry(c)
    direct = cin % VECTOR == 0 and inside == pixels * taps
    patch_vectors = taps * cin // VECTOR if direct else -(-(taps * cin) // VECTOR)
    groups = _groups(cout)
    # AggregateFn per group: one VLDC per 32 patch bytes, one VLMACCR per channel each
    # (the groups' channels add up to cout)
    vldc = batch * pixels * groups * patch_vectors
    vlmaccr = batch * pixels * patch_vectors * cout
    c.add(c.key(x) if direct else c.scratch, Traffic.reads(vldc, VECTOR))
    c.add(c.key(w), Traffic.reads(vlmaccr, VECTOR))
    if not direct:  # ImToColPadded: memcpy per tap inside, memset per padded tap, tail
        loads, stores = _words(cin)
        c.add(c.key(x), loads.times(batch * inside))
        c.add(c.scratch, stores.times(batch * pixels * taps))
        c.add(c.scratch, Traffic.writes(batch * pixels * VECTOR // 4, 4))
        c.extent(c.scratch, taps * cin + VECTOR)  # one pixel's patch and its zero tail
    # OutputTransformFn per group: multipliers and biases, two masked stores
    calls = batch * pixels * groups
    if b is not None:
        c.add(c.key(b), Traffic.reads(2 * calls, VECTOR))
    c.masked_stores(c.key(y), 2 * calls, batch * pixels * cout)
    c.add(c.op_data, Traffic.reads(2 * calls, 2))  # initial_shift, final_shr
    c.extent(c.op_data, 2 * 2)


def _add(c: _Op) -> None:
    """``add_elementwise.S``: per 16 elements two input loads, five parameter loads."""
    a, b, y = c.i(0), c.i(1), c.o()
    blocks = -(-y.elements // GROUP)
    c.add(c.key(a), Traffic.reads(blocks, GROUP))
    c.add(c.key(b), Traffic.reads(blocks, GROUP))
    c.add(c.op_data, Traffic.reads(5 * blocks, VECTOR))
    c.extent(c.op_data, 5 * VECTOR)  # nn_add_params_t: five int16[16] vectors
    c.masked_stores(c.key(y), 2 * blocks, y.elements)


def _mul(c: _Op) -> None:
    """``mul_elementwise.S``: per 16 elements input 1 twice, input 2 three times."""
    a, b, y = c.i(0), c.i(1), c.o()
    blocks = -(-y.elements // GROUP)
    c.add(c.key(a), Traffic.reads(blocks, GROUP) + Traffic.reads(blocks, VECTOR))
    c.extent(c.key(a), blocks * GROUP + GROUP)  # the last 32-byte VLDC reads 16 past it
    c.add(c.key(b), Traffic.reads(3 * blocks, GROUP))
    c.add(c.op_data, Traffic.reads(blocks, 2) + Traffic.reads(6, 4))  # shift; prologue
    c.extent(c.op_data, 2 + 6 * 4)
    c.masked_stores(c.key(y), 2 * blocks, y.elements)


def _lookup(c: _Op) -> None:
    """``lookup8.S``: per element a byte of input, a byte of the table, a byte out."""
    x, y = c.i(0), c.o()
    n = y.elements
    c.add(c.key(x), Traffic.reads(n, 1))
    c.add(c.table, Traffic.reads(n, 1))
    c.extent(c.table, TABLE)
    c.scattered.add(c.table)  # the input's values pick the bytes
    c.add(c.key(y), Traffic.writes(n, 1))


def _split(c: _Op) -> None:
    """Each output's contiguous runs copied by ``vpu_memcpy``: 32-byte vectors, then
    words and bytes of the tail."""
    x = c.i(1)
    axis = _axis(c, len(x.shape))
    outer = math.prod(x.shape[:axis])
    for k in range(len(c.op.outputs)):
        y = c.o(k)
        run = y.elements // max(outer, 1)  # bytes (int8) of one contiguous run
        vectors, tail = divmod(run, VECTOR)
        loads, stores = _words(tail)
        c.add(c.key(x), (Traffic.reads(vectors, VECTOR) + loads).times(outer))
        c.add(c.key(y), (Traffic.writes(vectors, VECTOR) + stores).times(outer))


def _axis(c: _Op, rank: int) -> int:
    """SPLIT's axis: its constant first input (int32)."""
    axis = constant_ints(c.model.buffers, c.i(0))
    if not axis:
        raise ValueError("SPLIT without a constant axis")
    return axis[0] % rank


_KERNELS: dict[str, Callable[[_Op], None]] = {
    "CONV_2D": _conv,
    "FULLY_CONNECTED": _conv,
    "ADD": _add,
    "MUL": _mul,
    "SPLIT": _split,
    **{name: _lookup for name in _LOOKUP},
}


def _runs_on_vpu(sg: Subgraph, op: Operator) -> bool:
    """xformer replaces the operator by an XC one: int8 data, same-shape inputs."""
    if op.opcode not in _KERNELS:
        return False
    data = sg.operand(op, 1 if op.opcode == "SPLIT" else 0)
    if data is None or data.dtype != DType.INT8:
        return False
    if op.opcode in ("ADD", "MUL"):
        return sg.operand(op, 1) is not None and sg.operand(op, 1).shape == data.shape
    return True


@dataclass(frozen=True, slots=True)
class XcoreOp:
    """One operator as xcore.ai runs it: its accesses per key; ``extents``, the bytes
    a cache must hold to reuse a key when that is not the tensor's size (a scratch
    or op-data block; a tensor a kernel reads past its end); ``scattered``, the keys
    read at random places inside their extent (a lookup table) rather than in
    order."""

    traffic: dict[Key, Traffic]
    extents: dict[Key, int] = field(default_factory=dict)
    scattered: frozenset[Key] = frozenset()


def xcore_counts(model: Model) -> dict[tuple[int, int], XcoreOp]:
    """Per (subgraph, operator): its accesses as xcore.ai runs it (TFLM's reference
    kernels' for an operator lib_nn does not run), with extents and scattered keys."""
    out: dict[tuple[int, int], XcoreOp] = {}
    for d in traffic_details(model):
        sg = model.subgraphs[d.subgraph]
        op = sg.operators[d.op]
        out[(d.subgraph, d.op)] = XcoreOp(d.traffic)
        if not _runs_on_vpu(sg, op):
            continue
        c = _Op(model, sg, op)
        try:
            _KERNELS[op.opcode](c)
        except (AttributeError, IndexError, TypeError, ValueError, ZeroDivisionError):
            continue  # shapes the loops do not cover: the reference kernels' counts
        # TFLM's structures are globals in xcore's runtime: not counted
        out[(d.subgraph, d.op)] = XcoreOp(c.acc, c.extents, frozenset(c.scattered))
    return out


def xcore_traffic(model: Model) -> dict[tuple[int, int], dict[Key, Traffic]]:
    """Per (subgraph, operator): per key -> :class:`Traffic`, as xcore.ai runs it."""
    return {k: v.traffic for k, v in xcore_counts(model).items()}
