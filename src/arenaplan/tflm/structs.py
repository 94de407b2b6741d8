"""Sizes of the structs TFLM puts in its tail, per build profile.

The sizes are measured data: the package's ``data/tail_structs.json``, which
``scripts/gen_tail_structs.py`` writes from compiler probes on the TFLM source of the
bundle (``sizeof``/``alignof`` appended to a copy of the translation unit that defines
each struct, read from the assembly) and, for the PyPI wheel's builtin options, from
the wheel's own parsers (objdump of ``_runtime.so``). Profiles:

- ``pypi``: the 64-bit PyPI wheel (a ``USE_TFLM_COMPRESSION`` build): its options as its
  ``Parse*`` functions allocate them (the wheel is a newer TFLM: its
  ``TfLiteFullyConnectedParams`` is 32/8, the source's 16/4), the kernel state from host
  g++ with ``-DUSE_TFLM_COMPRESSION``. Every op the tests can build is checked against
  the runtime's measured tail (``tests/tflm/test_tail_ops.py``).
- ``arm32``: arm-none-eabi-g++ (Cortex-M4) with ``-DTF_LITE_STATIC_MEMORY``, its default
  one-byte enums.
- ``int32``: the same compiler with ``-fno-short-enums`` (int-sized enums, as on RISC-V,
  Xtensa, i386). TFLM built so (``verify.native``'s ``arm32-int32-reference``) has the
  tail these sizes predict on every shared model and small test model.
- ``host``: TFLM built from this source for a 64-bit host by its Makefile, without
  compression (``verify.native``'s host variants): host g++.

``OPTIONS`` are the builtin options each ``Parse*`` of ``flatbuffer_conversions.cc``
allocates, at ``alignof(struct)``, from the MicroBuiltinDataAllocator (parsers not
listed allocate nothing). ``STATE`` is the kernel state allocated with
``AllocatePersistentBuffer`` (always 16-aligned, so only the size matters; 0: not
allocated in that build), named ``file:Type`` where the type name is not unique in
TFLM; the ``cmsis_nn:*`` rows are TFLM's CMSIS-NN kernels (``-DCMSIS_NN`` and CMSIS-NN's
headers). Sizes in bytes.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

Struct = tuple[int, int]  # (bytes, alignment)

PROFILE_COLUMNS = ("pypi", "arm32", "int32")  # the columns of OPTIONS and STATE


@functools.cache
def _data() -> dict:
    path = resources.files("arenaplan.tflm") / "data" / "tail_structs.json"
    return json.loads(path.read_text())


def options_for(profile: str) -> dict[str, Struct]:
    """Options struct name -> (bytes, alignment) in ``profile`` (pypi, arm32, int32 or
    host)."""
    return {name: tuple(row[profile]) for name, row in _data()["options"].items()}


def state_for(profile: str) -> dict[str, int]:
    """Kernel state struct name -> bytes in ``profile`` (pypi, arm32, int32 or host)."""
    return {name: row[profile] for name, row in _data()["state"].items()}


# name -> (pypi, arm32, int32): the three --profile choices side by side
OPTIONS: dict[str, tuple[Struct, Struct, Struct]] = {
    name: tuple(tuple(row[p]) for p in PROFILE_COLUMNS) for name, row in _data()["options"].items()
}
STATE: dict[str, tuple[int, int, int]] = {
    name: tuple(row[p] for p in PROFILE_COLUMNS) for name, row in _data()["state"].items()
}
