# cython: language_level=3
"""Compiled ``parse_float_lists``: comma-string cells to ragged floats.

The readable specification is :func:`lstm_data.kernels._py.parse.parse_float_lists`;
this kernel gives bitwise-equal results and raises the same exception types.

Cells are read through their UTF-8 (``str``) or byte (``bytes``) buffers: the
only Python work is one pointer lookup per cell. Counting and parsing run
without the GIL, and no Python object is created per token.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

cimport numpy as cnp
import math

import numpy as np

from lstm_data.errors import ParseError
from .._args import check_dtype, check_sep
from .numparse cimport is_space, parse_number
from . import numparse as _locale_init  # noqa: F401  (creates the C locale)

cnp.import_array()

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL

cdef object _F32 = np.dtype(np.float32)


cdef char _check_sep(object sep) except 0:
    check_sep(sep)
    return <char> ord(sep)


cdef Py_ssize_t _count(const char **ptrs, const Py_ssize_t *sizes, Py_ssize_t n, char sep,
                       int64_t *offsets) noexcept nogil:
    """Tokens per cell (separators + 1; 0 for missing or blank cells) into offsets."""
    cdef Py_ssize_t i, k, count
    cdef const char *p
    cdef bint blank
    offsets[0] = 0
    for i in range(n):
        count = 0
        p = ptrs[i]
        if sizes[i] > 0:
            blank = True
            for k in range(sizes[i]):
                if p[k] == sep:
                    count += 1
                    blank = False
                elif blank and not is_space(p[k]):
                    blank = False
            if not blank:
                count += 1
        offsets[i + 1] = offsets[i] + count
    return offsets[n]


cdef int _parse(const char **ptrs, const Py_ssize_t *sizes, const int64_t *offsets, Py_ssize_t n,
                char sep, float *out32, double *out64, Py_ssize_t *bad_cell,
                Py_ssize_t *bad_start, Py_ssize_t *bad_stop) noexcept nogil:
    """Parse every token; on error record where and return the parse_number status."""
    cdef Py_ssize_t i, a, b, size
    cdef int64_t k
    cdef const char *p
    cdef double v
    cdef int status
    for i in range(n):
        if offsets[i + 1] == offsets[i]:
            continue
        p = ptrs[i]
        size = sizes[i]
        k = offsets[i]
        a = 0
        while a <= size:
            b = a
            while b < size and p[b] != sep:
                b += 1
            status = parse_number(p + a, b - a, &v)
            if status != 1:
                bad_cell[0] = i
                bad_start[0] = a
                bad_stop[0] = b
                return status
            if out32 != NULL:
                out32[k] = <float> v
            else:
                out64[k] = v
            k += 1
            a = b + 1
    return 1


def _raise_parse_error(object cell, Py_ssize_t index, Py_ssize_t start, Py_ssize_t stop, int status):
    # a str cell's lone surrogates come back as they were; bytes as the twin decodes them
    errors = "surrogatepass" if isinstance(cell, str) else "surrogateescape"
    raw = cell.encode("utf-8", "surrogatepass") if isinstance(cell, str) else bytes(cell)
    prefix = raw[:start].decode("utf-8", errors)
    token = raw[start:stop].decode("utf-8", errors)
    if status == 0:
        raise ParseError("empty token", cell=index, offset=len(prefix), token=token)
    lead = len(token) - len(token.lstrip(" \t\r\n\v\f"))
    raise ParseError("invalid number", cell=index, offset=len(prefix) + lead, token=token)


def parse_float_lists(cells, dtype=np.float32, sep=","):
    """Parse separated-number cells into one flat values array plus offsets (compiled).

    See :func:`lstm_data.kernels._py.parse.parse_float_lists` for the specification.

    Returns
    -------
    values : ndarray of ``dtype``, shape ``(total,)``
    offsets : ndarray of int64, shape ``(len(cells) + 1,)``
    """
    cdef object dt = check_dtype(dtype)  # the twin's check: same errors
    cdef char csep = _check_sep(sep)
    if isinstance(cells, np.ndarray):
        if cells.ndim != 1:
            raise ValueError(f"cells must be 1-D, got shape {cells.shape}")
        cells = cells.tolist()
    elif not isinstance(cells, (list, tuple)):
        cells = list(cells)
    cdef Py_ssize_t n = len(cells), i
    cdef const char **ptrs = <const char **> malloc(max(n, 1) * sizeof(char *))
    cdef Py_ssize_t *sizes = <Py_ssize_t *> malloc(max(n, 1) * sizeof(Py_ssize_t))
    offsets = np.empty(n + 1, dtype=np.int64)
    cdef int64_t *off = <int64_t *> cnp.PyArray_DATA(offsets)
    cdef Py_ssize_t total, bad_cell = 0, bad_start = 0, bad_stop = 0
    cdef int status = 1
    cdef float *out32 = NULL
    cdef double *out64 = NULL
    keep = []  # owns the bytes copies made for bytearray / memoryview cells
    if ptrs == NULL or sizes == NULL:
        free(ptrs)
        free(sizes)
        raise MemoryError()
    try:
        for i in range(n):
            cell = cells[i]
            if isinstance(cell, str):
                try:
                    ptrs[i] = PyUnicode_AsUTF8AndSize(cell, &sizes[i])
                except UnicodeEncodeError:  # lone surrogates: an invalid token, as in the twin
                    cell = cell.encode("utf-8", "surrogatepass")
                    keep.append(cell)
                    ptrs[i] = PyBytes_AS_STRING(cell)
                    sizes[i] = PyBytes_GET_SIZE(cell)
            elif isinstance(cell, bytes):
                ptrs[i] = PyBytes_AS_STRING(cell)
                sizes[i] = PyBytes_GET_SIZE(cell)
            elif cell is None or (isinstance(cell, (float, np.floating)) and math.isnan(cell)):
                ptrs[i] = NULL
                sizes[i] = 0
            elif isinstance(cell, (bytearray, memoryview)):
                cell = bytes(cell)
                keep.append(cell)
                ptrs[i] = PyBytes_AS_STRING(cell)
                sizes[i] = PyBytes_GET_SIZE(cell)
            else:
                raise TypeError(
                    f"cell {i}: expected str, bytes, None or NaN, got {type(cell).__name__}")
        with nogil:
            total = _count(ptrs, sizes, n, csep, off)
        values = np.empty(total, dtype=dt)
        if total:
            if dt == _F32:
                out32 = <float *> cnp.PyArray_DATA(values)
            else:
                out64 = <double *> cnp.PyArray_DATA(values)
            with nogil:
                status = _parse(ptrs, sizes, off, n, csep, out32, out64,
                                &bad_cell, &bad_start, &bad_stop)
        if status != 1:
            _raise_parse_error(cells[bad_cell], bad_cell, bad_start, bad_stop, status)
    finally:
        free(ptrs)
        free(sizes)
    return values, offsets
