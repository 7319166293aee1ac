# cython: language_level=3
"""The GIL-free row loop of a ragged output in another form than plain padding.

``padrows.pad_rows`` writes the plain ``(B, P, V)`` batch (a ``memcpy`` per row
where it can). :func:`form_rows` writes every other form in the same single pass
over the batch rows, with no second pass and no extra copy:

- a per-column transform of each real element, ``clip((x - center) * scale,
  low, high)`` computed in the output type (the parameters are cast to it first,
  so float32 results equal NumPy's float32 arithmetic bitwise; NaN stays NaN,
  as the comparisons are false for it);
- per-column pad values;
- ``wrap``: slot ``k`` of a row of ``n > 0`` kept elements holds element
  ``k % n`` (copied from the slot already written);
- layouts ``(B, P, V)``, channels-first ``(B, V, P)`` and packed ``(T, V)``:
  the kept elements of every row one after another.
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from .padrows cimport CACHE_LINE, IN_F32, IN_F64, IN_I8, IN_I16, IN_I32, IN_I64, IN_U8, IN_U16, \
    IN_U32, LD_PREFETCH, NO_MEMORY, PREFETCH_AHEAD, _all_zero_bytes, in_t, out_t
from .stable_sort cimport stable_order

cdef enum:
    LAYOUT_PADDED = 0
    LAYOUT_CHANNELS_FIRST = 1
    LAYOUT_PACKED = 2


ctypedef struct Form:
    const double *center  # per output column; NULL: no transform (then scale, low, high unused)
    const double *scale
    const double *low
    const double *high
    const double *pads  # per output column; NULL: the job's one pad value
    bint wrap
    int layout  # LAYOUT_*


cdef inline void _fill(out_t *dst, Py_ssize_t count, out_t value, bint zero) noexcept nogil:
    """``count`` slots of ``dst`` set to ``value`` (``zero``: its bytes are all 0, a ``memset``)."""
    cdef Py_ssize_t k
    if zero:
        memset(dst, 0, count * sizeof(out_t))
    else:
        for k in range(count):
            dst[k] = value


cdef inline void _repeat(out_t *dst, Py_ssize_t n, Py_ssize_t width, Py_ssize_t item) noexcept nogil:
    """Slots ``n..width`` of ``dst`` (slots of ``item`` values) repeat slots ``0..n``: slot ``k``
    becomes slot ``k % n``, copied in doubling blocks (each block starts at a multiple of ``n``)."""
    cdef Py_ssize_t filled = n, chunk
    while filled < width:
        chunk = filled if filled < width - filled else width - filled
        memcpy(dst + filled * item, dst, chunk * item * sizeof(out_t))
        filled += chunk


cdef inline int form_rows(const char * const *rowp, Py_ssize_t row_stride, Py_ssize_t col_stride,
                          const in_t *in_type, out_t *out, Py_ssize_t n_batch, Py_ssize_t width,
                          const int64_t *lens, const Py_ssize_t *cols, Py_ssize_t n_cols,
                          Py_ssize_t sort_col, bint descending, bint pre_pad, bint pre_trunc,
                          double pad, const Form *form, int64_t longest) noexcept nogil:
    """Write every batch row in ``form`` into ``out``; returns ``NO_MEMORY`` or 0.

    ``width`` is the slots per row (packed: the cap of a row's kept elements).
    """
    cdef Py_ssize_t b, p, j, n, slot, first, ahead, span, line, idx
    cdef int64_t total = 0
    cdef bint packed = form.layout == LAYOUT_PACKED
    cdef bint cf = form.layout == LAYOUT_CHANNELS_FIRST
    cdef bint transform = form.center != NULL
    cdef bint sorted_rows, zero_pad
    cdef const char *rec
    cdef out_t *dst
    cdef out_t *at
    cdef out_t v
    cdef double *keys = NULL
    cdef Py_ssize_t *order = NULL
    cdef Py_ssize_t *scratch = NULL
    cdef Py_ssize_t m = n_cols if n_cols > 0 else 1
    cdef Py_ssize_t row_out = width * n_cols
    cdef out_t *par = <out_t *> malloc((5 * m + (row_out if row_out > 0 else 1)) * sizeof(out_t))
    cdef Py_ssize_t *colofs = <Py_ssize_t *> malloc(m * sizeof(Py_ssize_t))
    if par == NULL or colofs == NULL:
        free(par)
        free(colofs)
        return NO_MEMORY
    cdef out_t *cen = par
    cdef out_t *scl = par + m
    cdef out_t *lo = par + 2 * m
    cdef out_t *hi = par + 3 * m
    cdef out_t *pv = par + 4 * m
    cdef out_t *pattern = par + 5 * m  # one row of padding ((B, P, V) layout), copied from below
    for j in range(n_cols):  # every parameter in the output type, once
        pv[j] = <out_t> (form.pads[j] if form.pads != NULL else pad)
        colofs[j] = (cols[j] if cols != NULL else j) * col_stride
        if transform:
            cen[j] = <out_t> form.center[j]
            scl[j] = <out_t> form.scale[j]
            lo[j] = <out_t> form.low[j]
            hi[j] = <out_t> form.high[j]
    zero_pad = _all_zero_bytes(pv, n_cols * sizeof(out_t))
    for j in range(row_out):
        pattern[j] = pv[j % n_cols]
    if sort_col >= 0 and longest > 0:
        keys = <double *> malloc(longest * sizeof(double))
        order = <Py_ssize_t *> malloc(2 * longest * sizeof(Py_ssize_t))
        if keys == NULL or order == NULL:
            free(keys)
            free(order)
            free(par)
            free(colofs)
            return NO_MEMORY
        scratch = order + longest
    for b in range(n_batch):
        ahead = b + PREFETCH_AHEAD  # random rows miss the cache: fetch a few rows ahead
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
        if packed:
            dst = out + total * n_cols
            slot = 0
            total += n
        else:
            dst = out + b * row_out
            slot = width - n if pre_pad else 0
        first = lens[b] - n if pre_trunc else 0
        sorted_rows = keys != NULL and lens[b] > 1
        if sorted_rows:
            for p in range(lens[b]):
                keys[p] = <double> (<const in_t *> (rowp[b] + p * row_stride + sort_col * col_stride))[0]
            stable_order(keys, lens[b], order, scratch, descending)
        for p in range(n):
            idx = order[first + p] if sorted_rows else first + p
            rec = rowp[b] + idx * row_stride
            if cf:  # (B, V, P): column j of slot s at j * width + s
                at = dst + slot + p
                if transform:
                    for j in range(n_cols):  # (as below)
                        v = (<out_t> (<const in_t *> (rec + colofs[j]))[0] - cen[j]) * scl[j]
                        v = lo[j] if v < lo[j] else v
                        v = hi[j] if v > hi[j] else v
                        at[j * width] = v
                else:
                    for j in range(n_cols):
                        at[j * width] = <out_t> (<const in_t *> (rec + colofs[j]))[0]
            elif transform:
                at = dst + (slot + p) * n_cols
                for j in range(n_cols):
                    v = (<out_t> (<const in_t *> (rec + colofs[j]))[0] - cen[j]) * scl[j]
                    # branch-free clip (min/max); false for NaN, which stays NaN; lo <= hi
                    v = lo[j] if v < lo[j] else v
                    v = hi[j] if v > hi[j] else v
                    at[j] = v
            else:
                at = dst + (slot + p) * n_cols
                for j in range(n_cols):
                    at[j] = <out_t> (<const in_t *> (rec + colofs[j]))[0]
        if packed or n == width:
            continue
        if form.wrap and n > 0:  # padding is "post" here: slots n.. repeat the row
            if cf:  # short runs per column: slot k takes slot k % n, read from the first n slots
                for j in range(n_cols):
                    at = dst + j * width
                    idx = 0
                    for p in range(n, width):
                        at[p] = at[idx]
                        idx += 1
                        if idx == n:
                            idx = 0
            else:
                _repeat(dst, n, width, n_cols)
        else:
            first = 0 if pre_pad else n
            if cf:
                for j in range(n_cols):
                    _fill(dst + j * width + first, width - n, pv[j], zero_pad)
            elif zero_pad:
                memset(dst + first * n_cols, 0, (width - n) * n_cols * sizeof(out_t))
            else:
                memcpy(dst + first * n_cols, pattern, (width - n) * n_cols * sizeof(out_t))
    free(keys)
    free(order)
    free(par)
    free(colofs)
    return 0


cdef inline int _form_from(const char * const *rowp, void *out, bint out64, Py_ssize_t row_stride,
                           Py_ssize_t col_stride, Py_ssize_t n_batch, Py_ssize_t width,
                           const int64_t *lens, const Py_ssize_t *cols, Py_ssize_t n_cols,
                           Py_ssize_t sort_col, bint descending, bint pre_pad, bint pre_trunc,
                           double pad, const Form *form, int64_t longest,
                           const in_t *in_type) noexcept nogil:
    """:func:`form_rows` from source type ``in_t`` into float64 (``out64``) or float32."""
    if out64:
        return form_rows(rowp, row_stride, col_stride, in_type, <double *> out, n_batch, width, lens,
                         cols, n_cols, sort_col, descending, pre_pad, pre_trunc, pad, form, longest)
    return form_rows(rowp, row_stride, col_stride, in_type, <float *> out, n_batch, width, lens,
                     cols, n_cols, sort_col, descending, pre_pad, pre_trunc, pad, form, longest)


cdef inline int form_rows_any(const char * const *rowp, int in_kind, void *out, bint out64,
                              Py_ssize_t row_stride, Py_ssize_t col_stride, Py_ssize_t n_batch,
                              Py_ssize_t width, const int64_t *lens, const Py_ssize_t *cols,
                              Py_ssize_t n_cols, Py_ssize_t sort_col, bint descending, bint pre_pad,
                              bint pre_trunc, double pad, const Form *form,
                              int64_t longest) noexcept nogil:
    """:func:`form_rows` for any source kind (``padrows.IN_*``)."""
    if in_kind == IN_F32:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const float *> NULL)
    if in_kind == IN_F64:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const double *> NULL)
    if in_kind == IN_I8:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const int8_t *> NULL)
    if in_kind == IN_I16:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const int16_t *> NULL)
    if in_kind == IN_I32:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const int32_t *> NULL)
    if in_kind == IN_I64:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const int64_t *> NULL)
    if in_kind == IN_U8:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const uint8_t *> NULL)
    if in_kind == IN_U16:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const uint16_t *> NULL)
    if in_kind == IN_U32:
        return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                          sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const uint32_t *> NULL)
    return _form_from(rowp, out, out64, row_stride, col_stride, n_batch, width, lens, cols, n_cols,
                      sort_col, descending, pre_pad, pre_trunc, pad, form, longest, <const uint64_t *> NULL)
