/*
 * The solution checker's fast path: is a solution surely valid? Independent of
 * every allocator (it shares no code with them): it reads the Buffer objects
 * and the offsets themselves and re-derives each constraint.
 *
 * Per buffer: an offset (not None), >= 0, a multiple of its alignment, its
 * fixed offset if it has one, within the capacity. Then no two buffers of
 * non-zero size may share a byte while both are live (inclusive steps,
 * half-open bytes), by a sweep over first steps: the live buffers are disjoint
 * while the sweep goes on, so a newcomer can only meet its two neighbours by
 * offset. They are found by rank of offset in a Fenwick tree of counts, and
 * the live ones leave through a min-heap by last step: O(n log n) in all.
 *
 *   bytes ^        +-------+ <- the live neighbour above must start >= hi
 *         |  [lo, hi) new  |
 *         |  +-----+       <- the live neighbour below must end <= lo
 *         +------------------> steps
 *
 * It answers 0 (valid) or 1 (something is wrong, or a value is beyond int64:
 * the caller then names every violation its own way).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
  int64_t key; /* offset (bytes) or first step */
  int32_t idx; /* index among the non-empty buffers */
} Keyed;

static int by_key(const void *a, const void *b) {
  const Keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Fenwick tree over ranks 1..m: how many live buffers have rank <= r. */
static void fen_add(int32_t *fen, int32_t m, int32_t r, int32_t d) {
  for (; r <= m; r += r & -r) fen[r] += d;
}

static int32_t fen_prefix(const int32_t *fen, int32_t r) {
  int32_t s = 0;
  for (; r > 0; r -= r & -r) s += fen[r];
  return s;
}

/* The rank of the k-th live buffer by offset (1 <= k <= live count). */
static int32_t fen_kth(const int32_t *fen, int32_t m, int32_t k) {
  int32_t pos = 0, step = 1;
  while (step * 2 <= m) step *= 2;
  for (; step > 0; step /= 2)
    if (pos + step <= m && fen[pos + step] < k) {
      pos += step;
      k -= fen[pos];
    }
  return pos + 1;
}

/* A min-heap of (last step, rank) for the live buffers. */
typedef struct {
  int64_t *last;
  int32_t *rank, n;
} Heap;

static void push(Heap *h, int64_t last, int32_t rank) {
  int32_t i = h->n++;
  for (; i > 0 && h->last[(i - 1) / 2] > last; i = (i - 1) / 2) {
    h->last[i] = h->last[(i - 1) / 2];
    h->rank[i] = h->rank[(i - 1) / 2];
  }
  h->last[i] = last;
  h->rank[i] = rank;
}

static int32_t pop(Heap *h) {
  int32_t top = h->rank[0], i = 0;
  int64_t last = h->last[--h->n];
  int32_t rank = h->rank[h->n];
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->last[c + 1] < h->last[c]) c++;
    if (h->last[c] >= last) break;
    h->last[i] = h->last[c];
    h->rank[i] = h->rank[c];
    i = c;
  }
  h->last[i] = last;
  h->rank[i] = rank;
  return top;
}

/* A buffer in the sweep's order, with what the sweep reads of it. */
typedef struct {
  int64_t first, last;
  int32_t rank; /* its place by offset, 1-based */
} Step;

/* 0 when no two of the m rectangles [first, last] x [lo, hi) overlap, 1 when
 * two do, -1 out of memory. The sweep reads its buffers in order (Step) and
 * the live neighbours' bytes by rank (lo_at, hi_at): no scattered reads but
 * the tree's. */
static int overlapping(int32_t m, const int64_t *first, const int64_t *last, const int64_t *lo,
                       const int64_t *hi) {
  size_t n = (size_t)(m ? m : 1);
  Keyed *by_lo = malloc(n * sizeof(Keyed)), *by_first = malloc(n * sizeof(Keyed));
  int32_t *rank = malloc(n * sizeof(int32_t)), *fen = calloc(n + 1, sizeof(int32_t));
  int64_t *lo_at = malloc((n + 1) * sizeof(int64_t)), *hi_at = malloc((n + 1) * sizeof(int64_t));
  Step *steps = malloc(n * sizeof(Step));
  Heap h = {malloc(n * sizeof(int64_t)), malloc(n * sizeof(int32_t)), 0};
  int found = -1;
  if (!by_lo || !by_first || !rank || !fen || !lo_at || !hi_at || !steps || !h.last || !h.rank)
    goto done;
  for (int32_t k = 0; k < m; k++) {
    by_lo[k] = (Keyed){lo[k], k};
    by_first[k] = (Keyed){first[k], k};
  }
  qsort(by_lo, n, sizeof(Keyed), by_key);
  qsort(by_first, n, sizeof(Keyed), by_key);
  for (int32_t r = 0; r < m; r++) {
    int32_t k = by_lo[r].idx;
    rank[k] = r + 1;
    lo_at[r + 1] = lo[k];
    hi_at[r + 1] = hi[k];
  }
  for (int32_t q = 0; q < m; q++) {
    int32_t k = by_first[q].idx;
    steps[q] = (Step){first[k], last[k], rank[k]};
  }
  found = 0;
  for (int32_t q = 0; q < m && !found; q++) {
    const Step *s = &steps[q];
    int32_t r = s->rank;
    while (h.n > 0 && h.last[0] < s->first) fen_add(fen, m, pop(&h), -1);
    int32_t below = fen_prefix(fen, r - 1);
    if (below > 0 && hi_at[fen_kth(fen, m, below)] > lo_at[r]) found = 1;
    if (below < h.n && lo_at[fen_kth(fen, m, below + 1)] < hi_at[r]) found = 1;
    fen_add(fen, m, r, 1);
    push(&h, s->last, r);
  }
done:
  free(by_lo), free(by_first), free(rank), free(fen), free(lo_at), free(hi_at), free(steps);
  free(h.last), free(h.rank);
  return found;
}

