"""The IR verifier run after every pass (``passes.pipeline``).

It shares no code with the passes it checks: it is the independent judge of what
they produce. ``verify_ir`` raises ``PassError`` with one line naming the first
problem (subgraph, operator index and opcode) and how many more there are.
Checked, in this order (each later check may index what an earlier one vouched for):

1. indices: positions of subgraphs, tensors and operators; tensor indices of
   operators and of subgraph inputs/outputs; buffers; called subgraphs;
   the model's tables: each signature def names a subgraph, its inputs are inputs
   of that subgraph and its outputs outputs of it (what LiteRT's signature runner
   feeds and reads), keys and names once each; metadata buffers exist; an offline
   plan has one offset per tensor;
2. data flow: every non-constant, non-variable input is a subgraph input or the
   output of an earlier operator (a read of a later operator's output is a cycle
   when that operator depends, through the data, on the reader); no tensor is
   produced twice, nor is a subgraph input produced;
3. signatures (``ir.signatures``): the tensors each kernel kind needs;
4. quantisation: int8/int16 activations of kernels that read scale and zero point;
5. shapes: output shapes that follow from the inputs for the kinds below (other
   kinds are not checked). Constant operands (paddings, slice bounds) are read
   from ``model.buffers``. A dim of -1 (unknown) skips the check it is part of.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from arenaplan.errors import ModelFormatError, PassError
from arenaplan.ir.constants import constant_ints
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph, Tensor
from arenaplan.ir.signatures import operator_problems

Shape = tuple[int, ...]

_INT_DATA = {DType.INT32: "<i4", DType.INT64: "<i8"}  # little endian, as in the file


def verify_ir(model: Model) -> None:
    """Raise ``PassError`` if ``model`` is not well formed."""
    found = ir_problems(model)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise PassError(f"invalid IR: {found[0]}{more}")


def check_model(model: Model, name: str) -> None:
    """Raise ``ModelFormatError`` (one line: ``name``, the first problem, how many
    more) if ``model``, as read from ``name``, is not well formed: what every
    command does before it uses a model."""
    found = ir_problems(model)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ModelFormatError(f"{name}: invalid model: {found[0]}{more}")


def ir_problems(model: Model) -> list[str]:
    """Every problem found, one line each; [] for a well-formed model."""
    found = _index_problems(model)
    if found:
        return found  # the checks below index tensors freely
    found += _table_problems(model)
    for sg in model.subgraphs:
        found += _dataflow_problems(sg)
    found += operator_problems(model)
    for sg in model.subgraphs:
        for op in sg.operators:
            where = f"subgraph {sg.index} operator {op.index} {op.opcode}"
            ctx = _Ctx(model, sg, op)
            found += [f"{where}: {why}" for why in _quantization_problems(ctx)]
            found += [f"{where}: {why}" for why in _shape_problems(ctx)]
    return found


# ---- 1. indices -------------------------------------------------------------------


def _index_problems(model: Model) -> list[str]:
    found = []
    n_buffers = len(model.buffers) or len(model.buffer_sizes)
    for s, sg in enumerate(model.subgraphs):
        if sg.index != s:
            found.append(f"subgraph {s} says it is subgraph {sg.index}")
        n = len(sg.tensors)
        for t, tensor in enumerate(sg.tensors):
            if tensor.index != t:
                found.append(f"subgraph {s} tensor {t} says it is tensor {tensor.index}")
            if n_buffers and not 0 <= tensor.buffer < n_buffers:
                found.append(
                    f"subgraph {s} tensor {t} ({tensor.name!r}) uses buffer {tensor.buffer}, "
                    f"but there are {n_buffers} buffers"
                )
        for kind, indices in (("input", sg.inputs), ("output", sg.outputs)):
            found += [
                f"subgraph {s} {kind} {k} is tensor {t}, but the subgraph has {n} tensors"
                for k, t in enumerate(indices)
                if not 0 <= t < n
            ]
        for i, op in enumerate(sg.operators):
            where = f"subgraph {s} operator {i} {op.opcode}"
            if op.index != i:
                found.append(f"{where}: says it is operator {op.index}")
            found += [f"{where}: {why}" for why in _op_index_problems(model, op, n)]
    return found


def _op_index_problems(model: Model, op: Operator, n: int) -> list[str]:
    found = []
    for kind, indices, low in (
        ("input", op.inputs, -1),  # -1: an omitted optional input
        ("output", op.outputs, 0),
        ("intermediate", op.intermediates, -1),
    ):
        found += [
            f"{kind} {k} is tensor {t}, but the subgraph has {n} tensors"
            for k, t in enumerate(indices)
            if not low <= t < n
        ]
    n_sub = len(model.subgraphs)
    for key, value in op.options.items:
        if key.endswith("subgraph_index") and isinstance(value, int) and not 0 <= value < n_sub:
            found.append(f"{key} is {value}, but the model has {n_sub} subgraphs")
    return found


def _table_problems(model: Model) -> list[str]:
    """Signature defs, metadata and the offline plan against the subgraphs."""
    found = []
    keys: set[str] = set()
    n_sub = len(model.subgraphs)
    for i, sd in enumerate(model.signature_defs):
        where = f"signature def {i} ({sd.key!r})"
        if sd.key in keys:
            found.append(f"{where}: its key is another signature def's")
        keys.add(sd.key)
        if not 0 <= sd.subgraph < n_sub:
            found.append(f"{where}: names subgraph {sd.subgraph}, but there are {n_sub}")
            continue
        sg = model.subgraphs[sd.subgraph]
        for kind, pairs, boundary in (
            ("input", sd.inputs, sg.inputs),
            ("output", sd.outputs, sg.outputs),
        ):
            names: set[str] = set()
            for name, t in pairs:
                if name in names:
                    found.append(f"{where}: {kind} {name!r} is named twice")
                names.add(name)
                if not 0 <= t < len(sg.tensors):
                    found.append(
                        f"{where}: {kind} {name!r} is tensor {t}, but subgraph {sd.subgraph} "
                        f"has {len(sg.tensors)} tensors"
                    )
                elif t not in boundary:
                    found.append(
                        f"{where}: {kind} {name!r} is tensor {t} ({sg.tensors[t].name!r}), "
                        f"not an {kind} of subgraph {sd.subgraph}"
                    )
    n_buffers = len(model.buffers) or len(model.buffer_sizes)
    for name, b in model.metadata:
        if n_buffers and not 0 <= b < n_buffers:
            found.append(f"metadata {name!r} uses buffer {b}, but there are {n_buffers} buffers")
    plan = model.stored_plan
    if plan is not None and len(plan) != model.tensor_count:
        found.append(
            f"the offline plan has {len(plan)} offsets, the model {model.tensor_count} tensors"
        )
    return found


# ---- 2. data flow -----------------------------------------------------------------


def _dataflow_problems(sg: Subgraph) -> list[str]:
    """Walk the operators in order: what each reads must exist by then. Linear in
    the operators and their inputs, whatever the model (one search per cycle)."""
    producer: dict[int, int] = {}  # tensor -> the operator that produced it
    for i, op in enumerate(sg.operators):
        for t in op.outputs:
            producer.setdefault(t, i)
    ready = set(sg.inputs) | {t.index for t in sg.tensors if t.is_constant or t.is_variable}
    part = _cyclic_parts(sg, producer)
    named: set[int] = set()  # the parts whose cycle a message has named
    made: dict[int, int] = {}
    found = []
    for op in sg.operators:
        where = f"subgraph {sg.index} operator {op.index} {op.opcode}"
        for k, t in enumerate(op.inputs):
            if t < 0 or t in ready or t in made:
                continue
            found.append(f"{where}: {_early_read(sg, producer, part, named, op.index, k, t)}")
        for t in op.outputs:
            name = sg.tensors[t].name
            if t in made:
                found.append(
                    f"{where}: tensor {t} ({name!r}) is produced twice (also by operator {made[t]})"
                )
            elif t in sg.inputs:
                found.append(
                    f"{where}: tensor {t} ({name!r}) is a subgraph input and produced again"
                )
            made.setdefault(t, op.index)
    for k, t in enumerate(sg.outputs):
        if t not in ready and t not in made:
            found.append(
                f"subgraph {sg.index} output {k} (tensor {t} {sg.tensors[t].name!r}) is never "
                "produced and is not a subgraph input"
            )
    return found


_CHAIN_SHOWN = 12  # operators of a cycle named in full; a longer one: its ends


def _early_read(
    sg: Subgraph,
    producer: dict[int, int],
    part: list[int],
    named: set[int],
    reader: int,
    k: int,
    t: int,
) -> str:
    """Why input ``k`` (tensor ``t``) of operator ``reader`` is read before it exists:
    never produced, produced later, or produced later by an operator that depends on
    ``reader`` through the data (a cycle: no order of the operators runs the model).
    The operators of a cycle are named once per strongly connected part."""
    head = f"input {k} (tensor {t} {sg.tensors[t].name!r}) is read before any operator produces it"
    later = producer.get(t)
    if later is None:
        return f"{head} (never produced) and is not a subgraph input"
    if later == reader:
        return f"{head}: a cycle, operators {reader} -> {reader}: it reads its own output"
    if part[later] != part[reader]:
        return f"{head} (produced later by operator {later}) and is not a subgraph input"
    if part[reader] in named:
        return f"{head}: a cycle, operator {later} depends on this one through the data"
    named.add(part[reader])
    cycle = (reader, *_data_path(sg, producer, part, later, reader))
    shown = cycle if len(cycle) <= _CHAIN_SHOWN else (*cycle[:4], "...", *cycle[-3:])
    chain = " -> ".join(map(str, shown))
    if len(cycle) > _CHAIN_SHOWN:
        chain += f" ({len(cycle) - 1:,} operators)"
    return f"{head}: a cycle, operators {chain} each read what the next one writes"


def _cyclic_parts(sg: Subgraph, producer: dict[int, int]) -> list[int]:
    """For each operator, its strongly connected part of the graph in which an
    operator points at the producers of its inputs (Tarjan's algorithm, without
    recursion): two operators in one part each depend on the other."""
    n = len(sg.operators)
    succ = [[producer[t] for t in op.inputs if t in producer] for op in sg.operators]
    index, low, part = [-1] * n, [0] * n, [-1] * n
    stack: list[int] = []
    on_stack = [False] * n
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]  # (operator, position in its successors)
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if index[w] < 0:
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:  # v roots a part: pop it
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    part[w] = v
                    if w == v:
                        break
            if work:  # back in the caller: its low takes this one's
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return part


def _data_path(
    sg: Subgraph, producer: dict[int, int], part: list[int], start: int, goal: int
) -> tuple[int, ...]:
    """The shortest chain of operators from ``start`` to ``goal`` (of one part) in
    which each reads a tensor the next one writes. A search backwards from ``start``
    within the part, each operator once."""
    came: dict[int, int] = {start: start}  # operator -> the operator that reads its output
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for t in sg.operators[v].inputs:
                u = producer.get(t)
                if u is None or u in came or part[u] != part[start]:
                    continue
                came[u] = v
                if u == goal:
                    path = [u]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return tuple(reversed(path))
                nxt.append(u)
        frontier = nxt
    raise AssertionError("unreachable: one part, so a path exists")


# ---- shared by 4 and 5 --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Ctx:
    model: Model
    sg: Subgraph
    op: Operator

    def input(self, k: int) -> Tensor | None:
        """The k-th input tensor (None if omitted or absent)."""
        return self.sg.operand(self.op, k)

    def output(self, k: int = 0) -> Tensor | None:
        return self.sg.operand(self.op, k, output=True)

    def opt(self, name: str, default: int | str) -> int | str:
        value = self.op.options.get(name, default)
        return default if value is None else value

    def ints(self, tensor: Tensor | None) -> np.ndarray | None:
        """The values of a constant int32/int64 tensor (the bytes its shape says,
        ``ir.constants``); None if not constant or unreadable."""
        values = constant_ints(self.model.buffers, tensor)
        return None if not values else np.asarray(values, dtype=np.int64)


def _known(*tensors: Tensor | None) -> bool:
    """All present and with no unknown (-1) dim."""
    return all(t is not None and -1 not in t.shape for t in tensors)


def _describe(kind: str, k: int, t: Tensor) -> str:
    return f"{kind} {k} (tensor {t.index} {t.name!r}) has shape {list(t.shape)}"


# ---- 4. quantisation --------------------------------------------------------------

# kernels whose int8/int16 paths read the scale and zero point of every activation
_QUANTIZED_ALL = frozenset(
    {
        "ADD",
        "SUB",
        "MUL",
        "SQUARED_DIFFERENCE",
        "AVERAGE_POOL_2D",
        "MAX_POOL_2D",
        "SOFTMAX",
        "LOG_SOFTMAX",
        "LOGISTIC",
        "TANH",
        "RELU",
        "RELU6",
        "LEAKY_RELU",
        "HARD_SWISH",
        "PRELU",
        "ELU",
        "L2_NORMALIZATION",
        "QUANTIZE",
        "DEQUANTIZE",
        "MEAN",
        "BATCH_MATMUL",
    }
)
_QUANTIZED_TYPES = (DType.INT8, DType.INT16)
# kernels with weights: only the data input (position) and the output are activations
_QUANTIZED_DATA_INPUT = {
    "CONV_2D": 0,
    "DEPTHWISE_CONV_2D": 0,
    "FULLY_CONNECTED": 0,
    "TRANSPOSE_CONV": 2,
    "SVDF": 0,
}


def _quantization_problems(ctx: _Ctx) -> list[str]:
    op = ctx.op
    if op.opcode in _QUANTIZED_ALL:
        inputs = list(enumerate(op.inputs))
    elif op.opcode in _QUANTIZED_DATA_INPUT:
        k = _QUANTIZED_DATA_INPUT[op.opcode]
        inputs = [(k, op.inputs[k])] if k < len(op.inputs) else []
    else:
        return []
    found = []
    for kind, pairs in (("input", inputs), ("output", list(enumerate(op.outputs)))):
        for k, t in pairs:
            tensor = ctx.sg.tensors[t] if t >= 0 else None
            if tensor is None or tensor.is_constant or tensor.dtype not in _QUANTIZED_TYPES:
                continue
            q = tensor.quantization
            if q is None or not q.scales:
                found.append(
                    f"{kind} {k} (tensor {t} {tensor.name!r}) is {tensor.dtype.name} without "
                    "quantisation parameters"
                )
    return found


# ---- 5. shapes --------------------------------------------------------------------


def _shape_problems(ctx: _Ctx) -> list[str]:
    rule = _SHAPE_RULES.get(ctx.op.opcode)
    return rule(ctx) if rule is not None and not ctx.op.is_custom else []


def _out_size(size: int, filt: int, stride: int, dilation: int, padding: str) -> int | None:
    """TFLite's ``ComputeOutSize``; None for a padding it does not know."""
    effective = (filt - 1) * dilation + 1
    if padding == "SAME":
        return (size + stride - 1) // stride
    if padding == "VALID":
        return max(int((size + stride - effective) / stride), 0)  # C++ truncation
    return None


