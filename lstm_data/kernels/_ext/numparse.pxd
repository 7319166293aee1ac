# cython: language_level=3
"""Exact parsing of one decimal number token, without the GIL (inline, shared).

The grammar and the results are those of :mod:`lstm_data.kernels._py.parse`:
float64 results are bitwise equal to Python's ``float(token)``.

A Clinger fast path handles a mantissa of at most 2**53 with a decimal exponent
of at most 22 in magnitude: the result is one correctly rounded multiply or
divide of two exact doubles. Everything else goes to the C library's correctly
rounded ``strtod`` in the "C" locale, after the token was validated here
(``strtod`` alone would also accept hexadecimal and other spellings).

For the CSV tokenizer, :func:`fast_number` parses plain decimals without the
token's end known in advance; its common case, :func:`fast_decimal`, reads
eight bytes at a time (SWAR digit scan and digit value) instead of looping per
character, so short tokens cost no branch mispredictions.

The functions are ``inline`` so every kernel that cimports them gets them
compiled into its own loops. ``numparse.pyx`` initialises the C locale once.
"""
from libc.math cimport NAN, INFINITY, copysign
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

cdef extern from "platform.h":
    double ld_strtod(const char *s, char **end) nogil
    void ld_init_locale()
    uint64_t ld_load_le64(const char *p) nogil
    int ld_ctz64(uint64_t x) nogil

cdef enum:
    MAX_DIGITS = 19
    MAX_EXACT_POW10 = 22
    FAST_DECIMAL_READ = 24  # bytes readable from a token's start for fast_decimal

cdef extern from *:
    """
    static const double ld_pow10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
        1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    static const double ld_sign[2] = {1.0, -1.0};
    static const uint64_t ld_pow10_u64[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    #define LD_TWO_53 9007199254740992ULL
    #define LD_EXP_CAP 100000000000000000LL
    """
    const double *ld_pow10
    const uint64_t *ld_pow10_u64
    const double *ld_sign
    const uint64_t LD_TWO_53
    const int64_t EXP_CAP "LD_EXP_CAP"


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


cdef inline Py_ssize_t _significant(const char *s, Py_ssize_t i, Py_ssize_t n, uint64_t *mant,
                                    Py_ssize_t *sig, bint *exact, Py_ssize_t *kept,
                                    Py_ssize_t *dropped) noexcept nogil:
    """Read the digits at ``s[i]`` into ``mant``: up to ``MAX_DIGITS`` significant ones
    (leading zeros are not), counted in ``sig``; return the index after them.

    ``kept`` counts the digits read while ``sig < MAX_DIGITS``, ``dropped`` the
    later ones, whose non-zeros make the result inexact (``exact`` cleared).
    """
    cdef char c
    kept[0] = 0
    dropped[0] = 0
    while i < n and c'0' <= s[i] <= c'9':
        c = s[i] - c'0'
        if sig[0] < MAX_DIGITS:
            if sig[0] or c:
                mant[0] = mant[0] * 10 + <uint64_t> c
                sig[0] += 1
            kept[0] += 1
        else:
            dropped[0] += 1
            if c:
                exact[0] = False
        i += 1
    return i


cdef inline int parse_number(const char *s, Py_ssize_t n, double *out) noexcept nogil:
    """Parse ``s[:n]`` (surrounding ASCII whitespace allowed) into ``out``.

    Returns 1 on success, 0 for an empty token, -1 for an invalid one.
    """
    cdef Py_ssize_t i = 0, j, start, digits = 0, sig = 0, kept, dropped
    cdef uint64_t mant = 0
    cdef int64_t exp10 = 0, e = 0
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
    i = _significant(s, i, n, &mant, &sig, &exact, &kept, &dropped)
    exp10 += dropped  # integer digits past MAX_DIGITS each scale by 10
    digits += kept + dropped
    if i < n and s[i] == c'.':
        i = _significant(s, i + 1, n, &mant, &sig, &exact, &kept, &dropped)
        exp10 -= kept  # fraction digits within MAX_DIGITS each scale by 1/10
        digits += kept + dropped
    if digits == 0:
        return -1
    if i < n and (s[i] == c'e' or s[i] == c'E'):
        i += 1
        if i < n and (s[i] == c'+' or s[i] == c'-'):
            eneg = s[i] == c'-'
            i += 1
        j = i
        while i < n and c'0' <= s[i] <= c'9':
            # saturate far beyond any token's length: a capped exponent must never be
            # brought back into the fast path's range by the digits' scaling
            if e < EXP_CAP:
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


# -- fast paths for plain decimals (CSV tokenizer) ---------------------------------------

cdef inline int _digit_run(uint64_t w) noexcept nogil:
    """Number of leading ASCII digits in the 8 bytes ``w`` (first byte lowest), 0..8.

    A byte ``b`` is a non-digit iff ``b - 0x30`` or ``b + 0x46`` sets its top bit;
    borrows and carries only travel towards later bytes, so the first non-digit
    is always found exactly.
    """
    cdef uint64_t nd = ((w + 0x4646464646464646ULL) | (w - 0x3030303030303030ULL)) \
        & 0x8080808080808080ULL
    return 8 if nd == 0 else ld_ctz64(nd) >> 3


