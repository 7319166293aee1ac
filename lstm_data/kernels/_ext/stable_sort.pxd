# cython: language_level=3
"""Stable ordering of a row's prongs by one key (inline, no GIL).

The order is the one ``numpy.argsort(-key if descending else key, kind="stable")``
gives: NaN last, ties keep their original order. Short rows use insertion sort,
longer ones a bottom-up merge sort with a scratch buffer.
"""
from libc.string cimport memcpy

cdef enum:
    INSERTION_MAX = 32  # rows up to this long are sorted by insertion


cdef inline bint _before(double a, double b, bint descending) noexcept nogil:
    """Strict order of sort keys: NaN last; ties keep their order (stable)."""
    if a != a:
        return False
    if b != b:
        return True
    return a > b if descending else a < b


cdef inline void stable_order(const double *key, Py_ssize_t n, Py_ssize_t *idx, Py_ssize_t *tmp,
                        bint descending) noexcept nogil:
    """Fill ``idx`` with the stable sorting permutation of ``key[:n]``."""
    cdef Py_ssize_t i, j, x, width, lo, mid, hi, a, c, k
    cdef Py_ssize_t *src
    cdef Py_ssize_t *dst
    cdef Py_ssize_t *swap
    for i in range(n):
        idx[i] = i
    if n <= INSERTION_MAX:
        for i in range(1, n):
            x = idx[i]
            j = i - 1
            while j >= 0 and _before(key[x], key[idx[j]], descending):
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = x
        return
    src = idx
    dst = tmp
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a = lo
            c = mid
            k = lo
            while a < mid and c < hi:
                if _before(key[src[c]], key[src[a]], descending):
                    dst[k] = src[c]
                    c += 1
                else:
                    dst[k] = src[a]
                    a += 1
                k += 1
            while a < mid:
                dst[k] = src[a]
                a += 1
                k += 1
            while c < hi:
                dst[k] = src[c]
                c += 1
                k += 1
            lo = hi
        swap = src
        src = dst
        dst = swap
        width *= 2
    if src != idx:
        memcpy(idx, src, n * sizeof(Py_ssize_t))