def _window_problems(ctx: _Ctx, x: Tensor, y: Tensor, fh: int, fw: int) -> list[str]:
    """Output H/W of a sliding window (conv, depthwise, pooling) from its options."""
    sh, sw = int(ctx.opt("stride_h", 1)), int(ctx.opt("stride_w", 1))
    dh, dw = int(ctx.opt("dilation_h_factor", 1)), int(ctx.opt("dilation_w_factor", 1))
    padding = str(ctx.opt("padding", "SAME"))
    if min(sh, sw, dh, dw) <= 0:
        return [f"stride {sh}x{sw} and dilation {dh}x{dw} must be positive"]
    want = (_out_size(x.shape[1], fh, sh, dh, padding), _out_size(x.shape[2], fw, sw, dw, padding))
    if None in want:
        return [f"unknown padding {padding!r}"]
    if y.shape[1:3] == want:
        return []
    return [
        f"{_describe('output', 0, y)}; padding {padding}, stride {sh}x{sw}, dilation "
        f"{dh}x{dw} and filter {fh}x{fw} on input {list(x.shape)} give H, W = {want[0]}, "
        f"{want[1]}"
    ]


def _rank_problems(named: list[tuple[str, int, Tensor]], rank: int) -> list[str]:
    return [
        f"{_describe(kind, k, t)}, the kernel needs {rank} dims"
        for kind, k, t in named
        if len(t.shape) != rank
    ]


