/*
 * The tiling rebuild's merging rules (tiling.py says what each one does and
 * why), at native speed: buffers are merged into blocks, rectangles whose
 * inside is fixed, until no rule applies. What comes back is the blocks left
 * and, for each buffer, the block holding it and its offset inside that block,
 * so a packing of the blocks unfolds to buffer offsets by one addition. The
 * packing is found and checked in Python (the exact search, then the
 * validator), as for any other phase.
 *
 * Rules are tried in a fixed order and the first that merges restarts the
 * round; inside a rule, blocks are visited in the order they were made and
 * groups by their key, so the same problem always gives the same blocks.
 * Steps are inclusive; sizes and offsets are bytes (int64).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_native.h"

#define DP_BITS ((int64_t)1 << 22) /* largest subset-sum target, in units of the gcd */
#define DP_ITEMS 64                /* most blocks a subset-sum looks at */

enum { LEAF, STACK, CHAIN, PINWHEEL };
enum { BY_NONE, BY_EARLIEST, BY_LATEST, BY_SHORTEST }; /* the last rule's order */

typedef struct {
  int64_t first, last, size;
  int32_t kind, part0, nparts; /* parts: parts[part0 ..]; a leaf's part0 is its buffer */
} Node;

typedef struct {
  Node *node;
  int32_t n, cap;
  int32_t *parts, nparts, cap_parts;
  uint8_t *live;
  int32_t *stamp, clock; /* stamp[k] == clock: node k merged in this rule's pass */
  int nomem;
} Pool;

typedef struct {
  int64_t k1, k2;
  int32_t pos, node; /* pos: the node's place in the live order (ties) */
} Keyed;

static int grow(void **p, int32_t *cap, int32_t need, size_t item) {
  if (need <= *cap) return 0;
  int32_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * item);
  if (!q) return -1;
  *p = q, *cap = c;
  return 0;
}

/* A new node over parts[0 .. m) (not live); -1 when out of memory. */
static int32_t add_node(Pool *P, int kind, int64_t first, int64_t last, int64_t size,
                        const int32_t *parts, int32_t m) {
  int32_t cap = P->cap;
  if (grow((void **)&P->node, &cap, P->n + 1, sizeof(Node)) < 0) return P->nomem = 1, -1;
  if (cap != P->cap) {
    uint8_t *live = realloc(P->live, (size_t)cap);
    int32_t *stamp = realloc(P->stamp, (size_t)cap * sizeof(int32_t));
    if (live) P->live = live;
    if (stamp) P->stamp = stamp;
    if (!live || !stamp) return P->nomem = 1, -1;
    P->cap = cap;
  }
  if (grow((void **)&P->parts, &P->cap_parts, P->nparts + m, sizeof(int32_t)) < 0)
    return P->nomem = 1, -1;
  if (m) memcpy(&P->parts[P->nparts], parts, (size_t)m * sizeof(int32_t));
  P->node[P->n] = (Node){first, last, size, kind, P->nparts, m};
  P->live[P->n] = 0, P->stamp[P->n] = 0;
  P->nparts += m;
  return P->n++;
}

/* Parts leave the pool, node k joins it (last in the order of making). */
static void merge(Pool *P, const int32_t *parts, int32_t m, int32_t k) {
  for (int32_t i = 0; i < m; i++) P->live[parts[i]] = 0, P->stamp[parts[i]] = P->clock;
  if (k >= 0) P->live[k] = 1;
}

/* A stack of parts (the first lowest), or the one part itself. */
static int32_t stacked(Pool *P, const int32_t *parts, int32_t m) {
  if (m == 1) return parts[0];
  int64_t size = 0;
  for (int32_t i = 0; i < m; i++) size += P->node[parts[i]].size;
  const Node *a = &P->node[parts[0]];
  return add_node(P, STACK, a->first, a->last, size, parts, m);
}

static int32_t chained(Pool *P, int32_t a, int32_t b) {
  int32_t two[2] = {a, b};
  const Node *x = &P->node[a], *y = &P->node[b];
  return add_node(P, CHAIN, x->first, y->last, x->size, two, 2);
}

static int used(const Pool *P, int32_t k) { return P->stamp[k] == P->clock; }

static int by_key(const void *a, const void *b) {
  const Keyed *x = a, *y = b;
  if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
  if (x->k2 != y->k2) return x->k2 < y->k2 ? -1 : 1;
  return x->pos - y->pos;
}

enum { K_END_SIZE, K_START_SIZE, K_END, K_START, K_LAST, K_FIRST, K_LIFE, K_LATEST, K_SHORTEST };

static void key_of(const Node *b, int which, int64_t *k1, int64_t *k2) {
  switch (which) {
    case K_END_SIZE: *k1 = b->last + 1, *k2 = b->size; break;
    case K_START_SIZE: *k1 = b->first, *k2 = b->size; break;
    case K_END: *k1 = b->last + 1, *k2 = 0; break;
    case K_START: *k1 = b->first, *k2 = 0; break;
    case K_LAST: *k1 = b->last, *k2 = 0; break;
    case K_FIRST: *k1 = b->first, *k2 = 0; break;
    case K_LIFE: *k1 = b->first, *k2 = b->last; break;
    case K_LATEST: *k1 = -b->last, *k2 = -b->first; break;
    default: *k1 = b->last - b->first, *k2 = b->first; break; /* then last: the same */
  }
}

