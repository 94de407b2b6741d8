/*
 * The exact search of arenaplan's solver: a depth-first search over canonical
 * packings at a fixed capacity. Everything about the problem (sections,
 * overlaps, the placement preorder) is prepared in Python (sections.py, exact.py);
 * this file only searches, plus the first-fit packing of the heuristics
 * (first_fit, at the end). All sizes, offsets and capacities are bytes (int64).
 *
 * Memory is linear in the buffers and sections held: per depth of the search
 * only the candidates it will actually try are kept (those below the lowest
 * top any candidate reaches, see DOMINANCE), and the prefix/suffix maxima of
 * the section totals live in one shared buffer, recomputed when a deeper node
 * has overwritten them.
 *
 * Canonical packings. Buffers are placed one at a time, each at the lowest
 * offset its already-placed time-neighbours allow (its "floor"), and offsets
 * never decrease along a branch (ties broken by preorder position). Any packing
 * can be turned into one of these by letting buffers fall down, so searching
 * them only is complete.
 *
 * Pruning switches (bits of `flags`):
 *   CANONICAL     offsets non-decreasing along a branch, ties by preorder index
 *   SECTIONS      per time section: floor + bytes still to place <= capacity
 *   DOMINANCE     skip a buffer whose floor is at or above the lowest top any
 *                 other unplaced buffer could reach (that one fits beneath)
 *   UNPLACED_FLOOR a section's floor is at least the lowest floor of the
 *                 unplaced buffers live in it
 *   MONOTONIC     a section's floor is at least the current offset
 *   HATLESS       a buffer with no unplaced time-neighbour left has only one
 *                 sensible position: do not try alternatives after it fails
 *   DYNAMIC_ORDER try unplaced buffers by (floor, preorder), not preorder alone
 *   SPLIT         when no unplaced buffer crosses a section boundary any more,
 *                 solve the two sides independently (no backtracking across)
 *
 * Result codes: 0 found, 1 infeasible (space exhausted), 2 node limit,
 * 3 deadline, 4 interrupted.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_native.h"

enum {
  F_CANONICAL = 1, F_SECTIONS = 2, F_DOMINANCE = 4, F_UNPLACED_FLOOR = 8,
  F_MONOTONIC = 16, F_HATLESS = 32, F_DYNAMIC_ORDER = 64, F_SPLIT = 128
};
enum { R_FOUND = 0, R_INFEASIBLE = 1, R_NODES = 2, R_DEADLINE = 3, R_INTERRUPT = 4 };

typedef struct {
  int64_t floor; /* lowest offset the buffer can take now (aligned) */
  int32_t pre;   /* its position in the preorder */
} Cand;

typedef struct {
  /* problem (read-only) */
  int32_t n, n_sections;
  const int64_t *size, *align, *fixed; /* fixed < 0: free */
  const int32_t *sec_lo, *sec_hi;      /* sections [lo, hi) of each buffer */
  const int32_t *ov_start, *ov;        /* CSR: time-neighbours of each buffer */
  const int32_t *sb_start, *sb;        /* CSR: buffers live in each section */
  const int32_t *pre;                  /* preorder: buffer index by position */
  int64_t capacity;
  int flags;
  /* state */
  int64_t *offset;  /* -1: unplaced */
  int64_t *floor_b; /* per buffer: lowest feasible offset */
  int64_t *floor_s; /* per section: top of what is placed there */
  int64_t *total_s; /* per section: bytes of unplaced buffers live there */
  int64_t *best;    /* the solution, when found */
  /* undo logs (stacks) */
  int64_t *log_val;
  int32_t *log_idx;
  int64_t log_top, log_cap;
  int64_t *stamp_s;  /* per section: last stamp that visited it */
  int64_t stamp;
  int64_t *maxes;    /* shared: prefix max [0..S] then suffix max [0..S] of totals */
  int64_t maxes_gen; /* bumped whenever maxes is recomputed (by any node) */
  int32_t *touched;  /* sections whose floor rose in the current placement */
  int32_t *cuts;     /* per boundary t|t+1: unplaced buffers crossing it */
  const int64_t *first, *last; /* each buffer's steps, inclusive */
  const char *heuristic;       /* preorder keys, one letter each (see preorder) */
  int64_t *key_total;          /* scratch: current largest section total per buffer */
  int32_t n_touched;
  int32_t placed;
  /* limits */
  int64_t nodes, node_limit;
  double deadline; /* monotonic seconds; <= 0: none */
  int interrupted;
} Search;

/* Undo log: entries with idx >= 0 restore floor_b[idx]; idx < 0 restore
 * floor_s[-idx-1]. */
static int log_push(Search *s, int32_t idx, int64_t val) {
  if (s->log_top == s->log_cap) {
    int64_t cap = s->log_cap * 2;
    int64_t *v = realloc(s->log_val, (size_t)cap * sizeof(int64_t));
    if (!v) return -1;
    s->log_val = v;
    int32_t *i = realloc(s->log_idx, (size_t)cap * sizeof(int32_t));
    if (!i) return -1;
    s->log_idx = i;
    s->log_cap = cap;
  }
  s->log_val[s->log_top] = val;
  s->log_idx[s->log_top] = idx;
  s->log_top++;
  return 0;
}

static void log_undo(Search *s, int64_t mark) {
  while (s->log_top > mark) {
    s->log_top--;
    int32_t idx = s->log_idx[s->log_top];
    if (idx >= 0)
      s->floor_b[idx] = s->log_val[s->log_top];
    else
      s->floor_s[-idx - 1] = s->log_val[s->log_top];
  }
}

