# cython: language_level=3
"""Exact parsing of one decimal number token, without the GIL (inline, shared).

The grammar and the results are those of :mod:`lstm_data._fallback.parse`:
float64 results are bitwise equal to Python's ``float(token)``.

A Clinger fast path handles a mantissa of at most 2**53 with a decimal exponent
of at most 22 in magnitude: the result is one correctly rounded multiply or
divide of two exact doubles. Everything else goes to the C library's correctly
rounded ``strtod`` in the "C" locale, after the token was validated here
(``strtod`` alone would also accept hexadecimal and other spellings).

The functions are ``inline`` so every kernel that cimports them gets them
compiled into its own loops. ``numparse.pyx`` initialises the C locale once.
"""
from libc.math cimport NAN, INFINITY, copysign
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

cdef extern from "platform.h":
    double ld_strtod(const char *s, char **end) nogil
    void ld_init_locale()

cdef enum:
    MAX_DIGITS = 19
    MAX_EXACT_POW10 = 22

cdef extern from *:
    """
    static const double ld_pow10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
        1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    #define LD_TWO_53 9007199254740992ULL
    """
    const double *ld_pow10
    const uint64_t LD_TWO_53


cdef inline bint is_space(char c) noexcept nogil:
    return c == c' ' or c == c'\t' or c == c'\r' or c == c'\n' or c == c'\v' or c == c'\f'


cdef inline char _lower(char c) noexcept nogil:
    return c + 32 if c'A' <= c <= c'Z' else c


cdef inline bint _word(const char *s, Py_ssize_t n, const char *word, Py_ssize_t wn) noexcept nogil:
    cdef Py_ssize_t i
    if n != wn:
        return False
    for i in range(n):
        if _lower(s[i]) != word[i]:
            return False
    return True


cdef inline double _slow(const char *s, Py_ssize_t n) noexcept nogil:
    cdef char buf[128]
    cdef char *tmp = buf
    cdef char *end
    cdef double v
    if n >= 128:
        tmp = <char *> malloc(n + 1)
        if tmp == NULL:
            return NAN  # unreachable in practice; callers validated the token
    memcpy(tmp, s, n)
    tmp[n] = 0
    v = ld_strtod(tmp, &end)
    if tmp != buf:
        free(tmp)
    return v


cdef inline int parse_number(const char *s, Py_ssize_t n, double *out) noexcept nogil:
    """Parse ``s[:n]`` (surrounding ASCII whitespace allowed) into ``out``.

    Returns 1 on success, 0 for an empty token, -1 for an invalid one.
    """
    cdef Py_ssize_t i = 0, j, start, digits = 0, sig = 0
    cdef uint64_t mant = 0
    cdef long exp10 = 0, e = 0
    cdef bint neg = False, eneg = False, exact = True
    cdef char c
    while n > 0 and is_space(s[n - 1]):
        n -= 1
    while i < n and is_space(s[i]):
        i += 1
    if i == n:
        return 0
    start = i
    if s[i] == c'+' or s[i] == c'-':
        neg = s[i] == c'-'
        i += 1
    if i < n and (s[i] == c'n' or s[i] == c'N' or s[i] == c'i' or s[i] == c'I'):
        if _word(s + i, n - i, b"nan", 3):
            out[0] = copysign(NAN, -1.0 if neg else 1.0)
            return 1
        if _word(s + i, n - i, b"inf", 3) or _word(s + i, n - i, b"infinity", 8):
            out[0] = -INFINITY if neg else INFINITY
            return 1
        return -1
    while i < n and c'0' <= s[i] <= c'9':
        c = s[i] - c'0'
        if sig < MAX_DIGITS:
            if sig or c:
                mant = mant * 10 + <uint64_t> c
                sig += 1
        else:
            exp10 += 1
            if c:
                exact = False
        digits += 1
        i += 1
    if i < n and s[i] == c'.':
        i += 1
        while i < n and c'0' <= s[i] <= c'9':
            c = s[i] - c'0'
            if sig < MAX_DIGITS:
                if sig or c:
                    mant = mant * 10 + <uint64_t> c
                    sig += 1
                exp10 -= 1
            elif c:
                exact = False
            digits += 1
            i += 1
    if digits == 0:
        return -1
    if i < n and (s[i] == c'e' or s[i] == c'E'):
        i += 1
        if i < n and (s[i] == c'+' or s[i] == c'-'):
            eneg = s[i] == c'-'
            i += 1
        j = i
        while i < n and c'0' <= s[i] <= c'9':
            if e < 100000:
                e = e * 10 + (s[i] - c'0')
            i += 1
        if i == j:
            return -1
        exp10 += -e if eneg else e
    if i != n:
        return -1
    if mant == 0 and exact:
        out[0] = -0.0 if neg else 0.0
        return 1
    if exact and mant <= LD_TWO_53 and -MAX_EXACT_POW10 <= exp10 <= MAX_EXACT_POW10:
        if exp10 >= 0:
            out[0] = <double> mant * ld_pow10[exp10]
        else:
            out[0] = <double> mant / ld_pow10[-exp10]
        if neg:
            out[0] = -out[0]
        return 1
    out[0] = _slow(s + start, n - start)
    return 1