/* nodes[0 .. m) (in order) sorted by key into out (stable): groups are runs. */
static void sort_keyed(const Pool *P, const int32_t *nodes, int32_t m, int which, Keyed *out) {
  for (int32_t i = 0; i < m; i++) {
    key_of(&P->node[nodes[i]], which, &out[i].k1, &out[i].k2);
    out[i].pos = i, out[i].node = nodes[i];
  }
  qsort(out, (size_t)m, sizeof(Keyed), by_key);
}

/* The live nodes in the order they were made. */
static int32_t live_nodes(const Pool *P, int32_t *out) {
  int32_t m = 0;
  for (int32_t k = 0; k < P->n; k++)
    if (P->live[k]) out[m++] = k;
  return m;
}

/* End of the run of equal keys starting at i. */
static int32_t run_end(const Keyed *s, int32_t i, int32_t m) {
  int32_t j = i + 1;
  while (j < m && s[j].k1 == s[i].k1 && s[j].k2 == s[i].k2) j++;
  return j;
}

/* The first place in s[a .. b) whose key is not below (k1, k2) (strictly above
 * it when above is set): s is sorted by key. */
static int32_t bound_of(const Keyed *s, int32_t a, int32_t b, int64_t k1, int64_t k2, int above) {
  while (a < b) {
    int32_t mid = (a + b) / 2;
    int below = s[mid].k1 < k1 || (s[mid].k1 == k1 && s[mid].k2 < k2);
    if (below || (above && s[mid].k1 == k1 && s[mid].k2 == k2)) a = mid + 1;
    else b = mid;
  }
  return a;
}

/* The run with key (k1, k2) in s: [*lo, *hi), empty when none (two binary
 * searches: runs along a long cut are long). */
static void find_run(const Keyed *s, int32_t m, int64_t k1, int64_t k2, int32_t *lo, int32_t *hi) {
  *lo = bound_of(s, 0, m, k1, k2, 0);
  *hi = *lo < m && s[*lo].k1 == k1 && s[*lo].k2 == k2 ? bound_of(s, *lo, m, k1, k2, 1) : *lo;
}

typedef struct {
  int32_t lo, hi; /* [lo, hi) in a view */
} Run;

enum { R_TOP, R_BOTTOM, R_LEFT, R_RIGHT, N_RUNS }; /* a node's runs (node_runs) */

/* The live nodes sorted by one key (ties in the order of making), kept up to
 * date between rules: nodes merged since leave, nodes made since are sorted
 * among themselves and merged in (a round changes few nodes; sorting all the
 * live nodes again for every rule was most of the time). */
typedef struct {
  Keyed *s;
  int32_t m, made; /* made: the pool's node count when last brought up to date */
} View;

enum { N_VIEWS = K_LIFE + 1 }; /* the keys a view is kept for */

typedef struct {
  Pool *P;
  int32_t *live, nlive, made; /* the live nodes in the order of making (live_list) */
  const Keyed *s1, *s2, *s3; /* the views a rule reads (sorted live nodes) */
  View view[N_VIEWS];
  Keyed *fresh, *s4;         /* scratch: nodes new to a view; groups; a subset sorted */
  int32_t *ids;              /* scratch: node lists */
  Run *runs;                 /* per node: its tops, bottoms, lefts, rights (node_runs) */
  int32_t cap_runs, runs_made; /* nodes; the pool's node count when runs were found */
  uint64_t *bits;            /* scratch: subset-sum layers */
  size_t nbits;
  const int64_t *banned;     /* (boundary, size) pairs the chain rule does not join */
  Py_ssize_t nbanned;
  int64_t *joined;           /* (boundary, size) pairs the chain rule joined, in order */
  int32_t njoined, cap_joined; /* pairs */
} Work;

/* The live nodes sorted by key which (stable in the order of making), and
 * their count. */
static const Keyed *sorted_view(Work *w, int which, int32_t *m) {
  const Pool *P = w->P;
  View *v = &w->view[which];
  int32_t kept = 0, nn = 0;
  for (int32_t i = 0; i < v->m; i++)
    if (P->live[v->s[i].node]) v->s[kept++] = v->s[i];
  for (int32_t k = v->made; k < P->n; k++)
    if (P->live[k]) {
      key_of(&P->node[k], which, &w->fresh[nn].k1, &w->fresh[nn].k2);
      w->fresh[nn].pos = k, w->fresh[nn++].node = k; /* pos: the order of making */
    }
  v->made = P->n;
  qsort(w->fresh, (size_t)nn, sizeof(Keyed), by_key);
  int32_t i = kept - 1, j = nn - 1; /* merged from the top: fresh ones after old on ties */
  for (int32_t out = kept + nn - 1; j >= 0; out--)
    v->s[out] = i >= 0 && by_key(&v->s[i], &w->fresh[j]) > 0 ? v->s[i--] : w->fresh[j--];
  *m = v->m = kept + nn;
  return v->s;
}

/* The live nodes, sorted by key a into s1 and by key b into s2; their count. */
static int32_t two_views(Work *w, int a, int b) {
  int32_t m;
  w->s1 = sorted_view(w, a, &m);
  w->s2 = sorted_view(w, b, &m);
  return m;
}

/* w->live brought up to date, as a view is (merged nodes leave, new ones are
 * appended: they were made last). */