static int cand_cmp(const void *a, const void *b) {
  const Cand *x = a, *y = b;
  if (x->floor != y->floor) return x->floor < y->floor ? -1 : 1;
  return (x->pre > y->pre) - (x->pre < y->pre);
}

/* Place buffer b at offset off: raise neighbours' floors and section floors.
 * Returns -1 on memory failure, else 0; sets *hatless and *fixed_fail. */
static int place(Search *s, int32_t b, int64_t off, int *hatless, int *fixed_fail) {
  int64_t top = off + s->size[b];
  int64_t mark_floors = s->log_top;
  s->offset[b] = off;
  s->placed++;
  *hatless = 1;
  *fixed_fail = 0;
  for (int32_t k = s->ov_start[b]; k < s->ov_start[b + 1]; k++) {
    int32_t o = s->ov[k];
    if (s->offset[o] >= 0) continue;
    *hatless = 0;
    int64_t f = align_up(top, s->align[o]);
    if (s->floor_b[o] >= f) continue;
    if (log_push(s, o, s->floor_b[o])) return -1;
    s->floor_b[o] = f;
    if (s->fixed[o] >= 0 && f > s->fixed[o]) *fixed_fail = 1;
  }
  int64_t end_floors = s->log_top;
  s->n_touched = 0;
  for (int32_t t = s->sec_lo[b]; t < s->sec_hi[b]; t++) {
    if (log_push(s, -t - 1, s->floor_s[t])) return -1;
    if (s->floor_s[t] < top) s->floor_s[t] = top;
    s->total_s[t] -= s->size[b];
  }
  if (s->flags & F_UNPLACED_FLOOR) {
    /* sections of neighbours whose floor rose: floor >= lowest unplaced floor */
    s->stamp++;
    for (int64_t e = mark_floors; e < end_floors; e++) {
      int32_t o = s->log_idx[e];
      if (o < 0) continue;
      for (int32_t t = s->sec_lo[o]; t < s->sec_hi[o]; t++) {
        /* the lowest unplaced floor there is at most o's: nothing to gain */
        if (s->floor_s[t] >= s->floor_b[o] || s->stamp_s[t] == s->stamp) continue;
        s->stamp_s[t] = s->stamp;
        int64_t low = INT64_MAX;
        for (int32_t j = s->sb_start[t]; j < s->sb_start[t + 1] && low > s->floor_s[t]; j++) {
          int32_t u = s->sb[j];
          if (s->offset[u] < 0 && s->floor_b[u] < low) low = s->floor_b[u];
        }
        if (low != INT64_MAX && s->floor_s[t] < low) {
          if (log_push(s, -t - 1, s->floor_s[t])) return -1;
          s->floor_s[t] = low;
          s->touched[s->n_touched++] = t;
        }
      }
    }
  }
  return 0;
}

static void unplace(Search *s, int32_t b, int64_t mark) {
  for (int32_t t = s->sec_lo[b]; t < s->sec_hi[b]; t++) s->total_s[t] += s->size[b];
  log_undo(s, mark);
  s->offset[b] = -1;
  s->placed--;
}

/* Would every section of b still leave room for what must go there, if b were
 * placed at off? Invariant: before a placement, floor + total <= capacity holds
 * in every section; placing b changes floors and totals only in b's sections
 * (then in the sections raised by the unplaced-floor rule, see touched_ok), so
 * this check reads no neighbour and runs before b is placed. The monotonic
 * check needs the largest total anywhere: outside b's sections it comes from
 * the prefix/suffix maxima computed at the node. */
static int precheck(const Search *s, int32_t b, int64_t off, const int64_t *pre,
                    const int64_t *suf) {
  if (!(s->flags & F_SECTIONS)) return 1;
  int32_t lo = s->sec_lo[b], hi = s->sec_hi[b];
  int64_t top = off + s->size[b];
  int64_t widest = pre[lo] > suf[hi] ? pre[lo] : suf[hi];
  for (int32_t t = lo; t < hi; t++) {
    int64_t rest = s->total_s[t] - s->size[b];
    int64_t floor = s->floor_s[t] > top ? s->floor_s[t] : top;
    if (floor + rest > s->capacity) return 0;
    if (rest > widest) widest = rest;
  }
  if ((s->flags & F_MONOTONIC) && widest > 0 && off + widest > s->capacity) return 0;
  return 1;
}

/* After placing: the sections whose floor the unplaced-floor rule raised. */
static int touched_ok(const Search *s) {
  if (!(s->flags & F_SECTIONS)) return 1;
  for (int32_t k = 0; k < s->n_touched; k++) {
    int32_t t = s->touched[k];
    if (s->floor_s[t] + s->total_s[t] > s->capacity) return 0;
  }
  return 1;
}

static int limits_hit(Search *s) {
  if (s->node_limit > 0 && s->nodes >= s->node_limit) return R_NODES;
  if ((s->nodes & 0xff) == 0) { /* every 256 nodes: a node costs up to O(n) at 10^4 buffers */
    if (s->deadline > 0 && now_seconds() > s->deadline) return R_DEADLINE;
    if (PyErr_CheckSignals() != 0) {
      s->interrupted = 1;
      return R_INTERRUPT;
    }
  }
  return -1;
}

/* A part of the problem under search: buffers (in preorder) and its sections. */
typedef struct {
  const int32_t *bufs;
  int32_t n;
  int32_t slo, shi; /* sections [slo, shi) */
} Range;

static int search(Search *s, Range r, int64_t min_off, int32_t min_pre, int32_t depth);

