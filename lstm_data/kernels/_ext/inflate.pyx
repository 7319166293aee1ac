# cython: language_level=3
"""Compiled ``inflate_baskets``: a chunk's ROOT baskets inflated in one call without the GIL.

The readable specification, with the full parameter documentation, is the
pure-Python twin :func:`lstm_data.kernels._py.inflate.inflate_baskets`; this kernel
gives bitwise-equal bytes and the same results, and raises the same exception types.

How it is fast
--------------
* One call per chunk: the walk over every basket's block headers, their checks and
  the inflating run in C, without the GIL (no Python work per basket or block).
* libdeflate, called through the function addresses the caller found in the
  ``deflate`` package's extension (nothing is linked at build time), inflates each
  block straight into its slice of ``out``: no buffer per block, no copy.
"""
from libc.stdint cimport int64_t
from libc.string cimport memcpy

from .._inflate_args import check_inflate

ctypedef void* (*alloc_f)() noexcept nogil
ctypedef int (*decompress_f)(void*, const void*, size_t, void*, size_t, size_t*) noexcept nogil
ctypedef void (*free_f)(void*) noexcept nogil

# the statuses of lstm_data.kernels._inflate_args (the same values)
cdef enum:
    INFLATED = 0
    NOT_ZLIB = 1
    HEADER_CUT = 2
    OVER = 3
    BODY_CUT = 4
    STREAM = 5
    UNDER = 6
    OUTSIDE = 7
    NO_MEMORY = 8
    HEADER = 9


cdef int _walk(const unsigned char* raw, Py_ssize_t n_raw, const int64_t* rows, Py_ssize_t n,
               unsigned char* out, Py_ssize_t n_out, void* d, decompress_f decompress,
               Py_ssize_t* at_basket, Py_ssize_t* at_block) noexcept nogil:
    """Inflate every basket of ``rows``; the status, with the failing basket and block."""
    cdef Py_ssize_t b, k
    cdef int64_t src, nsrc, size, dst, pos, end, filled, csize, usize
    for b in range(n):
        at_basket[0] = b
        at_block[0] = 0
        src, nsrc, size, dst = rows[4 * b], rows[4 * b + 1], rows[4 * b + 2], rows[4 * b + 3]
        if src < 0 or nsrc < 0 or size < 0 or dst < 0 or src > n_raw or nsrc > n_raw - src \
                or dst > n_out or size > n_out - dst:
            return OUTSIDE
        if nsrc == size:  # stored as it is
            memcpy(out + dst, raw + src, <size_t> size)
            continue
        pos, end, filled, k = src, src + nsrc, 0, 0
        while pos < end:
            at_block[0] = k
            if end - pos < HEADER:
                return HEADER_CUT
            if raw[pos] != 90 or raw[pos + 1] != 76:  # "ZL"
                return NOT_ZLIB
            csize = raw[pos + 3] | (<int64_t> raw[pos + 4]) << 8 | (<int64_t> raw[pos + 5]) << 16
            usize = raw[pos + 6] | (<int64_t> raw[pos + 7]) << 8 | (<int64_t> raw[pos + 8]) << 16
            if usize > size - filled:
                return OVER
            if csize > end - pos - HEADER:
                return BODY_CUT
            if decompress(d, raw + pos + HEADER, <size_t> csize, out + dst + filled, <size_t> usize, NULL) != 0:
                return STREAM
            filled += usize
            pos += HEADER + csize
            k += 1
        if filled != size:
            at_block[0] = k
            return UNDER
    at_basket[0] = n
    at_block[0] = 0
    return INFLATED


def inflate_baskets(raw, table, out, functions):
    """Inflate each basket of ``table`` from ``raw`` into ``out`` (compiled).

    See :func:`lstm_data.kernels._py.inflate.inflate_baskets` for the full specification.

    Returns
    -------
    tuple of int
        ``(status, basket, block)``.
    """
    view, rows, out, addresses = check_inflate(raw, table, out, functions)
    cdef const unsigned char[::1] src = view
    cdef const int64_t[:, ::1] tab = rows
    cdef unsigned char[::1] dst = out
    cdef Py_ssize_t n = tab.shape[0], n_raw = src.shape[0], n_out = dst.shape[0]
    cdef Py_ssize_t at_basket = n, at_block = 0
    cdef alloc_f alloc = <alloc_f> <size_t> addresses[0]
    cdef decompress_f decompress = <decompress_f> <size_t> addresses[1]
    cdef free_f free_d = <free_f> <size_t> addresses[2]
    cdef int status = INFLATED
    cdef void* d
    cdef const unsigned char* p_raw = &src[0] if n_raw else NULL
    cdef unsigned char* p_out = &dst[0] if n_out else NULL
    cdef const int64_t* p_rows = &tab[0, 0] if n else NULL
    if n == 0:
        return INFLATED, 0, 0
    with nogil:
        d = alloc()
        if d == NULL:
            status = NO_MEMORY
            at_basket = 0
        else:
            status = _walk(p_raw, n_raw, p_rows, n, p_out, n_out, d, decompress, &at_basket, &at_block)
            free_d(d)
    return status, at_basket, at_block