/* An attribute of b as an int64; -1 on a Python error, 1 if None or out of
 * range (the value then unknown), else 0. */
static int attr_int(PyObject *b, PyObject *name, int64_t *out) {
  PyObject *v = PyObject_GetAttr(b, name);
  if (!v) return -1;
  int got = 1;
  if (PyLong_Check(v)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!(x == -1 && PyErr_Occurred()) && !overflow) {
      *out = x;
      got = 0;
    }
  }
  Py_DECREF(v);
  return PyErr_Occurred() ? -1 : got;
}

static const int64_t BIG = (int64_t)1 << 62; /* values at or beyond: left to Python */

static PyObject *py_surely_valid(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *buffers, *offsets;
  long long capacity;
  if (!PyArg_ParseTuple(args, "OOL", &buffers, &offsets, &capacity)) return NULL;
  PyObject *bs = PySequence_Fast(buffers, "buffers must be a sequence");
  if (!bs) return NULL;
  PyObject *os = PySequence_Fast(offsets, "offsets must be a sequence");
  if (!os) {
    Py_DECREF(bs);
    return NULL;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(bs);
  size_t cap = (size_t)(n ? n : 1);
  int64_t *first = malloc(cap * 8), *last = malloc(cap * 8), *lo = malloc(cap * 8);
  int64_t *hi = malloc(cap * 8);
  PyObject *names[6] = {PyUnicode_InternFromString("first"), PyUnicode_InternFromString("last"),
                        PyUnicode_InternFromString("size"),
                        PyUnicode_InternFromString("alignment"),
                        PyUnicode_InternFromString("offset"), NULL};
  PyObject *result = NULL;
  int bad = PySequence_Fast_GET_SIZE(os) != n || n > INT32_MAX;
  if (!first || !last || !lo || !hi) {
    PyErr_NoMemory();
    goto done;
  }
  for (int i = 0; i < 5; i++)
    if (!names[i]) goto done;
  int32_t m = 0; /* buffers of non-zero size */
  for (Py_ssize_t i = 0; i < n && !bad; i++) {
    PyObject *b = PySequence_Fast_GET_ITEM(bs, i), *o = PySequence_Fast_GET_ITEM(os, i);
    int64_t v[5], off = 0, fixed = 0;
    int got = 0, has_fixed = 0;
    for (int f = 0; f < 4 && !got; f++) got = attr_int(b, names[f], &v[f]);
    if (got < 0) goto done;
    PyObject *fx = got ? NULL : PyObject_GetAttr(b, names[4]);
    if (!got && !fx) goto done;
    if (fx && fx != Py_None) {
      int g = attr_int(b, names[4], &fixed);
      if (g < 0) {
        Py_DECREF(fx);
        goto done;
      }
      got = g;
      has_fixed = 1;
    }
    Py_XDECREF(fx);
    if (!got && PyLong_Check(o)) {
      int overflow = 0;
      off = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (off == -1 && PyErr_Occurred()) goto done;
      got = overflow;
    } else {
      got = 1; /* None (missing) or not an integer */
    }
    if (got || off < 0 || off >= BIG || v[2] < 0 || v[2] >= BIG || v[3] < 1 ||
        (v[3] > 1 && off % v[3]) || (has_fixed && off != fixed) ||
        (capacity >= 0 && off + v[2] > capacity)) {
      bad = 1;
      break;
    }
    if (v[2] == 0) continue;
    first[m] = v[0], last[m] = v[1], lo[m] = off, hi[m] = off + v[2];
    m++;
  }
  if (!bad) {
    int over = overlapping(m, first, last, lo, hi);
    if (over < 0) {
      PyErr_NoMemory();
      goto done;
    }
    bad = over;
  }
  result = PyBool_FromLong(!bad);
done:
  for (int i = 0; i < 5; i++) Py_XDECREF(names[i]);
  free(first), free(last), free(lo), free(hi);
  Py_DECREF(bs);
  Py_DECREF(os);
  return result;
}

PyDoc_STRVAR(valid_doc,
             "surely_valid(buffers, offsets, capacity) -> bool\n"
             "True when every offset is set, >= 0, aligned, equal to its fixed offset, within\n"
             "capacity (< 0: none) and no two live buffers of non-zero size share a byte;\n"
             "False when something is wrong or a value is beyond 2**62 (judge it otherwise).");

static PyMethodDef methods[] = {{"surely_valid", py_surely_valid, METH_VARARGS, valid_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_check",
                                    "The solution checker's fast path.", -1, methods};

PyMODINIT_FUNC PyInit__check(void) { return PyModule_Create(&module); }
