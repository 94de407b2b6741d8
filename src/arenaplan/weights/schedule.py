"""``--schedule fetch.h``: the weight fetches of a plan as a C table and routine.

One entry per group copy: its block in the weights blob (``src``, ``bytes``),
where it lands (``memory`` index into the caller's array of memory bases,
``dst`` byte offset there), the operator and group it feeds, the buffer (0, or
0/1 alternating when double-buffered) and when it runs: during the operator
ahead (``ARENAPLAN_FETCH_BEFORE``, the first group of a double-buffered
operator) or during its own operator, before that group is computed
(``ARENAPLAN_FETCH_DURING``). ``bias`` is the offset of the second weight (the
bias) inside the block. Whole-operator copies are not in the table: the model
itself copies them (RESHAPE). The routine copies with ``memcpy`` or with a
user-supplied hook (a DMA start, say) and does no other work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arenaplan.weights.blob import GroupBlock, WeightsBlob

BEFORE, DURING = 1, 0


@dataclass(frozen=True, slots=True)
class Fetch:
    op: int
    group: int
    src: int
    bytes: int
    memory: int
    dst: int
    buffer: int
    when: int
    bias: int
    first: int  # first output channel of the group
    channels: int  # output channels in the group


def group_fetches(
    blocks: Sequence[GroupBlock], memory: int, offset: int, stride: int, double: bool
) -> list[Fetch]:
    """The fetches of one operator's groups into its staging buffer at ``offset``
    (``stride`` bytes per buffer; two buffers when ``double``)."""
    out = []
    for b in blocks:
        buffer = b.group % 2 if double else 0
        when = BEFORE if double and b.group == 0 else DURING
        bias = b.parts[1][0] if len(b.parts) > 1 else 0
        dst = offset + buffer * stride
        out.append(
            Fetch(
                b.op,
                b.group,
                b.offset,
                b.size,
                memory,
                dst,
                buffer,
                when,
                bias,
                b.first,
                b.channels,
            )
        )
    return out


def fetch_header(
    fetches: Sequence[Fetch], blob: WeightsBlob, memories: Sequence[str], source: str
) -> str:
    """The C header: the table, the memory names, and the routines."""
    rows = ",\n".join(
        f"    {{{f.src}u, {f.bytes}u, {f.dst}u, {f.bias}u, {f.op}u, {f.group}u, "
        f"{f.first}u, {f.channels}u, {f.memory}u, {f.buffer}u, {f.when}u}}"
        for f in fetches
    )
    names = ", ".join(f'"{m}"' for m in memories)
    table = (
        f"static const arenaplan_fetch_t arenaplan_fetches[ARENAPLAN_FETCH_COUNT] = {{\n{rows}\n}};"
        if fetches
        else "static const arenaplan_fetch_t *const arenaplan_fetches = 0;"
    )
    return _TEMPLATE.format(
        source=source.replace("*/", "* /"),
        blob=len(blob.data),
        count=len(fetches),
        memories=names or '""',
        n_memories=max(len(memories), 1),
        table=table,
    )


_TEMPLATE = """\
/* Weight fetches planned by arenaplan for {source}.
 * Blob: {blob} bytes (--weights-blob); {count} fetches. Generated: do not edit.
 * Each fetch copies blob[src .. src+bytes) to memories[memory] + dst: the block of
 * output-channel group `group` of operator `op` (filter slice, then the bias slice
 * at `bias` in the block), into buffer `buffer` of its staging buffer, during the
 * operator ahead (ARENAPLAN_FETCH_BEFORE) or during `op` itself before that group
 * is computed (ARENAPLAN_FETCH_DURING). */
#ifndef ARENAPLAN_FETCH_H_
#define ARENAPLAN_FETCH_H_

#include <stdint.h>
#include <string.h>

#define ARENAPLAN_BLOB_BYTES {blob}u
#define ARENAPLAN_FETCH_COUNT {count}
#define ARENAPLAN_FETCH_BEFORE 1
#define ARENAPLAN_FETCH_DURING 0
#define ARENAPLAN_FETCH_MEMORIES {n_memories}

typedef struct {{
  uint32_t src;    /* bytes from the start of the blob */
  uint32_t bytes;  /* bytes copied */
  uint32_t dst;    /* bytes from the start of memories[memory] */
  uint32_t bias;   /* offset of the bias slice in the block (0: none) */
  uint16_t op;     /* operator index (subgraph 0 of the planned model) */
  uint16_t group;  /* the group's number in its operator */
  uint16_t first;  /* its first output channel */
  uint16_t channels; /* its output channels */
  uint8_t memory;  /* index into arenaplan_fetch_memories and the caller's bases */
  uint8_t buffer;  /* 0, or 0/1 for a double-buffered operator */
  uint8_t when;    /* ARENAPLAN_FETCH_BEFORE or ARENAPLAN_FETCH_DURING */
}} arenaplan_fetch_t;

static const char *const arenaplan_fetch_memories[ARENAPLAN_FETCH_MEMORIES] = {{{memories}}};

{table}

/* A copy: memcpy by default, or the caller's (a DMA start; the caller waits for it
 * before the group is computed). */
typedef void (*arenaplan_copy_fn)(void *dst, const void *src, uint32_t bytes, void *user);

static inline void arenaplan_fetch_run(const arenaplan_fetch_t *f, const uint8_t *blob,
                                       uint8_t *const *bases, arenaplan_copy_fn copy,
                                       void *user) {{
  uint8_t *dst = bases[f->memory] + f->dst;
  if (copy) {{
    copy(dst, blob + f->src, f->bytes, user);
  }} else {{
    memcpy(dst, blob + f->src, f->bytes);
  }}
}}

/* Run the fetch of group `group` of operator `op`; returns where the block landed,
 * or 0 if the table has no such fetch. */
static inline uint8_t *arenaplan_fetch_group(uint16_t op, uint16_t group, const uint8_t *blob,
                                             uint8_t *const *bases, arenaplan_copy_fn copy,
                                             void *user) {{
  for (int i = 0; i < ARENAPLAN_FETCH_COUNT; ++i) {{
    const arenaplan_fetch_t *f = &arenaplan_fetches[i];
    if (f->op == op && f->group == group) {{
      arenaplan_fetch_run(f, blob, bases, copy, user);
      return bases[f->memory] + f->dst;
    }}
  }}
  return 0;
}}

#endif  /* ARENAPLAN_FETCH_H_ */
"""
