"""The IR: a table of tensors and operators that refer to tensors by index."""

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Model, Operator, Options, Quantization, Subgraph, Tensor

__all__ = ["DType", "Model", "Operator", "Options", "Quantization", "Subgraph", "Tensor"]
