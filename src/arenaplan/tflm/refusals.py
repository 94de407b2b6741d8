"""Will TFLM's reference kernels refuse this model? Predicted from the model alone.

Every rule restates, in our words, one check that the PyPI runtime (its
``PythonOpsResolver`` and the reference kernels, at the TFLM commit of
``tflm-facts.md``) makes while it resolves, prepares or invokes an operator; the
comment beside each names the TFLM function. A rule fires only where that check
fails, so a non-empty answer means TFLM refuses the model. An empty answer means
no known refusal, not a proof: quantisation parameters, shapes and most kernels'
type switches beyond the common ones are not checked here.

Tensor positions are written "input K" / "output K" (K-th entry of the
operator's list); a position that is omitted (-1) or beyond the list is absent,
and a rule about an absent tensor does not fire unless it is a ``Present`` rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Subgraph, Tensor


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Builtins that PythonOpsResolver's constructor registers (MicroMutableOpResolver::Add*).
REGISTERED_BUILTINS = _words(
    """
    ABS ADD ADD_N ARG_MAX ARG_MIN ASSIGN_VARIABLE AVERAGE_POOL_2D BATCH_MATMUL
    BATCH_TO_SPACE_ND BROADCAST_ARGS BROADCAST_TO CALL_ONCE CAST CEIL CONCATENATION
    CONV_2D COS CUMSUM DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE DIV
    DYNAMIC_UPDATE_SLICE ELU EMBEDDING_LOOKUP EQUAL EXP EXPAND_DIMS FILL FLOOR
    FLOOR_DIV FLOOR_MOD FULLY_CONNECTED GATHER GATHER_ND GREATER GREATER_EQUAL
    HARD_SWISH IF L2_NORMALIZATION L2_POOL_2D LEAKY_RELU LESS LESS_EQUAL LOG
    LOGICAL_AND LOGICAL_NOT LOGICAL_OR LOGISTIC LOG_SOFTMAX MAXIMUM MAX_POOL_2D MEAN
    MINIMUM MIRROR_PAD MUL NEG NOT_EQUAL PACK PAD PADV2 PRELU QUANTIZE READ_VARIABLE
    REDUCE_ALL REDUCE_MAX REDUCE_MIN RELU RELU6 RESHAPE RESIZE_BILINEAR
    RESIZE_NEAREST_NEIGHBOR REVERSE_V2 ROUND RSQRT SELECT_V2 SHAPE SIN SLICE SOFTMAX
    SPACE_TO_BATCH_ND SPACE_TO_DEPTH SPLIT SPLIT_V SQRT SQUARE SQUARED_DIFFERENCE
    SQUEEZE STRIDED_SLICE SUB SUM SVDF TANH TRANSPOSE TRANSPOSE_CONV
    UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK VAR_HANDLE WHILE ZEROS_LIKE
    """
)
# Custom codes it registers (AddCustom). "ethos-u" is absent: AddEthosU registers
# nothing in a build without the Ethos-U driver (Register_ETHOSU returns null).
REGISTERED_CUSTOM = _words(
    """
    CIRCULAR_BUFFER SignalDelay SignalEnergy SignalFftAutoScale SignalFilterBank
    SignalFilterBankLog SignalFilterBankSpectralSubtraction SignalFilterBankSquareRoot
    SignalFramer SignalIrfft SignalOverlapAdd SignalPCAN SignalRfft SignalStacker
    SignalWindow TFLM_DECODE TFLite_Detection_PostProcess
    """
)


def _tensor(sg: Subgraph, op: Operator, slot: str) -> Tensor | None:
    """The tensor at ``slot`` ("input 2", "output 0"), None if omitted or absent."""
    kind, k = slot.split()
    return sg.operand(op, int(k), output=kind == "output")


_INTEGER_WEIGHTS = frozenset({DType.INT4, DType.INT8, DType.UINT8, DType.INT16})


def _names(dtypes: frozenset[DType]) -> str:
    return ", ".join(sorted(t.name for t in dtypes))


@dataclass(frozen=True, slots=True)
class Accepts:
    """The kernel's type switch at ``slot`` takes only ``dtypes``."""

    slot: str
    dtypes: frozenset[DType]

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        t = _tensor(sg, op, self.slot)
        if t is not None and t.dtype not in self.dtypes:
            yield f"{self.slot} is {t.dtype.name}; the kernel takes {_names(self.dtypes)}"