static void live_list(Work *w) {
  const Pool *P = w->P;
  int32_t kept = 0;
  for (int32_t i = 0; i < w->nlive; i++)
    if (P->live[w->live[i]]) w->live[kept++] = w->live[i];
  for (int32_t k = w->made; k < P->n; k++)
    if (P->live[k]) w->live[kept++] = k;
  w->nlive = kept, w->made = P->n;
}

/* For each entry of by (sorted by k1), the run of in (sorted by k1) whose k1 is
 * the entry's plus shift, into out[node * N_RUNS]: one walk along both. */
static void runs_at(const Keyed *by, const Keyed *in, int32_t m, int64_t shift, Run *out) {
  Run r = {0, 0};
  for (int32_t i = 0; i < m; i++) {
    int64_t k = by[i].k1 + shift;
    if (i == 0 || by[i].k1 != by[i - 1].k1) {
      while (r.lo < m && in[r.lo].k1 < k) r.lo++;
      for (r.hi = r.lo; r.hi < m && in[r.hi].k1 == k;) r.hi++;
    }
    out[(size_t)by[i].node * N_RUNS] = r;
  }
}

/* Each live node's runs in s1 (by last) and s2 (by first): tops start with it,
 * bottoms end with it, lefts end just before it starts, rights start just after
 * it ends (what finding each run by two binary searches gave, in O(m)). */
static int node_runs(Work *w, int32_t m) {
  if (w->runs_made == w->P->n) return 0; /* no node made since: the same live nodes */
  if (grow((void **)&w->runs, &w->cap_runs, w->P->n, N_RUNS * sizeof(Run)) < 0)
    return w->P->nomem = 1, -1;
  w->runs_made = w->P->n;
  runs_at(w->s2, w->s2, m, 0, w->runs + R_TOP);
  runs_at(w->s1, w->s1, m, 0, w->runs + R_BOTTOM);
  runs_at(w->s2, w->s1, m, -1, w->runs + R_LEFT);
  runs_at(w->s1, w->s2, m, 1, w->runs + R_RIGHT);
  return 0;
}

static Run run_of(const Work *w, int32_t node, int which) {
  return w->runs[(size_t)node * N_RUNS + which];
}

/* The blocks in s3 (by life) whose first step is that of node's run which
 * (R_TOP: the node's first step; R_RIGHT: the step after its last) and whose
 * last step is last. s3 and s2 are sorted by first step alike, so a run of s2
 * sits at the same places in s3: only the last steps in it are searched. */
static Run life_run(const Work *w, int32_t node, int which, int64_t last) {
  Run r = run_of(w, node, which);
  if (r.lo == r.hi) return r;
  int64_t first = w->s3[r.lo].k1;
  int32_t lo = bound_of(w->s3, r.lo, r.hi, first, last, 0);
  return (Run){lo, bound_of(w->s3, lo, r.hi, first, last, 1)};
}

/* What the pinwheel rules read: s1 by last, s2 by first, s3 by life, the live
 * list and each node's runs; the live count, or -1 when out of memory. */
static int32_t pinwheel_views(Work *w) {
  int32_t m = two_views(w, K_LAST, K_FIRST);
  w->s3 = sorted_view(w, K_LIFE, &m);
  live_list(w);
  return node_runs(w, m) < 0 ? -1 : m;
}

static int is_banned(const Work *w, int64_t boundary, int64_t size) {
  for (Py_ssize_t i = 0; i < w->nbanned; i++)
    if (w->banned[2 * i] == boundary && w->banned[2 * i + 1] == size) return 1;
  return 0;
}

static int chain_rule(Work *w) {
  Pool *P = w->P;
  int32_t m = two_views(w, K_END_SIZE, K_START_SIZE);
  int merged = 0;
  for (int32_t i = 0, ie, j = 0; i < m && !P->nomem; i = ie) { /* both by key: one walk */
    ie = run_end(w->s1, i, m);
    int64_t k1 = w->s1[i].k1, k2 = w->s1[i].k2;
    while (j < m && (w->s2[j].k1 < k1 || (w->s2[j].k1 == k1 && w->s2[j].k2 < k2))) j++;
    int32_t je = j;
    while (je < m && w->s2[je].k1 == k1 && w->s2[je].k2 == k2) je++;
    int32_t two[2] = {w->s1[i].node, j < m ? w->s2[j].node : -1};
    if (ie - i != 1 || je - j != 1 || used(P, two[0]) || used(P, two[1])) continue;
    if (is_banned(w, w->s1[i].k1, w->s1[i].k2)) continue;
    int32_t k = chained(P, two[0], two[1]);
    if (k < 0) return merged;
    if (grow((void **)&w->joined, &w->cap_joined, 2 * (w->njoined + 1), sizeof(int64_t)) < 0)
      return P->nomem = 1, merged;
    w->joined[2 * w->njoined] = w->s1[i].k1, w->joined[2 * w->njoined++ + 1] = w->s1[i].k2;
    merge(P, two, 2, k);
    merged = 1;
  }
  return merged;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a;
}

/* dst = (src | src << s) over words bits (the top word masked by top); dst may
 * be src (words are written from the top, after the lower ones they read). */
static void shift_or(uint64_t *dst, const uint64_t *src, size_t words, int64_t s, uint64_t top) {
  size_t ws = (size_t)(s / 64);
  int bs = (int)(s % 64);
  for (size_t i = words; i-- > 0;) {
    uint64_t v = 0;
    if (i >= ws) {
      v = src[i - ws] << bs;
      if (bs && i > ws) v |= src[i - ws - 1] >> (64 - bs);
    }
    dst[i] = src[i] | v;
  }
  dst[words - 1] &= top;
}

