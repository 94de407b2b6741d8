"""``cascade_rows``: a chain whose stage reads rows its source never makes is refused.

The ring sizes of well-formed chains are tested in tests/passes/test_cascade.py."""

from __future__ import annotations

import pytest

from arenaplan.errors import PassError
from arenaplan.passes.cascade_rows import INPUT, RowGeometry, ring_rows


def test_a_stage_reading_past_its_sources_last_row_is_a_pass_error() -> None:
    """Stage 1 takes its source as 8 rows high, but stage 0 makes 4: row 4 is read and
    never made, so no ring can hold it (the check must hold under ``python -O`` too)."""
    short = RowGeometry("CONV_2D", INPUT, INPUT, 4, 4, 3, 1, 1, 1)
    tall = RowGeometry("CONV_2D", 0, INPUT, 8, 8, 3, 1, 1, 1)
    with pytest.raises(PassError, match=r"row 4 of stage 0 is read before it is made"):
        ring_rows([short, tall])


def test_matching_heights_size_the_ring() -> None:
    first = RowGeometry("CONV_2D", INPUT, INPUT, 8, 8, 3, 1, 1, 1)
    second = RowGeometry("CONV_2D", 0, INPUT, 8, 8, 3, 1, 1, 1)
    assert ring_rows([first, second]) == [3, 0]