cdef inline uint64_t _digits_value(uint64_t w, int k) noexcept nogil:
    """Value of the first ``k`` (0..8) bytes of ``w``, all ASCII digits, in three multiplies."""
    cdef uint64_t x = w - 0x3030303030303030ULL
    cdef int drop = 4 * (8 - k)
    x = (x << drop) << drop  # keep the k digit bytes, as the low end of an 8-digit number
    x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFULL
    x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFULL
    return (x * 10000 + (x >> 32)) & 0xFFFFFFFFULL


cdef inline uint64_t _mantissa(uint64_t w, int ni, uint64_t fw, int nf) noexcept nogil:
    """Value of the ``ni`` leading digits of ``w`` followed by the ``nf`` of ``fw`` (< 8 each).

    With at most 8 digits in all, both runs are packed into one word first, so a
    single three-multiply conversion does the work.
    """
    cdef uint64_t x, f
    if ni + nf > 8:
        return _digits_value(w, ni) * ld_pow10_u64[nf] + _digits_value(fw, nf)
    x = ((w - 0x3030303030303030ULL) << (4 * (8 - ni))) << (4 * (8 - ni))
    f = ((fw - 0x3030303030303030ULL) << (4 * (8 - nf))) << (4 * (8 - nf))
    # int digits end just below the nf fraction digits, which take the top bytes
    x = ((x >> (4 * nf)) >> (4 * nf)) | f
    x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFULL
    x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFULL
    return (x * 10000 + (x >> 32)) & 0xFFFFFFFFULL


cdef inline const char *fast_decimal(const char *p, double *out) noexcept nogil:
    """Parse ``-?d{0,7}(.d{0,7})?`` at ``p`` exactly and without data-dependent loops.

    At least ``FAST_DECIMAL_READ`` bytes from ``p`` must be readable. At most 14
    digits give a mantissa below 2**53 and a divisor of at most 1e7: one exact
    Clinger division, bitwise equal to :func:`parse_number`. Returns the
    address just after the number (the caller checks what follows), or NULL when
    there are no digits or a part has 8 or more digits.
    """
    cdef int neg = p[0] == c'-'
    cdef const char *q = p + neg
    cdef uint64_t w = ld_load_le64(q)
    cdef int ni = _digit_run(w), nf, dot
    cdef uint64_t fw
    cdef double v
    if ni == 8:
        return NULL
    q += ni
    dot = q[0] == c'.'
    fw = ld_load_le64(q + 1)
    nf = _digit_run(fw) if dot else 0
    if nf == 8 or ni + nf == 0:
        return NULL
    # the mantissa is below 2**47: a signed conversion is exact; the sign is applied
    # by an exact multiply, without a branch (random signs would be mispredicted)
    v = <double> <int64_t> _mantissa(w, ni, fw, nf) / ld_pow10[nf]
    out[0] = v * ld_sign[neg]
    return q + dot + nf


cdef inline const char *_digits(const char *p, const char *end, uint64_t *mant,
                                int *digits) noexcept nogil:
    """Append the decimal digits at ``p`` to ``mant`` and count them; return the end."""
    cdef unsigned int d
    while p < end:
        d = <unsigned int> (<unsigned char> p[0]) - 48u
        if d > 9:
            break
        mant[0] = mant[0] * 10 + d
        digits[0] += 1
        p += 1
    return p


cdef inline Py_ssize_t fast_number(const char *buf, Py_ssize_t pos, Py_ssize_t n,
                                   double *out) noexcept nogil:
    """Parse a plain ``-?digits[.digits][(e|E)[+-]digits]`` at ``buf[pos]`` exactly.

    :func:`fast_decimal` when ``FAST_DECIMAL_READ`` bytes are left, else (or
    when it declines) Clinger's fast path with a loop: at most 19 digits, a
    mantissa of at most 2**53 and a decimal exponent of at most 22 in magnitude.
    Returns the position just after the number, or -1 when the token needs
    :func:`parse_number` (whitespace, ``+``, nan/inf, long mantissas, end of data...).
    """
    cdef const char *p = buf + pos
    cdef const char *end = buf + n
    cdef bint neg = False, eneg = False
    cdef uint64_t mant = 0
    cdef unsigned int d
    cdef int digits = 0, before, e = 0, edigits = 0
    cdef long exp10 = 0
    cdef double v
    if n - pos >= FAST_DECIMAL_READ:
        p = fast_decimal(buf + pos, out)
        if p != NULL:
            return p - buf
        p = buf + pos
    if p < end and p[0] == c'-':
        neg = True
        p += 1
    p = _digits(p, end, &mant, &digits)
    if p < end and p[0] == c'.':
        before = digits
        p = _digits(p + 1, end, &mant, &digits)
        exp10 -= digits - before  # each fraction digit scales by 1/10
    if digits == 0 or digits > 19:
        return -1
    if p < end and (p[0] == c'e' or p[0] == c'E'):
        p += 1
        if p < end and (p[0] == c'+' or p[0] == c'-'):
            eneg = p[0] == c'-'
            p += 1
        while p < end:
            d = <unsigned int> (<unsigned char> p[0]) - 48u
            if d > 9:
                break
            if edigits == 4:
                return -1
            e = e * 10 + d
            edigits += 1
            p += 1
        if edigits == 0:
            return -1
        exp10 += -e if eneg else e
    if p >= end or mant > LD_TWO_53 or exp10 < -MAX_EXACT_POW10 or exp10 > MAX_EXACT_POW10:
        return -1
    if exp10 >= 0:
        v = <double> mant * ld_pow10[exp10]
    else:
        v = <double> mant / ld_pow10[-exp10]
    out[0] = -v if neg else v
    return p - buf