@dataclass(frozen=True, slots=True)
class Same:
    """Each of ``slots`` ("every input" for all) must have the dtype of ``like``."""

    slots: tuple[str, ...]
    like: str

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        ref = _tensor(sg, op, self.like)
        every = tuple(f"input {k}" for k in range(len(op.inputs)))
        slots = (s for name in self.slots for s in (every if name == "every input" else (name,)))
        for slot in slots:
            t = _tensor(sg, op, slot)
            if ref is not None and t is not None and t.dtype is not ref.dtype:
                yield f"{slot} is {t.dtype.name} but {self.like} is {ref.dtype.name}"


@dataclass(frozen=True, slots=True)
class Pairs:
    """(``first``, ``second``) dtypes must be one of ``pairs``. ``hybrid``: the refused
    pair of a FLOAT32 ``first`` and integer ``second`` is reported as hybrid."""

    first: str
    second: str
    labels: tuple[str, str]  # what the kernel calls the two tensors
    pairs: frozenset[tuple[DType, DType]]
    hybrid: bool = False

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        a, b = _tensor(sg, op, self.first), _tensor(sg, op, self.second)
        if a is None or b is None or (a.dtype, b.dtype) in self.pairs:
            return
        both = f"{a.dtype.name} {self.labels[0]}, {b.dtype.name} {self.labels[1]}"
        if self.hybrid and a.dtype is DType.FLOAT32 and b.dtype in _INTEGER_WEIGHTS:
            yield f"hybrid ({both}): TFLM's kernels have no hybrid path"
        else:
            yield f"{both}: the kernel has no such type pair"


@dataclass(frozen=True, slots=True)
class Constant:
    """``slot`` (``name`` in the kernel) must have data in the flatbuffer (IsConstantTensor)."""

    slot: str
    name: str

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        t = _tensor(sg, op, self.slot)
        if t is not None and not t.is_constant:
            yield f"{self.name} ({self.slot}) is not constant: TFLM needs it in the flatbuffer"


@dataclass(frozen=True, slots=True)
class Variable:
    """``slot`` (``name`` in the kernel) must be a variable tensor."""

    slot: str
    name: str

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        t = _tensor(sg, op, self.slot)
        if t is not None and not t.is_variable:
            yield f"{self.name} ({self.slot}) is not a variable tensor"


@dataclass(frozen=True, slots=True)
class Present:
    """Each of ``slots`` must be given (``present``) or omitted (not ``present``)."""

    slots: tuple[str, ...]
    present: bool
    what: str  # why, in the kernel's terms

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        for slot in self.slots:
            if (_tensor(sg, op, slot) is not None) != self.present:
                state = "missing" if self.present else "given"
                yield f"{slot} is {state}: TFLM's kernel {self.what}"


@dataclass(frozen=True, slots=True)
class Option:
    """Builtin option ``name`` must be one of ``values``; TFLM reads an absent one as
    ``default`` (its parsers zero the parameters when the options table is missing)."""

    name: str
    values: frozenset[str]
    default: str

    def check(self, sg: Subgraph, op: Operator) -> Iterator[str]:
        value = op.options.get(self.name, self.default)
        if value not in self.values:
            yield f"{self.name} is {value}; the kernel takes {', '.join(sorted(self.values))}"


Rule = Accepts | Same | Pairs | Constant | Variable | Present | Option


def _inputs(*ks: int) -> tuple[str, ...]:
    return tuple(f"input {k}" for k in ks)