/* The preorder of a piece: like the one of the whole part (made in Python),
 * by the heuristic's keys, each largest first, ties by buffer index; "T" uses
 * the totals still to place, which have fallen since the start. Keys: W width
 * (steps), A area, T largest section total, Z size, C sections, L first step,
 * U last step, O time-neighbours. */
static const Search *g_sort; /* the search being sorted for (single-threaded) */

static int64_t key_of(const Search *s, int32_t b, char letter) {
  int64_t width = s->last[b] - s->first[b] + 1;
  switch (letter) {
    case 'W': return width;
    case 'A': return width * s->size[b];
    case 'T': return s->key_total[b];
    case 'Z': return s->size[b];
    case 'C': return s->sec_hi[b] - s->sec_lo[b];
    case 'L': return s->first[b];
    case 'U': return s->last[b];
    case 'O': return s->ov_start[b + 1] - s->ov_start[b];
    default: return 0;
  }
}

static int preorder_cmp(const void *pa, const void *pb) {
  int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
  for (const char *h = g_sort->heuristic; *h; h++) {
    int64_t x = key_of(g_sort, a, *h), y = key_of(g_sort, b, *h);
    if (x != y) return x > y ? -1 : 1;
  }
  return (a > b) - (a < b);
}

static void preorder_piece(Search *s, int32_t *bufs, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    int32_t b = bufs[i];
    int64_t t_max = 0;
    for (int32_t t = s->sec_lo[b]; t < s->sec_hi[b]; t++)
      if (s->total_s[t] > t_max) t_max = s->total_s[t];
    s->key_total[b] = t_max;
  }
  g_sort = s;
  qsort(bufs, (size_t)n, sizeof(int32_t), preorder_cmp);
}

/* After placing b (at offset off, preorder position p): when some boundary
 * inside r is now crossed by no unplaced buffer, solve the pieces between such
 * cuts one after another (they share nothing, so no backtracking across them);
 * otherwise go on searching r. Cut counts are restored on the way out. */
static int descend(Search *s, Range r, int32_t b, int64_t off, int32_t p, int32_t depth) {
  int32_t lo = s->sec_lo[b], hi = s->sec_hi[b];
  int32_t n_cuts = 0;
  int split = (s->flags & F_SPLIT) != 0;
  if (split)
    for (int32_t t = lo; t + 1 < hi; t++)
      if (--s->cuts[t] == 0 && t + 1 > r.slo && t + 1 < r.shi) n_cuts++;
  int code;
  if (n_cuts == 0) {
    code = search(s, r, off, p, depth + 1);
  } else {
    int32_t unplaced = 0; /* the pieces hold only unplaced buffers */
    for (int32_t i = 0; i < r.n; i++) unplaced += s->offset[r.bufs[i]] < 0;
    int32_t *points = malloc(((size_t)n_cuts + 2) * sizeof(int32_t));
    int32_t *sub = malloc(((size_t)unplaced + 1) * sizeof(int32_t));
    if (!points || !sub) {
      code = -1;
    } else {
      int32_t m = 0;
      points[m++] = r.slo;
      for (int32_t t = lo; t + 1 < hi; t++)
        if (s->cuts[t] == 0 && t + 1 > r.slo && t + 1 < r.shi) points[m++] = t + 1;
      points[m++] = r.shi;
      code = R_FOUND;
      for (int32_t q = 0; q + 1 < m && code == R_FOUND; q++) {
        int32_t n = 0;
        for (int32_t i = 0; i < r.n; i++) {
          int32_t u = r.bufs[i];
          if (s->offset[u] < 0 && s->sec_lo[u] < points[q + 1] && s->sec_hi[u] > points[q])
            sub[n++] = u;
        }
        if (n == 0) continue;
        if (s->heuristic[0]) preorder_piece(s, sub, n);
        Range piece = {sub, n, points[q], points[q + 1]};
        code = search(s, piece, 0, -1, depth + 1);
      }
    }
    free(points);
    free(sub);
  }
  if (split)
    for (int32_t t = lo; t + 1 < hi; t++) s->cuts[t]++;
  return code;
}

/* The candidates a node tries, in the order it tries them: the unplaced
 * buffers of r but those it would skip anyway, by CANONICAL (before
 * (min_off, min_pre)) and DOMINANCE (floor at or above the lowest top any
 * unplaced buffer of r reaches); sorted by (floor, preorder) when
 * DYNAMIC_ORDER, else in preorder. *out is malloc'ed (NULL when none kept);
 * *unplaced counts all unplaced buffers of r. Returns the count kept, -1 on
 * memory failure. Rebuilt from r at every node (O(r.n)), so only the kept
 * candidates of each depth are held: memory stays linear along a branch. */
static int32_t candidates(Search *s, Range r, int64_t min_off, int32_t min_pre, Cand **out,
                          int32_t *unplaced) {
  int64_t min_top = INT64_MAX;
  int32_t left = 0;
  for (int32_t p = 0; p < r.n; p++) {
    int32_t b = r.bufs[p];
    if (s->offset[b] >= 0) continue;
    left++;
    int64_t top = s->floor_b[b] + s->size[b];
    if (top < min_top) min_top = top;
  }
  *unplaced = left;
  *out = NULL;
  if (left == 0) return 0;
  Cand *c = malloc((size_t)left * sizeof(Cand));
  if (!c) return -1;
  int32_t k = 0;
  for (int32_t p = 0; p < r.n; p++) {
    int32_t b = r.bufs[p];
    if (s->offset[b] >= 0) continue;
    int64_t off = s->floor_b[b];
    if ((s->flags & F_CANONICAL) && (off < min_off || (off == min_off && p < min_pre))) continue;
    if ((s->flags & F_DOMINANCE) && off >= min_top) continue;
    c[k].floor = off;
    c[k].pre = p;
    k++;
  }
  if (s->flags & F_DYNAMIC_ORDER) qsort(c, (size_t)k, sizeof(Cand), cand_cmp);
  *out = c;
  return k;
}

