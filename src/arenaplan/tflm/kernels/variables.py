"""VAR_HANDLE, ASSIGN_VARIABLE and READ_VARIABLE, TFLM's resource-variable kernels.

Sources: tensorflow/lite/micro/kernels/var_handle.cc,
tensorflow/lite/micro/kernels/assign_variable.cc,
tensorflow/lite/micro/kernels/read_variable.cc,
tensorflow/lite/micro/micro_resource_variable.cc,
tensorflow/lite/core/api/flatbuffer_conversions.cc (ParseVarHandle).

- tail: VAR_HANDLE its options and Init OpData; ASSIGN_VARIABLE its Init OpData,
  and in Prepare the variable's buffer (MicroResourceVariables::Allocate), once per
  variable; READ_VARIABLE nothing;
- scratch, refusals, in place: none.
"""

from __future__ import annotations

from arenaplan.tflm.facts import Kernel, OpRule, OpView


def _assign_variable(v: OpView) -> list[int]:
    """Prepare: MicroResourceVariables::Allocate gives the variable a buffer of the
    value's bytes, once per variable, when the resource id comes from a VAR_HANDLE
    prepared earlier in the same subgraph (else TFLM allocates nothing here)."""
    rid, value = v.input(0), v.input(1)
    if rid is None or value is None:
        return []
    for op in v.sg.operators[: v.op.index]:
        if op.opcode == "VAR_HANDLE" and rid.index in op.outputs:
            name = str(op.options.get("shared_name", ""))
            if name in v.variables:
                return []
            v.variables.add(name)
            return [v.sizes[value.index]]
    return []


BUILTIN = {
    "VAR_HANDLE": Kernel(OpRule("TfLiteVarHandleParams", "var_handle:OpData")),
    "ASSIGN_VARIABLE": Kernel(OpRule(None, "assign_variable:OpData", prepare=_assign_variable)),
    "READ_VARIABLE": Kernel(OpRule()),
}
