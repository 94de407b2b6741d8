"""TFLM's Prepare arithmetic computed offline (``tflm.prepare``): the edge cases where a
naive restatement differs (rounding halves, the 2^31 carry, flushing tiny values)."""

from __future__ import annotations

import math

import pytest

from arenaplan.passes.cascade_quant import (
    activation_range,
    add_params,
    conv_multipliers,
    quantize_multiplier,
    quantize_multiplier_below_one,
    round_away,
)


def test_round_away_rounds_halves_away_from_zero() -> None:
    assert [round_away(x) for x in (0.5, 1.5, 2.5, -0.5, -2.5, 2.4)] == [1, 2, 3, -1, -3, 2]


@pytest.mark.parametrize(
    ("m", "want"),
    [
        (0.0, (0, 0)),
        (0.5, (1 << 30, 0)),
        (1.0, (1 << 30, 1)),
        (0.75, (3 << 29, 0)),
        (2.0**-40, (0, 0)),  # shift below -31: flushed to zero
        (0.5 + 2.0**-32, ((1 << 30) + 1, 0)),  # a half: away from zero, not to even
        (1.0 - 2.0**-33, (1 << 30, 1)),  # rounds up to 2^31: carried into the shift
    ],
)
def test_quantize_multiplier(m: float, want: tuple[int, int]) -> None:
    assert quantize_multiplier(m) == want
    mult, shift = want
    if mult:  # the value it stands for is within one unit of the last place
        assert abs(mult * 2.0 ** (shift - 31) - m) <= 2.0 ** (shift - 31)


def test_below_one_refuses_one() -> None:
    with pytest.raises(ValueError):
        quantize_multiplier_below_one(1.0)


def test_conv_multipliers_broadcast_one_scale() -> None:
    mults, shifts = conv_multipliers(0.5, (0.25,), 1.0, 3)
    assert mults == [1 << 30] * 3 and shifts == [-2] * 3
    mults, shifts = conv_multipliers(1.0, (0.5, 0.25), 1.0, 2)
    assert (mults, shifts) == ([1 << 30, 1 << 30], [0, -1])


def test_activation_range() -> None:
    scale = 6.0 / 255.0
    assert activation_range("NONE", scale, -128) == (-128, 127)
    assert activation_range("RELU", scale, -128) == (-128, 127)
    assert activation_range("RELU6", 0.1, -10) == (-10, 50)
    assert activation_range("RELU_N1_TO_1", 0.1, 0) == (-10, 10)
    with pytest.raises(ValueError):
        activation_range("TANH", 0.1, 0)


def test_add_params_scale_inputs_to_twice_the_larger() -> None:
    p = add_params((0.5, 3), (0.25, -2), (1.0, 7))
    assert (p.input1_offset, p.input2_offset, p.output_offset, p.left_shift) == (-3, 2, 7, 20)
    assert (p.input1_multiplier, p.input1_shift) == (1 << 30, 0)  # 0.5
    assert (p.input2_multiplier, p.input2_shift) == (1 << 30, -1)  # 0.25
    real = p.output_multiplier * 2.0 ** (p.output_shift - 31)
    assert math.isclose(real, 1.0 / (1 << 20), rel_tol=1e-9)
