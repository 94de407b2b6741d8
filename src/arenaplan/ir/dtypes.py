"""Tensor element types, numbered as in the TFLite schema's ``TensorType``."""

from __future__ import annotations

from enum import Enum


class DType(Enum):
    """A TFLite element type: (schema code, bytes per element as TFLM counts them).

    TFLM counts INT4 as one byte per element (it is unpacked in the arena).
    """

    FLOAT32 = (0, 4)
    FLOAT16 = (1, 2)
    INT32 = (2, 4)
    UINT8 = (3, 1)
    INT64 = (4, 8)
    STRING = (5, 1)
    BOOL = (6, 1)
    INT16 = (7, 2)
    COMPLEX64 = (8, 8)
    INT8 = (9, 1)
    FLOAT64 = (10, 8)
    COMPLEX128 = (11, 16)
    UINT64 = (12, 8)
    RESOURCE = (13, 4)  # a resource id: TFLM counts sizeof(int32_t)
    VARIANT = (14, 1)
    UINT32 = (15, 4)
    UINT16 = (16, 2)
    INT4 = (17, 1)
    BFLOAT16 = (18, 2)

    @property
    def code(self) -> int:
        return self.value[0]

    @property
    def itemsize(self) -> int:
        """Bytes per element in the arena."""
        return self.value[1]

    @classmethod
    def from_code(cls, code: int) -> DType | None:
        return _BY_CODE.get(code)


_BY_CODE = {t.code: t for t in DType}