def _types(text: str) -> frozenset[DType]:
    """The dtypes named in ``text`` ("FLOAT32 INT8")."""
    return frozenset(DType[name] for name in text.split())


def _pairs(text: str) -> frozenset[tuple[DType, DType]]:
    """The (first, second) dtype pairs named in ``text`` ("FLOAT32/FLOAT32 INT8/INT4")."""
    return frozenset((DType[a], DType[b]) for a, b in (w.split("/") for w in text.split()))


def _weights(first: str, second: str, pairs: str, label: str = "weights") -> Pairs:
    """An (input, weights) pair check: a FLOAT32 input with integer weights is hybrid."""
    return Pairs(first, second, ("input", label), _pairs(pairs), hybrid=True)


def _in_out(pairs: str) -> Pairs:
    return Pairs("input 0", "output 0", ("input", "output"), _pairs(pairs))


_ARITH = _types("FLOAT32 INT32 INT8 INT16")
_OUT_LIKE_IN = Same(("output 0",), "input 0")
_ACTIVATION = (_OUT_LIKE_IN, Accepts("input 0", _types("FLOAT32 INT8 INT16")))
_AXIS = Accepts("input 1", _types("INT32"))
_REDUCE_MIN_MAX = (Accepts("input 0", _types("FLOAT32 INT8")), _AXIS, _OUT_LIKE_IN)
_PAD = (
    Same(("output 0", "input 2"), "input 0"),
    Accepts("input 0", _ARITH),
    Constant("input 1", "paddings"),
)
_MAXIMUM_TYPES = _types("FLOAT32 INT8 INT16 INT32 INT64")
_SPLIT = _types("FLOAT32 INT8 INT16 INT32")
_LSTM_VARIANTS = "has no peephole, projection or layer-norm path"

