# cython: language_level=3
"""Compiled ``pad_ragged``: gather ragged rows into a padded batch.

The readable specification, with the full parameter documentation, is the
pure-Python twin :func:`lstm_data.kernels._py.pad.pad_ragged`; this kernel gives
bitwise-equal results and raises the same exception types.

How it is fast
--------------
* Validation is O(batch): only the selected rows' offsets are checked, inside
  the first ``nogil`` pass that also records every row's start and length.
* The second ``nogil`` pass copies each row with one ``memcpy`` when the layout
  allows (same dtype, all columns, C-contiguous), prefetching the rows ahead
  (random rows miss the cache), and copies the padding from a row of pad
  values (the row loop of ``formrows.pyx``, shared with ``gather.pyx``).
* Callers that pass ``out=`` avoid fresh-page faults on every batch.
"""
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

cimport numpy as cnp
import numpy as np

from .._args import SOURCE_KINDS, as_columns, as_out, check_dtype

from .formrows cimport LAYOUT_PADDED, Form, form_rows_any
from .padrows cimport BAD_ROW, NO_MEMORY, row_bounds_any, row_pointers

cnp.import_array()

cdef object _F64 = np.dtype(np.float64)
cdef object _I32 = np.dtype(np.int32)
cdef object _I64 = np.dtype(np.int64)
cdef object _INTP = np.dtype(np.intp)


cdef object _as_rows(object rows, Py_ssize_t n_rows):
    arr = rows if isinstance(rows, np.ndarray) else np.asarray(rows)
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"rows must be a 1-D array of integers, got {arr.dtype} shape {arr.shape}")
    if arr.dtype != _INTP:
        if arr.dtype.kind == "u" and arr.max() >= n_rows:
            raise ValueError(f"row {arr.max()} out of range for {n_rows} rows")
        arr = arr.astype(np.intp)
    return np.ascontiguousarray(arr)


cdef Py_ssize_t _as_index(object value, str what, Py_ssize_t limit) except -2:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{what} must be {'a column index' if limit >= 0 else 'an int or None'}, "
                         f"got {value!r}")
    if limit >= 0 and not 0 <= value < limit:
        raise ValueError(f"{what} column {value} out of range for {limit} variables")
    if limit < 0 and value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return <Py_ssize_t> value