/* Prefix and suffix maxima of the section totals over r, into the shared
 * buffer: pre[i] = max total of sections slo..slo+i-1, suf[i] of slo+i.. */
static void compute_maxes(Search *s, Range r) {
  int32_t S = r.shi - r.slo;
  int64_t *pre = s->maxes, *suf = s->maxes + S + 1;
  const int64_t *tot = s->total_s + r.slo;
  pre[0] = 0;
  for (int32_t t = 0; t < S; t++) pre[t + 1] = pre[t] > tot[t] ? pre[t] : tot[t];
  suf[S] = 0;
  for (int32_t t = S - 1; t >= 0; t--) suf[t] = suf[t + 1] > tot[t] ? suf[t + 1] : tot[t];
  s->maxes_gen++;
}

static int search(Search *s, Range r, int64_t min_off, int32_t min_pre, int32_t depth) {
  s->nodes++;
  int hit = limits_hit(s);
  if (hit >= 0) return hit;
  Cand *c;
  int32_t unplaced;
  int32_t k = candidates(s, r, min_off, min_pre, &c, &unplaced);
  if (k < 0) return -1;
  if (unplaced == 0) return R_FOUND;
  int32_t S = r.shi - r.slo;
  int64_t gen = -1; /* the maxes generation this node computed; stale when different */
  int result = R_INFEASIBLE;
  for (int32_t i = 0; i < k; i++) {
    /* a node may try thousands of candidates that fail before any child node
     * (so before limits_hit): look at the clock here too */
    if ((i & 63) == 63 && s->deadline > 0 && now_seconds() > s->deadline) {
      result = R_DEADLINE;
      break;
    }
    int64_t off = c[i].floor;
    int32_t p = c[i].pre, b = r.bufs[p];
    if (s->fixed[b] >= 0 && off != s->fixed[b]) continue;
    if (off + s->size[b] > s->capacity) continue;
    if (s->flags & F_SECTIONS) {
      if (gen != s->maxes_gen) {
        compute_maxes(s, r);
        gen = s->maxes_gen;
      }
      const int64_t *pre = s->maxes - r.slo, *suf = s->maxes + S + 1 - r.slo;
      if (!precheck(s, b, off, pre, suf)) continue;
    }
    int64_t mark = s->log_top;
    int hatless, fixed_fail;
    if (place(s, b, off, &hatless, &fixed_fail)) {
      result = -1;
      break;
    }
    int code = R_INFEASIBLE;
    if (!fixed_fail && touched_ok(s)) code = descend(s, r, b, off, p, depth);
    unplace(s, b, mark);
    if (code == R_FOUND) s->best[b] = off;
    if (code != R_INFEASIBLE) {
      result = code;
      break;
    }
    if (hatless && (s->flags & F_HATLESS)) break;
  }
  free(c);
  return result;
}

/* ---- First-fit packing ---------------------------------------------------
 *
 * Each buffer in turn takes the lowest aligned offset where [off, off + size)
 * meets no placed buffer live at one of its sections. Placed buffers are kept
 * in a segment tree over the sections (node x covers sections [lo_x, hi_x);
 * leaves are single sections):
 *
 *   own[x]    byte ranges of the buffers whose canonical cover includes x
 *             (they are live over all of x)
 *   below[x]  byte ranges of the buffers stored at x or under it
 *
 * both as sorted, disjoint, non-touching half-open ranges (touching ones are
 * merged: no offset can sit between them). The buffers live at some section of
 * a query [l, r) are exactly those in below[c] for the canonical nodes c of
 * [l, r) and in own[a] for their ancestors a, which all lie on the paths from
 * the leaves l and r - 1 to the root:
 *
 *            root                  own[] on the two paths (live across [l, r))
 *          /      \
 *        a          a'             below[] of the canonical nodes c
 *       / \        / \
 *      .   c      c   .            (everything stored under them is inside [l, r))
 *         [l .... r)
 *
 * Read one by one, the own[] lists of ~log(sections) ancestors interleave
 * (a stack of long buffers spread over many levels), and a query would step
 * through every one of them. So the upper levels (depth <= 8) also keep
 * cover[x], the union of own[] of x and its ancestors, merged, rebuilt lazily
 * when an own[] on its path changed; a query reads below[c], cover[] of c's
 * ancestor at that depth and own[] of the few levels between. An insert adds
 * one range to each list on the paths. Cost per buffer: O(log^2) plus the
 * gaps skipped below the answer and the cover[] rebuilt; memory: O(log)
 * ranges per buffer at most, far fewer where ranges merge. */

typedef struct {
  int64_t lo, hi; /* bytes [lo, hi) */
} Span;

typedef struct {
  Span *v; /* sorted by lo, disjoint, not touching */
  int32_t n, cap;
} SpanSet;

