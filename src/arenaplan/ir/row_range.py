"""A range of rows of one NHWC tensor: the one row-window type of the passes.

Half-open, ``[first, end)``, in rows (H, dimension 1) of the tensor it is of. Bands
(``passes.rows``, ``passes.band_split``) and the cascade's row order
(``ir.cascade_format.RowGeometry``, ``passes.cascade_rows``) both speak of rows
this way. A range an operator reads may reach outside ``[0, H)`` where it reads
its implicit padding; ``clip`` keeps the rows that exist.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RowRange:
    """Rows ``[first, end)`` of one tensor (half-open); empty when ``end <= first``."""

    first: int  # rows: the first row of the range
    end: int  # rows: one past the last row of the range

    @property
    def rows(self) -> int:
        """How many rows the range holds (0 when empty)."""
        return max(self.end - self.first, 0)

    @property
    def empty(self) -> bool:
        return self.end <= self.first

    def clip(self, height: int) -> RowRange:
        """The rows of the range that a tensor of ``height`` rows has: within [0, height)."""
        return RowRange(max(self.first, 0), min(self.end, height))

    def hull(self, other: RowRange) -> RowRange:
        """The least range holding both (an empty one adds nothing)."""
        if other.empty:
            return self
        if self.empty:
            return other
        return RowRange(min(self.first, other.first), max(self.end, other.end))


NO_ROWS = RowRange(0, 0)  # the empty range: a step that reads no row (all padding)