# opcode -> its rules, with the TFLM functions that make the checks.
RULES: dict[str, tuple[Rule, ...]] = {
    # ConvPrepare (conv_common.cc), ConvEval
    "CONV_2D": (
        _OUT_LIKE_IN,
        _weights("input 0", "input 1", "FLOAT32/FLOAT32 INT16/INT8 INT8/INT4 INT8/INT8"),
    ),
    # DepthwiseConvPrepare (depthwise_conv_common.cc), DepthwiseConvEval
    "DEPTHWISE_CONV_2D": (
        _weights("input 0", "input 1", "FLOAT32/FLOAT32 INT16/INT8 INT8/INT4 INT8/INT8"),
    ),
    # TransposeConvPrepare, TransposeConvEval: the input is input 2, the weights input 1
    "TRANSPOSE_CONV": (
        _weights("input 2", "input 1", "FLOAT32/FLOAT32 INT16/INT8 INT16/INT16 INT8/INT8"),
    ),
    # FullyConnectedPrepare, FullyConnectedEval
    "FULLY_CONNECTED": (
        _OUT_LIKE_IN,
        _weights("input 0", "input 1", "FLOAT32/FLOAT32 INT16/INT8 INT8/INT4 INT8/INT8"),
    ),
    # BatchMatMulPrepare
    "BATCH_MATMUL": (
        Accepts("input 0", _types("FLOAT32 INT8 INT16")),
        _weights("input 0", "input 1", "FLOAT32/FLOAT32 INT8/INT8 INT16/INT16", "RHS"),
        _OUT_LIKE_IN,
    ),
    "ADD": (Accepts("output 0", _ARITH),),  # AddEval
    "SUB": (Accepts("output 0", _ARITH),),  # SubEval
    "MUL": (Same(("input 1",), "input 0"), Accepts("input 0", _ARITH)),  # MulPrepare, MulEval
    # CalculateSoftmaxParams (softmax_common.cc)
    "SOFTMAX": (_in_out("FLOAT32/FLOAT32 INT8/INT8 INT8/INT16 INT16/INT16"),),
    "LOGISTIC": _ACTIVATION,  # CalculateArithmeticOpData (logistic_common.cc), LogisticEval
    "TANH": _ACTIVATION,  # CalculateArithmeticOpData (tanh.cc), TanhEval
    "AVERAGE_POOL_2D": (Accepts("input 0", _types("FLOAT32 INT8 INT16")),),  # PoolingPrepare
    "MAX_POOL_2D": (Accepts("input 0", _types("FLOAT32 INT8 INT16")),),  # PoolingPrepare
    "CONCATENATION": (  # ConcatenationPrepare
        Option("fused_activation_function", frozenset({"NONE"}), "NONE"),
        Accepts("input 0", _types("FLOAT32 INT8 INT16 INT32 INT64 BOOL")),
        Same(("output 0", "every input"), "input 0"),
    ),
    # PrepareSimple, EvalMeanHelper, EvalSumHelper, EvalMinMaxHelper (reduce_common.cc)
    "MEAN": (Accepts("input 0", _types("FLOAT32 INT8 INT16")), _AXIS),
    "SUM": (Accepts("input 0", _types("FLOAT32 INT8 INT16")), _AXIS, _OUT_LIKE_IN),
    "REDUCE_MAX": _REDUCE_MIN_MAX,
    "REDUCE_MIN": _REDUCE_MIN_MAX,
    "PAD": _PAD,  # PadPrepare (pad_common.cc), PadEval
    "PADV2": _PAD,
    "RESHAPE": (_OUT_LIKE_IN,),  # ReshapeOutput (reshape_common.cc)
    # PrepareQuantizeReference, EvalQuantizeReference (quantize_common.cc)
    "QUANTIZE": (
        _in_out(
            "FLOAT32/INT8 FLOAT32/INT16 INT32/INT8 INT32/INT16 INT16/INT8 INT16/INT16"
            " INT16/INT32 INT8/INT8 INT8/UINT8 INT8/INT16 INT8/INT32 UINT8/INT8"
        ),
    ),
    # DequantizePrepare (dequantize_common.cc), DequantizeEval
    "DEQUANTIZE": (
        Accepts("input 0", _types("INT8 INT16 UINT8")),
        Accepts("output 0", _types("FLOAT32")),
    ),
    # FillPrepare, FillEval
    "FILL": (
        Constant("input 0", "dims"),
        Accepts("input 1", _types("FLOAT32 INT32 INT8")),
        Same(("output 0",), "input 1"),
    ),
    "RELU": (Accepts("input 0", _types("FLOAT32 INT8 INT16")),),  # ReluEval
    "RELU6": (Accepts("input 0", _types("FLOAT32 INT8 INT16")),),  # Relu6Eval
    "HARD_SWISH": (Accepts("input 0", _types("FLOAT32 INT8")),),  # HardSwishEval
    # L2NormPrepare (l2norm.cc)
    "L2_NORMALIZATION": (Accepts("output 0", _types("FLOAT32 INT8")), _OUT_LIKE_IN),
    "MAXIMUM": (Accepts("output 0", _MAXIMUM_TYPES),),  # Eval (maximum_minimum.cc)
    "MINIMUM": (Accepts("output 0", _MAXIMUM_TYPES),),
    "BROADCAST_TO": (Constant("input 1", "shape"),),  # BroadcastToPrepare
    "EXPAND_DIMS": (Constant("input 1", "axis"),),  # ExpandDimsPrepare
    # ResizeBilinearPrepare, ResizeBilinearEval
    "RESIZE_BILINEAR": (Constant("input 1", "size"), Accepts("output 0", _types("FLOAT32 INT8"))),
    # ResizeNearestNeighborPrepare, ResizeNearestNeighborEval
    "RESIZE_NEAREST_NEIGHBOR": (
        Constant("input 1", "size"),
        Accepts("output 0", _types("FLOAT32 INT8 INT16")),
    ),
    "SPLIT": (Constant("input 0", "axis"), Accepts("input 1", _SPLIT)),  # SplitPrepare, SplitEval
    "SPLIT_V": (Constant("input 2", "axis"), Accepts("input 0", _SPLIT)),  # SplitVPrepare, -Eval
    # TransposePrepare (transpose_common.cc), TransposeEval
    "TRANSPOSE": (Constant("input 1", "perm"), Accepts("input 0", _types("FLOAT32 INT8 INT16"))),
    # StridedSlicePrepare (strided_slice_common.cc), StridedSliceEval
    "STRIDED_SLICE": (
        Constant("input 1", "begin"),
        Constant("input 2", "end"),
        Constant("input 3", "strides"),
        Accepts("output 0", _types("FLOAT32 INT8 INT16 INT32 BOOL")),
    ),
    # PrepareSvdf (svdf_common.cc), EvalSvdf
    "SVDF": (
        Accepts("input 0", _types("FLOAT32 INT8")),
        _weights("input 0", "input 1", "FLOAT32/FLOAT32 INT8/INT8", "weights_feature"),
        _weights("input 0", "input 2", "FLOAT32/FLOAT32 INT8/INT16 INT8/INT8", "weights_time"),
        Pairs("input 0", "input 3", ("input", "bias"), _pairs("FLOAT32/FLOAT32 INT8/INT32")),
        Pairs(
            "input 0",
            "input 4",
            ("input", "activation state"),
            _pairs("FLOAT32/FLOAT32 INT8/INT16 INT8/INT8"),
        ),
        _in_out("FLOAT32/FLOAT32 INT8/INT8"),
        Variable("input 4", "activation state"),
    ),
    # LstmTensors::ValidateTensorStatus (lstm_eval.cc), UnidirectionalSequenceLstmPrepare
    # and ...Eval: the plain LSTM only, states as variables, int16 or float cell state;
    # a float LSTM runs whatever its weights' type, an integer one needs int8 weights.
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (
        Present(_inputs(0, *range(1, 9), *range(12, 16), 18, 19), True, "needs it"),
        Present(_inputs(9, 10, 11, 16, 17, 20, 21, 22, 23), False, _LSTM_VARIANTS),
        Variable("input 18", "output state"),
        Variable("input 19", "cell state"),
        Same(("output 0", "input 18"), "input 0"),
        Same(_inputs(*range(1, 9)), "input 2"),
        Same(_inputs(12, 14, 15), "input 13"),
        Accepts("input 19", _types("FLOAT32 INT16")),
        Accepts("input 0", _types("FLOAT32 INT8 INT16")),
        Pairs(
            "input 0",
            "input 1",
            ("input", "weights"),
            _pairs("INT8/INT8 INT16/INT8") | {(DType.FLOAT32, t) for t in DType},
        ),
    ),
}


def _operator_refusals(sg: Subgraph, op: Operator) -> Iterator[str]:
    if op.is_custom:
        if op.opcode not in REGISTERED_CUSTOM:
            yield "custom op that TFLM's op resolver does not register"
        return
    if op.opcode not in REGISTERED_BUILTINS:
        yield "TFLM's op resolver has no kernel for it"
        return
    if op.custom_options:  # MicroInterpreter::PrepareNodeAndRegistrationDataFromFlatbuffer
        yield "builtin operator with custom options: TFLM refuses them"
    for rule in RULES.get(op.opcode, ()):
        yield from rule.check(sg, op)


def tflm_refusals(model: Model) -> tuple[str, ...]:
    """Every reason for which TFLM's reference kernels refuse ``model``, one line each.

    Empty when no rule fires. Lines name the subgraph (when not 0), the operator
    index and opcode, then why.
    """
    reasons = []
    for sg in model.subgraphs:
        where = f"subgraph {sg.index} " if sg.index else ""
        for op in sg.operators:
            for why in _operator_refusals(sg, op):
                reasons.append(f"{where}operator {op.index} {op.opcode}: {why}")
    return tuple(reasons)
