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
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from .stable_sort cimport stable_order

cdef extern from "platform.h":
    void LD_PREFETCH(const void *p) nogil

ctypedef fused in_t:  # the source values: floats, integers and booleans (as uint8)
    float
    double
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t

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
    # source kinds of pad_rows_any (the order of _args.SOURCE_KINDS)
    IN_F32 = 0
    IN_F64 = 1
    IN_I8 = 2
    IN_I16 = 3
    IN_I32 = 4
    IN_I64 = 5
    IN_U8 = 6
    IN_U16 = 7
    IN_U32 = 8
    IN_U64 = 9


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


cdef inline int pad_rows(const char * const *rowp, Py_ssize_t row_stride, Py_ssize_t col_stride,
                         const in_t *in_type, out_t *out, bint same_type, Py_ssize_t n_batch,
                         Py_ssize_t width, const int64_t *lens, const Py_ssize_t *cols,
                         Py_ssize_t n_cols, Py_ssize_t n_vars, Py_ssize_t sort_col,
                         bint descending, bint pre_pad, bint pre_trunc, out_t pad,
                         int64_t longest) noexcept nogil:
    """Copy and pad every batch row into ``out``; returns ``NO_MEMORY`` or 0.

    ``rowp[b]`` points at the first record of batch row ``b`` (rows may lie in
    different arrays: the parts of a dataset); ``same_type``: ``in_t`` is ``out_t``,
    so rows whose records are contiguous are copied with one ``memcpy``.
    """
    cdef Py_ssize_t b, p, j, n, slot, first, line, ahead, span
    cdef Py_ssize_t row_out = width * n_cols
    cdef bint contiguous = (col_stride == sizeof(in_t) and row_stride == n_vars * sizeof(in_t)
                            and cols == NULL)
    cdef bint raw_copy = contiguous and same_type
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
            rec = rowp[ahead]
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
        row_base = rowp[b]
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


cdef inline int _pad_from(const char * const *rowp, void *out, bint out64, bint same_type,
                          Py_ssize_t row_stride, Py_ssize_t col_stride, Py_ssize_t n_batch,
                          Py_ssize_t width, const int64_t *lens, const Py_ssize_t *cols,
                          Py_ssize_t n_cols, Py_ssize_t n_vars, Py_ssize_t sort_col, bint descending,
                          bint pre_pad, bint pre_trunc, double pad, int64_t longest,
                          const in_t *in_type) noexcept nogil:
    """:func:`pad_rows` from source type ``in_t`` into float64 (``out64``) or float32."""
    if out64:
        return pad_rows(rowp, row_stride, col_stride, in_type, <double *> out, same_type, n_batch,
                        width, lens, cols, n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc,
                        pad, longest)
    return pad_rows(rowp, row_stride, col_stride, in_type, <float *> out, same_type, n_batch, width,
                    lens, cols, n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc,
                    <float> pad, longest)


cdef inline int pad_rows_any(const char * const *rowp, int in_kind, void *out, bint out64,
                             Py_ssize_t row_stride, Py_ssize_t col_stride, Py_ssize_t n_batch,
                             Py_ssize_t width, const int64_t *lens, const Py_ssize_t *cols,
                             Py_ssize_t n_cols, Py_ssize_t n_vars, Py_ssize_t sort_col,
                             bint descending, bint pre_pad, bint pre_trunc, double pad,
                             int64_t longest) noexcept nogil:
    """:func:`pad_rows` for any source kind (``IN_*``) into float32 or float64 (``out64``)."""
    cdef bint same = (in_kind == IN_F64 and out64) or (in_kind == IN_F32 and not out64)
    if in_kind == IN_F32:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const float *> NULL)
    if in_kind == IN_F64:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const double *> NULL)
    if in_kind == IN_I8:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const int8_t *> NULL)
    if in_kind == IN_I16:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const int16_t *> NULL)
    if in_kind == IN_I32:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const int32_t *> NULL)
    if in_kind == IN_I64:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const int64_t *> NULL)
    if in_kind == IN_U8:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const uint8_t *> NULL)
    if in_kind == IN_U16:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const uint16_t *> NULL)
    if in_kind == IN_U32:
        return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                         n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                         <const uint32_t *> NULL)
    return _pad_from(rowp, out, out64, same, row_stride, col_stride, n_batch, width, lens, cols,
                     n_cols, n_vars, sort_col, descending, pre_pad, pre_trunc, pad, longest,
                     <const uint64_t *> NULL)


cdef inline void row_pointers(const char *base, Py_ssize_t row_stride, const int64_t *starts,
                              Py_ssize_t n_batch, const char **rowp) noexcept nogil:
    """``rowp[b] = base + starts[b] * row_stride``: the first record of each batch row."""
    cdef Py_ssize_t b
    for b in range(n_batch):
        rowp[b] = base + starts[b] * row_stride
