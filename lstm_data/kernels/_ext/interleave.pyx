# cython: language_level=3
"""Compiled ``interleave_columns``: V flat columns side by side in one ``(n, V)`` block.

The readable specification, with the full parameter documentation, is the
pure-Python twin :func:`lstm_data.kernels._py.interleave.interleave_columns`; this
kernel gives bitwise-equal results and raises the same exception types.

How it is fast
--------------
* One pass without the GIL over the whole block, in row tiles of about
  :data:`TILE_BYTES` of output: the tile stays in cache while each column writes
  its stride of it, and each column is read sequentially.
* Inputs are used where they are (Arrow and HDF5 buffers, strided views, read-only
  memory); nothing is copied first, except a column whose strides or address are
  not a multiple of its item size (then it is made contiguous: rare).
* A column of the other byte order (ROOT's big-endian baskets) is byte-swapped as it
  is read, in the same pass: no swapped copy is made first.
"""
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy
cimport numpy as cnp
import numpy as np

from .._args import check_interleave

cnp.import_array()

#: bytes of output per row tile (fits the L2 cache of every CPU we run on)
TILE_BYTES = 1 << 17

ctypedef fused src_t:
    float
    double

ctypedef fused dst_t:
    float
    double

# the byte order of a run of columns, chosen at compile time (``if ord_t is Swapped``)
ctypedef struct Native:
    char unused

ctypedef struct Swapped:
    char unused

ctypedef fused ord_t:
    Native
    Swapped


cdef inline uint32_t _bswap32(uint32_t u) noexcept nogil:
    return ((u >> 24) & 0xff) | ((u >> 8) & 0xff00) | ((u << 8) & 0xff0000) | (u << 24)


cdef inline src_t _load(const src_t* p, const ord_t* order) noexcept nogil:
    """``*p``, its bytes reversed when ``ord_t`` is ``Swapped`` (``order`` only selects it)."""
    cdef uint32_t u, lo, hi
    cdef uint64_t w
    cdef src_t v
    if ord_t is Native:
        return p[0]
    elif src_t is float:
        memcpy(&u, p, 4)
        u = _bswap32(u)
        memcpy(&v, &u, 4)
        return v
    else:
        memcpy(&w, p, 8)
        lo = <uint32_t> w
        hi = <uint32_t> (w >> 32)
        w = ((<uint64_t> _bswap32(lo)) << 32) | <uint64_t> _bswap32(hi)
        memcpy(&v, &w, 8)
        return v

#: most columns written per pass over a row tile
cdef enum:
    RUN = 8


cdef inline void _strided(const src_t* src, Py_ssize_t s_step, dst_t* dst, Py_ssize_t d_step,
                          Py_ssize_t n, const ord_t* order) noexcept nogil:
    """``dst[i * d_step] = src[i * s_step]`` for ``i < n`` (steps in items)."""
    cdef Py_ssize_t i
    for i in range(n):
        dst[i * d_step] = <dst_t> _load(src + i * s_step, order)


cdef inline void _run(const src_t* kind, const char** cols, Py_ssize_t k, Py_ssize_t r0,
                      dst_t* dst, Py_ssize_t d_step, Py_ssize_t n, const ord_t* order) noexcept nogil:
    """Rows ``r0:r0 + n`` of ``k <= RUN`` contiguous columns into ``dst[i * d_step + q]``.

    ``kind`` only selects the source type. Writing up to eight columns per pass
    touches each cache line of the tile once per pass instead of once per column.
    """
    cdef const src_t* s[RUN]
    cdef Py_ssize_t i, q
    for q in range(k):
        s[q] = (<const src_t*> cols[q]) + r0
    if k == RUN:
        for i in range(n):
            dst[0] = <dst_t> _load(s[0] + i, order)
            dst[1] = <dst_t> _load(s[1] + i, order)
            dst[2] = <dst_t> _load(s[2] + i, order)
            dst[3] = <dst_t> _load(s[3] + i, order)
            dst[4] = <dst_t> _load(s[4] + i, order)
            dst[5] = <dst_t> _load(s[5] + i, order)
            dst[6] = <dst_t> _load(s[6] + i, order)
            dst[7] = <dst_t> _load(s[7] + i, order)
            dst += d_step
    else:
        for i in range(n):
            for q in range(k):
                dst[q] = <dst_t> _load(s[q] + i, order)
            dst += d_step


cdef inline void _copy(const src_t* kind, const char** cols, Py_ssize_t k, Py_ssize_t s_step,
                       Py_ssize_t r0, dst_t* dst, Py_ssize_t d_step, Py_ssize_t n, bint swap) noexcept nogil:
    """One run of columns (``s_step == 0``: contiguous; else one column of that step);
    ``swap``: its values are of the other byte order."""
    if s_step and swap:
        _strided((<const src_t*> cols[0]) + r0 * s_step, s_step, dst, d_step, n, <const Swapped*> NULL)
    elif s_step:
        _strided((<const src_t*> cols[0]) + r0 * s_step, s_step, dst, d_step, n, <const Native*> NULL)
    elif swap:
        _run(kind, cols, k, r0, dst, d_step, n, <const Swapped*> NULL)
    else:
        _run(kind, cols, k, r0, dst, d_step, n, <const Native*> NULL)