static int bit(const uint64_t *layer, int64_t k) { return (int)((layer[k / 64] >> (k % 64)) & 1); }

/* At least two of items (first DP_ITEMS of those no larger than target) whose
 * sizes add up to target, into out (the later items first); their count, or 0. */
static int32_t subset_sum(Work *w, const int32_t *items, int32_t n, int64_t target, int32_t *out) {
  const Pool *P = w->P;
  int32_t it[DP_ITEMS], m = 0;
  int64_t sum = 0, g = 0;
  for (int32_t i = 0; i < n && m < DP_ITEMS; i++)
    if (P->node[items[i]].size <= target) it[m++] = items[i];
  for (int32_t i = 0; i < m; i++) sum += P->node[it[i]].size, g = gcd64(g, P->node[it[i]].size);
  if (m < 2 || sum < target || target % g || target / g > DP_BITS) return 0;
  int64_t goal = target / g;
  size_t words = (size_t)(goal / 64 + 1);
  uint64_t top = (goal % 64) == 63 ? ~(uint64_t)0 : (((uint64_t)1 << (goal % 64 + 1)) - 1);
  size_t need = words * (size_t)(m + 1);
  if (need > w->nbits) {
    uint64_t *b = realloc(w->bits, need * sizeof(uint64_t));
    if (!b) return w->P->nomem = 1, 0;
    w->bits = b, w->nbits = need;
  }
  memset(w->bits, 0, words * sizeof(uint64_t)); /* first in one layer, in place: reachable? */
  w->bits[0] = 1;
  int reachable = 0;
  int64_t most = 0; /* the largest sum reachable so far: the words above it are 0 */
  for (int32_t i = 0; i < m && !reachable; i++) {
    most += P->node[it[i]].size / g;
    size_t upto = most < goal ? (size_t)(most / 64 + 1) : words;
    shift_or(w->bits, w->bits, upto, P->node[it[i]].size / g, upto == words ? top : ~(uint64_t)0);
    reachable = bit(w->bits, goal);
  }
  if (!reachable) return 0;
  memset(w->bits, 0, words * sizeof(uint64_t)); /* then a layer an item, to choose */
  w->bits[0] = 1;
  for (int32_t i = 0; i < m; i++)
    shift_or(w->bits + words * (i + 1), w->bits + words * i, words, P->node[it[i]].size / g, top);
  if (!bit(w->bits + words * m, goal)) return 0;
  int32_t c = 0;
  int64_t rest = goal;
  for (int32_t i = m; i >= 1; i--)
    if (!bit(w->bits + words * (i - 1), rest)) out[c++] = it[i - 1], rest -= P->node[it[i - 1]].size / g;
  return c >= 2 && rest == 0 ? c : 0;
}

/* One side of a boundary: blocks x of side matched by a subset of one group of
 * other (grouped by key which, groups of two or more). */
static int match_side(Work *w, const int32_t *side, int32_t ns, const int32_t *other, int32_t no,
                      int which, Keyed *s) {
  Pool *P = w->P;
  int merged = 0;
  sort_keyed(P, other, no, which, s);
  int32_t found[DP_ITEMS], free_ids[DP_ITEMS * 4];
  for (int32_t q = 0; q < ns; q++) {
    int32_t x = side[q];
    if (used(P, x)) continue;
    for (int32_t i = 0; i < no;) {
      int32_t e = run_end(s, i, no);
      if (e - i > 1) {
        int64_t total = 0;
        for (int32_t r = i; r < e; r++) total += P->node[s[r].node].size;
        if (total >= P->node[x].size) {
          int32_t nf = 0, *fr = e - i <= DP_ITEMS * 4 ? free_ids : malloc((size_t)(e - i) * 4);
          if (!fr) return P->nomem = 1, merged;
          for (int32_t r = i; r < e; r++)
            if (!used(P, s[r].node)) fr[nf++] = s[r].node;
          int32_t c = nf > 1 ? subset_sum(w, fr, nf, P->node[x].size, found) : 0;
          if (fr != free_ids) free(fr);
          if (c) {
            int32_t k = stacked(P, found, c);
            if (k < 0) return merged;
            merge(P, found, c, k);
            merged = 1;
            break;
          }
        }
      }
      i = e;
    }
  }
  return merged;
}

static int stack_to_match_rule(Work *w) {
  Pool *P = w->P;
  int32_t m = two_views(w, K_END, K_START);
  int merged = 0;
  for (int32_t i = 0, j = 0; i < m && !P->nomem;) {
    int32_t ie = run_end(w->s1, i, m);
    while (j < m && w->s2[j].k1 < w->s1[i].k1) j = run_end(w->s2, j, m);
    if (j < m && w->s2[j].k1 == w->s1[i].k1) {
      int32_t je = run_end(w->s2, j, m), ne = ie - i, ns = je - j;
      int32_t *ends = w->ids, *starts = w->ids + ne;
      for (int32_t r = 0; r < ne; r++) ends[r] = w->s1[i + r].node;
      for (int32_t r = 0; r < ns; r++) starts[r] = w->s2[j + r].node;
      merged |= match_side(w, ends, ne, starts, ns, K_LAST, w->s4);
      merged |= match_side(w, starts, ns, ends, ne, K_FIRST, w->s4);
    }
    i = ie;
  }
  return merged;
}

