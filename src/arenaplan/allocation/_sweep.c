/*
 * First-fit in start order, as a sweep over time: arenaplan's packing for
 * problems of a million buffers.
 *
 * Placed in order of their first step, a buffer meets exactly the placed
 * buffers still live at that step (all of them started earlier), so first-fit
 * in that order is a memory allocator run over time: free each buffer after
 * its last step, give each new one the lowest aligned gap that holds it. The
 * free gaps are kept by offset in chunks of up to CHUNK, the chunks in address
 * order with a max tree of their longest gaps: a request finds its chunk in
 * O(log chunks) and scans it, a free finds its neighbours by binary search;
 * both touch a few contiguous lines where a tree of single gaps (a treap,
 * before) took a cache miss a level. The last gap reaches "infinity" (the
 * top). Offsets equal those of packing.first_fit with no probe cap on the same
 * order. All sizes and offsets are bytes (int64).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_native.h"

#define TOP_LEN ((int64_t)1 << 62) /* length of the gap above everything */

enum { SW_DONE = 0, SW_OVER = 2, SW_DEADLINE = 3, SW_MEMORY = 4 };

typedef struct {
  int64_t lo, len; /* a free gap [lo, lo + len) */
} Gap;

#define CHUNK 128 /* gaps a chunk holds; a full one splits in two */

typedef struct {
  int32_t n;
  int64_t best; /* its longest gap (-1: none) */
  Gap g[CHUNK]; /* by offset */
} Chunk;

/* The free gaps by offset, in chunks: ``at`` lists the chunks in address order
 * (positions 0..m), ``lo`` each one's first offset, and ``best`` is a max tree
 * over positions (leaves from ``leaves``) of each chunk's longest gap. */
typedef struct {
  Chunk *c;
  int32_t n_chunks, cap_chunks, free_chunk; /* the pool; free ones linked by n */
  int32_t *at, m, cap_m;
  int64_t *lo, *best;
  int32_t leaves;
} Gaps;

static int64_t longest(const Chunk *c) {
  int64_t b = -1;
  for (int32_t i = 0; i < c->n; i++) b = c->g[i].len > b ? c->g[i].len : b;
  return b;
}

static void up_from(Gaps *s, int32_t k) { /* the max tree's nodes above node k */
  for (k /= 2; k >= 1; k /= 2)
    s->best[k] = s->best[2 * k] > s->best[2 * k + 1] ? s->best[2 * k] : s->best[2 * k + 1];
}

/* Position p's chunk changed: its longest gap, first offset, the tree above it. */
static void refresh(Gaps *s, int32_t p) {
  Chunk *c = &s->c[s->at[p]];
  c->best = longest(c);
  s->lo[p] = c->n ? c->g[0].lo : INT64_MAX;
  s->best[s->leaves + p] = c->best;
  up_from(s, s->leaves + p);
}

/* Position p's chunk gained a gap of length len (or one grew to it): its
 * first offset, and its longest gap if len beats it. */
static void grew(Gaps *s, int32_t p, int64_t len) {
  Chunk *c = &s->c[s->at[p]];
  s->lo[p] = c->g[0].lo;
  if (len > c->best) {
    c->best = len;
    s->best[s->leaves + p] = len;
    up_from(s, s->leaves + p);
  }
}

/* Position p's chunk lost a gap of length old (or one shrank from it): its
 * first offset, and its longest gap looked for again only if old was it. */
static void shrank(Gaps *s, int32_t p, int64_t old) {
  Chunk *c = &s->c[s->at[p]];
  if (old >= c->best) refresh(s, p);
  else s->lo[p] = c->n ? c->g[0].lo : INT64_MAX;
}

/* The chunks from position p on moved by one (their ``best`` kept): their first
 * offsets, leaves, and the tree's nodes above those leaves. */
static int rebuild(Gaps *s, int32_t p) {
  if (s->m > s->leaves) {
    int32_t leaves = s->leaves;
    while (leaves < s->m) leaves *= 2;
    int64_t *best = realloc(s->best, (size_t)leaves * 2 * sizeof(int64_t));
    if (!best) return -1;
    s->best = best, s->leaves = leaves, p = 0;
  }
  for (int32_t q = p; q < s->leaves; q++) {
    const Chunk *c = q < s->m ? &s->c[s->at[q]] : NULL;
    if (q < s->m) s->lo[q] = c->n ? c->g[0].lo : INT64_MAX;
    s->best[s->leaves + q] = c ? c->best : -1;
  }
  for (int32_t a = (s->leaves + p) / 2, b = (2 * s->leaves - 1) / 2; a >= 1; a /= 2, b /= 2)
    for (int32_t k = a; k <= b; k++)
      s->best[k] = s->best[2 * k] > s->best[2 * k + 1] ? s->best[2 * k] : s->best[2 * k + 1];
  return 0;
}