cdef inline void _dispatch(const char** cols, Py_ssize_t k, bint src_f64, Py_ssize_t s_step,
                           Py_ssize_t r0, char* dst, bint dst_f64, Py_ssize_t d_step,
                           Py_ssize_t n, bint swap) noexcept nogil:
    """:func:`_copy` from float64 (``src_f64``) or float32 into float64 (``dst_f64``) or float32."""
    if src_f64 and dst_f64:
        _copy(<const double*> NULL, cols, k, s_step, r0, <double*> dst, d_step, n, swap)
    elif src_f64:
        _copy(<const double*> NULL, cols, k, s_step, r0, <float*> dst, d_step, n, swap)
    elif dst_f64:
        _copy(<const float*> NULL, cols, k, s_step, r0, <double*> dst, d_step, n, swap)
    else:
        _copy(<const float*> NULL, cols, k, s_step, r0, <float*> dst, d_step, n, swap)


cdef bint _aligned(object arr):
    """Address and strides of ``arr`` are multiples of its item size."""
    size = arr.dtype.itemsize
    return arr.ctypes.data % size == 0 and all(s % size == 0 for s in arr.strides)


def _runs(list arrays):
    """``(first column, count, float64?, step, swapped?)`` runs: up to ``RUN`` contiguous columns
    of one dtype and byte order, or one strided column (``step`` in items, 0 for contiguous)."""
    runs = []
    for j, a in enumerate(arrays):
        f64 = a.dtype.itemsize == 8
        swap = not a.dtype.isnative
        step = a.strides[0] // a.dtype.itemsize if a.shape[0] > 1 else 1
        step = 0 if step == 1 else step
        last = runs[len(runs) - 1] if runs else None  # (no wraparound in this module)
        if (step == 0 and last is not None and last[3] == 0 and last[2] == f64 and last[4] == swap
                and last[1] < RUN):
            last[1] += 1
        else:
            runs.append([j, 1, f64, step, swap])
    return runs


def interleave_columns(columns, out):
    """Write column ``j`` of ``columns`` into ``out[:, j]``, for every ``j`` (compiled).

    See :func:`lstm_data.kernels._py.interleave.interleave_columns` for the full specification.

    Returns
    -------
    ndarray
        ``out``.
    """
    arrays, out = check_interleave(columns, out)
    cdef cnp.ndarray dst_arr = out
    cdef Py_ssize_t n = dst_arr.shape[0], n_cols = dst_arr.shape[1]
    if n == 0 or n_cols == 0:
        return out
    if not _aligned(dst_arr):  # a misaligned view: fill an aligned block, then copy it over
        block = np.empty((n, n_cols), dtype=dst_arr.dtype)
        interleave_columns(arrays, block)
        out[...] = block
        return out
    # a misaligned column, or one repeating a value through a zero stride (which the runs'
    # step 0, meaning contiguous, cannot tell apart), is read from a contiguous copy
    kept = [a if _aligned(a) and (a.strides[0] != 0 or a.shape[0] < 2) else np.ascontiguousarray(a)
            for a in arrays]
    runs = _runs(kept)
    cdef Py_ssize_t n_runs = len(runs)
    cdef cnp.ndarray[cnp.intp_t] col_ptr = np.array([a.ctypes.data for a in kept], dtype=np.intp)
    cdef cnp.ndarray[cnp.intp_t, ndim=2] run_info = np.array(runs, dtype=np.intp).reshape(n_runs, 5)
    cdef const char** ptr = <const char**> col_ptr.data
    cdef cnp.intp_t* info = <cnp.intp_t*> run_info.data
    cdef Py_ssize_t itemsize = dst_arr.dtype.itemsize
    cdef Py_ssize_t d_row = dst_arr.strides[0] // itemsize, d_col = dst_arr.strides[1]
    cdef bint dst_f64 = itemsize == 8
    cdef char* base = <char*> cnp.PyArray_DATA(dst_arr)
    cdef Py_ssize_t tile = max(1, TILE_BYTES // max(1, n_cols * itemsize))
    cdef Py_ssize_t r0, m, r, j
    if d_col != itemsize:  # columns of out not adjacent: one column per run
        info_py = [[j, 1, f64, step if step else 1, swap] for j, _, f64, step, swap in
                   ([j, 1, a.dtype.itemsize == 8, a.strides[0] // a.dtype.itemsize, not a.dtype.isnative]
                    for j, a in enumerate(kept))]
        run_info = np.array(info_py, dtype=np.intp).reshape(n_cols, 5)
        info = <cnp.intp_t*> run_info.data
        n_runs = n_cols
    with nogil:
        r0 = 0
        while r0 < n:
            m = min(tile, n - r0)
            for r in range(n_runs):
                j = info[5 * r]
                _dispatch(ptr + j, info[5 * r + 1], info[5 * r + 2], info[5 * r + 3], r0,
                          base + r0 * d_row * itemsize + j * d_col, dst_f64, d_row, m, info[5 * r + 4])
            r0 += m
    return out