enum { P_BOTTOM, P_RIGHT, P_TOP, P_LEFT, P_CENTRE }; /* a pinwheel's roles */

/* Sizes by role: right reaches the centre's top; both sides reach the same height. */
static int sizes_fit(const int64_t s[5]) {
  return s[P_RIGHT] == s[P_BOTTOM] + s[P_CENTRE] &&
         s[P_BOTTOM] + s[P_LEFT] == s[P_RIGHT] + s[P_TOP];
}

static int pinwheel_sizes(const Node *b, const Node *r, const Node *t, const Node *l,
                          const Node *c) {
  const int64_t s[5] = {b->size, r->size, t->size, l->size, c->size};
  return sizes_fit(s);
}

/* (bottom, right, top, left, centre) of a pinwheel around centre into five. */
static int pinwheel_around(Work *w, int32_t centre, int32_t five[5]) {
  const Pool *P = w->P;
  const Node *c = &P->node[centre];
  /* s1: by last, s2: by first, s3: by life */
  Run bottoms = run_of(w, centre, R_BOTTOM), tops = run_of(w, centre, R_TOP);
  Run lefts = run_of(w, centre, R_LEFT), rights = run_of(w, centre, R_RIGHT);
  if (lefts.lo == lefts.hi || rights.lo == rights.hi) return 0; /* none next to it */
  for (int32_t bi = bottoms.lo; bi < bottoms.hi; bi++) {
    const Node *bottom = &P->node[w->s1[bi].node];
    if (bottom->first >= c->first) continue;
    Run ls = life_run(w, w->s1[bi].node, R_TOP, c->first - 1);
    for (int32_t li = ls.lo; li < ls.hi; li++) {
      for (int32_t ti = tops.lo; ti < tops.hi; ti++) {
        const Node *top = &P->node[w->s2[ti].node];
        /* sizes_fit's two relations give left = centre + top: no right fits else */
        if (top->last <= c->last || P->node[w->s3[li].node].size != c->size + top->size) continue;
        Run rs = life_run(w, centre, R_RIGHT, top->last);
        for (int32_t ri = rs.lo; ri < rs.hi; ri++) {
          int32_t f[5] = {w->s1[bi].node, w->s3[ri].node, w->s2[ti].node, w->s3[li].node, centre};
          int distinct = 1;
          for (int a = 0; a < 5; a++)
            for (int b = a + 1; b < 5; b++) distinct &= f[a] != f[b];
          if (distinct && pinwheel_sizes(&P->node[f[0]], &P->node[f[1]], &P->node[f[2]],
                                         &P->node[f[3]], &P->node[f[4]])) {
            memcpy(five, f, sizeof f);
            return 1;
          }
        }
      }
    }
  }
  return 0;
}

static int pinwheel_rule(Work *w) {
  Pool *P = w->P;
  int32_t m = pinwheel_views(w);
  if (m < 0) return 0;
  int merged = 0;
  for (int32_t q = 0; q < m; q++) {
    int32_t five[5];
    if (used(P, w->live[q]) || !pinwheel_around(w, w->live[q], five)) continue;
    int clash = 0;
    for (int a = 0; a < 5; a++) clash |= used(P, five[a]);
    if (clash) continue;
    const Node *bottom = &P->node[five[0]], *top = &P->node[five[2]], *left = &P->node[five[3]];
    int32_t k = add_node(P, PINWHEEL, bottom->first, top->last, bottom->size + left->size, five, 5);
    if (k < 0) return merged;
    merge(P, five, 5, k);
    merged = 1;
  }
  return merged;
}

static int group_match_rule(Work *w) {
  Pool *P = w->P;
  int32_t m;
  w->s1 = sorted_view(w, K_LIFE, &m);
  /* s4: one entry a lifetime (its run's start in s1), by (last, first) */
  int32_t g = 0;
  for (int32_t i = 0; i < m; i = run_end(w->s1, i, m)) {
    const Node *b = &P->node[w->s1[i].node];
    w->s4[g++] = (Keyed){b->last, b->first, i, w->s1[i].node};
  }
  qsort(w->s4, (size_t)g, sizeof(Keyed), by_key);
  for (int32_t i = 0; i < m;) {
    int32_t ie = run_end(w->s1, i, m), lo, hi;
    find_run(w->s4, g, w->s1[i].k1 - 1, INT64_MIN, &lo, &hi); /* first entry with that last */
    for (int32_t q = lo; q < g && w->s4[q].k1 == w->s1[i].k1 - 1; q++) {
      int32_t bi = w->s4[q].pos, be = run_end(w->s1, bi, m);
      if ((be - bi) + (ie - i) < 3) continue;
      int64_t before = 0, after = 0;
      for (int32_t r = bi; r < be; r++) before += P->node[w->s1[r].node].size;
      for (int32_t r = i; r < ie; r++) after += P->node[w->s1[r].node].size;
      if (before != after) continue;
      int32_t *parts = w->ids, n = 0;
      for (int32_t r = bi; r < be; r++) parts[n++] = w->s1[r].node;
      for (int32_t r = i; r < ie; r++) parts[n++] = w->s1[r].node;
      int32_t a = stacked(P, parts, be - bi);
      int32_t b = a < 0 ? -1 : stacked(P, parts + (be - bi), ie - i);
      int32_t k = b < 0 ? -1 : chained(P, a, b);
      if (k < 0) return 0;
      merge(P, parts, n, k);
      return 1;
    }
    i = ie;
  }
  return 0;
}

