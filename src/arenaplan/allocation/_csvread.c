/*
 * The minimalloc CSV reader's fast path: the data rows of a plain file (no
 * quotes, ASCII, lines ending in \n or \r\n) parsed into Buffer objects and
 * int64 columns in one pass.
 *
 * It accepts only what the Python reader (minimalloc_csv._parse) accepts, and
 * gives the same values: fields trimmed of spaces and tabs, integers as an
 * optional sign and decimal digits, |value| < 2**62. Anything else in a row
 * (a bad value, an unusual spelling such as "1_000", too many fields) is not
 * judged here: the row's number and byte range go back to Python, whose reader
 * names the error (or, if it takes the row, reads the whole file itself).
 * A file it cannot split safely (a quote, a lone \r, a NUL or control byte, a
 * byte >= 0x80) goes back whole. It says whether the ids are all different
 * (a hash set of their bytes); when they are not, the caller names the row.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <structmember.h>

#define LIMIT ((int64_t)1 << 62) /* every value's magnitude stays below this */

enum { READ_OK = 0, READ_BAD_ROW = 1, READ_NOT_PLAIN = 2 };
enum { C_ID, C_LOWER, C_UPPER, C_SIZE, C_ALIGN, C_OFFSET, N_COLS };

static const char *const FIELDS[] = {"id", "first", "last", "size", "alignment", "offset"};

/* Where Buffer's slots live in its objects (byte offsets), from its type's
 * member table; all -1 if the type is not the plain slotted class expected. */
typedef struct {
  Py_ssize_t at[N_COLS];
} Slots;

static int find_slots(PyTypeObject *type, Slots *s) {
  for (int f = 0; f < N_COLS; f++) s->at[f] = -1;
  if (!type->tp_members) return -1;
  for (PyMemberDef *m = type->tp_members; m->name; m++)
    for (int f = 0; f < N_COLS; f++)
      if (strcmp(m->name, FIELDS[f]) == 0 && m->type == T_OBJECT_EX) s->at[f] = m->offset;
  for (int f = 0; f < N_COLS; f++)
    if (s->at[f] < 0) return -1;
  return 0;
}

/* A Buffer with the given fields, its __init__ bypassed (it only stores them);
 * steals the references. NULL on failure (references released). It holds only
 * str, int and None, so it can be in no reference cycle: the cycle collector
 * is told not to visit it (a million Buffers cost it a second a full pass). */
static PyObject *make_buffer(PyTypeObject *type, const Slots *s, PyObject *v[N_COLS]) {
  PyObject *b = type->tp_alloc(type, 0);
  if (!b) {
    for (int f = 0; f < N_COLS; f++) Py_XDECREF(v[f]);
    return NULL;
  }
  for (int f = 0; f < N_COLS; f++) *(PyObject **)((char *)b + s->at[f]) = v[f];
  PyObject_GC_UnTrack(b);
  return b;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Parse [p, e) trimmed as an integer with |value| < LIMIT; 0 on success. */
static int parse_int(const char *p, const char *e, int64_t *out) {
  while (p < e && is_blank(*p)) p++;
  while (e > p && is_blank(e[-1])) e--;
  int neg = 0;
  if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
  if (p == e || e - p > 19) return -1;
  int64_t v = 0;
  for (; p < e; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
    if (v >= LIMIT) return -1;
  }
  *out = neg ? -v : v;
  return 0;
}

/* Is the whole text plain: no quote, lone \r, NUL, control byte or non-ASCII? */
static int plain(const char *t, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)t[i];
    if (c >= 0x80 || c == '"') return 0;
    if (c < 0x20 && c != '\n' && c != '\t' && !(c == '\r' && i + 1 < n && t[i + 1] == '\n'))
      return 0;
  }
  return 1;
}

typedef struct {
  int64_t *first, *last, *size, *align, *fixed; /* columns, bytes / inclusive steps */
  const char **id;                               /* each row's id, trimmed: id[k]..id_end[k] */
  const char **id_end;
} Columns;

