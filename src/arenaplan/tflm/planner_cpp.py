"""C++ for several activation memories: an offset table, a ``MicroMemoryPlanner``
and TFLM's arena split into one array per memory.

TFLM has one non-persistent arena and asks its memory planner for each buffer's
offset from that arena's start (``AddBuffer`` in tensor order then scratch order,
then ``GetOffsetForBuffer``). The generated ``arenaplan::TablePlanner`` answers
from the table: a buffer in the fast memory gets its offset in the arena; one in
another memory gets the distance from the arena to its place in that memory's
array (address arithmetic), or an error when that distance does not fit TFLM's
``int`` offset (a 64-bit host whose arena lies far from the static arrays).
``AddBuffer`` checks each buffer's size and lifetime against the table, so a model
that does not match refuses to start.

With ``ARENAPLAN_DEFINE_OP_RESOLVER`` it gives the operator resolver the model
needs (``resolver``). With ``ARENAPLAN_SPLIT_ARENA`` it also wires stock TFLM to that table
(``arenaplan::CreateAllocator``). TFLM takes both a memory planner and an arena
allocator of its user's only through ``MicroAllocator::Create(SingleArenaBufferAllocator*,
MicroMemoryPlanner*)`` (its two-arena ``Create`` takes no planner), and puts every
planned buffer at the allocator's overlay start plus the planner's offset.
``arenaplan::SplitArenaAllocator`` is that allocator, split::

    fast array        [ activations and kernel scratch at their planned offsets ]
    other arrays      [ activations, at offsets from the fast array's start     ]
    persistent array  [ TFLM's temporaries ->  |         <- TFLM's persistent data ]
                        kTemporaryBytes          kTailBytes

Its overlay is the fast array (TFLM reserves the plan's height there, checked
against the array). Its persistent data grows down from the persistent array's end
as TFLM's tail does, within the last ``kTailBytes``. Its temporaries (the scratch
requests, the temporary tensors each kernel's Prepare makes, the AllocationInfo
of the plan being committed: nothing lives there once ``AllocateTensors`` is done)
grow up from the array's start, within the first ``kTemporaryBytes``: the two never
meet, so a model that needs more than predicted is refused, never corrupted.
``kTailBytes`` is TFLM's tail for the build profile with the MicroAllocator as
its only object (``tflm.tail``); ``kTemporaryBytes`` the most TFLM's
temporaries hold at once (``temporary_bytes``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from arenaplan.analysis.buffers import arena_items
from arenaplan.errors import UsageError
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.placement.tiers import TierPlacement
from arenaplan.runtime.records import SplitPersistent
from arenaplan.runtime.spec import KernelSet, Profile
from arenaplan.targets.model import Target
from arenaplan.tflm.kernel_sets import REFERENCE, kernel_name
from arenaplan.tflm.resolver import resolver_lines
from arenaplan.tflm.scratch import scratch_requests
from arenaplan.tflm.sizes import tensor_bytes
from arenaplan.tflm.tail import (
    PROFILES,
    SCRATCH_REQUEST,
    BuildProfile,
    planning_bytes,
    tail_estimate,
)

# sizeof(tflite::MicroAllocator), by pointer size: what MicroAllocator::Create puts in
# the persistent array before the model's own data (reference B2).
MICRO_ALLOCATOR_BYTES = {8: 72, 4: 36}
MAX_SCRATCH_PER_OP = 12  # TFLM keeps room for this many more requests while preparing
INT_ARRAY_ALIGN = 4  # alignof(TfLiteIntArray)

# Kernels whose Prepare makes temporary tensors of each of its inputs that are
# present, in order, then of each output (checked one by one in TFLM's reference
# kernels and in a trace of TFLM's own build on every shared model). The others
# with their own order are in ``_temporary_tensors``; any other kernel is assumed to
# follow this rule, and the size says it is an estimate.
INPUTS_THEN_OUTPUTS = frozenset(
    {
        "ADD", "AVERAGE_POOL_2D", "CAST", "DEQUANTIZE", "DIV", "FULLY_CONNECTED",
        "MAX_POOL_2D", "MUL", "QUANTIZE", "RESHAPE", "SOFTMAX", "STRIDED_SLICE", "SVDF",
        "UNIDIRECTIONAL_SEQUENCE_LSTM", "SignalEnergy", "SignalFftAutoScale",
        "SignalFilterBank", "SignalFilterBankLog", "SignalFilterBankSpectralSubtraction",
        "SignalFilterBankSquareRoot", "SignalPCAN", "SignalRfft", "SignalWindow",
    }
)  # fmt: skip


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _up(x: int, a: int) -> int:
    return -(-x // a) * a


def _up16(x: int) -> int:
    return _up(x, 16)


def _profile(profile: str | Profile | BuildProfile) -> BuildProfile:
    if isinstance(profile, BuildProfile):
        return profile
    return PROFILES[profile if isinstance(profile, str) else profile.name]


# ---- the persistent array: TFLM's temporaries, then its persistent data ----------------


def _temporary_tensors(op: Operator) -> tuple[list[int], bool]:
    """The tensors ``op``'s Prepare makes temporary TfLiteTensors of, in its order
    (an absent optional input makes none), and whether that order was checked."""
    ins = [t for t in op.inputs if t >= 0]
    outs = [t for t in op.outputs if t >= 0]
    name = op.opcode
    if name in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(op.inputs) >= 2 and outs:
        # ConvPrepare: output, input, filter; then CalculateOpDataConv: input, filter,
        # bias, output (the same for DepthwiseConvPrepare)
        head = [outs[0], op.inputs[0], op.inputs[1]]
        return head + [t for t in op.inputs[:3] if t >= 0] + [outs[0]], True
    if name == "CONCATENATION" and ins and outs:  # input 0, output, then every input
        return [ins[0], outs[0], *ins], True
    if name in ("MAXIMUM", "MINIMUM"):  # their Prepare makes none
        return [], True
    return ins + outs, name in INPUTS_THEN_OUTPUTS


def _temporary_end(used: int, sg: Subgraph, tensors: list[int], p: BuildProfile) -> int:
    """Where the temporaries end after making ``tensors`` from ``used`` on: each a
    TfLiteTensor, and for a quantised one its TfLiteAffineQuantization and zero-point
    array (``AllocateTempTfLiteTensor``), each at its alignment."""
    for t in tensors:
        used = _up(used, p.pointer) + p.tflite_tensor
        q = sg.tensors[t].quantization
        if q is not None and q.scales and q.zero_points:
            used = _up(used, p.pointer) + p.affine_quantization
            used = _up(used, INT_ARRAY_ALIGN) + 4 + 4 * len(q.scales)
    return used


def temporary_bytes(
    model: Model, profile: str | Profile | BuildProfile, kernels: KernelSet | str = REFERENCE
) -> tuple[int, tuple[str, ...]]:
    """The most TFLM's temporaries hold at once (bytes, a multiple of 16), and the
    kernels whose share is an estimate. While an operator prepares: the scratch
    requests so far plus room for 12 more, then its temporary tensors (freed only
    when it is done). While TFLM commits its plan: the requests, the subgraph
    offsets and one AllocationInfo per tensor and request (``planning_bytes``; the
    TablePlanner keeps no working arrays). ``kernels``: the build's kernels (their
    scratch requests; the temporary tensors of CMSIS-NN's kernels follow the same
    orders, measured on every shared model in the arm32-cmsis_nn build)."""
    p = _profile(profile)
    kernels = kernel_name(kernels)
    requests = scratch_requests(model, tensor_bytes(model), p.pointer, kernels)
    most = planning_bytes(len(requests), model.tensor_count, 0, len(model.subgraphs), p.pointer)
    estimated: dict[str, None] = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            before = sum(1 for r in requests if (r.subgraph, r.op) < (sg.index, op.index))
            tensors, checked = _temporary_tensors(op)
            if not checked:
                estimated[op.opcode] = None
            start = (before + MAX_SCRATCH_PER_OP) * SCRATCH_REQUEST[p.pointer]
            most = max(most, _temporary_end(start, sg, tensors, p))
    notes = tuple(f"the temporary tensors of {name} in Prepare" for name in estimated)
    return _up16(most), notes


def split_persistent(
    model: Model, profile: str | Profile | BuildProfile, kernels: KernelSet | str = REFERENCE
) -> SplitPersistent:
    """The persistent array of the split arena for ``profile`` running ``kernels``."""
    p = _profile(profile)
    kernels = kernel_name(kernels)
    alone = dataclasses.replace(p, allocator_objects=(MICRO_ALLOCATOR_BYTES[p.pointer],))
    tail = tail_estimate(model, alone, kernels=kernels)
    temporary, notes = temporary_bytes(model, p, kernels)
    unmodelled = (*tail.unmodelled, *notes)
    return SplitPersistent(temporary, _up16(tail.bytes), unmodelled, kernels)


def persistent_home(
    target: Target, placement: TierPlacement, need: int, chosen: str | None = None
) -> str:
    """The memory of the persistent array: ``chosen``, else the first memory after
    the fastest that may hold persistent data and has ``need`` bytes beside the
    activations placed there, else the fastest (where one arena would put it)."""
    fast = target.fastest()
    if chosen is not None:
        memory = target.memory(chosen)
        if "persistent" not in memory.holds:
            raise UsageError(f"memory {chosen!r} of {target.name} may not hold persistent data")
        return memory.name
    for m in target.memories:
        room = m.capacity - placement.heights.get(m.name, 0)
        if m.name != fast.name and "persistent" in m.holds and room >= need:
            return m.name
    return fast.name


# ---- the arrays and the header ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SplitArray:
    """One array of the split arena: its C name, the memory (linker section) it
    lives in, its bytes (16-aligned), and what it holds ("activations": the plan's
    height in that memory; "persistent": TFLM's temporaries and persistent data)."""

    name: str
    memory: str
    bytes: int
    holds: str


def _memories(placement: TierPlacement, target: Target) -> list[str]:
    """The activation memories of the plan, fastest first: the fastest always (TFLM's
    overlay, the scratch buffers), the others where something was placed."""
    used = [m.name for m in target.memories if m.name in placement.heights]
    return [used[0]] + [m for m in used[1:] if placement.heights[m] > 0]


def split_arrays(
    model: Model,
    placement: TierPlacement,
    target: Target,
    profile: str | Profile | BuildProfile | None = None,
    persistent_memory: str | None = None,
) -> tuple[SplitArray, ...]:
    """The arrays of the split arena: one per activation memory, fastest first, then
    the persistent array (sized for ``profile``, default the target's, in
    ``persistent_memory``, default ``persistent_home``'s choice)."""
    memories = _memories(placement, target)
    arrays = [
        SplitArray(f"arenaplan_{_ident(m)}", m, placement.heights[m], "activations")
        for m in memories
    ]
    need = split_persistent(model, profile or target.profile, placement.kernels).bytes
    home = persistent_home(target, placement, need, persistent_memory)
    return (*arrays, SplitArray(f"arenaplan_persistent_{_ident(home)}", home, need, "persistent"))


def planner_source(
    model: Model,
    placement: TierPlacement,
    target: Target,
    name: str,
    profile: str | Profile | BuildProfile | None = None,
    persistent_memory: str | None = None,
) -> str:
    """A self-contained C++ header (needs TFLM's micro_memory_planner.h; with
    ``ARENAPLAN_SPLIT_ARENA``, micro_allocator.h). ``profile`` sizes the persistent
    array (default: the target's); ``persistent_memory`` is where it goes."""
    profile = profile or target.profile

    items = arena_items(model, placement.pointer_size, placement.kernels)
    memories = _memories(placement, target)
    rows = []
    for key, b in zip(items.tensors, items.tensor_buffers, strict=True):
        mem = memories.index(placement.memory_of[key])
        rows.append((b.size, b.first, b.last, mem, placement.offsets[key], f"tensor {key[1]}"))
    for k, b in enumerate(items.scratch_buffers):
        rows.append((b.size, b.first, b.last, 0, placement.scratch_offsets[k], f"scratch {k}"))
    split = split_arrays(model, placement, target, profile, persistent_memory)
    fast_array, others, persistent_array = split[0], split[1:-1], split[-1]
    arrays = [line for a in others for line in _array(a, target)]
    table = "\n".join(
        f"    {{{s}, {f}, {last}, {m}, {o}}},  /* {what}: {memories[m]} */"
        for s, f, last, m, o, what in rows
    )
    fast = fast_array.bytes
    persistent = split_persistent(model, profile, placement.kernels)
    wiring = _split_arena(fast_array, persistent_array, persistent, profile, target)
    profile_name = profile if isinstance(profile, str) else profile.name
    needs = ", ".join(str(placement.heights[m]) for m in memories)
    names = ", ".join(f'"{m}"' for m in memories)
    listed = "\n".join(f"    {{{a.name}, sizeof({a.name})}}," for a in others)
    listed = listed or "    {nullptr, 0},"  # C has no empty array
    resolver = "\n".join(resolver_lines(model))
    return f"""/* Generated by arenaplan for {name}: a MicroMemoryPlanner over several memories.
   Memories, fastest first: {", ".join(memories)}. The first is TFLM's non-persistent
   arena itself ({fast} bytes of plan in it); define the other arrays in their sections.
   With ARENAPLAN_SPLIT_ARENA defined, stock TFLM runs the plan with activations in one
   array per memory and persistent data in a third (arenaplan::CreateAllocator); with
   ARENAPLAN_DEFINE_OP_RESOLVER, arenaplan::RegisterOps adds the model's operators.
   Sized for the kernels {placement.kernels} (their scratch requests are in the table)
   and TFLM build profile {profile_name}; a build with other kernels asks for other
   scratch buffers, and the planner refuses it. */
#pragma once
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include "tensorflow/lite/micro/memory_planner/micro_memory_planner.h"
#include "tensorflow/lite/micro/micro_log.h"

#define ARENAPLAN_KERNELS "{placement.kernels}"
#define ARENAPLAN_PROFILE "{profile_name}"

{chr(10).join(arrays)}

namespace arenaplan {{

/* An array given to the planner: its first byte and its size in bytes. */
struct Array {{
  uint8_t* data;
  size_t bytes;
}};

static const int kMemoryCount = {len(memories)};
static const char* const kMemoryNames[] = {{{names}}};
/* Bytes of the plan in each memory's array, fastest first: each array given to the
   planner must hold at least this many (checked before the first buffer). */
static const size_t kNeededBytes[] = {{{needs}}};
/* The arrays of the memories after the fastest, as this header defines them. */
static const Array kOtherArrays[] = {{
{listed}
}};

struct PlannedBuffer {{
  int32_t size;    /* bytes, rounded up to 16 as TFLM asks */
  int32_t first;   /* first scope, inclusive */
  int32_t last;    /* last scope, inclusive */
  int32_t memory;  /* index into the memories above */
  int32_t offset;  /* bytes from the start of that memory's array */
}};

static const PlannedBuffer kPlan[] = {{
{table}
}};
static const int kPlanCount = {len(rows)};
static const size_t kFastBytes = {fast};

class TablePlanner : public tflite::MicroMemoryPlanner {{
 public:
  /* arena, arena_bytes: TFLM's non-persistent arena (its overlay), the fast memory's
     array, and its size; others: the other memories' arrays in the table's order
     (kMemoryCount - 1 of them; by default this header's). An array smaller than the
     plan needs there is refused before the first buffer: nothing runs past its end. */
  TablePlanner(uint8_t* arena, size_t arena_bytes, const Array* others = kOtherArrays)
      : arena_(arena), arena_bytes_(arena_bytes), others_(others) {{}}
  TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used) override {{
    if (count_ == 0 && !ArraysHoldThePlan()) return kTfLiteError;
    if (count_ >= kPlanCount) return kTfLiteError;
    const PlannedBuffer& b = kPlan[count_];
    if (size > b.size || first_time_used != b.first || last_time_used != b.last) {{
      return kTfLiteError; /* the model is not the one this table was made for */
    }}
    ++count_;
    return kTfLiteOk;
  }}
  TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used,
                         int offline_offset) override {{
    (void)offline_offset;
    return AddBuffer(size, first_time_used, last_time_used);
  }}
  size_t GetMaximumMemorySize() override {{ return kFastBytes; }}
  int GetBufferCount() override {{ return count_; }}
  TfLiteStatus GetOffsetForBuffer(int buffer_index, int* offset) override {{
    if (buffer_index < 0 || buffer_index >= count_) return kTfLiteError;
    const PlannedBuffer& b = kPlan[buffer_index];
    uint8_t* base = b.memory == 0 ? arena_ : others_[b.memory - 1].data;
    /* TFLM puts the buffer at arena + *offset, an int: the distance must fit one
       (it may not on a 64-bit host, e.g. a heap arena far from the arrays). */
    const intptr_t distance = static_cast<intptr_t>(
        reinterpret_cast<uintptr_t>(base + b.offset) - reinterpret_cast<uintptr_t>(arena_));
    if (distance < INT_MIN || distance > INT_MAX) return kTfLiteError;
    *offset = static_cast<int>(distance);
    return kTfLiteOk;
  }}
  bool preserves_all_tensors() const override {{ return false; }}

 private:
  bool ArraysHoldThePlan() const {{
    for (int m = 0; m < kMemoryCount; ++m) {{
      const size_t given = m == 0 ? arena_bytes_ : others_[m - 1].bytes;
      if (given < kNeededBytes[m]) {{
        MicroPrintf("arenaplan: the %s array has %u bytes, the plan needs %u", kMemoryNames[m],
                    static_cast<unsigned>(given), static_cast<unsigned>(kNeededBytes[m]));
        return false;
      }}
    }}
    return true;
  }}

  uint8_t* arena_;
  size_t arena_bytes_;
  const Array* others_;
  int count_ = 0;
}};

}}  // namespace arenaplan

{resolver}
{wiring}"""


def _array(array: SplitArray, target: Target) -> list[str]:
    """A 16-aligned array in its memory's linker section: defined with
    ARENAPLAN_DEFINE_ARENAS (in exactly one source file), else declared. C has no
    empty array: an array of 0 bytes is given 16."""
    section = target.memory(array.memory).section
    attr = f', section("{section}")' if section else ""
    size = max(array.bytes, 16)
    return [
        "#ifdef ARENAPLAN_DEFINE_ARENAS  /* in exactly one source file */",
        f"__attribute__((aligned(16){attr}))",
        f"uint8_t {array.name}[{size}];  /* {array.memory} */",
        "#else",
        f"extern uint8_t {array.name}[{size}];",
        "#endif",
    ]


def _split_arena(
    fast: SplitArray,
    home: SplitArray,
    persistent: SplitPersistent,
    profile: str | BuildProfile,
    target: Target,
) -> str:
    """The ARENAPLAN_SPLIT_ARENA part: the fast and persistent arrays, the allocator
    and the function that wires them to TFLM."""
    arrays = [*_array(fast, target), *_array(home, target)]
    profile = profile if isinstance(profile, str) else profile.name
    if not persistent.unmodelled:
        exact = f"exact for TFLM build profile {profile} with the kernels {persistent.kernels}"
    else:
        said = "; ".join(persistent.unmodelled).replace("*/", "* /")
        exact = (
            f"an ESTIMATE for build profile {profile}: it leaves out {said}; a model that "
            "needs more is refused at AllocateTensors"
        )
    return f"""
#ifdef ARENAPLAN_SPLIT_ARENA
/* TFLM's arena split into arrays: activations and kernel scratch in {fast.name}
   ({fast.memory}, kFastBytes of plan) and the other memories' arrays above; in
   {home.name} ({home.memory}), TFLM's temporaries while AllocateTensors runs
   (kTemporaryBytes, from its start) and its persistent data (kTailBytes, at its end).
   Sizes {exact}. */
#include <new>
#include "tensorflow/lite/micro/arena_allocator/single_arena_buffer_allocator.h"
#include "tensorflow/lite/micro/micro_allocator.h"
#include "tensorflow/lite/micro/micro_log.h"

{chr(10).join(arrays)}

namespace arenaplan {{

static const size_t kTemporaryBytes = {persistent.temporary};
static const size_t kTailBytes = {persistent.tail};
/* The fast array (the first memory's) and the persistent array, as kOtherArrays
   gives the others. */
static const Array kFastArray = {{{fast.name}, sizeof({fast.name})}};
static const Array kPersistentArray = {{{home.name}, sizeof({home.name})}};

/* TFLM's arena allocator with its parts in separate places. Temporaries: the base
   allocator over [persistent, persistent + temporary_bytes). Persistent data: down
   from persistent + temporary_bytes + tail_bytes to the temporaries, as TFLM's
   tail. Overlay (where TFLM puts the planned offsets): the fast array; TFLM
   reserves the plan's height there once its plan is made, refused if the array is
   smaller. */
class SplitArenaAllocator : public tflite::SingleArenaBufferAllocator {{
 public:
  SplitArenaAllocator(uint8_t* persistent, size_t temporary_bytes, size_t tail_bytes,
                      uint8_t* fast, size_t fast_bytes)
      : tflite::SingleArenaBufferAllocator(persistent, temporary_bytes),
        floor_(persistent + temporary_bytes),
        end_(persistent + temporary_bytes + tail_bytes),
        tail_(end_),
        fast_(fast),
        fast_bytes_(fast_bytes) {{}}
  uint8_t* AllocatePersistentBuffer(size_t size, size_t alignment) override {{
    const uintptr_t top = reinterpret_cast<uintptr_t>(tail_);
    const uintptr_t floor = reinterpret_cast<uintptr_t>(floor_);
    if (size > top - floor || (top - size) - (top - size) % alignment < floor) {{
      MicroPrintf("arenaplan: TFLM's persistent data needs more than its %u bytes",
                  static_cast<unsigned>(end_ - floor_));
      return nullptr;
    }}
    tail_ = reinterpret_cast<uint8_t*>((top - size) - (top - size) % alignment);
    return tail_;
  }}
  size_t GetPersistentUsedBytes() const override {{ return end_ - tail_; }}
  uint8_t* GetOverlayMemoryAddress() const override {{ return fast_; }}
  TfLiteStatus ReserveNonPersistentOverlayMemory(size_t size, size_t alignment) override {{
    if (reinterpret_cast<uintptr_t>(fast_) % alignment != 0 || size > fast_bytes_) {{
      MicroPrintf("arenaplan: the plan needs %u bytes of the fast array, which has %u",
                  static_cast<unsigned>(size), static_cast<unsigned>(fast_bytes_));
      return kTfLiteError;
    }}
    reserved_ = size;
    return tflite::SingleArenaBufferAllocator::ReserveNonPersistentOverlayMemory(0, alignment);
  }}
  /* The overlay reserved in the fast array, plus the temporaries held now. */
  size_t GetNonPersistentUsedBytes() const override {{
    return reserved_ + tflite::SingleArenaBufferAllocator::GetNonPersistentUsedBytes();
  }}

 private:
  uint8_t* floor_;  /* the lowest byte persistent data may take */
  uint8_t* end_;    /* one past the persistent data's highest byte */
  uint8_t* tail_;   /* the persistent data's lowest byte so far */
  uint8_t* fast_;
  size_t fast_bytes_;
  size_t reserved_ = 0;
}};

/* The MicroAllocator over the arrays, for tflite::MicroInterpreter(model, resolver,
   allocator). Each call starts again over the same arrays: an interpreter made from
   an earlier call must no longer be used. */
inline tflite::MicroAllocator* CreateAllocator() {{
  alignas(SplitArenaAllocator) static uint8_t allocator[sizeof(SplitArenaAllocator)];
  alignas(TablePlanner) static uint8_t planner[sizeof(TablePlanner)];
  SplitArenaAllocator* a = new (allocator) SplitArenaAllocator(
      {home.name}, kTemporaryBytes, kTailBytes, {fast.name}, kFastBytes);
  TablePlanner* p = new (planner) TablePlanner({fast.name}, sizeof({fast.name}));
  return tflite::MicroAllocator::Create(a, p);
}}

}}  // namespace arenaplan
#endif  /* ARENAPLAN_SPLIT_ARENA */
"""