/* The missing member's size from the other four (four[missing] is unused), when
 * they are distinct and their sizes agree; 0 when not. */
static int64_t fifth_size(const Pool *P, const int32_t four[5], int missing) {
  for (int a = 0; a < 5; a++)
    for (int b = a + 1; b < 5; b++)
      if (a != missing && b != missing && four[a] == four[b]) return 0;
  int64_t s[5];
  for (int r = 0; r < 5; r++) s[r] = r == missing ? 0 : P->node[four[r]].size;
  switch (missing) { /* from one relation; sizes_fit checks the other */
    case P_CENTRE: s[P_CENTRE] = s[P_RIGHT] - s[P_BOTTOM]; break;
    case P_BOTTOM: s[P_BOTTOM] = s[P_RIGHT] - s[P_CENTRE]; break;
    case P_LEFT: s[P_LEFT] = s[P_RIGHT] + s[P_TOP] - s[P_BOTTOM]; break;
    case P_RIGHT: s[P_RIGHT] = s[P_BOTTOM] + s[P_CENTRE]; break;
    default: s[P_TOP] = s[P_BOTTOM] + s[P_LEFT] - s[P_RIGHT];
  }
  return s[missing] > 0 && sizes_fit(s) ? s[missing] : 0;
}

/* Four members of a pinwheel in four (four[missing] unused): two or more free
 * blocks of the missing member's lifetime adding up to its size, stacked. The
 * lifetime: the first step of from's run which (life_run), last step l. */
static int complete(Work *w, const int32_t four[5], int missing, int32_t from, int which,
                    int64_t l) {
  Pool *P = w->P;
  for (int r = 0; r < 5; r++)
    if (r != missing && used(P, four[r])) return 0;
  int64_t need = fifth_size(P, four, missing);
  if (!need) return 0;
  int32_t nf = 0, found[DP_ITEMS];
  Run same = life_run(w, from, which, l);
  for (int32_t r = same.lo; r < same.hi; r++)
    if (!used(P, w->s3[r].node)) w->ids[nf++] = w->s3[r].node;
  int32_t c = nf > 1 ? subset_sum(w, w->ids, nf, need, found) : 0;
  if (!c) return 0;
  int32_t k = stacked(P, found, c);
  if (k >= 0) merge(P, found, c, k);
  return k >= 0;
}

/* Missing bottom or left, then right or top, around each centre; missing centre
 * last, from each bottom (tiling_rules._pinwheel_complete, loop for loop). Times:
 * left [f, a-1], bottom [f, c-1], centre [a, c-1], top [a, l], right [c, l]. */
static int pinwheel_complete_rule(Work *w) {
  Pool *P = w->P;
  int32_t m = pinwheel_views(w); /* s1: by last, s2: by first, s3: by life */
  if (m < 0) return 0;
  int merged = 0;
  for (int32_t q = 0; q < m && !P->nomem; q++) {
    int32_t four[5], centre = four[P_CENTRE] = w->live[q];
    int64_t a = P->node[centre].first, c = P->node[centre].last + 1;
    Run tops = run_of(w, centre, R_TOP);       /* first a, last >= c */
    Run bottoms = run_of(w, centre, R_BOTTOM); /* last c - 1, first < a */
    Run lefts = run_of(w, centre, R_LEFT);     /* last a - 1 */
    Run rights = run_of(w, centre, R_RIGHT);   /* first c */
    for (int32_t ti = tops.lo; ti < tops.hi && rights.lo < rights.hi; ti++) {
      const Node *top = &P->node[four[P_TOP] = w->s2[ti].node];
      if (top->last < c) continue;
      Run x = life_run(w, centre, R_RIGHT, top->last);
      for (int32_t ri = x.lo; ri < x.hi; ri++) {
        four[P_RIGHT] = w->s3[ri].node;
        for (int32_t li = lefts.lo; li < lefts.hi; li++) {
          four[P_LEFT] = w->s1[li].node;
          merged |= complete(w, four, P_BOTTOM, four[P_LEFT], R_TOP, c - 1);
        }
        for (int32_t bi = bottoms.lo; bi < bottoms.hi; bi++) {
          if (P->node[four[P_BOTTOM] = w->s1[bi].node].first >= a) continue;
          merged |= complete(w, four, P_LEFT, four[P_BOTTOM], R_TOP, a - 1);
        }
      }
    }
    for (int32_t bi = bottoms.lo; bi < bottoms.hi && lefts.lo < lefts.hi; bi++) {
      if (P->node[four[P_BOTTOM] = w->s1[bi].node].first >= a) continue;
      Run x = life_run(w, four[P_BOTTOM], R_TOP, a - 1);
      for (int32_t li = x.lo; li < x.hi; li++) {
        four[P_LEFT] = w->s3[li].node;
        for (int32_t ti = tops.lo; ti < tops.hi; ti++) {
          const Node *top = &P->node[four[P_TOP] = w->s2[ti].node];
          if (top->last < c) continue;
          merged |= complete(w, four, P_RIGHT, centre, R_RIGHT, top->last);
        }
        for (int32_t ri = rights.lo; ri < rights.hi; ri++) {
          four[P_RIGHT] = w->s2[ri].node;
          merged |= complete(w, four, P_TOP, centre, R_TOP, P->node[four[P_RIGHT]].last);
        }
      }
    }
  }
  for (int32_t q = 0; q < m && !P->nomem; q++) { /* missing centre, from each bottom */
    int32_t four[5], bottom = four[P_BOTTOM] = w->live[q];
    int64_t c = P->node[bottom].last + 1;
    Run lefts = run_of(w, bottom, R_TOP), rights = run_of(w, bottom, R_RIGHT); /* first f; c */
    for (int32_t li = lefts.lo; li < lefts.hi && rights.lo < rights.hi; li++) {
      if (P->node[four[P_LEFT] = w->s2[li].node].last + 1 >= c) continue;
      for (int32_t ri = rights.lo; ri < rights.hi; ri++) {
        four[P_RIGHT] = w->s2[ri].node;
        Run tops = life_run(w, four[P_LEFT], R_RIGHT, P->node[four[P_RIGHT]].last);
        for (int32_t ti = tops.lo; ti < tops.hi; ti++) {
          four[P_TOP] = w->s3[ti].node;
          merged |= complete(w, four, P_CENTRE, four[P_LEFT], R_RIGHT, c - 1);
        }
      }
    }
  }
  return merged;
}

