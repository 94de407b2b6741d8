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
 * offset. They are found by rank of offset in a bitmap of the live ranks with
 * summary levels, and the live ones leave in order of last step: three radix
 * sorts and O(n) word operations in all.
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
#include <string.h>

typedef struct {
  uint64_t key; /* offset (bytes) or step, its sign bit flipped: unsigned order */
  int32_t idx;  /* index among the non-empty buffers */
} Keyed;

/* Sort a[0..m) by key, stably (ties keep their order), through tmp: least
 * significant digit first, 16 bits a pass, a pass skipped when every key has
 * the same digit. 0, or -1 out of memory. */
static int radix_sort(Keyed *a, Keyed *tmp, int32_t m) {
  size_t *count = malloc(65536 * sizeof(size_t));
  if (!count) return -1;
  Keyed *src = a, *dst = tmp;
  for (int shift = 0; shift < 64; shift += 16) {
    memset(count, 0, 65536 * sizeof(size_t));
    for (int32_t i = 0; i < m; i++) count[(src[i].key >> shift) & 0xffff]++;
    if (m == 0 || count[(src[0].key >> shift) & 0xffff] == (size_t)m) continue;
    size_t at = 0;
    for (int d = 0; d < 65536; d++) {
      size_t c = count[d];
      count[d] = at;
      at += c;
    }
    for (int32_t i = 0; i < m; i++) dst[count[(src[i].key >> shift) & 0xffff]++] = src[i];
    Keyed *t = src;
    src = dst, dst = t;
  }
  if (src != a) memcpy(a, src, (size_t)m * sizeof(Keyed));
  free(count);
  return 0;
}

/* The order of the m values, ascending (ties by index), in out. 0, or -1. */
static int order_of(const int64_t *v, int32_t m, int32_t *out, Keyed *a, Keyed *tmp) {
  for (int32_t k = 0; k < m; k++) a[k] = (Keyed){(uint64_t)v[k] ^ ((uint64_t)1 << 63), k};
  if (radix_sort(a, tmp, m) < 0) return -1;
  for (int32_t k = 0; k < m; k++) out[k] = a[k].idx;
  return 0;
}

/* A set of ranks 0..n as bits, with a summary level above each level (bit i of
 * level l + 1 set when word i of level l is not zero): its members below and
 * above a rank are found in a few word operations. */
#define MAX_LEVELS 7
typedef struct {
  uint64_t *w[MAX_LEVELS];
  int levels;
} Bits;

static int bits_make(Bits *b, int64_t n) {
  b->levels = 0;
  for (int64_t words = n / 64 + 1;; words = words / 64 + 1) {
    if (b->levels == MAX_LEVELS) return -1;
    b->w[b->levels] = calloc((size_t)words, sizeof(uint64_t));
    if (!b->w[b->levels++]) return -1;
    if (words == 1) return 0;
  }
}

static void bits_free(Bits *b) {
  for (int l = 0; l < b->levels; l++) free(b->w[l]);
}

static void bits_set(Bits *b, int64_t x) {
  for (int l = 0; l < b->levels; l++, x >>= 6) {
    uint64_t *word = &b->w[l][x >> 6], was = *word;
    *word |= (uint64_t)1 << (x & 63);
    if (was) return; /* the levels above know this word already */
  }
}

static void bits_clear(Bits *b, int64_t x) {
  for (int l = 0; l < b->levels; l++, x >>= 6) {
    uint64_t *word = &b->w[l][x >> 6];
    *word &= ~((uint64_t)1 << (x & 63));
    if (*word) return; /* still not empty: the levels above stay */
  }
}

/* The largest member below x, or -1. */
static int64_t bits_below(const Bits *b, int64_t x) {
  for (int l = 0; l < b->levels; l++, x >>= 6) {
    uint64_t below = b->w[l][x >> 6] & (((uint64_t)1 << (x & 63)) - 1);
    if (!below) continue;
    int64_t pos = (x & ~(int64_t)63) + 63 - __builtin_clzll(below);
    for (int d = l - 1; d >= 0; d--) pos = pos * 64 + 63 - __builtin_clzll(b->w[d][pos]);
    return pos;
  }
  return -1;
}

/* The smallest member above x, or -1. */
static int64_t bits_above(const Bits *b, int64_t x) {
  for (int l = 0; l < b->levels; l++, x >>= 6) {
    int sh = (int)(x & 63);
    uint64_t above = sh == 63 ? 0 : b->w[l][x >> 6] & ~((((uint64_t)1) << (sh + 1)) - 1);
    if (!above) continue;
    int64_t pos = (x & ~(int64_t)63) + __builtin_ctzll(above);
    for (int d = l - 1; d >= 0; d--) pos = pos * 64 + __builtin_ctzll(b->w[d][pos]);
    return pos;
  }
  return -1;
}

/* 0 when no two of the m rectangles [first, last] x [lo, hi) overlap, 1 when
 * two do, -1 out of memory. Buffers enter in order of first step and leave in
 * order of last step (a buffer ending before another's first step entered
 * before it); the live ones are a set of ranks by offset, so a newcomer's
 * neighbours below and above are the members next to its rank. */
static int overlapping(int32_t m, const int64_t *first, const int64_t *last, const int64_t *lo,
                       const int64_t *hi) {
  size_t n = (size_t)(m ? m : 1);
  Keyed *a = malloc(n * sizeof(Keyed)), *tmp = malloc(n * sizeof(Keyed));
  int32_t *by_lo = malloc(n * sizeof(int32_t)), *by_first = malloc(n * sizeof(int32_t));
  int32_t *by_last = malloc(n * sizeof(int32_t)), *rank = malloc(n * sizeof(int32_t));
  int64_t *lo_at = malloc(n * sizeof(int64_t)), *hi_at = malloc(n * sizeof(int64_t));
  Bits live = {{NULL}, 0};
  int found = -1;
  if (!a || !tmp || !by_lo || !by_first || !by_last || !rank || !lo_at || !hi_at ||
      bits_make(&live, (int64_t)n) < 0 || order_of(lo, m, by_lo, a, tmp) < 0 ||
      order_of(first, m, by_first, a, tmp) < 0 || order_of(last, m, by_last, a, tmp) < 0)
    goto done;
  for (int32_t r = 0; r < m; r++) {
    int32_t k = by_lo[r];
    rank[k] = r;
    lo_at[r] = lo[k];
    hi_at[r] = hi[k];
  }
  found = 0;
  for (int32_t q = 0, j = 0; q < m && !found; q++) {
    int32_t k = by_first[q], r = rank[k];
    for (; j < m && last[by_last[j]] < first[k]; j++) bits_clear(&live, rank[by_last[j]]);
    int64_t below = bits_below(&live, r), above = bits_above(&live, r);
    if (below >= 0 && hi_at[below] > lo_at[r]) found = 1;
    if (above >= 0 && lo_at[above] < hi_at[r]) found = 1;
    bits_set(&live, r);
  }
done:
  free(a), free(tmp), free(by_lo), free(by_first), free(by_last), free(rank);
  free(lo_at), free(hi_at);
  bits_free(&live);
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