/* First index whose hi > x (n if none). */
static int32_t spans_after(const SpanSet *set, int64_t x) {
  int32_t lo = 0, hi = set->n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (set->v[mid].hi > x)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* Add [lo, hi) (lo < hi), merging with the ranges it meets or touches. */
static int spans_add(SpanSet *set, int64_t lo, int64_t hi) {
  int32_t i = 0, b = set->n;
  { /* i: first range with hi >= lo */
    int32_t a = 0;
    while (a < b) {
      int32_t mid = a + (b - a) / 2;
      if (set->v[mid].hi >= lo)
        b = mid;
      else
        a = mid + 1;
    }
    i = a;
  }
  int32_t j = i; /* j: first range with lo > hi */
  while (j < set->n && set->v[j].lo <= hi) j++;
  if (j > i) { /* merge ranges i..j-1 into one */
    if (set->v[i].lo < lo) lo = set->v[i].lo;
    if (set->v[j - 1].hi > hi) hi = set->v[j - 1].hi;
    set->v[i].lo = lo;
    set->v[i].hi = hi;
    memmove(set->v + i + 1, set->v + j, (size_t)(set->n - j) * sizeof(Span));
    set->n -= j - i - 1;
    return 0;
  }
  if (set->n == set->cap) {
    int32_t cap = set->cap ? set->cap * 2 : 4;
    Span *v = realloc(set->v, (size_t)cap * sizeof(Span));
    if (!v) return -1;
    set->v = v;
    set->cap = cap;
  }
  memmove(set->v + i + 1, set->v + i, (size_t)(set->n - i) * sizeof(Span));
  set->v[i].lo = lo;
  set->v[i].hi = hi;
  set->n++;
  return 0;
}

typedef struct {
  int32_t leaves;        /* a power of two >= the number of sections */
  SpanSet *own, *below;  /* per node 1 .. 2 * leaves - 1 */
  /* cover[x]: own[] of x and of all its ancestors, merged; kept for the nodes
   * of depth <= cached_depth only, rebuilt when stale: cover[x] is current
   * when built[x] > mod[y] for every y on the path from the root to x */
  int32_t cached_depth;
  SpanSet *cover;
  int64_t *built, *mod, clock;
  int64_t *seen_own, *seen_cover; /* the query that last took each list */
  SpanSet **sets;                 /* scratch: the lists a query reads */
} Skyline;

static int node_depth(int32_t x) {
  int d = 0;
  while ((x >> d) > 1) d++;
  return d;
}

/* out = a | b, merged (touching ranges joined). */
static int spans_union(SpanSet *out, const SpanSet *a, const SpanSet *b) {
  int32_t need = a->n + b->n;
  if (need > out->cap) {
    Span *v = realloc(out->v, (size_t)(need ? need : 1) * sizeof(Span));
    if (!v) return -1;
    out->v = v;
    out->cap = need ? need : 1;
  }
  int32_t i = 0, j = 0, n = 0;
  while (i < a->n || j < b->n) {
    Span next = (j >= b->n || (i < a->n && a->v[i].lo <= b->v[j].lo)) ? a->v[i++] : b->v[j++];
    if (n > 0 && out->v[n - 1].hi >= next.lo) {
      if (next.hi > out->v[n - 1].hi) out->v[n - 1].hi = next.hi;
    } else {
      out->v[n++] = next;
    }
  }
  out->n = n;
  return 0;
}

/* cover[x] made current (x of depth <= cached_depth), top-down from the root. */
static SpanSet *cover_of(Skyline *k, int32_t x) {
  int32_t path[40];
  int32_t m = 0;
  for (int32_t y = x; y >= 1; y >>= 1) path[m++] = y;
  int64_t newest = 0; /* the latest change of own[] on the path so far */
  static const SpanSet empty = {NULL, 0, 0};
  for (int32_t q = m - 1; q >= 0; q--) {
    int32_t y = path[q];
    if (k->mod[y] > newest) newest = k->mod[y];
    if (k->built[y] > newest) continue;
    const SpanSet *above = y > 1 ? &k->cover[y >> 1] : &empty;
    if (spans_union(&k->cover[y], above, &k->own[y])) return NULL;
    k->built[y] = ++k->clock;
  }
  return &k->cover[x];
}

/* Is node x's range of sections inside [l, r)? */
static int node_inside(const Skyline *k, int32_t x, int32_t l, int32_t r) {
  int32_t depth = 0;
  while ((x >> depth) > 1) depth++;
  int32_t width = k->leaves >> depth;
  int32_t start = (x - (1 << depth)) * width;
  return start >= l && start + width <= r;
}

/* The canonical nodes of [l, r) into out (returns how many), and the nodes on
 * the leaf-to-root paths of l and r - 1 that stick out of [l, r) into path. */
static int32_t cover(const Skyline *k, int32_t l, int32_t r, int32_t *out, int32_t *path,
                     int32_t *n_path) {
  int32_t n = 0, m = 0;
  for (int32_t a = l + k->leaves, b = r + k->leaves; a < b; a >>= 1, b >>= 1) {
    if (a & 1) out[n++] = a++;
    if (b & 1) out[n++] = --b;
  }
  int32_t x = l + k->leaves, y = r - 1 + k->leaves;
  for (; x >= 1; x >>= 1, y >>= 1) {
    if (!node_inside(k, x, l, r)) path[m++] = x;
    if (y != x && !node_inside(k, y, l, r)) path[m++] = y;
  }
  *n_path = m;
  return n;
}

/* Lowest aligned offset whose [off, off + size) meets no range of the sets,
 * found in at most max_probes steps up (each passes one range; < 0: no cap).
 * Past the cap: just above the highest range of the sets (still valid). Every
 * step passes a distinct range end, so with max_probes >= the number of
 * placed buffers the answer is always the lowest fit. */
static int64_t lowest_fit(SpanSet **sets, int32_t n_sets, int64_t size, int64_t align,
                          int64_t max_probes) {
  int64_t off = 0, probes = 0;
  if (size <= 0) return 0;
  for (int moved = 1; moved;) {
    moved = 0;
    for (int32_t q = 0; q < n_sets; q++) {
      const SpanSet *set = sets[q];
      int32_t i = spans_after(set, off);
      while (i < set->n && set->v[i].lo < off + size) {
        if (max_probes >= 0 && probes++ >= max_probes) goto on_top;
        off = align_up(set->v[i].hi, align);
        moved = 1;
        i = spans_after(set, off);
      }
    }
  }
  return off;
on_top:
  for (int32_t q = 0; q < n_sets; q++)
    if (sets[q]->n && sets[q]->v[sets[q]->n - 1].hi > off) off = sets[q]->v[sets[q]->n - 1].hi;
  return align_up(off, align);
}

static int skyline_add(Skyline *k, const int32_t *canon, int32_t n_canon, const int32_t *path,
                       int32_t n_path, int64_t lo, int64_t hi) {
  for (int32_t q = 0; q < n_canon; q++) {
    if (spans_add(&k->own[canon[q]], lo, hi) || spans_add(&k->below[canon[q]], lo, hi)) return -1;
    k->mod[canon[q]] = ++k->clock;
  }
  for (int32_t q = 0; q < n_path; q++)
    if (spans_add(&k->below[path[q]], lo, hi)) return -1;
  return 0;
}

/* The lists a query over the canonical nodes reads: below[c] of each (what
 * lives inside c) and what covers c from above: cover[] of its ancestor at
 * the cached depth (or of c itself) plus own[] of the nodes between; without
 * use_cover, own[] of every ancestor instead. Each list once. Returns the
 * count, -1 on memory failure. */
static int32_t query_sets(Skyline *k, const int32_t *canon, int32_t n_canon, int use_cover) {
  int32_t n = 0;
  int64_t query = ++k->clock; /* stamps the lists taken, so each is read once */
  int floor_depth = use_cover ? k->cached_depth : 0; /* own[] read down to here */
  for (int32_t c = 0; c < n_canon; c++) {
    int32_t x = canon[c], up = x;
    k->sets[n++] = &k->below[x];
    for (int d = node_depth(x); d > floor_depth;) {
      up >>= 1;
      d--;
      if ((d > floor_depth || !use_cover) && k->own[up].n && k->seen_own[up] != query) {
        k->seen_own[up] = query;
        k->sets[n++] = &k->own[up];
      }
    }
    if (!use_cover || k->seen_cover[up] == query) continue;
    k->seen_cover[up] = query;
    SpanSet *cov = cover_of(k, up);
    if (!cov) return -1;
    if (cov->n) k->sets[n++] = cov;
  }
  return n;
}

enum { FF_DONE = 0, FF_CAPACITY = 2, FF_DEADLINE = 3, FF_INTERRUPT = 4, FF_MEMORY = -1 };

/* Fixed buffers (fixed >= 0) first, at their offsets; then the others of
 * `order` (indices; fixed ones skipped), each at its lowest fit. Stops with
 * FF_CAPACITY when one would end above capacity (capacity < 0: none), with
 * FF_DEADLINE past the deadline (checked every 1024 buffers). *placed counts
 * the buffers of `order` placed. Empty buffers take offset 0 (or their fixed
 * one) and block nothing. */
static int first_fit(const int32_t *sec_lo, const int32_t *sec_hi, const int64_t *size,
                     const int64_t *align, const int64_t *fixed, int32_t n, const int32_t *order,
                     int32_t m, int32_t n_sections, int64_t capacity, double deadline,
                     int64_t max_probes, int64_t *offset, int32_t *placed) {
  Skyline k;
  memset(&k, 0, sizeof k);
  int code = FF_DONE;
  k.leaves = 1;
  while (k.leaves < n_sections) k.leaves *= 2;
  k.own = calloc(2 * (size_t)k.leaves, sizeof(SpanSet));
  k.below = calloc(2 * (size_t)k.leaves, sizeof(SpanSet));
  k.cached_depth = node_depth(k.leaves) < 8 ? node_depth(k.leaves) : 8;
  size_t n_cached = (size_t)2 << k.cached_depth; /* nodes 1 .. 2^(depth+1) - 1 */
  k.cover = calloc(n_cached, sizeof(SpanSet));
  k.built = calloc(n_cached, sizeof(int64_t));
  k.mod = calloc(2 * (size_t)k.leaves, sizeof(int64_t));
  k.seen_own = calloc(2 * (size_t)k.leaves, sizeof(int64_t));
  k.seen_cover = calloc(n_cached, sizeof(int64_t));
  k.clock = 0;
  k.sets = malloc(64 * 40 * sizeof(SpanSet *)); /* <= 62 canonical nodes x (2 + depth) */
  int32_t canon[64], path[128];
  *placed = 0;
  if (!k.own || !k.below || !k.cover || !k.built || !k.mod || !k.seen_own || !k.seen_cover ||
      !k.sets) {
    code = FF_MEMORY;
    goto out;
  }
  for (int32_t i = 0; i < n; i++) offset[i] = fixed[i] >= 0 ? fixed[i] : 0;
  for (int32_t i = 0; i < n; i++) {
    if (fixed[i] < 0 || size[i] <= 0) continue;
    int32_t n_path, n_canon = cover(&k, sec_lo[i], sec_hi[i], canon, path, &n_path);
    if (skyline_add(&k, canon, n_canon, path, n_path, fixed[i], fixed[i] + size[i])) {
      code = FF_MEMORY;
      goto out;
    }
  }
  for (int32_t q = 0; q < m; q++) {
    if ((q & 1023) == 1023) {
      if (deadline > 0 && now_seconds() > deadline) {
        code = FF_DEADLINE;
        goto out;
      }
      if (PyErr_CheckSignals() != 0) {
        code = FF_INTERRUPT;
        goto out;
      }
    }
    int32_t i = order[q];
    if (fixed[i] >= 0) continue;
    if (size[i] <= 0) {
      offset[i] = 0;
      (*placed)++;
      continue;
    }
    int32_t n_path, n_canon = cover(&k, sec_lo[i], sec_hi[i], canon, path, &n_path);
    /* without gap search (max_probes 0) only the tops matter: no cover[] */
    int32_t n_sets = query_sets(&k, canon, n_canon, max_probes != 0);
    if (n_sets < 0) {
      code = FF_MEMORY;
      goto out;
    }
    int64_t off = lowest_fit(k.sets, n_sets, size[i], align[i], max_probes);
    if (capacity >= 0 && off + size[i] > capacity) {
      code = FF_CAPACITY;
      goto out;
    }
    offset[i] = off;
    if (skyline_add(&k, canon, n_canon, path, n_path, off, off + size[i])) {
      code = FF_MEMORY;
      goto out;
    }
    (*placed)++;
  }
out:
  if (k.own)
    for (int32_t x = 0; x < 2 * k.leaves; x++) free(k.own[x].v);
  if (k.below)
    for (int32_t x = 0; x < 2 * k.leaves; x++) free(k.below[x].v);
  if (k.cover)
    for (size_t x = 0; x < ((size_t)2 << k.cached_depth); x++) free(k.cover[x].v);
  free(k.own);
  free(k.below);
  free(k.cover);
  free(k.built);
  free(k.mod);
  free(k.seen_own);
  free(k.seen_cover);
  free(k.sets);
  return code;
}

/* ---- Python binding ------------------------------------------------------ */

PyDoc_STRVAR(search_doc,
             "search(size, align, fixed, sec_lo, sec_hi, ov_start, ov, sb_start, sb, pre,\n"
             "       first, last, heuristic, n_sections, capacity, flags, node_limit, seconds)\n"
             "-> (code, offsets bytes (int64), nodes)\n\n"
             "Arrays are native-endian buffers: int64 for size/align/fixed/first/last, int32\n"
             "for the rest. heuristic: preorder keys for pieces after a split (\"\": keep).\n"
             "seconds <= 0 means no deadline; node_limit <= 0 means none.");

static PyObject *py_search(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *o[12];
  int n_sections, flags;
  long long capacity, node_limit;
  double seconds;
  const char *heuristic;
  if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOsiLiLd", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                        &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &heuristic, &n_sections,
                        &capacity, &flags, &node_limit, &seconds))
    return NULL;
  Py_buffer v[12];
  int got = 0;
  PyObject *result = NULL;
  Search s;
  memset(&s, 0, sizeof s);
  Py_ssize_t n;
  if (PyObject_GetBuffer(o[0], &v[0], PyBUF_C_CONTIGUOUS) < 0) return NULL;
  got = 1;
  n = v[0].len / 8;
  if (get_buf(o[1], &v[1], 8, n, "align") < 0) goto done;
  got = 2;
  if (get_buf(o[2], &v[2], 8, n, "fixed") < 0) goto done;
  got = 3;
  if (get_buf(o[3], &v[3], 4, n, "sec_lo") < 0) goto done;
  got = 4;
  if (get_buf(o[4], &v[4], 4, n, "sec_hi") < 0) goto done;
  got = 5;
  if (get_buf(o[5], &v[5], 4, n + 1, "ov_start") < 0) goto done;
  got = 6;
  if (PyObject_GetBuffer(o[6], &v[6], PyBUF_C_CONTIGUOUS) < 0) goto done;
  got = 7;
  if (get_buf(o[7], &v[7], 4, (Py_ssize_t)n_sections + 1, "sb_start") < 0) goto done;
  got = 8;
  if (PyObject_GetBuffer(o[8], &v[8], PyBUF_C_CONTIGUOUS) < 0) goto done;
  got = 9;
  if (get_buf(o[9], &v[9], 4, n, "pre") < 0) goto done;
  got = 10;
  if (get_buf(o[10], &v[10], 8, n, "first") < 0) goto done;
  got = 11;
  if (get_buf(o[11], &v[11], 8, n, "last") < 0) goto done;
  got = 12;
  s.first = v[10].buf;
  s.last = v[11].buf;
  s.heuristic = heuristic;

  s.n = (int32_t)n;
  s.n_sections = n_sections;
  s.size = v[0].buf;
  s.align = v[1].buf;
  s.fixed = v[2].buf;
  s.sec_lo = v[3].buf;
  s.sec_hi = v[4].buf;
  s.ov_start = v[5].buf;
  s.ov = v[6].buf;
  s.sb_start = v[7].buf;
  s.sb = v[8].buf;
  s.pre = v[9].buf;
  s.capacity = capacity;
  s.flags = flags;
  s.node_limit = node_limit;
  s.deadline = seconds > 0 ? now_seconds() + seconds : 0;
  size_t nn = (size_t)(n > 0 ? n : 1);
  s.offset = malloc(nn * sizeof(int64_t));
  s.floor_b = malloc(nn * sizeof(int64_t));
  s.best = calloc(nn, sizeof(int64_t));
  s.floor_s = calloc((size_t)n_sections + 1, sizeof(int64_t));
  s.total_s = calloc((size_t)n_sections + 1, sizeof(int64_t));
  s.log_cap = 1024;
  s.log_val = malloc((size_t)s.log_cap * sizeof(int64_t));
  s.log_idx = malloc((size_t)s.log_cap * sizeof(int32_t));
  s.stamp_s = calloc((size_t)n_sections + 1, sizeof(int64_t));
  s.maxes = malloc(2 * ((size_t)n_sections + 1) * sizeof(int64_t));
  s.touched = malloc(((size_t)n_sections + 1) * sizeof(int32_t));
  s.cuts = calloc((size_t)n_sections + 1, sizeof(int32_t));
  s.key_total = malloc(nn * sizeof(int64_t));
  if (!s.offset || !s.floor_b || !s.best || !s.floor_s || !s.total_s || !s.log_val ||
      !s.log_idx || !s.stamp_s || !s.maxes || !s.touched || !s.cuts || !s.key_total) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t b = 0; b < n; b++) {
    s.offset[b] = -1;
    s.floor_b[b] = s.fixed[b] >= 0 ? s.fixed[b] : 0;
    for (int32_t t = s.sec_lo[b]; t < s.sec_hi[b]; t++) s.total_s[t] += s.size[b];
  }
  for (Py_ssize_t b = 0; b < n; b++)
    for (int32_t t = s.sec_lo[b]; t + 1 < s.sec_hi[b]; t++) s.cuts[t]++;
  Range all = {s.pre, s.n, 0, n_sections};
  int code = search(&s, all, 0, -1, 0);
  if (code == -1) {
    PyErr_NoMemory();
    goto done;
  }
  if (s.interrupted) goto done; /* KeyboardInterrupt is pending */
  result = Py_BuildValue("(iy#L)", code, (const char *)s.best,
                         (Py_ssize_t)(n * (Py_ssize_t)sizeof(int64_t)), (long long)s.nodes);
