"""What a plan is for, as values: the runtime, its kernel set, its build profile.

A kernel set and a build profile are parsed once, at the edge (``registry``), from
the spellings a user types ("cmsis_nn+dsp", "arm32"); below the command line they
travel as these values and only the runtime that made them reads their fields.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KernelSet:
    """The kernels a build of ``runtime`` runs.

    ``name`` is the runtime's spelling ("reference", "cmsis_nn+dsp"); ``library`` the
    kernel library ("reference", "cmsis_nn"); ``level`` the instruction-set level the
    library is built for ("" when it has none; "c", "dsp", "mve" for CMSIS-NN).
    """

    runtime: str  # registry name of the runtime that runs these kernels ("tflm")
    name: str
    library: str
    level: str = ""

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Profile:
    """A build profile of ``runtime``: the ABI its structures are sized for."""

    runtime: str  # registry name of the runtime ("tflm")
    name: str  # the runtime's spelling ("arm32", "pypi")
    pointer_bytes: int  # sizeof(void*), bytes
    enum_bytes: int  # sizeof of an enum, bytes (1 with -fshort-enums)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Deployment:
    """What a plan is for: a kernel set and a build profile of one runtime."""

    kernels: KernelSet
    profile: Profile

    def __post_init__(self) -> None:
        if self.kernels.runtime != self.profile.runtime:
            raise ValueError(
                f"kernels {self.kernels} are {self.kernels.runtime}'s, profile "
                f"{self.profile} is {self.profile.runtime}'s"
            )

    @property
    def runtime(self) -> str:
        return self.kernels.runtime
