/*
 * The exact search of arenaplan's solver: a depth-first search over canonical
 * packings at a fixed capacity. Everything about the problem (sections,
 * overlaps, the placement preorder) is prepared in Python (solver.py); this
 * file only searches. All sizes, offsets and capacities are bytes (int64).
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

enum {
  F_CANONICAL = 1, F_SECTIONS = 2, F_DOMINANCE = 4, F_UNPLACED_FLOOR = 8,
  F_MONOTONIC = 16, F_HATLESS = 32, F_DYNAMIC_ORDER = 64
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
  Cand *cands;       /* candidate lists, one slice per depth (triangular) */
  int64_t *stamp_s;  /* per section: last stamp that visited it */
  int64_t stamp;
  int64_t *maxes;    /* per depth: prefix max [0..S] then suffix max [0..S] of totals */
  int32_t *touched;  /* sections whose floor rose in the current placement */
  int32_t n_touched;
  int32_t placed;
  /* limits */
  int64_t nodes, node_limit;
  double deadline; /* monotonic seconds; <= 0: none */
  int interrupted;
} Search;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t align_up(int64_t x, int64_t a) {
  if (a <= 1) return x;
  int64_t r = x % a;
  return r ? x + (a - r) : x;
}

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
        if (s->stamp_s[t] == s->stamp) continue;
        s->stamp_s[t] = s->stamp;
        int64_t low = INT64_MAX;
        for (int32_t j = s->sb_start[t]; j < s->sb_start[t + 1]; j++) {
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
  if ((s->nodes & 0x3fff) == 0) {
    if (s->deadline > 0 && now_seconds() > s->deadline) return R_DEADLINE;
    if (PyErr_CheckSignals() != 0) {
      s->interrupted = 1;
      return R_INTERRUPT;
    }
  }
  return -1;
}

static int search(Search *s, int64_t min_off, int32_t min_pre, int32_t depth) {
  s->nodes++;
  int hit = limits_hit(s);
  if (hit >= 0) return hit;
  /* slice of depth d starts at sum_{i<d} (n - i) = d*n - d*(d-1)/2 */
  Cand *c = s->cands + ((size_t)depth * (size_t)s->n - (size_t)depth * (size_t)(depth - 1) / 2);
  int32_t k = 0;
  for (int32_t p = 0; p < s->n; p++) {
    int32_t b = s->pre[p];
    if (s->offset[b] >= 0) continue;
    c[k].floor = s->floor_b[b];
    c[k].pre = p;
    k++;
  }
  if (k == 0) {
    memcpy(s->best, s->offset, (size_t)s->n * sizeof(int64_t));
    return R_FOUND;
  }
  if (s->flags & F_DYNAMIC_ORDER) qsort(c, (size_t)k, sizeof(Cand), cand_cmp);
  /* prefix maxima pre[t] = max total over sections < t; suffix suf[t] over >= t */
  int32_t S = s->n_sections;
  int64_t *pre = s->maxes + (size_t)depth * 2 * ((size_t)S + 1), *suf = pre + S + 1;
  pre[0] = 0;
  for (int32_t t = 0; t < S; t++) pre[t + 1] = pre[t] > s->total_s[t] ? pre[t] : s->total_s[t];
  suf[S] = 0;
  for (int32_t t = S - 1; t >= 0; t--) suf[t] = suf[t + 1] > s->total_s[t] ? suf[t + 1] : s->total_s[t];
  int64_t min_top = INT64_MAX;
  for (int32_t i = 0; i < k; i++) {
    int64_t top = c[i].floor + s->size[s->pre[c[i].pre]];
    if (top < min_top) min_top = top;
  }
  for (int32_t i = 0; i < k; i++) {
    int64_t off = c[i].floor;
    int32_t p = c[i].pre, b = s->pre[p];
    if ((s->flags & F_CANONICAL) && (off < min_off || (off == min_off && p < min_pre))) continue;
    if ((s->flags & F_DOMINANCE) && off >= min_top) continue;
    if (s->fixed[b] >= 0 && off != s->fixed[b]) continue;
    if (off + s->size[b] > s->capacity) continue;
    if (!precheck(s, b, off, pre, suf)) continue;
    int64_t mark = s->log_top;
    int hatless, fixed_fail;
    if (place(s, b, off, &hatless, &fixed_fail)) return -1;
    int r = R_INFEASIBLE;
    if (!fixed_fail && touched_ok(s)) r = search(s, off, p, depth + 1);
    unplace(s, b, mark);
    if (r != R_INFEASIBLE) return r;
    if (hatless && (s->flags & F_HATLESS)) break;
  }
  return R_INFEASIBLE;
}

/* ---- Python binding ------------------------------------------------------ */

static int get_buf(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count,
                   const char *name) {
  if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
  if (view->len != itemsize * count) {
    PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", name, itemsize * count,
                 view->len);
    PyBuffer_Release(view);
    return -1;
  }
  return 0;
}

PyDoc_STRVAR(search_doc,
             "search(size, align, fixed, sec_lo, sec_hi, ov_start, ov, sb_start, sb, pre,\n"
             "       n_sections, capacity, flags, node_limit, seconds)\n"
             "-> (code, offsets bytes (int64), nodes)\n\n"
             "Arrays are native-endian buffers: int64 for size/align/fixed, int32 for the\n"
             "rest. seconds <= 0 means no deadline; node_limit <= 0 means none.");

static PyObject *py_search(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *o[10];
  int n_sections, flags;
  long long capacity, node_limit;
  double seconds;
  if (!PyArg_ParseTuple(args, "OOOOOOOOOOiLiLd", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                        &o[6], &o[7], &o[8], &o[9], &n_sections, &capacity, &flags,
                        &node_limit, &seconds))
    return NULL;
  Py_buffer v[10];
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
  s.cands = malloc((nn * (nn + 1) / 2 + 1) * sizeof(Cand));
  s.stamp_s = calloc((size_t)n_sections + 1, sizeof(int64_t));
  s.maxes = malloc((nn + 1) * 2 * ((size_t)n_sections + 1) * sizeof(int64_t));
  s.touched = malloc(((size_t)n_sections + 1) * sizeof(int32_t));
  if (!s.offset || !s.floor_b || !s.best || !s.floor_s || !s.total_s || !s.log_val ||
      !s.log_idx || !s.cands || !s.stamp_s || !s.maxes || !s.touched) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t b = 0; b < n; b++) {
    s.offset[b] = -1;
    s.floor_b[b] = s.fixed[b] >= 0 ? s.fixed[b] : 0;
    for (int32_t t = s.sec_lo[b]; t < s.sec_hi[b]; t++) s.total_s[t] += s.size[b];
  }
  int code = search(&s, 0, -1, 0);
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
  free(s.cands);
  free(s.stamp_s);
  free(s.maxes);
  free(s.touched);
  return result;
}

static PyMethodDef methods[] = {{"search", py_search, METH_VARARGS, search_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_search",
                                    "Exact canonical search for offset assignment.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__search(void) { return PyModule_Create(&module); }
