/*
 * First-fit in start order, as a sweep over time: arenaplan's packing for
 * problems of a million buffers.
 *
 * Placed in order of their first step, a buffer meets exactly the placed
 * buffers still live at that step (all of them started earlier), so first-fit
 * in that order is a memory allocator run over time: free each buffer after
 * its last step, give each new one the lowest aligned gap that holds it. The
 * free gaps are kept in a treap keyed by offset whose nodes know the longest
 * gap below them, so a request costs O(log gaps) (plus gaps whose alignment
 * wastes too much, stepped over in offset order); the last gap reaches
 * "infinity" (the top). Offsets equal those of packing.first_fit with no probe
 * cap on the same order. All sizes and offsets are bytes (int64).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "_native.h"

#define TOP_LEN ((int64_t)1 << 62) /* length of the gap above everything */

enum { SW_DONE = 0, SW_OVER = 2, SW_DEADLINE = 3, SW_MEMORY = 4 };

typedef struct {
  int64_t lo, len, best; /* gap [lo, lo + len); best: longest gap in the subtree */
  int32_t left, right;
  uint32_t prio;
} Gap;

typedef struct {
  Gap *g;
  int32_t n, cap, free_list;
  uint32_t seed;
} Treap;

static uint32_t next_prio(Treap *t) { /* xorshift: fixed seed, same tree every run */
  t->seed ^= t->seed << 13;
  t->seed ^= t->seed >> 17;
  t->seed ^= t->seed << 5;
  return t->seed;
}

static int32_t new_gap(Treap *t, int64_t lo, int64_t len) {
  int32_t k;
  if (t->free_list >= 0) {
    k = t->free_list;
    t->free_list = t->g[k].left;
  } else {
    if (t->n == t->cap) {
      int32_t cap = t->cap ? 2 * t->cap : 1024;
      Gap *g = realloc(t->g, (size_t)cap * sizeof(Gap));
      if (!g) return -1;
      t->g = g;
      t->cap = cap;
    }
    k = t->n++;
  }
  t->g[k] = (Gap){lo, len, len, -1, -1, next_prio(t)};
  return k;
}

static void drop_gap(Treap *t, int32_t k) {
  t->g[k].left = t->free_list;
  t->free_list = k;
}

static int64_t best_of(const Treap *t, int32_t k) { return k < 0 ? -1 : t->g[k].best; }

static void update(Treap *t, int32_t k) {
  int64_t b = t->g[k].len, l = best_of(t, t->g[k].left), r = best_of(t, t->g[k].right);
  t->g[k].best = b > l ? (b > r ? b : r) : (l > r ? l : r);
}

/* Split k into gaps with lo < key (*a) and lo >= key (*b). */
static void split(Treap *t, int32_t k, int64_t key, int32_t *a, int32_t *b) {
  if (k < 0) {
    *a = *b = -1;
    return;
  }
  if (t->g[k].lo < key) {
    split(t, t->g[k].right, key, &t->g[k].right, b);
    *a = k;
  } else {
    split(t, t->g[k].left, key, a, &t->g[k].left);
    *b = k;
  }
  update(t, k);
}

/* Join a and b, every lo of a below every lo of b. */
static int32_t join(Treap *t, int32_t a, int32_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  if (t->g[a].prio > t->g[b].prio) {
    t->g[a].right = join(t, t->g[a].right, b);
    update(t, a);
    return a;
  }
  t->g[b].left = join(t, a, t->g[b].left);
  update(t, b);
  return b;
}

/* The lowest gap where size bytes fit at an aligned offset, or -1. */
static int32_t lowest_fit(const Treap *t, int32_t k, int64_t size, int64_t align) {
  if (k < 0 || t->g[k].best < size) return -1;
  int32_t found = lowest_fit(t, t->g[k].left, size, align);
  if (found >= 0) return found;
  const Gap *g = &t->g[k];
  if (g->len >= size && align_up(g->lo, align) + size <= g->lo + g->len) return k;
  return lowest_fit(t, t->g[k].right, size, align);
}

/* Take [off, off + size) out of the free gaps (it lies inside one of them). */
static int take(Treap *t, int32_t *root, int64_t off, int64_t size, int64_t glo) {
  int32_t a, mid, c;
  split(t, *root, glo, &a, &mid);
  split(t, mid, glo + 1, &mid, &c); /* mid: the gap starting at glo */
  int64_t end = t->g[mid].lo + t->g[mid].len;
  drop_gap(t, mid);
  if (off > glo) {
    int32_t k = new_gap(t, glo, off - glo);
    if (k < 0) return -1;
    a = join(t, a, k);
  }
  if (end > off + size) {
    int32_t k = new_gap(t, off + size, end - off - size);
    if (k < 0) return -1;
    c = join(t, k, c);
  }
  *root = join(t, a, c);
  return 0;
}