static int32_t new_chunk(Gaps *s) {
  if (s->free_chunk >= 0) {
    int32_t k = s->free_chunk;
    s->free_chunk = s->c[k].n;
    s->c[k].n = 0;
    return k;
  }
  if (s->n_chunks == s->cap_chunks) {
    int32_t cap = s->cap_chunks ? 2 * s->cap_chunks : 64;
    Chunk *c = realloc(s->c, (size_t)cap * sizeof(Chunk));
    if (!c) return -1;
    s->c = c, s->cap_chunks = cap;
  }
  s->c[s->n_chunks].n = 0;
  return s->n_chunks++;
}

/* Room for one more position after p: chunk k goes there. */
static int insert_position(Gaps *s, int32_t p, int32_t k) {
  if (s->m == s->cap_m) {
    int32_t cap = 2 * s->cap_m;
    int32_t *at = realloc(s->at, (size_t)cap * sizeof(int32_t));
    if (!at) return -1;
    s->at = at;
    int64_t *lo = realloc(s->lo, (size_t)cap * sizeof(int64_t));
    if (!lo) return -1;
    s->lo = lo, s->cap_m = cap;
  }
  memmove(&s->at[p + 2], &s->at[p + 1], (size_t)(s->m - p - 1) * sizeof(int32_t));
  s->at[p + 1] = k;
  s->m++;
  return rebuild(s, p);
}

/* Gap g goes in at index i of position p's chunk (a full chunk splits first). */
static int insert_gap(Gaps *s, int32_t p, int32_t i, Gap g) {
  Chunk *c = &s->c[s->at[p]];
  if (c->n == CHUNK) {
    int32_t k = new_chunk(s);
    if (k < 0) return -1;
    c = &s->c[s->at[p]]; /* the pool may have moved */
    Chunk *d = &s->c[k];
    d->n = CHUNK / 2;
    memcpy(d->g, &c->g[CHUNK / 2], (CHUNK / 2) * sizeof(Gap));
    c->n = CHUNK / 2;
    c->best = longest(c), d->best = longest(d);
    if (insert_position(s, p, k) < 0) return -1;
    if (i > CHUNK / 2) p++, i -= CHUNK / 2, c = d;
  }
  memmove(&c->g[i + 1], &c->g[i], (size_t)(c->n - i) * sizeof(Gap));
  c->g[i] = g;
  c->n++;
  grew(s, p, g.len);
  return 0;
}

/* The gap at index i of position p's chunk goes (an emptied chunk with it). */
static int remove_gap(Gaps *s, int32_t p, int32_t i) {
  int32_t k = s->at[p];
  Chunk *c = &s->c[k];
  int64_t old = c->g[i].len;
  memmove(&c->g[i], &c->g[i + 1], (size_t)(c->n - i - 1) * sizeof(Gap));
  if (--c->n > 0 || s->m == 1) {
    shrank(s, p, old);
    return 0;
  }
  c->n = s->free_chunk;
  s->free_chunk = k;
  memmove(&s->at[p], &s->at[p + 1], (size_t)(s->m - p - 1) * sizeof(int32_t));
  s->m--;
  return rebuild(s, p);
}

/* The first position at or after p whose chunk has a gap of len >= size, or -1. */
static int32_t first_from(const Gaps *s, int32_t node, int32_t l, int32_t r, int32_t p,
                          int64_t size) {
  if (r <= p || s->best[node] < size) return -1;
  if (r - l == 1) return l;
  int32_t mid = (l + r) / 2;
  int32_t f = first_from(s, 2 * node, l, mid, p, size);
  return f >= 0 ? f : first_from(s, 2 * node + 1, mid, r, p, size);
}

/* The lowest gap where size bytes fit at an aligned offset: its position and
 * index (the top gap always fits). */
