"""The operator resolver a model needs in TFLM, as C++ for the generated headers.

TFLM finds each operator's kernel through a ``tflite::MicroMutableOpResolver<N>``
whose ``Add...()`` methods register one operator each (``micro_mutable_op_resolver.h``:
a builtin through ``AddBuiltin(BuiltinOperator_X, ...)``, an operator TFLM ships as
custom, such as the signal library's, through ``AddCustom("name", ...)``). The block
below gives ``ARENAPLAN_OP_COUNT`` (the operators the model uses, over all its
subgraphs) and, in C++ with ``ARENAPLAN_DEFINE_OP_RESOLVER``, ``arenaplan::OpResolver``
and ``arenaplan::RegisterOps(resolver)``, which makes the calls in a fixed order (by
method name). A custom operator TFLM does not ship stops the build with an
``#error`` naming it, unless the firmware says it adds it itself; a builtin TFLM has
no method for stops it too (TFLM cannot run the model).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from arenaplan.ir.model import Model

# Builtin operator (schema name, BuiltinOperator_ without the prefix) -> the
# MicroMutableOpResolver method that registers it.
BUILTIN_METHODS = {
    "ABS": "AddAbs",
    "ADD": "AddAdd",
    "ADD_N": "AddAddN",
    "ARG_MAX": "AddArgMax",
    "ARG_MIN": "AddArgMin",
    "ASSIGN_VARIABLE": "AddAssignVariable",
    "AVERAGE_POOL_2D": "AddAveragePool2D",
    "BATCH_MATMUL": "AddBatchMatMul",
    "BATCH_TO_SPACE_ND": "AddBatchToSpaceNd",
    "BROADCAST_ARGS": "AddBroadcastArgs",
    "BROADCAST_TO": "AddBroadcastTo",
    "CALL_ONCE": "AddCallOnce",
    "CAST": "AddCast",
    "CEIL": "AddCeil",
    "CONCATENATION": "AddConcatenation",
    "CONV_2D": "AddConv2D",
    "COS": "AddCos",
    "CUMSUM": "AddCumSum",
    "DEPTHWISE_CONV_2D": "AddDepthwiseConv2D",
    "DEPTH_TO_SPACE": "AddDepthToSpace",
    "DEQUANTIZE": "AddDequantize",
    "DIV": "AddDiv",
    "DYNAMIC_UPDATE_SLICE": "AddDynamicUpdateSlice",
    "ELU": "AddElu",
    "EMBEDDING_LOOKUP": "AddEmbeddingLookup",
    "EQUAL": "AddEqual",
    "EXP": "AddExp",
    "EXPAND_DIMS": "AddExpandDims",
    "FILL": "AddFill",
    "FLOOR": "AddFloor",
    "FLOOR_DIV": "AddFloorDiv",
    "FLOOR_MOD": "AddFloorMod",
    "FULLY_CONNECTED": "AddFullyConnected",
    "GATHER": "AddGather",
    "GATHER_ND": "AddGatherNd",
    "GREATER": "AddGreater",
    "GREATER_EQUAL": "AddGreaterEqual",
    "HARD_SWISH": "AddHardSwish",
    "IF": "AddIf",
    "L2_NORMALIZATION": "AddL2Normalization",
    "L2_POOL_2D": "AddL2Pool2D",
    "LEAKY_RELU": "AddLeakyRelu",
    "LESS": "AddLess",
    "LESS_EQUAL": "AddLessEqual",
    "LOG": "AddLog",
    "LOGICAL_AND": "AddLogicalAnd",
    "LOGICAL_NOT": "AddLogicalNot",
    "LOGICAL_OR": "AddLogicalOr",
    "LOGISTIC": "AddLogistic",
    "LOG_SOFTMAX": "AddLogSoftmax",
    "MAXIMUM": "AddMaximum",
    "MAX_POOL_2D": "AddMaxPool2D",
    "MEAN": "AddMean",
    "MINIMUM": "AddMinimum",
    "MIRROR_PAD": "AddMirrorPad",
    "MUL": "AddMul",
    "NEG": "AddNeg",
    "NOT_EQUAL": "AddNotEqual",
    "PACK": "AddPack",
    "PAD": "AddPad",
    "PADV2": "AddPadV2",
    "PRELU": "AddPrelu",
    "QUANTIZE": "AddQuantize",
    "READ_VARIABLE": "AddReadVariable",
    "REDUCE_ALL": "AddReduceAll",
    "REDUCE_MAX": "AddReduceMax",
    "REDUCE_MIN": "AddReduceMin",
    "RELU": "AddRelu",
    "RELU6": "AddRelu6",
    "RESHAPE": "AddReshape",
    "RESIZE_BILINEAR": "AddResizeBilinear",
    "RESIZE_NEAREST_NEIGHBOR": "AddResizeNearestNeighbor",
    "REVERSE_V2": "AddReverseV2",
    "ROUND": "AddRound",
    "RSQRT": "AddRsqrt",
    "SELECT_V2": "AddSelectV2",
    "SHAPE": "AddShape",
    "SIN": "AddSin",
    "SLICE": "AddSlice",
    "SOFTMAX": "AddSoftmax",
    "SPACE_TO_BATCH_ND": "AddSpaceToBatchNd",
    "SPACE_TO_DEPTH": "AddSpaceToDepth",
    "SPLIT": "AddSplit",
    "SPLIT_V": "AddSplitV",
    "SQRT": "AddSqrt",
    "SQUARE": "AddSquare",
    "SQUARED_DIFFERENCE": "AddSquaredDifference",
    "SQUEEZE": "AddSqueeze",
    "STRIDED_SLICE": "AddStridedSlice",
    "SUB": "AddSub",
    "SUM": "AddSum",
    "SVDF": "AddSvdf",
    "TANH": "AddTanh",
    "TRANSPOSE": "AddTranspose",
    "TRANSPOSE_CONV": "AddTransposeConv",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "AddUnidirectionalSequenceLSTM",
    "UNPACK": "AddUnpack",
    "VAR_HANDLE": "AddVarHandle",
    "WHILE": "AddWhile",
    "ZEROS_LIKE": "AddZerosLike",
}

# Custom operator (its custom code in the model) -> the MicroMutableOpResolver
# method that registers the kernel TFLM ships for it (ethos-u: only in a build with
# the Ethos-U driver, TFLM's CO_PROCESSOR=ethos_u; elsewhere the method adds nothing).
CUSTOM_METHODS = {
    "CIRCULAR_BUFFER": "AddCircularBuffer",
    "SignalDelay": "AddDelay",
    "SignalEnergy": "AddEnergy",
    "SignalFftAutoScale": "AddFftAutoScale",
    "SignalFilterBank": "AddFilterBank",
    "SignalFilterBankLog": "AddFilterBankLog",
    "SignalFilterBankSpectralSubtraction": "AddFilterBankSpectralSubtraction",
    "SignalFilterBankSquareRoot": "AddFilterBankSquareRoot",
    "SignalFramer": "AddFramer",
    "SignalIrfft": "AddIrfft",
    "SignalOverlapAdd": "AddOverlapAdd",
    "SignalPCAN": "AddPCAN",
    "SignalRfft": "AddRfft",
    "SignalStacker": "AddStacker",
    "SignalWindow": "AddWindow",
    "TFLM_DECODE": "AddDecode",
    "TFLite_Detection_PostProcess": "AddDetectionPostprocess",
    "ethos-u": "AddEthosU",
}


@dataclass(frozen=True, slots=True)
class OpResolverNeeds:
    """What a model asks of TFLM's resolver: the methods registering its operators
    (by method name, each once), its custom operators TFLM does not ship (the
    firmware must add them) and its builtins TFLM has no kernel for."""

    methods: tuple[tuple[str, str], ...]  # (method, operator), sorted by method
    own_custom: tuple[str, ...]  # custom codes, sorted
    unknown_builtin: tuple[str, ...]  # builtin names, sorted

    @property
    def count(self) -> int:
        """Registrations the resolver needs room for (the firmware's own customs too)."""
        return len(self.methods) + len(self.own_custom)


def resolver_needs(model: Model) -> OpResolverNeeds:
    """The resolver ``model`` needs: every operator of every subgraph."""
    methods: dict[str, str] = {}
    own, unknown = set(), set()
    for sg in model.subgraphs:
        for op in sg.operators:
            table = CUSTOM_METHODS if op.is_custom else BUILTIN_METHODS
            method = table.get(op.opcode)
            if method is not None:
                methods[method] = op.opcode
            elif op.is_custom:
                own.add(op.opcode)
            else:
                unknown.add(op.opcode)
    return OpResolverNeeds(
        tuple(sorted(methods.items())), tuple(sorted(own)), tuple(sorted(unknown))
    )


def _c_string(text: str) -> str:
    """``text`` as a C string literal (printable ASCII kept, the rest escaped)."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127 and ch != "?":  # "?" escaped: no trigraphs
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _comment(text: str) -> str:
    return text.replace("*/", "* /")


def resolver_lines(model: Model) -> list[str]:
    """The resolver block of a generated header (C and C++; the function C++ only)."""
    needs = resolver_needs(model)
    names = [op for _, op in needs.methods] + list(needs.own_custom)
    listed = textwrap.wrap(
        _comment(", ".join(names) or "none") + ". */",
        width=86,
        initial_indent="   ",
        subsequent_indent="   ",
        break_on_hyphens=False,
    )
    lines = [
        "/* The operators the model uses, over all its subgraphs, as TFLM's",
        "   MicroMutableOpResolver registers them (the firmware's own custom operators",
        "   counted):",
        *listed,
        f"#define ARENAPLAN_OP_COUNT {needs.count}u",
        "/* With ARENAPLAN_DEFINE_OP_RESOLVER (C++; includes micro_mutable_op_resolver.h):",
        "   arenaplan::OpResolver, TFLM's resolver with room for them, and",
        "   arenaplan::RegisterOps(resolver), which adds them. */",
        "#if defined(__cplusplus) && defined(ARENAPLAN_DEFINE_OP_RESOLVER) && \\",
        "    !defined(ARENAPLAN_OP_RESOLVER_DEFINED) /* once if both arenaplan headers are in */",
        "#define ARENAPLAN_OP_RESOLVER_DEFINED",
    ]
    for name in needs.unknown_builtin:
        said = (
            f"arenaplan: the model uses the builtin operator {name}, which TFLM has no "
            "kernel for (MicroMutableOpResolver has no method adding it)"
        )
        lines.append(f"#error {_c_string(said)}")
    if needs.own_custom:
        add = " ".join(
            f"resolver.AddCustom({_c_string(name)}, registration);" for name in needs.own_custom
        )
        said = (
            f"arenaplan: the model uses custom operators TFLM does not ship "
            f"({', '.join(needs.own_custom)}): add each with resolver.AddCustom(name, "
            "registration) after arenaplan::RegisterOps (arenaplan::OpResolver has room) "
            "and define ARENAPLAN_OWN_CUSTOM_OPS"
        )
        lines += [
            "/* Custom operators TFLM does not ship: after arenaplan::RegisterOps, the firmware",
            f"   adds their kernels itself: {_comment(add)} */",
            "#ifndef ARENAPLAN_OWN_CUSTOM_OPS",
            f"#error {_c_string(said)}",
            "#endif",
        ]
    lines += [
        '#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"',
        "namespace arenaplan {",
        f"typedef tflite::MicroMutableOpResolver<{max(needs.count, 1)}> OpResolver;",
        "/* Adds the model's operators to resolver (any size with room for them), by method",
        "   name: kTfLiteOk, or kTfLiteError at the first TFLM refuses (it says why). */",
        "template <unsigned int tOpCount>",
        "inline TfLiteStatus RegisterOps(tflite::MicroMutableOpResolver<tOpCount>& resolver) {",
    ]
    if not needs.methods:
        lines.append("  (void)resolver;")
    lines += [
        f"  if (resolver.{method}() != kTfLiteOk) return kTfLiteError;  /* {_comment(op)} */"
        for method, op in needs.methods
    ]
    lines += ["  return kTfLiteOk;", "}", "}  // namespace arenaplan", "#endif"]
    return lines