def _bias_problems(ctx: _Ctx, k: int, channels: int) -> list[str]:
    bias = ctx.input(k)
    if not _known(bias) or bias.elements == channels:
        return []
    return [f"{_describe('input', k, bias)}; the bias needs {channels} elements"]


def _conv(ctx: _Ctx) -> list[str]:
    x, w, y = ctx.input(0), ctx.input(1), ctx.output()
    if not _known(x, w, y):
        return []
    bad = _rank_problems([("input", 0, x), ("input", 1, w), ("output", 0, y)], 4)
    if bad:
        return bad
    found = []
    if y.shape[0] != x.shape[0]:
        found.append(f"{_describe('output', 0, y)}; batch {x.shape[0]} expected")
    depthwise = ctx.op.opcode == "DEPTHWISE_CONV_2D"
    channels = w.shape[3] if depthwise else w.shape[0]
    if y.shape[3] != channels:
        found.append(f"{_describe('output', 0, y)}; the filter {list(w.shape)} gives {channels}")
    if depthwise and (x.shape[3] == 0 or y.shape[3] % x.shape[3]):
        found.append(
            f"{_describe('output', 0, y)}: its channels are not a multiple of the input's "
            f"{x.shape[3]}"
        )
    if not depthwise and (w.shape[3] == 0 or x.shape[3] % w.shape[3]):
        found.append(
            f"{_describe('input', 0, x)}: its channels are not a multiple of the filter's "
            f"{w.shape[3]}"
        )
    found += _window_problems(ctx, x, y, w.shape[1], w.shape[2])
    return found + _bias_problems(ctx, 2, channels)  # the filter's, whatever the output says


