"""Will TFLM's reference kernels refuse this model? Predicted from the model alone.

Every check restates, in our words, one check that the PyPI runtime (its
``PythonOpsResolver`` and the reference kernels, at the TFLM commit of
``tflm-facts.md``) makes while it resolves, prepares or invokes an operator: the
resolver's registrations are below, each kernel's checks are stated beside its other
facts in its family module of ``tflm.kernels`` (``RULES`` gathers them), which names
the TFLM function. A check fires only where that check fails, so a non-empty answer
means TFLM refuses the model. An empty answer means no known refusal, not a proof:
quantisation parameters, shapes and most kernels' type switches beyond the common
ones are not checked here. The forms of the checks are in ``tflm.facts``.
"""

from __future__ import annotations

from collections.abc import Iterator

from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.tflm import kernels as families
from arenaplan.tflm.facts import Check


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
# arenaplan's own kernels: registered by the firmware that runs a model the cascade
# pass wrote (plan --kernel-source), and in arenaplan's TFLM builds
ARENAPLAN_CUSTOM = ("ARENAPLAN_CASCADE",)


# opcode -> the checks of its reference kernel, in order (``tflm.kernels``)
RULES: dict[str, tuple[Check, ...]] = {
    name: kernel.refuses for name, kernel in families.BUILTIN.items() if kernel.refuses
}


def _operator_refusals(sg: Subgraph, op: Operator) -> Iterator[str]:
    if op.is_custom:
        if op.opcode not in REGISTERED_CUSTOM and op.opcode not in ARENAPLAN_CUSTOM:
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


def refusal_reason(model: Model, runtime_error: str | None, shown: int = 3) -> str:
    """Why TFLM refused to run ``model``, in our words: the reasons ``tflm_refusals``
    finds (the first ``shown``), else the runtime's own message. Ours come first
    because the runtime's can mislead: its CONV_2D calls a UINT8 model "hybrid"."""
    reasons = tflm_refusals(model)
    if not reasons:
        return runtime_error or "the runtime gave no reason"
    more = f" (and {len(reasons) - shown} more)" if len(reasons) > shown else ""
    return "; ".join(reasons[:shown]) + more


def uses_own_kernels(model: Model) -> bool:
    """``model`` has an operator only arenaplan's kernels run (a cascade)."""
    return any(
        op.is_custom and op.opcode in ARENAPLAN_CUSTOM
        for sg in model.subgraphs
        for op in sg.operators
    )