def pad_ragged(values, offsets, rows=None, *, max_len=None, pad_value=np.nan, columns=None,
               sort_by=None, descending=True, padding="post", truncating="post",
               dtype=np.float32, out=None):
    """Gather ragged rows into one fixed-size padded batch (compiled).

    See :func:`lstm_data.kernels._py.pad.pad_ragged` for the full specification.

    Returns
    -------
    batch : ndarray, shape ``(B, P, V')`` (or ``(B, P)`` for 1-D ``values``)
    lengths : ndarray of int64, shape ``(B,)``
    """
    cdef object dt = check_dtype(dtype)  # the twin's check: same errors
    cdef cnp.ndarray vals = values if isinstance(values, np.ndarray) else np.asarray(values)
    if vals.dtype == np.bool_:
        vals = vals.view(np.uint8)
    cdef object vdt = vals.dtype
    if vdt not in SOURCE_KINDS or not vdt.isnative:
        raise TypeError(f"values must be float32, float64, a native integer or boolean dtype, got {vdt}")
    cdef int in_kind = SOURCE_KINDS.index(vdt)
    cdef int ndim = vals.ndim
    if ndim != 1 and ndim != 2:
        raise ValueError(f"values must be 1-D or 2-D, got shape {(<object> vals).shape}")
    cdef bint flat = ndim == 1
    cdef Py_ssize_t total = vals.shape[0]
    cdef Py_ssize_t n_vars = 1 if flat else vals.shape[1]
    cdef Py_ssize_t row_stride = vals.strides[0]
    cdef Py_ssize_t col_stride = vals.itemsize if flat else vals.strides[1]

    cdef cnp.ndarray off = offsets if isinstance(offsets, np.ndarray) else np.asarray(offsets)
    cdef object odt = off.dtype
    if odt != _I64 and odt != _I32:
        raise TypeError(f"offsets must be int32 or int64, got {odt}")
    if off.ndim != 1 or off.shape[0] < 1:
        raise ValueError(f"offsets must be 1-D with at least one entry, got shape {(<object> off).shape}")
    if off[0] != 0:
        raise ValueError(f"offsets[0] must be 0, got {off[0]}")
    if off[off.shape[0] - 1] != total:
        raise ValueError(f"offsets[-1] ({off[off.shape[0] - 1]}) != len(values) ({total})")
    cdef Py_ssize_t n_rows = off.shape[0] - 1

    cdef cnp.ndarray row_arr = None
    cdef const Py_ssize_t *row_ptr = NULL
    cdef Py_ssize_t n_batch = n_rows
    if rows is not None:
        row_arr = _as_rows(rows, n_rows)
        row_ptr = <const Py_ssize_t *> cnp.PyArray_DATA(row_arr)
        n_batch = row_arr.shape[0]

    cdef cnp.ndarray col_arr = None
    cdef const Py_ssize_t *col_ptr = NULL
    cdef Py_ssize_t n_cols = n_vars
    if columns is not None:
        col_arr = np.ascontiguousarray(as_columns(columns, n_vars, flat), dtype=np.intp)
        col_ptr = <const Py_ssize_t *> cnp.PyArray_DATA(col_arr)
        n_cols = col_arr.shape[0]
    cdef Py_ssize_t sort_col = -1
    if sort_by is not None:
        sort_col = _as_index(sort_by, "sort_by", n_vars)
    if padding != "post" and padding != "pre":
        raise ValueError(f"padding must be 'post' or 'pre', got {padding!r}")
    if truncating != "post" and truncating != "pre":
        raise ValueError(f"truncating must be 'post' or 'pre', got {truncating!r}")

    cdef cnp.ndarray lengths = np.empty(n_batch, dtype=np.int64)
    cdef int64_t *lens_ptr = <int64_t *> cnp.PyArray_DATA(lengths) if n_batch > 0 else NULL
    cdef int64_t *starts = <int64_t *> malloc(max(n_batch, 1) * sizeof(int64_t))
    if starts == NULL:
        raise MemoryError()
    cdef Py_ssize_t bad = 0
    cdef int64_t longest = 0
    cdef Form form
    cdef int status = 0
    if not off.flags.c_contiguous:
        off = np.ascontiguousarray(off)
    cdef const void *off_ptr = cnp.PyArray_DATA(off)
    cdef bint off64 = odt == _I64
    try:
        with nogil:
            status = row_bounds_any(off_ptr, off64, row_ptr, n_batch, n_rows, total, starts,
                                    lens_ptr, &bad, &longest)
        if status:
            r = row_ptr[bad] if row_ptr != NULL else bad
            if status == BAD_ROW:
                raise ValueError(f"row {r} out of range for {n_rows} rows")
            raise ValueError(f"bad offsets at row {r}: offsets[{r}]={off[r]}, "
                             f"offsets[{r + 1}]={off[r + 1]} (must be non-decreasing within "
                             f"[0, {total}])")
        width = longest if max_len is None else _as_index(max_len, "max_len", -1)
        if flat:
            shape = (n_batch, width)
        else:
            shape = (n_batch, width, n_cols)
        out = as_out(out, shape, dt)
        pad = float(pad_value)  # as the twin does, even when nothing is padded
        if n_batch and width and n_cols:
            form = Form(in_kind=in_kind, same_type=vdt == dt, itemsize=vals.itemsize,
                        row_stride=row_stride, col_stride=col_stride, n_vars=n_vars,
                        cols=col_ptr, n_cols=n_cols, sort_col=sort_col, descending=descending,
                        pre_pad=padding == "pre", pre_trunc=truncating == "pre",
                        out64=dt == _F64, pad=pad, center=NULL, scale=NULL, low=NULL, high=NULL,
                        pads=NULL, wrap=False, layout=LAYOUT_PADDED,  # plain padding
                        at=NULL, out_cols=n_cols)
            status = _pad(&form, vals, out, n_batch, width, starts, lens_ptr, longest)
            if status:
                raise MemoryError("pad_ragged: no memory for scratch buffers")
        if max_len is not None and n_batch:
            np.minimum(lengths, width, out=lengths)
    finally:
        free(starts)
    return out, lengths


cdef int _pad(const Form *form, cnp.ndarray vals, cnp.ndarray out, Py_ssize_t n_batch,
              Py_ssize_t width, const int64_t *starts, const int64_t *lens, int64_t longest):
    cdef const char *base = <const char *> cnp.PyArray_DATA(vals)
    cdef void *dst = cnp.PyArray_DATA(out)
    cdef int status = NO_MEMORY
    cdef const char **rowp = <const char **> malloc(max(n_batch, 1) * sizeof(char *))
    if rowp == NULL:
        return status
    with nogil:
        row_pointers(base, form.row_stride, starts, n_batch, rowp)
        status = form_rows_any(form, rowp, lens, n_batch, width, longest, dst)
    free(rowp)
    return status
