"""ExecuTorch's method allocator bytes predicted from the ``.pte``: equal to what
its runtime takes on this machine (LP64) for every method of every exported
program; smaller for a 32-bit ARM; a small plan worked out by hand for both."""

from __future__ import annotations

import pytest
from kits.pte import PROGRAMS, TWINS, need_runtime, pte_path

from arenaplan.executorch import native
from arenaplan.executorch.method_bytes import (
    PARTS,
    method_allocator_breakdown,
    method_allocator_bytes,
)
from arenaplan.reader.pte_format import (
    INT,
    INT_LIST,
    OPTIONAL_TENSOR_LIST,
    STRING,
    TENSOR,
    TENSOR_LIST,
    Instruction,
    Program,
    PtePlan,
    PteTensor,
    read_program,
)
from arenaplan.reader.pte_reader import read_pte_bytes

NAMES = PROGRAMS + tuple(f"{name}_arenaplan" for name in TWINS)


@pytest.mark.parametrize("name", NAMES)
def test_the_prediction_for_64_bit_pointers_is_what_executorch_takes_here(name: str) -> None:
    need_runtime()
    data = pte_path(name).read_bytes()
    program, model = read_program(data), read_pte_bytes(data)
    for index, sg in enumerate(model.subgraphs):
        run = native.run_method(data, sg.name, native.random_inputs(sg, seed=index), calls=1)
        assert method_allocator_bytes(program, index, 8) == run.method_allocator, sg.name


@pytest.mark.parametrize("name", NAMES)
def test_32_bit_pointers_take_fewer_bytes_and_the_parts_add_up(name: str) -> None:
    program = read_program(pte_path(name).read_bytes())
    for index, plan in enumerate(program.plans):
        wide = method_allocator_breakdown(program, index, 8)
        narrow = method_allocator_breakdown(program, index, 4)
        assert plan.tensors() and narrow.total < wide.total
        for figures in (wide, narrow):
            assert sum(figures.parts.values()) == figures.total
            assert set(figures.parts) == set(PARTS) and not figures.lower_bound


def _tensor(value: int, dims: int, dynamic: bool) -> PteTensor:
    return PteTensor(value, 6, (2,) * dims, False, 1, 0, None, dynamic, False)


def _small_plan(delegates: tuple[str, ...] = ()) -> Program:
    """Seven values: a 2-d tensor, a 3-d tensor of dynamic shape, a list of 2 ints, a
    list of tensor 0, an int, an optional tensor list of 2, a string; one input;
    one chain of a kernel call (3 arguments) and a move."""
    values = (
        (TENSOR, _tensor(0, 2, False)),
        (TENSOR, _tensor(1, 3, True)),
        (INT_LIST, None),
        (TENSOR_LIST, (0,)),
        (INT, None),
        (OPTIONAL_TENSOR_LIST, (0, -1)),
        (STRING, None),
    )
    plan = PtePlan(
        name="forward",
        values=values,
        inputs=(0,),
        outputs=(1,),
        operators=("aten::add.out",),
        delegates=delegates,
        instructions=(Instruction("kernel", 0, (0, 1, 1)), Instruction("move", -1, (1, 0))),
        pools=(0, 64),
        pools_slot=None,
        items=(0, 0, 2, 1, 0, 2, 0),
        chains=(2,),
    )
    return Program(None, (plan,))


def test_a_small_plan_worked_out_by_hand() -> None:
    """Each step: [start after aligning, end) of the allocation, in bytes."""
    # LP64: EValue x7 [0,112), bool [112,113); tensor 0: strides [116,124),
    # TensorImpl [128,192); tensor 1: sizes [192,204), dim order [204,207), strides
    # [208,220), TensorImpl [224,288); int list: EValue* x2 [288,304), int64 x2
    # [304,320), boxed [320,344); tensor list: Tensor [344,352), EValue* [352,360),
    # boxed [360,384); optional list: EValue* x2 [384,400), optional x2 [400,432),
    # boxed [432,456); string: ArrayRef [456,472); no delegates [472,472); Chain
    # [472,504), OpFunction x2 [504,520), Span x2 [520,552), kernel args [552,576).
    wide = method_allocator_breakdown(_small_plan(), 0, 8)
    assert wide.total == 576
    assert wide.parts == {
        "values": 113,
        "tensors": 175,
        "lists": 184,
        "external": 0,
        "delegates": 0,
        "instructions": 104,
    }
    # ILP32 (ARM): EValue x7 [0,112) (still 16 B, 8-aligned), bool [112,113);
    # tensor 0: strides [116,124), TensorImpl [124,156); tensor 1: sizes [156,168),
    # dim order [168,171), strides [172,184), TensorImpl [184,216); int list:
    # [216,224), int64 x2 [224,240), boxed [240,252); tensor list: [252,256),
    # [256,260), boxed [260,272); optional list: [272,280), [280,296), boxed
    # [296,308); string [308,316); no delegates, aligned to 8: [320,320); Chain
    # [320,336), OpFunction x2 [336,344), Span x2 [344,360), kernel args [360,372).
    narrow = method_allocator_breakdown(_small_plan(), 0, 4)
    assert narrow.total == 372
    assert narrow.parts["delegates"] == 4 and narrow.parts["instructions"] == 52


def test_a_delegate_makes_the_figure_a_lower_bound() -> None:
    figures = method_allocator_breakdown(_small_plan(("XnnpackBackend",)), 0, 8)
    assert figures.lower_bound and figures.parts["delegates"] == 56
    assert figures.total == 576 + 56


def test_pointer_widths_other_than_8_and_4_are_refused() -> None:
    with pytest.raises(ValueError, match="8 or 4"):
        method_allocator_bytes(_small_plan(), 0, 2)