static void lowest_fit(const Gaps *s, int64_t size, int64_t align, int32_t *pos, int32_t *idx) {
  for (int32_t p = first_from(s, 1, 0, s->leaves, 0, size); p >= 0;
       p = first_from(s, 1, 0, s->leaves, p + 1, size)) {
    const Chunk *c = &s->c[s->at[p]];
    for (int32_t i = 0; i < c->n; i++) {
      const Gap *g = &c->g[i];
      if (g->len >= size && align_up(g->lo, align) + size <= g->lo + g->len) {
        *pos = p, *idx = i;
        return;
      }
    }
  }
  *pos = s->m - 1, *idx = s->c[s->at[s->m - 1]].n - 1; /* not reached: the top fits */
}

/* Take [off, off + size) out of the gap at (p, i), which holds it. */
static int take(Gaps *s, int32_t p, int32_t i, int64_t off, int64_t size) {
  Gap *g = &s->c[s->at[p]].g[i];
  int64_t lo = g->lo, old = g->len, end = g->lo + g->len;
  if (off == lo && end == off + size) return remove_gap(s, p, i);
  if (off == lo) {
    g->lo = off + size, g->len = end - off - size;
    shrank(s, p, old);
    return 0;
  }
  g->len = off - lo;
  shrank(s, p, old);
  return end > off + size ? insert_gap(s, p, i + 1, (Gap){off + size, end - off - size}) : 0;
}

/* The last position whose chunk starts below off (-1: none). */
static int32_t position_below(const Gaps *s, int64_t off) {
  int32_t a = 0, b = s->m; /* answer in [a - 1, b) */
  while (a < b) {
    int32_t mid = (a + b) / 2;
    if (s->lo[mid] < off) a = mid + 1;
    else b = mid;
  }
  return a - 1;
}

/* The index of the last gap of chunk c starting below off (c starts below it):
 * a search without branches, as offsets freed come in no order the branch
 * predictor could learn. */
static int32_t last_below(const Chunk *c, int64_t off) {
  const Gap *g = c->g;
  for (int32_t n = c->n; n > 1; n -= n / 2) g = g[n / 2].lo < off ? g + n / 2 : g;
  return (int32_t)(g - c->g);
}

/* Give [off, off + size) back, merged with the gaps it touches. */
static int give(Gaps *s, int64_t off, int64_t size) {
  int32_t p = position_below(s, off), i = -1; /* the gap below: (p, i) */
  if (p >= 0) i = last_below(&s->c[s->at[p]], off);
  int32_t up_p = p, up_i = i + 1; /* the gap above */
  if (up_p < 0) up_p = 0, up_i = 0;
  if (up_i == s->c[s->at[up_p]].n) up_p++, up_i = 0;
  Gap *below = p >= 0 ? &s->c[s->at[p]].g[i] : NULL;
  Gap *above = up_p < s->m ? &s->c[s->at[up_p]].g[up_i] : NULL;
  int joins_below = below && below->lo + below->len == off;
  int joins_above = above && above->lo == off + size;
  int64_t lo = joins_below ? below->lo : off;
  int64_t end = joins_above ? above->lo + above->len : off + size;
  int64_t len = end >= TOP_LEN ? TOP_LEN : end - lo;
  if (joins_below && joins_above) {
    below->len = len;
    grew(s, p, len);
    return remove_gap(s, up_p, up_i);
  }
  if (joins_below || joins_above) {
    Gap *g = joins_below ? below : above;
    g->lo = lo, g->len = len;
    grew(s, joins_below ? p : up_p, len);
    return 0;
  }
  return insert_gap(s, p < 0 ? 0 : p, p < 0 ? 0 : i + 1, (Gap){lo, len});
}

static int gaps_init(Gaps *s) {
  *s = (Gaps){NULL, 0, 0, -1, malloc(64 * sizeof(int32_t)), 1, 64, malloc(64 * sizeof(int64_t)),
              malloc(2 * sizeof(int64_t)), 1};
  int32_t k = s->at && s->lo && s->best ? new_chunk(s) : -1;
  if (k < 0) return -1;
  s->at[0] = k;
  s->c[k].n = 1;
  s->c[k].g[0] = (Gap){0, TOP_LEN};
  s->c[k].best = TOP_LEN;
  return rebuild(s, 0);
}

static void gaps_free(Gaps *s) { free(s->c), free(s->at), free(s->lo), free(s->best); }

/* An int64 as a uint64 of the same order (its sign bit flipped), for radix_by. */
static uint64_t ordered(int64_t x) { return (uint64_t)x ^ ((uint64_t)1 << 63); }