static uint64_t hash_bytes(const char *p, const char *e) { /* FNV-1a, 64 bits */
  uint64_t h = 1469598103934665603ull;
  for (; p < e; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  return h;
}

/* 1 when the n ids are all different, 0 when two are equal, -1 out of memory
 * (an open-addressing set of row numbers, at most half full). */
static int ids_unique(const Columns *c, Py_ssize_t n) {
  size_t slots = 2;
  while (slots < 2 * (size_t)n) slots *= 2;
  int64_t *set = malloc(slots * sizeof(int64_t));
  if (!set) return -1;
  memset(set, 0xff, slots * sizeof(int64_t)); /* -1: empty */
  int unique = 1;
  for (Py_ssize_t k = 0; k < n && unique; k++) {
    size_t len = (size_t)(c->id_end[k] - c->id[k]);
    size_t at = (size_t)hash_bytes(c->id[k], c->id_end[k]) & (slots - 1);
    for (; set[at] >= 0; at = (at + 1) & (slots - 1)) {
      int64_t j = set[at];
      if ((size_t)(c->id_end[j] - c->id[j]) == len && !memcmp(c->id[j], c->id[k], len)) {
        unique = 0;
        break;
      }
    }
    set[at] = k;
  }
  free(set);
  return unique;
}

/* One data row [p, e) into the columns at k and a Buffer; 0 ok, -1 a bad row,
 * -2 a Python error. col[c]: the field index of each column (-1: absent). */
static int parse_row(const char *p, const char *e, const int *col, int width, Py_ssize_t k,
                     Columns *c, PyTypeObject *type, const Slots *s, PyObject **out) {
  const char *start[64], *end[64];
  int n = 0;
  const char *f = p;
  for (const char *q = p;; q++) {
    if (q == e || *q == ',') {
      if (n == width) return -1; /* more fields than columns */
      start[n] = f;
      end[n] = q;
      n++;
      f = q + 1;
      if (q == e) break;
    }
  }
  for (; n < width; n++) start[n] = end[n] = e; /* short rows: missing fields empty */
  const char *ip = start[col[C_ID]], *ie = end[col[C_ID]];
  while (ip < ie && is_blank(*ip)) ip++;
  while (ie > ip && is_blank(ie[-1])) ie--;
  if (ip == ie) return -1;
  int64_t lower, upper, size, align = 1, fixed = -1;
  int has_fixed = 0; /* an offset given: fixed, whatever its value */
  if (parse_int(start[col[C_LOWER]], end[col[C_LOWER]], &lower) ||
      parse_int(start[col[C_UPPER]], end[col[C_UPPER]], &upper) ||
      parse_int(start[col[C_SIZE]], end[col[C_SIZE]], &size) || upper <= lower || size < 0)
    return -1;
  for (int opt = C_ALIGN; opt <= C_OFFSET; opt++) {
    if (col[opt] < 0) continue;
    const char *a = start[col[opt]], *b = end[col[opt]];
    while (a < b && is_blank(*a)) a++;
    if (a == b) continue;
    if (parse_int(a, b, opt == C_ALIGN ? &align : &fixed)) return -1;
    has_fixed |= opt == C_OFFSET;
  }
  if (align < 1 || (align & (align - 1))) return -1;
  if (has_fixed && (fixed < 0 || fixed % align)) return -1;
  c->id[k] = ip;
  c->id_end[k] = ie;
  c->first[k] = lower;
  c->last[k] = upper - 1;
  c->size[k] = size;
  c->align[k] = align;
  c->fixed[k] = fixed;
  PyObject *v[N_COLS] = {PyUnicode_DecodeASCII(ip, ie - ip, NULL), PyLong_FromLongLong(lower),
                         PyLong_FromLongLong(upper - 1), PyLong_FromLongLong(size),
                         PyLong_FromLongLong(align), NULL};
  if (has_fixed) {
    v[C_OFFSET] = PyLong_FromLongLong(fixed);
  } else {
    v[C_OFFSET] = Py_None;
    Py_INCREF(Py_None);
  }
  for (int i = 0; i < N_COLS; i++)
    if (!v[i]) {
      for (int j = 0; j < N_COLS; j++) Py_XDECREF(v[j]);
      return -2;
    }
  *out = make_buffer(type, s, v);
  return *out ? 0 : -2;
}

static PyObject *columns_result(Columns *c, Py_ssize_t n, PyObject *buffers) {
  Py_ssize_t bytes = n * (Py_ssize_t)sizeof(int64_t);
  int unique = ids_unique(c, n);
  if (unique < 0) {
    Py_DECREF(buffers);
    return PyErr_NoMemory();
  }
  return Py_BuildValue("(iNy#y#y#y#y#O)", READ_OK, buffers, (const char *)c->first, bytes,
                       (const char *)c->last, bytes, (const char *)c->size, bytes,
                       (const char *)c->align, bytes, (const char *)c->fixed, bytes,
                       unique ? Py_True : Py_False);
}

static PyObject *py_read_rows(PyObject *self, PyObject *args) {
  (void)self;
  const char *text;
  Py_ssize_t len, from;
  int col[N_COLS], width;
  PyTypeObject *type;
  if (!PyArg_ParseTuple(args, "y#n(iiiiii)iO!", &text, &len, &from, &col[0], &col[1], &col[2],
                        &col[3], &col[4], &col[5], &width, &PyType_Type, &type))
    return NULL;
  Slots s;
  if (width < 1 || width > 64 || from < 0 || from > len || !plain(text, len) ||
      find_slots(type, &s) < 0)
    return Py_BuildValue("(i)", READ_NOT_PLAIN);
  Py_ssize_t rows = 0;
  for (Py_ssize_t i = from; i < len; i++) rows += text[i] == '\n';
  rows += len > from && text[len - 1] != '\n';
  Columns c;
  size_t cap = (size_t)(rows ? rows : 1) * sizeof(int64_t);
  c.first = malloc(cap), c.last = malloc(cap), c.size = malloc(cap), c.align = malloc(cap);
  c.fixed = malloc(cap);
  size_t spans = (size_t)(rows ? rows : 1) * sizeof(const char *);
  c.id = malloc(spans), c.id_end = malloc(spans);
  PyObject *buffers = PyList_New(0), *result = NULL;
  int gc_was_on = 0;
  if (!c.first || !c.last || !c.size || !c.align || !c.fixed || !c.id || !c.id_end ||
      !buffers) {
    PyErr_NoMemory();
    goto done;
  }
  Py_ssize_t k = 0, record = 1; /* records as numbered in messages: the header is 1 */
  gc_was_on = PyGC_Disable(); /* a million new objects: no collection half-way */
  for (Py_ssize_t p = from; p < len;) {
    const char *nl = memchr(text + p, '\n', (size_t)(len - p));
    Py_ssize_t e = nl ? nl - text : len, next = nl ? e + 1 : len;
    if (e > p && text[e - 1] == '\r') e--;
    if (e == p) { /* a blank line: skipped, not numbered */
      p = next;
      continue;
    }
    record++;
    PyObject *b = NULL;
    int got = parse_row(text + p, text + e, col, width, k, &c, type, &s, &b);
    if (got == -2) goto done;
    if (got == -1) {
      result = Py_BuildValue("(innn)", READ_BAD_ROW, record, p, e);
      goto done;
    }
    if (PyList_Append(buffers, b) < 0) {
      Py_DECREF(b);
      goto done;
    }
    Py_DECREF(b);
    k++;
    p = next;
  }
  PyObject *as_tuple = PyList_AsTuple(buffers);
  if (as_tuple) result = columns_result(&c, k, as_tuple);
done:
  if (gc_was_on) PyGC_Enable();
  Py_XDECREF(buffers);
  free(c.first), free(c.last), free(c.size), free(c.align), free(c.fixed);
  free((void *)c.id), free((void *)c.id_end);
  return result;
}

PyDoc_STRVAR(read_doc,
             "read_rows(text, start, columns, width, buffer_type) -> result\n"
             "The data rows of text[start:] (UTF-8 bytes). columns: the field index of id,\n"
             "lower, upper, size, alignment, offset (-1: absent); width: fields a row.\n"
             "(0, buffers, first, last, size, align, fixed, ids_unique) with int64 columns\n"
             "as bytes (fixed -1 when free); (1, row, begin, end) for the first row this\n"
             "reader does not take (numbered as in messages, its byte range); (2,) for a\n"
             "file it does not read.");

static PyMethodDef methods[] = {{"read_rows", py_read_rows, METH_VARARGS, read_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_csvread",
                                    "The minimalloc CSV reader's fast path.", -1, methods};

PyMODINIT_FUNC PyInit__csvread(void) { return PyModule_Create(&module); }