/* Give [off, off + size) back, merged with the gaps it touches. */
static int give(Treap *t, int32_t *root, int64_t off, int64_t size) {
  int32_t a, c;
  split(t, *root, off, &a, &c);
  int64_t lo = off, end = off + size;
  if (a >= 0) { /* the gap just below: take it out of a if it ends at off */
    int32_t rest, last;
    int32_t k = a;
    while (t->g[k].right >= 0) k = t->g[k].right;
    if (t->g[k].lo + t->g[k].len == off) {
      split(t, a, t->g[k].lo, &rest, &last);
      lo = t->g[last].lo;
      drop_gap(t, last);
      a = rest;
    }
  }
  if (c >= 0) { /* the gap just above, if it starts at end */
    int32_t k = c;
    while (t->g[k].left >= 0) k = t->g[k].left;
    if (t->g[k].lo == end) {
      int32_t first, rest;
      split(t, c, end + 1, &first, &rest);
      end = t->g[first].lo + t->g[first].len;
      drop_gap(t, first);
      c = rest;
    }
  }
  int64_t len = end >= TOP_LEN ? TOP_LEN : end - lo;
  int32_t k = new_gap(t, lo, len);
  if (k < 0) return -1;
  *root = join(t, join(t, a, k), c);
  return 0;
}

/* Live buffers, a binary min-heap by last step. */
typedef struct {
  int64_t *last;
  int32_t *buf, n;
} Heap;

static void heap_push(Heap *h, int64_t last, int32_t b) {
  int32_t i = h->n++;
  while (i > 0) {
    int32_t p = (i - 1) / 2;
    if (h->last[p] <= last) break;
    h->last[i] = h->last[p];
    h->buf[i] = h->buf[p];
    i = p;
  }
  h->last[i] = last;
  h->buf[i] = b;
}

static int32_t heap_pop(Heap *h) {
  int32_t top = h->buf[0];
  int64_t last = h->last[--h->n];
  int32_t b = h->buf[h->n], i = 0;
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->last[c + 1] < h->last[c]) c++;
    if (h->last[c] >= last) break;
    h->last[i] = h->last[c];
    h->buf[i] = h->buf[c];
    i = c;
  }
  h->last[i] = last;
  h->buf[i] = b;
  return top;
}

static int sweep(const int64_t *first, const int64_t *last, const int64_t *size,
                 const int64_t *align, const int32_t *order, int32_t n, int64_t capacity,
                 double deadline, int64_t *offset) {
  Treap t = {NULL, 0, 0, -1, 0x9E3779B9u};
  Heap h = {malloc((size_t)(n ? n : 1) * sizeof(int64_t)),
            malloc((size_t)(n ? n : 1) * sizeof(int32_t)), 0};
  int code = SW_DONE;
  int32_t root = new_gap(&t, 0, TOP_LEN);
  if (!h.last || !h.buf || root < 0) code = SW_MEMORY;
  for (int32_t q = 0; q < n && code == SW_DONE; q++) {
    if ((q & 4095) == 4095 && deadline > 0 && now_seconds() > deadline) {
      code = SW_DEADLINE;
      break;
    }
    int32_t b = order[q];
    while (h.n > 0 && h.last[0] < first[b]) {
      int32_t done = heap_pop(&h);
      if (give(&t, &root, offset[done], size[done]) < 0) code = SW_MEMORY;
    }
    if (size[b] == 0) {
      offset[b] = 0;
      continue;
    }
    int32_t k = lowest_fit(&t, root, size[b], align[b]);
    int64_t off = align_up(t.g[k].lo, align[b]); /* the top gap always fits */
    if (capacity >= 0 && off + size[b] > capacity) {
      code = SW_OVER;
      break;
    }
    offset[b] = off;
    if (take(&t, &root, off, size[b], t.g[k].lo) < 0) code = SW_MEMORY;
    heap_push(&h, last[b], b);
  }
  free(t.g);
  free(h.last);
  free(h.buf);
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

PyDoc_STRVAR(sweep_doc,
             "sweep_fit(first, last, size, align, order, capacity, seconds) -> (code, offsets)\n"
             "First-fit of every buffer in `order` (a permutation sorted by first step).\n"
             "code 0 done, 2 over capacity (capacity < 0: none), 3 deadline (seconds <= 0:\n"
             "none); offsets: int64 bytes.");

static PyMethodDef methods[] = {{"sweep_fit", py_sweep_fit, METH_VARARGS, sweep_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sweep",
                                    "First-fit in start order as a sweep over time.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__sweep(void) { return PyModule_Create(&module); }
