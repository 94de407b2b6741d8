"""A chain of operators as one ``ARENAPLAN_CASCADE`` operator (docs/cascade.md).

``chain_of`` checks that a run of operators can be one cascade (activations enter
whole, only the last operator's output leaves and every other one is read inside,
every operator is a stage), sizes the rings by simulating the kernel's row order
(``cascade_rows``) and lays out the scratch buffer, for the ``Steps`` given: each
stage's rows per step (``block_rows``: with CMSIS-NN kernels, one CMSIS-NN call per
step) and word 38's path; by default every stage a row per step (``step_pixels``: a
CONV_2D's fewest rows of at least that many output pixels that fill the pixel groups
CMSIS-NN's products take at a time, 2, 4 with MVE; an int16 CONV_2D whose CMSIS-NN
product must see pixels in pairs an even number of them). Which steps a chain takes
is ``cascade_choice``'s. Steps cost ring rows: the rings of a stage and of its source
hold whole steps.
``add_cascade`` appends the operator to a ``SubgraphEdit``: its
inputs are the chain's inputs, then each stage's filter, bias (a pointwise path's
folded bias instead: a new constant int32 tensor), quantisation data (new constant
int32 tensors) and constant operand, in stage order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenaplan.allocation.packing import align_up
from arenaplan.errors import UsageError
from arenaplan.ir.cascade_format import (
    ACC_OFFSET,
    BIAS_IN,
    BLOCK_ROWS,
    COLUMNS,
    CONST_IN,
    CONST_STRIDE_H,
    CONST_STRIDE_W,
    CONV_PATH,
    DIL_H,
    DIL_W,
    ELEMENT_TYPE,
    ELEMENT_TYPES,
    FILTER_H,
    FILTER_IN,
    FILTER_W,
    IN_C,
    IN_H,
    IN_OFFSET,
    IN_W,
    KIND,
    KIND_NAMES,
    KINDS,
    MAX_STAGES,
    OPCODE,
    OUT_C,
    OUT_H,
    OUT_W,
    PAD_LEFT,
    PAD_TOP,
    PATH_POINTWISE,
    QUANT_IN,
    RING_OFFSET,
    RING_ROWS,
    SRC0,
    SRC1,
    STRIDE_H,
    STRIDE_W,
    WHOLE_INPUT,
    const_row_in_place,
    element_bytes,
    encode,
    input_source,
    is_pointwise,
    row_geometry,
)
from arenaplan.ir.constants import constant_values
from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Operator, Subgraph
from arenaplan.passes.cascade_rows import INPUT, ring_rows
from arenaplan.passes.cascade_stage import Stage, Uncascadable, stage_of
from arenaplan.passes.edit import SubgraphEdit
from arenaplan.runtime.cascade import CascadeKernel
from arenaplan.runtime.registry import or_default, runtime_of
from arenaplan.runtime.spec import KernelSet

# CMSIS-NN's int16 convolution with an int64 bias, in plain C and with DSP
# (arm_nn_mat_mult_kernel_s16 against arm_convolve_s16's lone pixel): a pair of pixels
# sums the first 512 columns of a filter in int32 and the rest in int64, a lone pixel
# all of them in int32. Above 512 columns a step must pair pixels as the whole
# operator does (an even number per step), or a sum may wrap where TFLM's does not.
MAX_COL_COUNT = 512


@dataclass(frozen=True, slots=True)
class Steps:
    """How each stage of a chain steps, in stage order: ``block`` rows per step (the
    record's ``block_rows``; 0 or 1: one) and ``path`` (word 38, ``PATHS``: 0 for
    every stage but an int8 CONV_2D run another way in CMSIS-NN builds)."""

    block: tuple[int, ...]
    path: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Chain:
    """A cascade ready to be written: ``records`` with sources, rings and the scratch
    layout filled in (constant input indices still -1), ``stages`` as read,
    ``inputs``/``output`` the chain's tensors, ``scratch`` the bytes its kernel
    requests; ``folded``: per stage, the folded bias of a pointwise path (int32 per
    output channel: bias plus input offset times the channel's filter sum), empty
    otherwise."""

    subgraph: int
    ops: tuple[int, ...]  # operator indices in the subgraph, in order
    stages: tuple[Stage, ...]
    records: tuple[tuple[int, ...], ...]
    inputs: tuple[int, ...]  # the activations entering, the operator's inputs 0, 1, ...
    output: int
    scratch: int
    folded: tuple[tuple[int, ...], ...] = ()

    @property
    def steps(self) -> Steps:
        return Steps(
            tuple(w[BLOCK_ROWS] for w in self.records), tuple(w[CONV_PATH] for w in self.records)
        )


def cascade_kernel(kernels: KernelSet | None) -> CascadeKernel:
    """The cascade kernel as ``kernels`` run it (None: the default runtime's default
    kernels); UsageError when their runtime has no cascade kernel."""
    runtime = runtime_of(kernels)
    kernel = runtime.cascade(or_default(kernels))
    if kernel is None:
        raise UsageError(f"cascade: {runtime.title} has no cascade kernel")
    return kernel


def block_rows(
    kind: str,
    out_w: int,
    out_h: int,
    kernels: KernelSet | None,
    step_pixels: int = 0,
    paired: bool = False,
) -> int:
    """Rows per step of a stage (the record's ``block_rows``; 0: one): for optimised
    kernels (CMSIS-NN), a CONV_2D's fewest rows of at least ``step_pixels`` pixels
    that fill the library's pixel groups (all its rows when there are fewer;
    ``step_pixels`` 0: one row, or with ``paired`` (``paired_steps``) the fewest of
    an even number of pixels where the library pairs them: plain C and DSP)."""
    kernel = cascade_kernel(kernels)
    if not kernel.optimised or kind != "CONV_2D":
        return 0
    group = kernel.pixel_group
    multiple = group // math.gcd(out_w, group)
    if step_pixels <= 0:
        rows = multiple if paired and kernel.paired else 1
    else:
        rows = -(-step_pixels // out_w)
        rows = -(-rows // multiple) * multiple
    rows = min(rows, out_h)
    return rows if rows > 1 else 0


def paired_steps(sg: Subgraph, st: Stage) -> bool:
    """Stage ``st`` is an int16 CONV_2D with an int64 bias and filters of more than
    ``MAX_COL_COUNT`` columns: CMSIS-NN (C, DSP) must see its pixels in pairs."""
    w = st.words
    return (
        w[KIND] == KINDS["CONV_2D"]
        and w[ELEMENT_TYPE] == ELEMENT_TYPES["INT16"]
        and st.bias >= 0
        and sg.tensors[st.bias].dtype is DType.INT64
        and w[IN_C] * w[FILTER_H] * w[FILTER_W] > MAX_COL_COUNT
    )


def _sources(stages: Sequence[Stage]) -> tuple[tuple[int, ...], list[list[int]]]:
    """The activations entering the chain (the operator's inputs 0, 1, ..., in the
    order the stages first read them) and each stage's sources as source words (a
    stage's index, or ``input_source`` of an operator input)."""
    made = {st.output: s for s, st in enumerate(stages)}
    entering: list[int] = []
    for st in stages:
        entering.extend(t for t in st.sources if t not in made and t not in entering)
    if not entering:
        raise Uncascadable("no activation enters the chain")
    words = [
        [made[t] if t in made else input_source(entering.index(t)) for t in st.sources]
        for st in stages
    ]
    return tuple(entering), words


INT32 = range(-(2**31), 2**31)


def _check_words(stages: Sequence[Stage]) -> None:
    """Every word the kernel reads is an int32: a record or quantisation value beyond
    (from absurd scales or sizes) is a chain the kernel cannot be given."""
    for st in stages:
        if any(int(v) not in INT32 for v in (*st.words, *st.quant)):
            raise Uncascadable("a parameter of the chain does not fit the kernel's int32 words")


def _check_types(stages: Sequence[Stage]) -> None:
    """A chain's stages are all int8 or all int16 (its rings hold one type)."""
    if len({st.words[ELEMENT_TYPE] for st in stages}) != 1:
        raise Uncascadable("int8 and int16 operators in one chain")


def _check_leaves(sg: Subgraph, ops: Sequence[int], stages: Sequence[Stage]) -> None:
    """Only the last stage's output is read outside the chain, and every other stage's
    is read inside it (a ring nothing reads is not a chain)."""
    inside = set(ops)
    for st in stages[:-1]:
        if st.output in sg.outputs:
            raise Uncascadable("an intermediate tensor is an output of the subgraph")
        for op in sg.operators:
            if op.index not in inside and st.output in op.inputs:
                raise Uncascadable("an intermediate tensor is read outside the chain")
    read = {t for st in stages for t in st.sources}
    if any(st.output not in read for st in stages[:-1]):
        raise Uncascadable("an intermediate tensor is not read inside the chain")


def _const_rows(stages: Sequence[Stage], records: list[list[int]], at: int) -> int:
    """One row of scratch at byte ``at`` (4-aligned), shared by the stages whose
    constant operand the kernel spreads into a row (its ``acc_offset``): a row is
    used within one row function, never across two. The scratch's new end."""
    spread = [w for st, w in zip(stages, records, strict=True) if st.const >= 0]
    spread = [w for w in spread if not const_row_in_place(w)]
    for w in spread:
        w[ACC_OFFSET] = at
    return at + align_up(max((w[OUT_W] * w[OUT_C] for w in spread), default=0), 4)


# the record words of a stage's height and width, swapped along columns
_SWAPPED = ((IN_H, IN_W), (OUT_H, OUT_W), (FILTER_H, FILTER_W), (STRIDE_H, STRIDE_W),
            (DIL_H, DIL_W), (PAD_TOP, PAD_LEFT),
            (CONST_STRIDE_H, CONST_STRIDE_W))  # fmt: skip


def along_columns(sg: Subgraph, stages: Sequence[Stage], kernels: KernelSet | None) -> bool:
    """Run the chain along the columns of one-row tensors: every tensor it touches has
    one row (one at least more than one column), every window one row, and CMSIS-NN
    sees no int8 convolution of it (its s8 wrappers choose their path by shape). A
    [1, 1, W, C] tensor's bytes are those of [1, W, 1, C], a (1, k) filter's those of
    (k, 1): its rows become the chain's rows, and rings hold a few columns, not all."""
    tensors = {t for st in stages for t in (*st.sources, st.output)}
    shapes = [sg.tensors[t].shape for t in tensors]
    if any(len(shape) != 4 for shape in shapes):  # MEAN's [1, C] output
        return False
    if any(shape[1] != 1 for shape in shapes) or all(shape[2] == 1 for shape in shapes):
        return False
    for st in stages:
        w = st.words
        if (w[FILTER_H], w[STRIDE_H], w[DIL_H], w[PAD_TOP]) != (1, 1, 1, 0):
            return False
        convolves = w[KIND] in (KINDS["CONV_2D"], KINDS["DEPTHWISE_CONV_2D"])
        optimised = cascade_kernel(kernels).optimised
        if convolves and w[ELEMENT_TYPE] == ELEMENT_TYPES["INT8"] and optimised:
            return False
    return True


def _transposed(w: list[int]) -> None:
    """Stage record ``w`` along columns (COLUMNS 1): heights and widths swapped."""
    for a, b in _SWAPPED:
        w[a], w[b] = w[b], w[a]
    w[COLUMNS] = 1


def folded_bias(sg: Subgraph, st: Stage, buffers: Sequence[bytes]) -> tuple[int, ...] | None:
    """An int8 CONV_2D stage's bias plus its input offset times each output channel's
    filter sum (what CMSIS-NN's matrix products add on each call), or None when its
    constants cannot be read as such or a value leaves int32 (the kernel's
    accumulator)."""
    t = sg.tensors
    filt = constant_values(buffers, t[st.filter])
    bias = constant_values(buffers, t[st.bias]) if st.bias >= 0 else np.zeros(st.words[OUT_C])
    if filt is None or bias is None or t[st.filter].dtype is not DType.INT8:
        return None
    if st.bias >= 0 and t[st.bias].dtype is not DType.INT32:
        return None
    sums = filt.reshape(st.words[OUT_C], -1).astype(np.int64).sum(axis=1)
    folded = bias.astype(np.int64) + st.words[IN_OFFSET] * sums
    if folded.min() < INT32.start or folded.max() >= INT32.stop:
        return None
    return tuple(int(v) for v in folded)


def uniform_steps(
    sg: Subgraph,
    stages: Sequence[Stage],
    records: Sequence[Sequence[int]],
    kernels: KernelSet | None,
    step_pixels: int,
) -> Steps:
    """Every stage at ``block_rows`` of ``step_pixels``, each run as TFLM's kernel."""
    block = tuple(
        block_rows(
            KIND_NAMES[w[KIND]], w[OUT_W], w[OUT_H], kernels, step_pixels, paired_steps(sg, st)
        )
        for st, w in zip(stages, records, strict=True)
    )
    return Steps(block, (0,) * len(records))


def _folded(
    sg: Subgraph, stages: Sequence[Stage], buffers: Sequence[bytes], steps: Steps
) -> tuple[tuple[int, ...], ...]:
    """Each stage's folded bias where its path is the pointwise one (empty elsewhere);
    ``Uncascadable`` for a path the stage cannot take."""
    if len(steps.block) != len(stages) or len(steps.path) != len(stages):
        raise ValueError("steps for another number of stages")
    out: list[tuple[int, ...]] = []
    for st, path in zip(stages, steps.path, strict=True):
        if path != PATH_POINTWISE:
            out.append(())
            continue
        int8 = st.words[ELEMENT_TYPE] == ELEMENT_TYPES["INT8"]
        values = folded_bias(sg, st, buffers) if int8 and is_pointwise(st.words) else None
        if values is None:
            raise Uncascadable("a pointwise path for a stage without a foldable bias")
        out.append(values)
    return tuple(out)


def chain_of(
    sg: Subgraph,
    ops: Sequence[int],
    buffers: Sequence[bytes],
    kernels: KernelSet | None = None,
    step_pixels: int = 0,
    steps: Steps | None = None,
) -> Chain:
    """The cascade of operators ``ops`` of ``sg`` (in order), or ``Uncascadable``;
    its steps ``steps``, else chosen for ``kernels`` (None: the default's) and

    ``step_pixels``. A pointwise path whose folded bias leaves int32 is refused."""
    if not 1 <= len(ops) <= MAX_STAGES:
        raise Uncascadable(f"a chain of {len(ops)} operators (the kernel runs 1 to {MAX_STAGES})")
    stages = [stage_of(sg, sg.operators[i], buffers) for i in ops]
    _check_words(stages)
    _check_types(stages)
    chain_inputs, sources = _sources(stages)
    _check_leaves(sg, ops, stages)
    records = [list(st.words) for st in stages]
    if along_columns(sg, stages, kernels):
        for w in records:
            _transposed(w)
    steps = steps or uniform_steps(sg, stages, records, kernels, step_pixels)
    folded = _folded(sg, stages, buffers, steps)
    for w, src, block, path in zip(records, sources, steps.block, steps.path, strict=True):
        w[SRC0] = src[0]
        w[SRC1] = src[1] if len(src) > 1 else INPUT
        w[BLOCK_ROWS] = block if block > 1 else 0
        w[CONV_PATH] = path
    rings = ring_rows([row_geometry(w) for w in records])
    at = 0
    for w, rows in zip(records, rings, strict=True):
        w[RING_ROWS] = rows
        w[RING_OFFSET] = at if rows else 0
        at += align_up(rows * w[OUT_W] * w[OUT_C] * element_bytes(w), 4)
        if KIND_NAMES[w[KIND]] in WHOLE_INPUT:
            w[ACC_OFFSET] = at
            at += 4 * w[OUT_C]
    at = _const_rows(stages, records, at)
    return Chain(
        sg.index,
        tuple(ops),
        tuple(stages),
        tuple(tuple(w) for w in records),
        chain_inputs,
        stages[-1].output,
        at,
        folded,
    )


def add_cascade(edit: SubgraphEdit, chain: Chain, name: str) -> None:
    """Append the chain's operator to ``edit`` (a new operator: no source)."""
    inputs = list(chain.inputs)

    def slot(tensor: int) -> int:
        if tensor < 0:
            return -1
        if tensor not in inputs:
            inputs.append(tensor)
        return inputs.index(tensor)

    records = []
    for s, (st, w) in enumerate(zip(chain.stages, chain.records, strict=True)):
        w = list(w)
        w[FILTER_IN] = slot(st.filter)
        if chain.folded and chain.folded[s]:  # instead of the bias, which is not an input
            w[BIAS_IN] = slot(edit.add_int32(f"{name}/stage{s}/folded_bias", chain.folded[s]))
        else:
            w[BIAS_IN] = slot(st.bias)
        w[CONST_IN] = slot(st.const)
        if st.quant:
            w[QUANT_IN] = slot(edit.add_int32(f"{name}/stage{s}/quant", st.quant))
        records.append(w)
    op = Operator(
        index=0,
        opcode=OPCODE,
        is_custom=True,
        inputs=tuple(inputs),
        outputs=(chain.output,),
        custom_options=encode(records, chain.scratch),
    )
    edit.add_op(op, None)
