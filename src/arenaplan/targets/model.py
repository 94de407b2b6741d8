"""What a target is: memories (capacity, bandwidth, latency, what may live there)
and the core's compute rate per operator kind. Units: bytes, bytes/s, cycles, Hz."""

from __future__ import annotations

from dataclasses import dataclass, field

from arenaplan.errors import TargetError
from arenaplan.runtime.registry import default_kernels, default_profile
from arenaplan.runtime.spec import KernelSet, Profile

# what a memory may hold
HOLDS = ("activations", "persistent", "weights")
READS = ("in-place", "copy")  # how operators read weights held in a memory
COPIES = ("blocking", "dma")  # what copies them
CACHE_WRITES = ("back", "through")  # what stores do at a memory's cache
COMPILED_FOR = ("speed", "size")  # what a firmware's kernels are compiled for


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory. ``capacity`` bytes; bandwidths in bytes/s; ``latency`` in cycles
    of the target clock per access (a fitted figure may be fractional);
    ``section``: linker section for arrays; ``cache_bytes``: a data cache in front
    of it (0: none), filled in lines of ``line_bytes``; ``cache_writes`` "back"
    (stores fill lines like loads) or "through" (stores pass the cache: each is one
    access costing ``write_latency`` cycles, a write buffer's posted write).

    How operators read weights held here: ``read`` "in-place" (memory-mapped,
    at its latency and bandwidth) or "copy" (firmware must copy them into RAM
    first); a copy is made by ``copy`` "blocking" (the core, e.g. memcpy or a
    flash read) or "dma" (a DMA that overlaps compute), at ``copy_rate`` bytes/s
    (0: the read bandwidth), each copy paying ``copy_latency`` cycles to start."""

    name: str
    capacity: int
    read_bandwidth: float
    write_bandwidth: float
    latency: float
    holds: tuple[str, ...]
    section: str = ""
    note: str = ""
    cache_bytes: int = 0
    line_bytes: int = 32
    cache_writes: str = "back"
    write_latency: float = 0.0
    read: str = "in-place"
    copy: str = "blocking"
    copy_rate: float = 0.0
    copy_latency: float = 0.0

    @property
    def store_latency(self) -> float:
        """Cycles of one store that reaches this memory (a whole line's fill when
        stores go through the cache as loads do)."""
        return self.write_latency if self.cache_writes == "through" else self.latency

    def copy_seconds(self, nbytes: int, copies: int, clock_hz: float) -> float:
        """Seconds to copy ``nbytes`` out of this memory in ``copies`` transfers."""
        rate = self.copy_rate or self.read_bandwidth
        return nbytes / rate + copies * self.copy_latency / clock_hz


@dataclass(frozen=True, slots=True)
class Target:
    """A chip: its memories (fastest first, as listed) and compute rates.

    ``macs_per_cycle`` maps an opcode (``ADD``) or an operator kind (conv,
    depthwise, fully_connected, elementwise, default) to int8 MACs (or elements)
    per cycle of ``clock_hz``; an opcode's rate is used before its kind's.
    """

    name: str
    description: str
    clock_hz: float
    memories: tuple[Memory, ...]
    macs_per_cycle: dict[str, float] = field(default_factory=dict)
    # the build profile of its runtime that sizes the persistent part (TOML: tflm_profile)
    profile: Profile = field(default_factory=default_profile)
    # "stall": memory time adds to compute (a core waiting on its loads, cost.timing);
    # "roofline": it overlaps compute (an NPU's DMA), the larger wins (cost.roofline)
    time_model: str = "stall"
    # the kernels its firmware runs: they decide the scratch requests and part of the
    # persistent part
    kernels: KernelSet = field(default_factory=default_kernels)

    # whose kernels' memory accesses the time model counts (cost.timing):
    # "tflm" (TFLM's reference kernels, cost.traffic) or "xcore" (lib_nn on the
    # xcore.ai VPU, cost.traffic_xcore)
    traffic: str = "tflm"
    # the core whose instruction timings turn the kernels' measured instruction
    # counts into compute cycles (``targets.cores``; "": the compute rates instead)
    core: str = ""
    # instructions the firmware's build executes per instruction of the counted
    # build (``tflm.kernel_counts``): 1 for a build like the project's
    instructions_scale: float = 1.0
    # what the firmware's kernels are compiled for: "speed" (TFLM's -O2) or "size"
    # (-Os), which picks the counted build
    compiled_for: str = "speed"
    sources: tuple[str, ...] = ()  # where its figures come from (documents, pages)

    def memory(self, name: str) -> Memory:
        for m in self.memories:
            if m.name == name:
                return m
        raise KeyError(name)

    def fastest(self, holds: str = "activations") -> Memory:
        """The first (fastest) memory that may hold ``holds``; a parsed target has one
        for activations."""
        return next(m for m in self.memories if holds in m.holds)

    def weights_memory(self) -> Memory:
        """Where the model's constants (the flatbuffer) live: the last memory that may
        hold weights (flash). A target without one cannot say where the weights are
        read from: planning or timing them is refused in one line."""
        held = [m for m in self.memories if "weights" in m.holds]
        if not held:
            raise TargetError(
                f"target {self.name!r}: no memory holds weights, so it cannot say where "
                'the model\'s constants are read from (add "weights" to the holds of '
                "the memory they live in, e.g. flash)"
            )
        return held[-1]

    def rate(self, kind: str, opcode: str = "") -> float:
        """Work per cycle of an operator: its opcode's rate, else its kind's, else
        the default (1.0 if the target gives none)."""
        rates = self.macs_per_cycle
        if opcode in rates:
            return rates[opcode]
        return rates.get(kind, rates.get("default", 1.0))