/* idx[0..n) stably sorted by key[idx[i]] (unsigned), through tmp: 16 bits a
 * pass from the lowest, a pass skipped when every key has the same digit. */
static int radix_by(const uint64_t *key, int32_t *idx, int32_t *tmp, int32_t n) {
  size_t *count = malloc(65536 * sizeof(size_t));
  if (!count) return -1;
  int32_t *src = idx, *dst = tmp;
  for (int shift = 0; shift < 64; shift += 16) {
    memset(count, 0, 65536 * sizeof(size_t));
    for (int32_t i = 0; i < n; i++) count[(key[src[i]] >> shift) & 0xffff]++;
    if (n == 0 || count[(key[src[0]] >> shift) & 0xffff] == (size_t)n) continue;
    size_t at = 0;
    for (int d = 0; d < 65536; d++) {
      size_t c = count[d];
      count[d] = at;
      at += c;
    }
    for (int32_t i = 0; i < n; i++) dst[count[(key[src[i]] >> shift) & 0xffff]++] = src[i];
    int32_t *t = src;
    src = dst, dst = t;
  }
  if (src != idx) memcpy(idx, src, (size_t)n * sizeof(int32_t));
  free(count);
  return 0;
}

/* Placed in order of first step, the buffers leave in order of last step: one
 * ending before a newcomer starts was placed before it. What the leaving needs
 * (last step, size, offset) is laid out in leaving order, so that it reads
 * memory in sequence where reading by buffer index missed the cache thrice a
 * buffer. */
static int sweep(const int64_t *first, const int64_t *last, const int64_t *size,
                 const int64_t *align, const int32_t *order, int32_t n, int64_t capacity,
                 double deadline, int64_t *offset) {
  Gaps s;
  size_t items = (size_t)(n ? n : 1);
  uint64_t *key = malloc(items * sizeof(uint64_t));
  int32_t *by_last = malloc(items * sizeof(int32_t)), *tmp = malloc(items * sizeof(int32_t));
  int64_t *leave_size = malloc(items * sizeof(int64_t)), *leave_off = malloc(items * sizeof(int64_t));
  int code = SW_DONE;
  if (gaps_init(&s) < 0 || !key || !by_last || !tmp || !leave_size || !leave_off) code = SW_MEMORY;
  for (int32_t i = 0; i < n && code == SW_DONE; i++) {
    by_last[i] = i;
    key[i] = ordered(last[i]);
  }
  if (code == SW_DONE && radix_by(key, by_last, tmp, n) < 0) code = SW_MEMORY;
  int64_t *leave_last = (int64_t *)key; /* the keys, sorted, are no longer needed */
  int32_t *rank = tmp;                  /* rank[b]: where buffer b leaves */
  for (int32_t j = 0; j < n && code == SW_DONE; j++) {
    int32_t d = by_last[j];
    leave_last[j] = last[d], leave_size[j] = size[d], rank[d] = j;
  }
  for (int32_t q = 0, j = 0; q < n && code == SW_DONE; q++) {
    if ((q & 4095) == 4095 && deadline > 0 && now_seconds() > deadline) {
      code = SW_DEADLINE;
      break;
    }
    int32_t b = order[q];
    for (; j < n && leave_last[j] < first[b] && code == SW_DONE; j++)
      if (leave_size[j] > 0 && give(&s, leave_off[j], leave_size[j]) < 0) code = SW_MEMORY;
    if (code != SW_DONE) break;
    if (size[b] == 0) {
      offset[b] = leave_off[rank[b]] = 0;
      continue;
    }
    int32_t p, i;
    lowest_fit(&s, size[b], align[b], &p, &i);
    int64_t off = align_up(s.c[s.at[p]].g[i].lo, align[b]);
    if (capacity >= 0 && off + size[b] > capacity) {
      code = SW_OVER;
      break;
    }
    offset[b] = leave_off[rank[b]] = off;
    if (take(&s, p, i, off, size[b]) < 0) code = SW_MEMORY;
  }
  gaps_free(&s);
  free(key), free(by_last), free(tmp), free(leave_size), free(leave_off);
  return code;
}

