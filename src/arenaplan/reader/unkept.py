"""Parts of a model file the IR does not keep, where dropping them would change
what the model computes.

The IR keeps what TFLM reads, and more (signature defs, shape signatures). A few
parts of the schema it does not keep: sparse tensors, variant tensor types,
custom quantisation details, custom options or buffer data stored outside the
flatbuffer (models over 2 GB), an operator with both option unions set, options
of a table the schema bindings do not know. The reader lists them in
``Model.unkept`` so that a writer refuses the model instead of dropping them.

Dropped without notice, as they change nothing a runtime computes: quantisation
min/max, ``metadata_buffer`` (deprecated), ``mutating_variable_inputs``,
``custom_options_format`` (one format exists), debug metadata indices, and the
exact form of operator codes (a duplicated code, ``deprecated_builtin_code``).
"""

from __future__ import annotations

import tflite

from arenaplan.reader.options import options_table


def unkept_parts(
    m: tflite.Model, buffer_sizes: tuple[int, ...], buffers: tuple[bytes, ...]
) -> tuple[str, ...]:
    """What of ``m`` the IR does not keep, one phrase each, in file order.

    Runs after the reader has checked every count and position it walks."""
    found = [
        f"buffer {b} keeps its {n:,} bytes outside the flatbuffer"
        for b, (n, raw) in enumerate(zip(buffer_sizes, buffers, strict=True))
        if n != len(raw)
    ]
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        for t in range(sg.TensorsLength()):
            found += _tensor(sg.Tensors(t), f"subgraph {s} tensor {t}")
        for i in range(sg.OperatorsLength()):
            found += _operator(sg.Operators(i), f"subgraph {s} operator {i}")
    return tuple(found)


def _tensor(t: tflite.Tensor, where: str) -> list[str]:
    found = []
    if t.Sparsity() is not None:
        found.append(f"{where} is sparse")
    if t.VariantTensorsLength():
        found.append(f"{where} has variant tensor types")
    q = t.Quantization()
    if q is not None and q.DetailsType():
        found.append(f"{where} has custom quantisation details")
    return found


def _operator(op: tflite.Operator, where: str) -> list[str]:
    found = []
    if op.LargeCustomOptionsOffset() > 1:
        found.append(f"{where} keeps its custom options outside the flatbuffer")
    kinds = (
        (tflite.BuiltinOptions, op.BuiltinOptionsType(), op.BuiltinOptions()),
        (tflite.BuiltinOptions2, op.BuiltinOptions2Type(), op.BuiltinOptions2()),
    )
    if kinds[0][1] and kinds[1][1]:
        found.append(f"{where} has options in both builtin option unions")
    for union, code, table in kinds:
        if code and table is not None and options_table(union, code) is None:
            found.append(f"{where} has options of an unknown type ({union.__name__} {code})")
    return found
