/*
 * Helpers shared by the allocation module's C extensions (_search.c, _sweep.c,
 * _tiling.c).
 * Include after Python.h. Sizes and offsets are bytes (int64).
 */
#ifndef ARENAPLAN_NATIVE_H
#define ARENAPLAN_NATIVE_H

#include <stdint.h>
#include <time.h>

/* Monotonic seconds, for deadlines. */
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* x rounded up to a multiple of a (a <= 1: x itself); x >= 0. */
static int64_t align_up(int64_t x, int64_t a) {
  if (a <= 1) return x;
  int64_t r = x % a;
  return r ? x + (a - r) : x;
}

/* A C-contiguous buffer of exactly count items of itemsize bytes, or -1 with a
 * ValueError naming it. */
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

#endif