static PyObject *py_sweep_fit(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *o[5];
  long long capacity;
  double seconds;
  if (!PyArg_ParseTuple(args, "OOOOOLd", &o[0], &o[1], &o[2], &o[3], &o[4], &capacity,
                        &seconds))
    return NULL;
  Py_buffer v[5];
  int got = 0;
  PyObject *result = NULL;
  int64_t *offset = NULL;
  if (PyObject_GetBuffer(o[0], &v[0], PyBUF_C_CONTIGUOUS) < 0) return NULL;
  got = 1;
  Py_ssize_t n = v[0].len / 8;
  const char *names[] = {"last", "size", "align", "order"};
  Py_ssize_t items[] = {8, 8, 8, 4};
  for (int q = 0; q < 4; q++) {
    if (get_buf(o[q + 1], &v[got], items[q], n, names[q]) < 0) goto done;
    got++;
  }
  const int64_t *first = v[0].buf, *last = v[1].buf, *size = v[2].buf, *align = v[3].buf;
  const int32_t *order = v[4].buf;
  for (Py_ssize_t q = 0; q < n; q++) {
    int32_t b = order[q];
    if (b < 0 || b >= n || (q > 0 && first[b] < first[order[q - 1]]) || size[b] < 0 ||
        last[b] < first[b] || align[b] < 1) {
      PyErr_SetString(PyExc_ValueError,
                      "sweep_fit needs every buffer once, by first step, with sizes >= 0");
      goto done;
    }
  }
  offset = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
  if (!offset) {
    PyErr_NoMemory();
    goto done;
  }
  double deadline = seconds > 0 ? now_seconds() + seconds : 0;
  int code = sweep(first, last, size, align, order, (int32_t)n, capacity, deadline, offset);
  if (code == SW_MEMORY) {
    PyErr_NoMemory();
    goto done;
  }
  result = Py_BuildValue("(iy#)", code, (const char *)offset,
                         (Py_ssize_t)(n * (Py_ssize_t)sizeof(int64_t)));
done:
  for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
  free(offset);
  return result;
}

static PyObject *py_start_order(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *o[2];
  if (!PyArg_ParseTuple(args, "OO", &o[0], &o[1])) return NULL;
  Py_buffer v[2];
  if (PyObject_GetBuffer(o[0], &v[0], PyBUF_C_CONTIGUOUS) < 0) return NULL;
  Py_ssize_t n = v[0].len / 8;
  if (get_buf(o[1], &v[1], 8, n, "size") < 0) {
    PyBuffer_Release(&v[0]);
    return NULL;
  }
  const int64_t *first = v[0].buf, *size = v[1].buf;
  size_t items = (size_t)(n ? n : 1);
  uint64_t *key = malloc(items * sizeof(uint64_t));
  int32_t *idx = malloc(items * sizeof(int32_t)), *tmp = malloc(items * sizeof(int32_t));
  PyObject *result = NULL;
  if (!key || !idx || !tmp || n > INT32_MAX) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    idx[i] = (int32_t)i;
    key[i] = ~ordered(size[i]); /* larger first */
  }
  int bad = radix_by(key, idx, tmp, (int32_t)n);
  for (Py_ssize_t i = 0; i < n && !bad; i++) key[i] = ordered(first[i]);
  if (bad || radix_by(key, idx, tmp, (int32_t)n) < 0) {
    PyErr_NoMemory();
    goto done;
  }
  result = PyBytes_FromStringAndSize((const char *)idx, n * (Py_ssize_t)sizeof(int32_t));
done:
  PyBuffer_Release(&v[0]);
  PyBuffer_Release(&v[1]);
  free(key), free(idx), free(tmp);
  return result;
}

PyDoc_STRVAR(order_doc,
             "start_order(first, size) -> int32 bytes\n"
             "The buffers by first step, larger first among equals, then by index (a\n"
             "stable radix sort): np.lexsort((-size, first)) at a tenth of its time.");

PyDoc_STRVAR(sweep_doc,
             "sweep_fit(first, last, size, align, order, capacity, seconds) -> (code, offsets)\n"
             "First-fit of every buffer in `order` (a permutation sorted by first step).\n"
             "code 0 done, 2 over capacity (capacity < 0: none), 3 deadline (seconds <= 0:\n"
             "none); offsets: int64 bytes.");

static PyMethodDef methods[] = {{"sweep_fit", py_sweep_fit, METH_VARARGS, sweep_doc},
                                {"start_order", py_start_order, METH_VARARGS, order_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sweep",
                                    "First-fit in start order as a sweep over time.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__sweep(void) { return PyModule_Create(&module); }
