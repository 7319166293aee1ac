# cython: language_level=3
"""The GIL-free row loops of padding, shared by ``pad.pyx`` and ``gather.pyx``.

Two passes over the batch rows:

1. :func:`row_bounds` reads each selected row's offsets, checks them, and records
   its start and length (O(batch), never O(dataset));
2. :func:`pad_rows` copies each row's prongs (one ``memcpy`` when the layout
   allows, prefetching the rows ahead because random rows miss the cache) and
   writes the padding by copying from a row of pad values, which lets the C
   library's runtime-dispatched wide stores do the filling; a +0.0 pad (Keras
   masking) is a ``memset``, whose string stores write whole cache lines without
   reading them first: a quarter faster into a buffer that left the caches.

Everything here is ``inline`` and ``nogil``: no Python objects, no exceptions;
errors come back as status codes.
"""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from .stable_sort cimport stable_order

cdef extern from "platform.h":
    void LD_PREFETCH(const void *p) nogil

ctypedef fused in_t:
    float
    double

ctypedef fused out_t:
    float
    double

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


cdef inline bint _all_zero_bytes(const void *p, size_t n) noexcept nogil:
    """All ``n`` bytes at ``p`` are zero (a +0.0 pad value; -0.0 is not)."""
    cdef const unsigned char *b = <const unsigned char *> p
    cdef size_t i
    for i in range(n):
        if b[i]:
            return False
    return True


cdef inline int pad_rows(const char *base, Py_ssize_t row_stride, Py_ssize_t col_stride,
                         const in_t *in_type, out_t *out, Py_ssize_t n_batch, Py_ssize_t width,
                         const int64_t *starts, const int64_t *lens, const Py_ssize_t *cols,
                         Py_ssize_t n_cols, Py_ssize_t n_vars, Py_ssize_t sort_col,
                         bint descending, bint pre_pad, bint pre_trunc, out_t pad,
                         int64_t longest) noexcept nogil:
    """Copy and pad every batch row into ``out``; returns ``NO_MEMORY`` or 0."""
    cdef Py_ssize_t b, p, j, n, slot, first, line, ahead, span
    cdef Py_ssize_t row_out = width * n_cols
    cdef bint contiguous = (col_stride == sizeof(in_t) and row_stride == n_vars * sizeof(in_t)
                            and cols == NULL)
    cdef bint raw_copy = contiguous and sizeof(in_t) == sizeof(out_t)
    cdef const char *rec
    cdef const char *row_base
    cdef out_t *dst
    cdef double *keys = NULL
    cdef Py_ssize_t *order = NULL
    cdef Py_ssize_t *scratch = NULL
    cdef bint zero_pad = _all_zero_bytes(&pad, sizeof(out_t))
    cdef out_t *pattern = <out_t *> malloc((row_out if row_out > 0 else 1) * sizeof(out_t))
    if pattern == NULL:
        return NO_MEMORY
    for j in range(row_out):  # one row of padding, copied from below
        pattern[j] = pad
    if sort_col >= 0 and longest > 0:
        keys = <double *> malloc(longest * sizeof(double))
        order = <Py_ssize_t *> malloc(2 * longest * sizeof(Py_ssize_t))
        if keys == NULL or order == NULL:
            free(keys)
            free(order)
            free(pattern)
            return NO_MEMORY
        scratch = order + longest
    for b in range(n_batch):
        # prefetch the records of a row a few steps ahead: random rows miss the cache
        ahead = b + PREFETCH_AHEAD
        if ahead < n_batch and lens[ahead] > 0:
            rec = base + starts[ahead] * row_stride
            span = lens[ahead] * row_stride
            if span > 16 * CACHE_LINE:
                span = 16 * CACHE_LINE
            line = 0
            while line < span:
                LD_PREFETCH(rec + line)
                line += CACHE_LINE
        n = lens[b] if lens[b] < width else width
        slot = width - n if pre_pad else 0
        dst = out + b * row_out
        row_base = base + starts[b] * row_stride
        if keys != NULL and lens[b] > 1:
            for p in range(lens[b]):
                keys[p] = <double> (<const in_t *> (row_base + p * row_stride + sort_col * col_stride))[0]
            stable_order(keys, lens[b], order, scratch, descending)
            first = lens[b] - n if pre_trunc else 0
            for p in range(n):
                rec = row_base + order[first + p] * row_stride
                for j in range(n_cols):
                    dst[(slot + p) * n_cols + j] = <out_t> (<const in_t *> (
                        rec + (cols[j] if cols != NULL else j) * col_stride))[0]
        else:
            first = lens[b] - n if pre_trunc else 0
            rec = row_base + first * row_stride
            if raw_copy:
                memcpy(dst + slot * n_cols, rec, n * n_cols * sizeof(out_t))
            elif contiguous:
                for j in range(n * n_cols):
                    dst[slot * n_cols + j] = <out_t> (<const in_t *> rec)[j]
            else:
                for p in range(n):
                    for j in range(n_cols):
                        dst[(slot + p) * n_cols + j] = <out_t> (<const in_t *> (
                            rec + p * row_stride + (cols[j] if cols != NULL else j) * col_stride))[0]
        if n < width:
            if zero_pad:
                memset(dst if pre_pad else dst + n * n_cols, 0, (width - n) * n_cols * sizeof(out_t))
            else:
                memcpy(dst if pre_pad else dst + n * n_cols, pattern, (width - n) * n_cols * sizeof(out_t))
    free(keys)
    free(order)
    free(pattern)
    return 0


cdef inline int pad_rows_any(const char *base, bint in64, void *out, bint out64,
                             Py_ssize_t row_stride, Py_ssize_t col_stride, Py_ssize_t n_batch,
                             Py_ssize_t width, const int64_t *starts, const int64_t *lens,
                             const Py_ssize_t *cols, Py_ssize_t n_cols, Py_ssize_t n_vars,
                             Py_ssize_t sort_col, bint descending, bint pre_pad, bint pre_trunc,
                             double pad, int64_t longest) noexcept nogil:
    """:func:`pad_rows` for float32/float64 input (``in64``) and output (``out64``)."""
    if in64 and out64:
        return pad_rows(base, row_stride, col_stride, <const double *> NULL, <double *> out,
                        n_batch, width, starts, lens, cols, n_cols, n_vars, sort_col,
                        descending, pre_pad, pre_trunc, pad, longest)
    if in64:
        return pad_rows(base, row_stride, col_stride, <const double *> NULL, <float *> out,
                        n_batch, width, starts, lens, cols, n_cols, n_vars, sort_col,
                        descending, pre_pad, pre_trunc, <float> pad, longest)
    if out64:
        return pad_rows(base, row_stride, col_stride, <const float *> NULL, <double *> out,
                        n_batch, width, starts, lens, cols, n_cols, n_vars, sort_col,
                        descending, pre_pad, pre_trunc, pad, longest)
    return pad_rows(base, row_stride, col_stride, <const float *> NULL, <float *> out,
                    n_batch, width, starts, lens, cols, n_cols, n_vars, sort_col,
                    descending, pre_pad, pre_trunc, <float> pad, longest)
