/*
 * The minimalloc CSV writer's fast path: a solution's rows
 * "id,lower,upper,size[,alignment],offset\n" written in two passes (the exact
 * length, then the bytes), as the csv module writes them when no id needs
 * quotes. An id holding a comma, a quote or a line end is not written here:
 * the caller then writes the file with the csv module.
 *
 * Values are int64 (the reader keeps every one below 2**62 in magnitude, so
 * last + 1 cannot overflow); ids are UTF-8.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define DIGITS 24 /* room for an int64 in decimal, with its sign */

/* Decimal digits of v (with a '-' for a negative), right-aligned in buf[DIGITS];
 * returns where they begin. */
static char *decimal(int64_t v, char buf[DIGITS]) {
  char *p = buf + DIGITS;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) *--p = '-';
  return p;
}

static Py_ssize_t decimal_len(int64_t v) {
  char buf[DIGITS];
  return buf + DIGITS - decimal(v, buf);
}

static int needs_quotes(const char *s, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++)
    if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') return 1;
  return 0;
}

typedef struct {
  const int64_t *col[5]; /* lower, upper - 1, size, alignment (or NULL), offset */
  Py_ssize_t n;
} Rows;

/* Row k's values in the order written: lower, upper, size, [alignment,] offset. */
static int row_values(const Rows *r, Py_ssize_t k, int64_t out[5]) {
  int m = 0;
  out[m++] = r->col[0][k];
  out[m++] = r->col[1][k] + 1;
  out[m++] = r->col[2][k];
  if (r->col[3]) out[m++] = r->col[3][k];
  out[m++] = r->col[4][k];
  return m;
}

/* The UTF-8 bytes of buffer k's id (borrowed from the str), or NULL with an
 * exception set. */
static const char *id_of(PyObject *buffers, Py_ssize_t k, PyObject *name, Py_ssize_t *len) {
  PyObject *id = PyObject_GetAttr(PyTuple_GET_ITEM(buffers, k), name);
  if (!id) return NULL;
  const char *s = PyUnicode_Check(id) ? PyUnicode_AsUTF8AndSize(id, len) : NULL;
  if (!s && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "an id is not a str");
  Py_DECREF(id); /* the buffer keeps the str, and the str its UTF-8 bytes */
  return s;
}

/* The file's length in bytes, or -1 with an exception set, or -2 when an id
 * needs quotes. */
static Py_ssize_t total_length(PyObject *buffers, const Rows *r, PyObject *name, Py_ssize_t head) {
  Py_ssize_t total = head;
  for (Py_ssize_t k = 0; k < r->n; k++) {
    Py_ssize_t len;
    const char *s = id_of(buffers, k, name, &len);
    if (!s) return -1;
    if (needs_quotes(s, len)) return -2;
    int64_t v[5];
    int m = row_values(r, k, v);
    total += len + m + 1; /* the id, a comma before each value, the line end */
    for (int j = 0; j < m; j++) total += decimal_len(v[j]);
  }
  return total;
}

static void write_rows(PyObject *buffers, const Rows *r, PyObject *name, char *p) {
  char buf[DIGITS];
  for (Py_ssize_t k = 0; k < r->n; k++) {
    Py_ssize_t len;
    const char *s = id_of(buffers, k, name, &len); /* cannot fail: the first pass read it */
    memcpy(p, s, len);
    p += len;
    int64_t v[5];
    int m = row_values(r, k, v);
    for (int j = 0; j < m; j++) {
      char *d = decimal(v[j], buf);
      *p++ = ',';
      memcpy(p, d, buf + DIGITS - d);
      p += buf + DIGITS - d;
    }
    *p++ = '\n';
  }
}

static int column(Py_buffer *view, Py_ssize_t n, const int64_t **out) {
  if (view->len != n * (Py_ssize_t)sizeof(int64_t)) {
    PyErr_SetString(PyExc_ValueError, "a column's length is not the number of buffers");
    return -1;
  }
  *out = (const int64_t *)view->buf;
  return 0;
}

static PyObject *py_write_rows(PyObject *self, PyObject *args) {
  PyObject *buffers, *align_obj;
  const char *head;
  Py_ssize_t head_len;
  Py_buffer view[5] = {{0}};
  if (!PyArg_ParseTuple(args, "y#O!y*y*y*Oy*", &head, &head_len, &PyTuple_Type, &buffers, &view[0],
                        &view[1], &view[2], &align_obj, &view[4]))
    return NULL;
  PyObject *result = NULL, *name = PyUnicode_InternFromString("id");
  Rows r = {{NULL}, PyTuple_GET_SIZE(buffers)};
  if (!name) goto done;
  if (align_obj != Py_None && PyObject_GetBuffer(align_obj, &view[3], PyBUF_SIMPLE) < 0) goto done;
  for (int c = 0; c < 5; c++)
    if ((c != 3 || align_obj != Py_None) && column(&view[c], r.n, &r.col[c]) < 0) goto done;
  Py_ssize_t total = total_length(buffers, &r, name, head_len);
  if (total == -2) {
    result = Py_NewRef(Py_None);
  } else if (total >= 0 && (result = PyBytes_FromStringAndSize(NULL, total))) {
    char *p = PyBytes_AS_STRING(result);
    memcpy(p, head, head_len);
    write_rows(buffers, &r, name, p + head_len);
  }
done:
  for (int c = 0; c < 5; c++)
    if (view[c].obj) PyBuffer_Release(&view[c]);
  Py_XDECREF(name);
  return result;
}

PyDoc_STRVAR(write_doc,
             "write_rows(head, buffers, lower, last, size, alignment, offset) -> bytes | None\n"
             "head (bytes) then a row a buffer: its id, then lower, last + 1, size,\n"
             "alignment (None: no such column) and offset from the int64 columns (bytes-like).\n"
             "None when an id holds a comma, a quote or a line end (it needs quotes).");

static PyMethodDef methods[] = {{"write_rows", py_write_rows, METH_VARARGS, write_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_csvwrite",
                                    "The minimalloc CSV writer's fast path.", -1, methods};

PyMODINIT_FUNC PyInit__csvwrite(void) { return PyModule_Create(&module); }
