"""Row geometry of row-local operators: which input rows an output row range reads.

An operator is *row-local* when output rows [o0, o1) of its NHWC output (batch 1)
depend only on a contiguous range of rows of each activation input, so that it can
be computed band by band with TFLM's stock kernels. Row ranges are ``RowRange``s
(``ir.row_range``): half-open and counted in rows of the tensor concerned; an input
range may reach outside [0, H) where the original operator reads its implicit
padding.

Padding follows TFLM's ``ComputePaddingHeightWidth``: for SAME, the output size is
ceil(in / stride), the total padding max((out - 1) * stride + eff - in, 0) and the
padding before (top, left) total // 2, the remainder after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.ir.constants import constant_values
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Operator, Subgraph, Tensor
from arenaplan.ir.row_range import RowRange

CONVS = ("CONV_2D", "DEPTHWISE_CONV_2D")
POOLS = ("MAX_POOL_2D", "AVERAGE_POOL_2D")
# same shape in and out, element by element
UNARY = ("RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "LEAKY_RELU", "HARD_SWISH")
BINARY = ("ADD", "SUB", "MUL")
_DTYPES = (DType.INT8, DType.INT16, DType.FLOAT32)


@dataclass(frozen=True, slots=True)
class Window:
    """How an operator's output rows read its activation inputs' rows.

    ``kh`` filter rows, ``sh`` row stride, ``dh`` row dilation, ``top`` implicit
    padding rows before row 0; ``left``/``right`` implicit padding columns.
    An element-wise operator is the window (1, 1, 1, 0, 0, 0).
    """

    kh: int = 1
    sh: int = 1
    dh: int = 1
    top: int = 0
    left: int = 0
    right: int = 0

    def input_rows(self, out: RowRange) -> RowRange:
        """Input rows read by output rows ``out`` (half-open), before clipping to [0, H)."""
        first = out.first * self.sh - self.top
        return RowRange(first, (out.end - 1) * self.sh - self.top + (self.kh - 1) * self.dh + 1)

    @property
    def pads_columns(self) -> bool:
        return self.left > 0 or self.right > 0


def same_padding(size: int, out: int, stride: int, eff: int) -> tuple[int, int]:
    """(before, after) implicit padding of SAME, as TFLM computes it."""
    computed = (size + stride - 1) // stride
    total = max((computed - 1) * stride + eff - size, 0)
    del out  # TFLM pads from its own output size, not the tensor's
    return total // 2, total - total // 2


def window(sg: Subgraph, op: Operator, buffers: Sequence[bytes] = ()) -> Window | None:
    """The row window of a row-local operator, or None if it is not row-local.
    ``buffers``: the model's buffers, to read a PAD's paddings."""
    if op.opcode == "PAD":
        return _pad_window(sg, op, buffers)
    if op.opcode in UNARY or op.opcode in BINARY:
        return Window() if _elementwise_ok(sg, op) else None
    if op.opcode in CONVS:
        return _conv_window(sg, op)
    if op.opcode in POOLS:
        return _pool_window(sg, op)
    return None


def is_nhwc(t: Tensor) -> bool:
    """A 4-D activation of batch 1 with known dims and a type bands support."""
    return (
        len(t.shape) == 4
        and t.shape[0] == 1
        and min(t.shape) > 0
        and not t.is_constant
        and not t.is_variable
        and t.dtype in _DTYPES
    )


def _elementwise_ok(sg: Subgraph, op: Operator) -> bool:
    if len(op.outputs) != 1 or not is_nhwc(sg.tensors[op.outputs[0]]):
        return False
    out = sg.tensors[op.outputs[0]]
    for i in op.tensor_inputs():
        t = sg.tensors[i]
        if t.is_constant:
            if not _broadcasts_over_rows(t, out):
                return False
        elif t.shape != out.shape or not is_nhwc(t):
            return False
    return True


def _broadcasts_over_rows(c: Tensor, out: Tensor) -> bool:
    """A constant operand that is the same for every row (a scalar or per channel)."""
    dims = (1,) * (4 - len(c.shape)) + tuple(c.shape) if len(c.shape) <= 4 else None
    return dims is not None and dims[1] == 1 and dims[0] == 1 and dims[2] in (1, out.shape[2])


def _io(sg: Subgraph, op: Operator) -> tuple[Tensor, Tensor] | None:
    if not op.inputs or len(op.outputs) != 1 or op.inputs[0] < 0:
        return None
    x, y = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
    return (x, y) if is_nhwc(x) and is_nhwc(y) else None


def _conv_window(sg: Subgraph, op: Operator) -> Window | None:
    io = _io(sg, op)
    filt = sg.operand(op, 1)
    if io is None or filt is None or not filt.is_constant or len(filt.shape) != 4:
        return None
    bias = sg.operand(op, 2)
    if bias is not None and not bias.is_constant:
        return None
    x, y = io
    kh, kw = filt.shape[1], filt.shape[2]
    return _window(op, x, y, kh, kw)


def _pad_window(sg: Subgraph, op: Operator, buffers: Sequence[bytes]) -> Window | None:
    """A PAD (no constant value: it pads with the zero point, as bands do) of rows and
    columns only: its output row r is input row r - top."""
    io = _io(sg, op)
    paddings = sg.operand(op, 1)
    if io is None or len(op.inputs) != 2 or paddings is None or not paddings.is_constant:
        return None
    if paddings.dtype is not DType.INT32 or paddings.shape != (4, 2):
        return None
    values = constant_values(buffers, paddings)  # the 32 bytes its shape says
    if values is None:
        return None
    (n0, n1), (top, _), (left, right), (c0, c1) = values.reshape(4, 2)
    if n0 or n1 or c0 or c1 or min(top, left, right) < 0:
        return None
    return Window(1, 1, 1, int(top), int(left), int(right))


def _pool_window(sg: Subgraph, op: Operator) -> Window | None:
    io = _io(sg, op)
    if io is None:
        return None
    x, y = io
    kh, kw = _int(op, "filter_height"), _int(op, "filter_width")
    w = _window(op, x, y, kh, kw)
    # a pool leaves padding out of its max or average: explicit padding would change it
    if w is None or w.top or w.left or w.right or _pads_bottom(op, x, y, w):
        return None
    return w


def _pads_bottom(op: Operator, x: Tensor, y: Tensor, w: Window) -> bool:
    return w.input_rows(RowRange(0, y.shape[1])).end > x.shape[1]


def _int(op: Operator, name: str, default: int = 1) -> int:
    value = op.options.get(name, default)
    return value if isinstance(value, int) and value > 0 else default


def _window(op: Operator, x: Tensor, y: Tensor, kh: int, kw: int) -> Window | None:
    sh, sw = _int(op, "stride_h"), _int(op, "stride_w")
    dh, dw = _int(op, "dilation_h_factor"), _int(op, "dilation_w_factor")
    eff_h, eff_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    padding = op.options.get("padding", "SAME")
    if padding == "SAME":
        top, _ = same_padding(x.shape[1], y.shape[1], sh, eff_h)
        left, right = same_padding(x.shape[2], y.shape[2], sw, eff_w)
    elif padding == "VALID":
        top, left, right = 0, 0, 0
    else:
        return None
    # VALID on the padded width must give the output width the tensor declares
    if (x.shape[2] + left + right - eff_w) // sw + 1 != y.shape[2]:
        return None
    return Window(kh, sh, dh, top, left, right)
