"""The model as tables: frozen values, tensors and operators referred to by index.

Nothing here holds a result of analysis (lifetimes, offsets): those live beside
the IR, keyed by (subgraph index, tensor index).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from arenaplan.ir.dtypes import DType

OptionValue = int | float | bool | str | tuple[int, ...] | tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Quantization:
    """Affine quantisation: real = scale * (q - zero_point), per ``axis`` if several."""

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int = 0


@dataclass(frozen=True, slots=True)
class Tensor:
    """One tensor of a subgraph.

    ``shape`` is as stored in the file (a -1 may remain where the converter left
    one). ``buffer`` indexes the model's buffers; ``is_constant`` means that buffer
    holds data, so the tensor lives in the flatbuffer (flash), not in the arena.
    """

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: DType
    buffer: int
    is_constant: bool
    is_variable: bool
    quantization: Quantization | None = None
    shape_signature: tuple[int, ...] | None = None  # -1 for a dynamic dim; None: absent
    has_rank: bool = False  # the file says the rank is known (even with no shape)

    @property
    def elements(self) -> int:
        """Product of the dims (1 for a scalar); -1 dims count as 0 here."""
        return math.prod(max(d, 0) for d in self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes as TFLM's ``TfLiteEvalTensorByteLength`` counts them (unaligned)."""
        return self.elements * self.dtype.itemsize


@dataclass(frozen=True, slots=True)
class Options:
    """An operator's builtin options as sorted (snake_case name, value) pairs.

    ``table`` names the schema's options table they come from (``Conv2DOptions``),
    "" when the operator has none (or was built without saying which)."""

    items: tuple[tuple[str, OptionValue], ...] = ()
    table: str = ""

    def get(self, name: str, default: OptionValue | None = None) -> OptionValue | None:
        for key, value in self.items:
            if key == name:
                return value
        return default

    def as_dict(self) -> dict[str, OptionValue]:
        return dict(self.items)


@dataclass(frozen=True, slots=True)
class Operator:
    """One operator. ``opcode`` is the builtin name (``CONV_2D``) or the custom code.

    ``inputs`` may hold -1 for an omitted optional input. ``version`` is the
    operator code's version (which kernel variant the converter asks for).
    ``source`` is its position in the file it was read from (an instruction of a
    ``.pte`` chain; -1: not said), kept when a pass moves it and not compared: two
    operators that differ only there are the same operator.
    """

    index: int
    opcode: str
    is_custom: bool
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...] = ()
    options: Options = field(default_factory=Options)
    custom_options: bytes = b""
    version: int = 1
    source: int = field(default=-1, compare=False)

    def tensor_inputs(self) -> Iterator[int]:
        """Input tensor indices, omitted optional inputs (-1) skipped."""
        return (i for i in self.inputs if i >= 0)

    @property
    def in_file(self) -> int:
        """Its position in the file: ``source``, or its index when not said."""
        return self.source if self.source >= 0 else self.index


@dataclass(frozen=True, slots=True)
class Subgraph:
    index: int
    name: str
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    def operand(self, op: Operator, k: int, output: bool = False) -> Tensor | None:
        """The k-th input (or output) tensor of ``op``; None if omitted or absent."""
        indices = op.outputs if output else op.inputs
        i = indices[k] if k < len(indices) else -1
        return self.tensors[i] if 0 <= i < len(self.tensors) else None


@dataclass(frozen=True, slots=True)
class SignatureDef:
    """A named entry point: ``subgraph`` with its inputs and outputs by name."""

    key: str
    subgraph: int
    inputs: tuple[tuple[str, int], ...] = ()  # (name, tensor index in the subgraph)
    outputs: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Model:
    """A whole model. ``metadata`` maps entry names to buffer indices, in file order.

    ``buffers`` holds the bytes of every buffer (b"" for an empty one, or for data
    stored outside the flatbuffer); ``buffer_sizes`` their lengths as the file
    declares them. ``unkept`` says which parts of the file that change what the
    model computes the IR does not hold (a sparse tensor, ...): a writer refuses
    such a model rather than drop them. ``stored_plan``: the tensor offsets the file
    carries for its runtime (a ``.tflite``: TFLM's offline plan), one per tensor over
    all subgraphs, -1 where the runtime plans; None: the file carries none (a
    ``.pte``: each planned tensor's ``allocation_info``, in its memory
    ``stored_memory``).
    """

    subgraphs: tuple[Subgraph, ...]
    version: int = 3
    description: str = ""
    metadata: tuple[tuple[str, int], ...] = ()
    buffer_sizes: tuple[int, ...] = ()
    stored_plan: tuple[int, ...] | None = None
    buffers: tuple[bytes, ...] = ()
    # with a stored plan over several memories: each tensor's memory id (0: none)
    stored_memory: tuple[int, ...] | None = None
    file_format: str = "tflite"  # "tflite" or "pte": the format the model was read from
    signature_defs: tuple[SignatureDef, ...] = ()
    unkept: tuple[str, ...] = ()
    # the file's bytes, for a runtime that reads more of its own format than the IR
    # holds (a ``.pte``: the structures of ExecuTorch's method allocator); b"": not kept
    source: bytes = field(default=b"", compare=False, repr=False)

    @property
    def tensor_count(self) -> int:
        """Tensors over all subgraphs: the length of a stored plan."""
        return sum(len(sg.tensors) for sg in self.subgraphs)

    def tensor_keys(self) -> tuple[tuple[int, int], ...]:
        """(subgraph, tensor index) of every tensor, in the order TFLM counts them over
        all subgraphs: the order of a stored plan's offsets."""
        return tuple((sg.index, t.index) for sg in self.subgraphs for t in sg.tensors)

    def plan_layout(self, offsets: dict[tuple[int, int], int]) -> tuple[int, ...]:
        """A stored plan's offsets from (subgraph, tensor) -> offset; -1 elsewhere."""
        return tuple(offsets.get(key, -1) for key in self.tensor_keys())

    @property
    def operator_count(self) -> int:
        return sum(len(sg.operators) for sg in self.subgraphs)

    def tensor(self, subgraph: int, index: int) -> Tensor:
        return self.subgraphs[subgraph].tensors[index]