static int stack_lifetime_rule(Work *w, int order) {
  Pool *P = w->P;
  int32_t m;
  w->s1 = sorted_view(w, K_LIFE, &m);
  /* s4: one entry a lifetime of two or more blocks, by the order's key; in these
     entries pos is the group's first place in s1 and node its number of blocks */
  int32_t g = 0;
  for (int32_t i = 0, e; i < m; i = e) {
    e = run_end(w->s1, i, m);
    if (e - i < 2) continue;
    Keyed k = {0, 0, i, e - i};
    key_of(&P->node[w->s1[i].node], order == BY_EARLIEST   ? K_LIFE
                                    : order == BY_LATEST ? K_LATEST
                                                         : K_SHORTEST,
           &k.k1, &k.k2);
    w->s4[g++] = k;
  }
  if (!g) return 0;
  qsort(w->s4, (size_t)g, sizeof(Keyed), by_key); /* keys differ: lifetimes differ */
  int32_t at = w->s4[0].pos, n = w->s4[0].node;
  for (int32_t r = 0; r < n; r++) w->ids[r] = w->s1[at + r].node;
  int32_t k = stacked(P, w->ids, n);
  if (k < 0) return 0;
  merge(P, w->ids, n, k);
  return 1;
}

/* Rules until none applies: 0 done, 1 deadline, -1 out of memory. */
static int reduce(Work *w, int order, int match, double deadline) {
  Pool *P = w->P;
  for (;;) {
    if (deadline > 0 && now_seconds() > deadline) return 1;
    int merged = 0;
    for (int rule = 0; rule < 6 && !merged && !P->nomem; rule++) {
      P->clock++;
      switch (rule) {
        case 0: merged = chain_rule(w); break;
        case 1: merged = match && stack_to_match_rule(w); break;
        case 2: merged = pinwheel_rule(w); break;
        case 3: merged = group_match_rule(w); break;
        case 4: merged = pinwheel_complete_rule(w); break;
        default: merged = order != BY_NONE && stack_lifetime_rule(w, order);
      }
    }
    if (P->nomem) return -1;
    if (!merged) return 0;
  }
}

/* Each buffer's block (its place among the blocks left) and offset in it: an
 * explicit stack, as chains of chains nest as deep as the buffers. */
static int unfold(const Pool *P, const int32_t *blocks, int32_t nb, int32_t *root, int64_t *rel) {
  int32_t cap = 64, top = 0;
  int32_t *node = malloc((size_t)cap * sizeof(int32_t));
  int64_t *base = malloc((size_t)cap * sizeof(int64_t));
  if (!node || !base) return free(node), free(base), -1;
  for (int32_t j = 0; j < nb; j++) {
    node[top] = blocks[j], base[top++] = 0;
    while (top) {
      int32_t k = node[--top];
      int64_t at = base[top];
      const Node *b = &P->node[k];
      if (b->kind == LEAF) {
        root[b->part0] = j, rel[b->part0] = at;
        continue;
      }
      if (top + b->nparts > cap) {
        while (top + b->nparts > cap) cap *= 2;
        int32_t *n2 = realloc(node, (size_t)cap * sizeof(int32_t));
        if (n2) node = n2;
        int64_t *b2 = realloc(base, (size_t)cap * sizeof(int64_t));
        if (b2) base = b2;
        if (!n2 || !b2) return free(node), free(base), -1;
      }
      const int32_t *p = &P->parts[b->part0];
      int64_t up = at;
      for (int32_t i = 0; i < b->nparts; i++, top++) {
        node[top] = p[i], base[top] = at;
        if (b->kind == STACK) base[top] = up, up += P->node[p[i]].size;
      }
      if (b->kind == PINWHEEL) { /* bottom, right at the base; top above right; left, centre above bottom */
        base[top - 3] = at + P->node[p[1]].size;
        base[top - 2] = base[top - 1] = at + P->node[p[0]].size;
      }
    }
  }
  free(node), free(base);
  return 0;
}