def _pool(ctx: _Ctx) -> list[str]:
    x, y = ctx.input(0), ctx.output()
    if not _known(x, y):
        return []
    bad = _rank_problems([("input", 0, x), ("output", 0, y)], 4)
    if bad:
        return bad
    found = []
    if (y.shape[0], y.shape[3]) != (x.shape[0], x.shape[3]):
        found.append(f"{_describe('output', 0, y)}; batch and channels must be the input's")
    fh, fw = int(ctx.opt("filter_height", 1)), int(ctx.opt("filter_width", 1))
    return found + _window_problems(ctx, x, y, fh, fw)


def _pad(ctx: _Ctx) -> list[str]:
    x, y = ctx.input(0), ctx.output()
    pads = ctx.ints(ctx.input(1))
    if not _known(x, y) or pads is None:
        return []
    rank = len(x.shape)
    if pads.size != 2 * rank:
        return [f"the paddings hold {pads.size} values, input {list(x.shape)} needs {2 * rank}"]
    pairs = pads.reshape(rank, 2)
    want = tuple(int(d + lo + hi) for d, (lo, hi) in zip(x.shape, pairs, strict=True))
    if y.shape == want:
        return []
    return [f"{_describe('output', 0, y)}; paddings {pairs.tolist()} give {list(want)}"]


