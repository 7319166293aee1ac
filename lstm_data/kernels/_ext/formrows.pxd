# cython: language_level=3
"""The row loop of every ragged output, shared by ``pad.pyx`` and ``gather.pyx``.

Its implementation is ``formrows.pyx``, compiled once; the modules that cimport
:func:`form_rows_any` call it through the pointer Cython imports with the module.
"""
from libc.stdint cimport int64_t

cdef enum:
    LAYOUT_PADDED = 0
    LAYOUT_CHANNELS_FIRST = 1
    LAYOUT_PACKED = 2


ctypedef struct Form:
    # the source records
    int in_kind  # the index of their dtype in SOURCE_DTYPES
    bint same_type  # their dtype is the output's
    Py_ssize_t itemsize, row_stride, col_stride, n_vars  # sizes and strides in bytes
    const Py_ssize_t *cols  # the output columns; NULL: every column in order
    Py_ssize_t n_cols
    Py_ssize_t sort_col  # records sorted by this column; -1: kept in their order
    bint descending, pre_pad, pre_trunc
    # the output
    bint out64  # float64, else float32
    double pad
    const double *center  # per output column; NULL: no transform (then scale, low, high unused)
    const double *scale
    const double *low
    const double *high
    const double *pads  # per output column; NULL: ``pad`` everywhere
    bint wrap
    int layout  # LAYOUT_*
    # one source of several (NULL: the output's columns are this source's n_cols, in order)
    const Py_ssize_t *at  # the output column of each of n_cols (not with LAYOUT_PACKED)
    Py_ssize_t out_cols  # the output's columns (with ``at``)


cdef int form_rows_any(const Form *f, const char * const *rowp, const int64_t *lens,
                       Py_ssize_t n_batch, Py_ssize_t width, int64_t longest,
                       void *out) noexcept nogil
