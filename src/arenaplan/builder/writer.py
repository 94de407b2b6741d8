"""``ModelBuilder``: build a one-subgraph model call by call, write it as ``.tflite``.

The builder collects tensors, operators and buffers, makes them an IR ``Model``
and writes it with ``export.tflite_writer.write_model`` (constant data aligned to
16 bytes in the file, buffer 0 the empty buffer TFLite reserves). The same calls
give byte-identical files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import tflite

from arenaplan.builder.options import to_options
from arenaplan.errors import UsageError
from arenaplan.export.tflite_writer import write_model
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import (
    Model,
    Operator,
    Options,
    Quantization,
    SignatureDef,
    Subgraph,
    Tensor,
)

_CUSTOM = "custom:"  # opcode prefix of a custom operator: "custom:SignalWindow"
_VERSION = 1  # operator code version of every operator built here


@dataclass
class _Op:
    """An operator as given to ``add_operator``."""

    opcode: str  # builtin name or "custom:<code>"
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: dict = field(default_factory=dict)
    custom_options: bytes = b""


class ModelBuilder:
    """Collects tensors and operators of subgraph 0, then writes the flatbuffer."""

    def __init__(self, description: str = "arenaplan") -> None:
        self.description = description
        self.tensors: list[Tensor] = []
        self.ops: list[_Op] = []
        self.buffers: list[bytes] = [b""]
        self.metadata: list[tuple[str, int]] = []
        self.inputs: tuple[int, ...] = ()
        self.outputs: tuple[int, ...] = ()
        self.signature: str | None = None

    def add_tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: DType,
        *,
        data: np.ndarray | bytes | None = None,
        quantization: Quantization | None = None,
        is_variable: bool = False,
    ) -> int:
        buffer = 0
        if data is not None:
            raw = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
            self.buffers.append(raw)
            buffer = len(self.buffers) - 1
        index = len(self.tensors)
        self.tensors.append(
            Tensor(
                index=index,
                name=name,
                shape=tuple(int(d) for d in shape),
                dtype=dtype,
                buffer=buffer,
                is_constant=buffer > 0 and len(self.buffers[buffer]) > 0,
                is_variable=is_variable,
                quantization=quantization,
            )
        )
        return index

    def add_operator(
        self,
        opcode: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: Mapping[str, int | float | bool | str | tuple] | None = None,
        *,
        custom_options: bytes = b"",
    ) -> int:
        """``opcode``: a builtin name (``CONV_2D``) or ``custom:<code>``."""
        if not opcode.startswith(_CUSTOM) and not hasattr(tflite.BuiltinOperator, opcode):
            raise UsageError(f"unknown builtin operator {opcode!r}")
        for t in (*inputs, *outputs):
            if not -1 <= t < len(self.tensors):
                raise UsageError(f"{opcode}: tensor {t} does not exist")
        self.ops.append(
            _Op(opcode, tuple(inputs), tuple(outputs), dict(options or {}), bytes(custom_options))
        )
        return len(self.ops) - 1

    def set_io(
        self, inputs: Sequence[int], outputs: Sequence[int], signature: str | None = None
    ) -> None:
        """The subgraph's inputs and outputs; ``signature``: also a signature def of
        that key over them, as TensorFlow's converter writes one (inputs named after
        their tensors, outputs ``output_0``, ``output_1``, ...)."""
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)
        self.signature = signature

    def add_metadata(self, name: str, data: bytes) -> None:
        self.buffers.append(bytes(data))
        self.metadata.append((name, len(self.buffers) - 1))

    def model(self) -> Model:
        """The model built so far, as IR (options checked against the schema)."""
        ops = tuple(_operator(i, op) for i, op in enumerate(self.ops))
        subgraph = Subgraph(0, "main", tuple(self.tensors), ops, self.inputs, self.outputs)
        return Model(
            subgraphs=(subgraph,),
            version=3,
            description=self.description,
            metadata=tuple(self.metadata),
            buffer_sizes=tuple(len(raw) for raw in self.buffers),
            buffers=tuple(self.buffers),
            signature_defs=self._signature_defs(),
        )

    def _signature_defs(self) -> tuple[SignatureDef, ...]:
        if self.signature is None:
            return ()
        ins = tuple((self.tensors[t].name, t) for t in self.inputs)
        outs = tuple((f"output_{k}", t) for k, t in enumerate(self.outputs))
        return (SignatureDef(self.signature, 0, ins, outs),)

    def finish(self) -> bytes:
        return write_model(self.model())


def _operator(index: int, op: _Op) -> Operator:
    is_custom = op.opcode.startswith(_CUSTOM)
    options = _no_options(op) if is_custom else to_options(op.opcode, op.options)
    return Operator(
        index=index,
        opcode=op.opcode[len(_CUSTOM) :] if is_custom else op.opcode,
        is_custom=is_custom,
        inputs=op.inputs,
        outputs=op.outputs,
        options=options,
        custom_options=op.custom_options,
        version=_VERSION,
    )


def _no_options(op: _Op) -> Options:
    """A custom operator's options go in ``custom_options`` (bytes), not here."""
    if op.options:
        raise UsageError(f"{op.opcode} takes custom_options bytes, not builtin options")
    return Options()