def _slice_start(begin: int, stride: int, size: int, masked: bool) -> int:
    """TFLite's ``StartForAxis`` (strided_slice_logic.h)."""
    if masked:
        return 0 if stride > 0 else size - 1
    if begin < 0:
        begin += size
    return min(max(begin, 0), size) if stride > 0 else min(max(begin, -1), size - 1)


def _slice_stop(end: int, stride: int, size: int, start: int, masked: bool, offset: bool) -> int:
    """TFLite's ``StopForAxis`` (strided_slice_logic.h), without the shrink case."""
    if offset:
        end += start
    if masked:
        return size if stride > 0 else -1
    if end < 0:
        end += size
    return min(max(end, 0), size) if stride > 0 else min(max(end, -1), size - 1)


def _strided_slice(ctx: _Ctx) -> list[str]:
    x, y = ctx.input(0), ctx.output()
    begin, end, strides = (ctx.ints(ctx.input(k)) for k in (1, 2, 3))
    if not _known(x, y) or begin is None or end is None or strides is None:
        return []
    if int(ctx.opt("ellipsis_mask", 0)) or int(ctx.opt("new_axis_mask", 0)):
        return []  # TFLM supports neither
    rank = len(x.shape)
    if not begin.size == end.size == strides.size == rank:
        return [f"begin, end and strides must have {rank} values (the input's rank)"]
    masks = {m: int(ctx.opt(f"{m}_mask", 0)) for m in ("begin", "end", "shrink_axis")}
    offset = bool(ctx.opt("offset", 0))
    want = []
    for axis in range(rank):
        bit, stride, size = 1 << axis, int(strides[axis]), x.shape[axis]
        if stride == 0:
            return [f"stride of axis {axis} is 0"]
        start = _slice_start(int(begin[axis]), stride, size, bool(masks["begin"] & bit))
        if masks["shrink_axis"] & bit:
            continue
        stop = _slice_stop(int(end[axis]), stride, size, start, bool(masks["end"] & bit), offset)
        want.append(max(-(-(stop - start) // stride), 0))
    if y.shape == tuple(want):
        return []
    return [f"{_describe('output', 0, y)}; begin, end, strides and masks give {want}"]


def _concatenation(ctx: _Ctx) -> list[str]:
    xs = [ctx.sg.tensors[t] for t in ctx.op.inputs if t >= 0]
    y = ctx.output()
    if not _known(*xs, y):
        return []
    rank = len(y.shape)
    axis = int(ctx.opt("axis", 0))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        return [f"axis {ctx.opt('axis', 0)} is outside output {list(y.shape)}"]
    found = []
    for k, x in enumerate(xs):
        other = [d for a, d in enumerate(x.shape) if a != axis]
        if len(x.shape) != rank or other != [d for a, d in enumerate(y.shape) if a != axis]:
            found.append(
                f"{_describe('input', k, x)}; output {list(y.shape)} concatenates on axis {axis}"
            )
    if found:
        return found
    total = sum(x.shape[axis] for x in xs)
    if total != y.shape[axis]:
        found.append(f"{_describe('output', 0, y)}; the inputs give {total} on axis {axis}")
    return found


def _broadcast(a: Shape, b: Shape) -> Shape | None:
    """NumPy's broadcast of two shapes; None if they do not broadcast."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for p, q in zip(a, b, strict=True):
        if p != q and 1 not in (p, q):
            return None
        out.append(q if p == 1 else p)
    return tuple(out)


def _elementwise(ctx: _Ctx) -> list[str]:
    a, b, y = ctx.input(0), ctx.input(1), ctx.output()
    if not _known(a, b, y):
        return []
    want = _broadcast(a.shape, b.shape)
    if want is None:
        return [f"inputs {list(a.shape)} and {list(b.shape)} do not broadcast"]
    if y.shape == want:
        return []
    inputs = f"inputs {list(a.shape)}, {list(b.shape)}"
    return [f"{_describe('output', 0, y)}; {inputs} give {list(want)}"]


def _reshape(ctx: _Ctx) -> list[str]:
    x, y = ctx.input(0), ctx.output()
    if not _known(x) or y is None:
        return []
    if -1 in y.shape:
        known = 1
        for d in y.shape:
            known *= d if d != -1 else 1
        if y.shape.count(-1) == 1 and (known == 0 or x.elements % known == 0):
            return []
    elif y.elements == x.elements:
        return []
    return [f"{_describe('output', 0, y)}, input {list(x.shape)} has {x.elements} elements"]


def _fully_connected(ctx: _Ctx) -> list[str]:
    x, w, y = ctx.input(0), ctx.input(1), ctx.output()
    if not _known(x, w, y):
        return []
    if len(w.shape) != 2:
        return [f"{_describe('input', 1, w)}, the kernel needs 2 dims"]
    units, depth = w.shape
    if depth == 0 or x.elements % depth:
        return [f"{_describe('input', 0, x)}, not a whole number of rows of {depth}"]
    want = x.elements // depth * units
    if not y.shape or y.shape[-1] != units or y.elements != want:
        return [
            f"{_describe('output', 0, y)}; input {list(x.shape)} and filter {list(w.shape)} "
            f"give {x.elements // depth} rows of {units}"
        ]
    return _bias_problems(ctx, 2, units)


_SHAPE_RULES: dict[str, Callable[[_Ctx], list[str]]] = {
    "CONV_2D": _conv,
    "DEPTHWISE_CONV_2D": _conv,
    "AVERAGE_POOL_2D": _pool,
    "MAX_POOL_2D": _pool,
    "L2_POOL_2D": _pool,
    "PAD": _pad,
    "PADV2": _pad,
    "MIRROR_PAD": _pad,
    "STRIDED_SLICE": _strided_slice,
    "CONCATENATION": _concatenation,
    "ADD": _elementwise,
    "SUB": _elementwise,
    "MUL": _elementwise,
    "RESHAPE": _reshape,
    "FULLY_CONNECTED": _fully_connected,
}
