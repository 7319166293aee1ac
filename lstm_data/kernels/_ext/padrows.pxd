# cython: language_level=3
"""The GIL-free pieces of padding shared by ``pad.pyx`` and ``gather.pyx``.

:func:`row_bounds` reads each selected row's offsets, checks them, and records
its start and length (O(batch), never O(dataset)); :func:`row_pointers` turns
the starts into the first record of each row. The row loop that copies and pads
the records is ``formrows.form_rows``.

Everything here is ``inline`` and ``nogil``: no Python objects, no exceptions;
errors come back as status codes.
"""
from libc.stdint cimport int32_t, int64_t

cdef extern from "platform.h":
    void LD_PREFETCH(const void *p) nogil

ctypedef fused idx_t:
    int32_t
    int64_t

cdef enum:
    PREFETCH_AHEAD = 4  # rows prefetched this far ahead of the copy
    CACHE_LINE = 64
    BAD_ROW = 1  # row_bounds: a row index out of range
    BAD_OFFSETS = 2  # row_bounds: offsets decreasing or outside [0, total]
    NO_MEMORY = -1


cdef inline int row_bounds(const idx_t *off, const Py_ssize_t *rows, Py_ssize_t n_batch,
                           Py_ssize_t n_rows, int64_t total, int64_t *starts, int64_t *lens,
                           Py_ssize_t *bad, int64_t *longest) noexcept nogil:
    """Record start and length of each batch row (``rows == NULL``: rows 0..n_batch-1).

    Returns 0, ``BAD_ROW`` or ``BAD_OFFSETS``, with the batch position in ``bad``.
    """
    cdef Py_ssize_t b, r
    cdef int64_t s, e, top = 0
    for b in range(n_batch):
        r = rows[b] if rows != NULL else b
        if r < 0 or r >= n_rows:
            bad[0] = b
            return BAD_ROW
        s = off[r]
        e = off[r + 1]
        if s < 0 or e < s or e > total:
            bad[0] = b
            return BAD_OFFSETS
        starts[b] = s
        lens[b] = e - s
        if e - s > top:
            top = e - s
    longest[0] = top
    return 0


cdef inline int row_bounds_any(const void *off, bint off64, const Py_ssize_t *rows,
                               Py_ssize_t n_batch, Py_ssize_t n_rows, int64_t total,
                               int64_t *starts, int64_t *lens, Py_ssize_t *bad,
                               int64_t *longest) noexcept nogil:
    """:func:`row_bounds` for int64 (``off64``) or int32 offsets."""
    if off64:
        return row_bounds(<const int64_t *> off, rows, n_batch, n_rows, total, starts, lens,
                          bad, longest)
    return row_bounds(<const int32_t *> off, rows, n_batch, n_rows, total, starts, lens, bad,
                      longest)


cdef inline void row_pointers(const char *base, Py_ssize_t row_stride, const int64_t *starts,
                              Py_ssize_t n_batch, const char **rowp) noexcept nogil:
    """``rowp[b] = base + starts[b] * row_stride``: the first record of each batch row."""
    cdef Py_ssize_t b
    for b in range(n_batch):
        rowp[b] = base + starts[b] * row_stride
