# cython: language_level=3
"""Exact decimal-number parsing shared by the compiled kernels (see numparse.pyx)."""

cdef int parse_number(const char *s, Py_ssize_t n, double *out) noexcept nogil
cdef bint is_space(char c) noexcept nogil