done:
  for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
  free(s.offset);
  free(s.floor_b);
  free(s.best);
  free(s.floor_s);
  free(s.total_s);
  free(s.log_val);
  free(s.log_idx);
  free(s.stamp_s);
  free(s.maxes);
  free(s.touched);
  free(s.cuts);
  free(s.key_total);
  return result;
}


PyDoc_STRVAR(first_fit_doc,
             "first_fit(sec_lo, sec_hi, size, align, fixed, order, n_sections, capacity, seconds,\n"
             "          max_probes)\n"
             "-> (code, offsets bytes (int64), placed)\n\n"
             "int32 arrays: sec_lo, sec_hi (sections [lo, hi) of each buffer), order; int64:\n"
             "size, align, fixed (-1: free). code 0 done, 2 over capacity, 3 deadline.\n"
             "capacity < 0: none; seconds <= 0: no deadline; max_probes < 0: no cap (past\n"
             "it, a buffer goes above the ranges live with it).");

static PyObject *py_first_fit(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *o[6];
  int n_sections;
  long long capacity, max_probes;
  double seconds;
  if (!PyArg_ParseTuple(args, "OOOOOOiLdL", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                        &n_sections, &capacity, &seconds, &max_probes))
    return NULL;
  Py_buffer v[6];
  int got = 0;
  PyObject *result = NULL;
  int64_t *offset = NULL;
  if (PyObject_GetBuffer(o[2], &v[0], PyBUF_C_CONTIGUOUS) < 0) return NULL;
  got = 1;
  Py_ssize_t n = v[0].len / 8;
  const char *names[] = {"sec_lo", "sec_hi", "align", "fixed"};
  PyObject *objs[] = {o[0], o[1], o[3], o[4]};
  Py_ssize_t items[] = {4, 4, 8, 8};
  for (int q = 0; q < 4; q++) {
    if (get_buf(objs[q], &v[got], items[q], n, names[q]) < 0) goto done;
    got++;
  }
  if (PyObject_GetBuffer(o[5], &v[5], PyBUF_C_CONTIGUOUS) < 0) goto done;
  got = 6;
  const int32_t *sec_lo = v[1].buf, *sec_hi = v[2].buf, *order = v[5].buf;
  Py_ssize_t m = v[5].len / 4;
  for (Py_ssize_t i = 0; i < n; i++)
    if (sec_lo[i] < 0 || sec_hi[i] > n_sections || sec_lo[i] >= sec_hi[i]) {
      PyErr_SetString(PyExc_ValueError, "section range out of bounds");
      goto done;
    }
  for (Py_ssize_t q = 0; q < m; q++)
    if (order[q] < 0 || order[q] >= n) {
      PyErr_SetString(PyExc_ValueError, "order names a buffer out of range");
      goto done;
    }
  offset = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  if (!offset) {
    PyErr_NoMemory();
    goto done;
  }
  int32_t placed = 0;
  double deadline = seconds > 0 ? now_seconds() + seconds : 0;
  int code = first_fit(sec_lo, sec_hi, v[0].buf, v[3].buf, v[4].buf, (int32_t)n, order,
                       (int32_t)m, n_sections, capacity, deadline, max_probes, offset, &placed);
  if (code == FF_MEMORY) {
    PyErr_NoMemory();
    goto done;
  }
  if (code == FF_INTERRUPT) goto done; /* KeyboardInterrupt is pending */
  result = Py_BuildValue("(iy#i)", code, (const char *)offset,
                         (Py_ssize_t)(n * (Py_ssize_t)sizeof(int64_t)), (int)placed);
done:
  for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
  free(offset);
  return result;
}

static PyMethodDef methods[] = {{"search", py_search, METH_VARARGS, search_doc},
                                {"first_fit", py_first_fit, METH_VARARGS, first_fit_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_search",
                                    "Exact canonical search for offset assignment.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__search(void) { return PyModule_Create(&module); }