static PyObject *blocks_result(const Pool *P, const int32_t *blocks, int32_t nb, const int32_t *root,
                               const int64_t *rel, Py_ssize_t n, const Work *w) {
  int64_t *col = malloc((size_t)(nb ? nb : 1) * 3 * sizeof(int64_t));
  if (!col) return PyErr_NoMemory();
  for (int32_t j = 0; j < nb; j++) {
    const Node *b = &P->node[blocks[j]];
    col[j] = b->first, col[nb + j] = b->last, col[2 * nb + j] = b->size;
  }
  Py_ssize_t wb = (Py_ssize_t)nb * 8;
  Py_ssize_t nj = (Py_ssize_t)w->njoined * 16;
  PyObject *r = Py_BuildValue("(y#y#y#y#y#y#)", (const char *)col, wb, (const char *)(col + nb), wb,
                              (const char *)(col + 2 * nb), wb, (const char *)root, n * 4,
                              (const char *)rel, n * 8, nj ? (const char *)w->joined : "", nj);
  free(col);
  return r;
}

static PyObject *py_reduce(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *o[4] = {NULL, NULL, NULL, NULL};
  int order, match = 1;
  double seconds;
  if (!PyArg_ParseTuple(args, "OOOid|pO", &o[0], &o[1], &o[2], &order, &seconds, &match, &o[3]))
    return NULL;
  if (order < BY_NONE || order > BY_SHORTEST) {
    PyErr_SetString(PyExc_ValueError, "reduce: order is 0 (none) to 3");
    return NULL;
  }
  Py_buffer v[4];
  if (PyObject_GetBuffer(o[0], &v[0], PyBUF_C_CONTIGUOUS) < 0) return NULL;
  Py_ssize_t n = v[0].len / 8;
  int got = 1;
  PyObject *result = NULL;
  Pool P = {0};
  Work w = {&P};
  int32_t *root = NULL;
  int64_t *rel = NULL;
  if (get_buf(o[1], &v[1], 8, n, "last") < 0) goto done;
  got = 2;
  if (get_buf(o[2], &v[2], 8, n, "size") < 0) goto done;
  got = 3;
  if (o[3] && o[3] != Py_None) {
    if (PyObject_GetBuffer(o[3], &v[3], PyBUF_C_CONTIGUOUS) < 0) goto done;
    got = 4;
    if (v[3].len % 16) {
      PyErr_SetString(PyExc_ValueError, "reduce: banned is int64 (boundary, size) pairs");
      goto done;
    }
    w.banned = v[3].buf, w.nbanned = v[3].len / 16;
  }
  const int64_t *first = v[0].buf, *last = v[1].buf, *size = v[2].buf;
  size_t items = (size_t)(n ? n : 1);
  w.live = malloc(items * sizeof(int32_t)), w.ids = malloc(2 * items * sizeof(int32_t));
  int views = 1;
  for (int i = 0; i < N_VIEWS; i++) views &= !!(w.view[i].s = malloc(items * sizeof(Keyed)));
  w.fresh = malloc(items * sizeof(Keyed)), w.s4 = malloc(items * sizeof(Keyed));
  root = malloc(items * sizeof(int32_t)), rel = calloc(items, sizeof(int64_t));
  if (n > INT32_MAX / 4 || !w.live || !w.ids || !views || !w.fresh || !w.s4 || !root || !rel) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    if (size[i] < 0 || last[i] < first[i]) {
      PyErr_SetString(PyExc_ValueError, "reduce: a size below 0 or a last step before the first");
      goto done;
    }
    if (add_node(&P, LEAF, first[i], last[i], size[i], NULL, 0) < 0) break;
    P.node[i].part0 = (int32_t)i; /* a leaf's part0 is its buffer */
    P.live[i] = size[i] > 0;
    root[i] = -1;
  }
  double deadline = seconds > 0 ? now_seconds() + seconds : 0;
  int code = P.nomem ? -1 : reduce(&w, order, match, deadline);
  if (code < 0) {
    PyErr_NoMemory();
    goto done;
  }
  if (code == 1) {
    result = Py_NewRef(Py_None);
    goto done;
  }
  int32_t nb = live_nodes(&P, w.live);
  if (unfold(&P, w.live, nb, root, rel) < 0) {
    PyErr_NoMemory();
    goto done;
  }
  result = blocks_result(&P, w.live, nb, root, rel, n, &w);
done:
  for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
  free(P.node), free(P.parts), free(P.live), free(P.stamp);
  free(w.live), free(w.ids), free(w.fresh), free(w.s4), free(w.bits);
  for (int i = 0; i < N_VIEWS; i++) free(w.view[i].s);
  free(w.joined), free(w.runs);
  free(root), free(rel);
  return result;
}

PyDoc_STRVAR(reduce_doc,
             "reduce(first, last, size, order, seconds, match=True, banned=None)\n"
             "    -> None | (first, last, size, block, at, joined)\n"
             "The tiling rebuild's rules on the buffers (int64 columns) until none applies;\n"
             "order: the last rule's lifetime order (0: no such rule, 1 earliest, 2 latest,\n"
             "3 shortest); match: whether the stack-to-match rule runs; banned: int64\n"
             "(boundary, size) pairs the chain rule does not join. None when seconds\n"
             "(> 0) passed first. Else the blocks left (int64\n"
             "columns) and, a buffer, its block (int32, -1 for a size of 0) and its offset in\n"
             "that block (int64 bytes); joined: the (boundary, size) int64 pairs the chain\n"
             "rule joined, in order.");

static PyMethodDef methods[] = {{"reduce", py_reduce, METH_VARARGS, reduce_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tiling",
                                    "The tiling rebuild's merging rules.", -1, methods};

PyMODINIT_FUNC PyInit__tiling(void) { return PyModule_Create(&module); }
