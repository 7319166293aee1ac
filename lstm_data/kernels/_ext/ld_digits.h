/* Digits of plain decimal tokens: the number parser's tables, and the scans and parsers of
   tokens whose end is known (a CSV list's tokens), in C so that they inline into the loops
   of every caller (numparse.pxd, csvblock.pyx). */
#ifndef LSTM_DATA_LD_DIGITS_H
#define LSTM_DATA_LD_DIGITS_H
#include <stddef.h>
#include <stdint.h>
#include "platform.h"
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define LD_ALWAYS_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define LD_ALWAYS_INLINE static __forceinline
#else
#define LD_ALWAYS_INLINE static inline
#endif

static const double ld_pow10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
    1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const double ld_sign[2] = {1.0, -1.0};
static const uint64_t ld_pow10_u64[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
    100000000};
/* the low k bytes of a word set, k = 0..8 */
static const uint64_t ld_low_bytes[9] = {0, 0xFFULL, 0xFFFFULL, 0xFFFFFFULL, 0xFFFFFFFFULL,
    0xFFFFFFFFFFULL, 0xFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL};
#define LD_TWO_53 9007199254740992ULL
#define LD_EXP_CAP 100000000000000000LL

/* Bit i set when byte i of the 16 * blocks (1..4) at p equals a or b (every match, not only
   the first); ld_match2_64 and ld_match2_32 scan 64 and 32 bytes. */
#if defined(__SSE2__) || defined(_M_X64)
LD_ALWAYS_INLINE uint64_t ld_match2(const char *p, char a, char b, int blocks) {
    const __m128i va = _mm_set1_epi8(a), vb = _mm_set1_epi8(b);
    uint64_t m = 0;
    int i;
    for (i = 0; i < blocks; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + 16 * i));
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb));
        m |= (uint64_t)(unsigned int)_mm_movemask_epi8(hit) << (16 * i);
    }
    return m;
}
#else
/* SWAR: the top bit of each zero byte of x, exactly (no carry crosses a byte). */
static inline uint64_t ld_zero_bytes(uint64_t x) {
    const uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL;
    return ~(((x & low7) + low7) | x | low7);
}
LD_ALWAYS_INLINE uint64_t ld_match2(const char *p, char a, char b, int blocks) {
    const uint64_t ka = 0x0101010101010101ULL * (unsigned char)a;
    const uint64_t kb = 0x0101010101010101ULL * (unsigned char)b;
    uint64_t m = 0, w, hit;
    int i;
    for (i = 0; i < 2 * blocks; i++) {
        w = ld_load_le64(p + 8 * i);
        hit = (ld_zero_bytes(w ^ ka) | ld_zero_bytes(w ^ kb)) >> 7;  /* 0 or 1 per byte */
        /* gather the eight low bits of the bytes into one byte, first byte lowest */
        m |= ((hit * 0x0102040810204080ULL) >> 56) << (8 * i);
    }
    return m;
}
#endif
static inline uint64_t ld_match2_64(const char *p, char a, char b) { return ld_match2(p, a, b, 4); }
static inline uint64_t ld_match2_32(const char *p, char a, char b) { return ld_match2(p, a, b, 2); }

/* The digits of a short decimal token, 16 bytes at once (SSE2 on x86-64; LD_HAVE_SPAN16 is 0
   elsewhere and ld_span16 is never called). The token is the n (1..16) bytes before e, and
   the 16 bytes before e must be readable. A token of digits with at most one dot (and at
   least one digit) gives 1, its digits as an integer in *mant and in *after the offset k
   of the byte after the dot in the 16 (then 16 - k digits follow the dot; 17: no dot);
   any other gives 0 (ld_span_div[k] is the power of ten the digits are divided by). The
   dot is cut out by taking the bytes before it from the same load shifted by one byte;
   bytes before the token are zeroed, so they count as leading zeros; the 16 digit values
   are then summed in pairs, fours and eights by multiply-adds. */
static const double ld_span_div[18] = {1e16, 1e15, 1e14, 1e13, 1e12, 1e11, 1e10, 1e9, 1e8, 1e7,
    1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1e0, 1e0};
#if (defined(__SSE2__) && defined(__x86_64__)) || defined(_M_X64)
#define LD_HAVE_SPAN16 1
/* row k: bytes k.. set (row 16: none); row 17 (no dot) like row 0 */
static const unsigned char ld_from_byte[18][16] = {
#define LD_B(i, k) (0xFF * ((i) >= (k)))
#define LD_R(k) { LD_B(0, k), LD_B(1, k), LD_B(2, k), LD_B(3, k), LD_B(4, k), LD_B(5, k), \
    LD_B(6, k), LD_B(7, k), LD_B(8, k), LD_B(9, k), LD_B(10, k), LD_B(11, k), LD_B(12, k), \
    LD_B(13, k), LD_B(14, k), LD_B(15, k) }
    LD_R(0), LD_R(1), LD_R(2), LD_R(3), LD_R(4), LD_R(5), LD_R(6), LD_R(7), LD_R(8),
    LD_R(9), LD_R(10), LD_R(11), LD_R(12), LD_R(13), LD_R(14), LD_R(15), LD_R(16), LD_R(0)
#undef LD_R
#undef LD_B
};
LD_ALWAYS_INLINE int ld_span16(const char *e, int n, uint64_t *mant, int *after) {
    __m128i r = _mm_loadu_si128((const __m128i *)(e - 16));
    unsigned int dots = (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(r, _mm_set1_epi8('.')));
    int k, digits;
    __m128i sel, s, d, x;
    uint64_t v;
    dots = (dots >> (16 - n)) << (16 - n);  /* the token's own */
    k = ld_ctz64((uint64_t)(dots | 0x10000u)) + 1;  /* the first byte after the dot; 17: none */
    digits = n - (k != 17);
    sel = _mm_loadu_si128((const __m128i *)ld_from_byte[k]);
    s = _mm_or_si128(_mm_and_si128(sel, r), _mm_andnot_si128(sel, _mm_slli_si128(r, 1)));
    d = _mm_and_si128(_mm_sub_epi8(s, _mm_set1_epi8('0')),
                      _mm_loadu_si128((const __m128i *)ld_from_byte[16 - digits]));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(d, _mm_set1_epi8(9)), _mm_set1_epi8(9)))
            != 0xFFFF || digits < 1)
        return 0;
    /* pairs: 10 * first + second, in each 16-bit lane's low byte */
    x = _mm_and_si128(_mm_add_epi16(_mm_mullo_epi16(d, _mm_set1_epi16(10)), _mm_srli_epi16(d, 8)),
                      _mm_set1_epi16(0xFF));
    x = _mm_madd_epi16(x, _mm_set1_epi32(0x00010064));  /* fours: 100 * pair + pair */
    x = _mm_madd_epi16(_mm_packs_epi32(x, x), _mm_set1_epi32(0x00012710));  /* eights */
    v = (uint64_t)_mm_cvtsi128_si64(x);
    *mant = (v & 0xFFFFFFFFu) * 100000000u + (v >> 32);
    *after = k;
    return 1;
}
#else
#define LD_HAVE_SPAN16 0
LD_ALWAYS_INLINE int ld_span16(const char *e, int n, uint64_t *mant, int *after) {
    (void)e; (void)n; (void)mant; (void)after;
    return 0;
}
#endif

/* Words of ASCII digits (first byte lowest). ld_non_digits marks the top bit of every byte
   below the first non-digit and of that one (later bytes may be marked wrongly: borrows and
   carries move towards them), ld_eight_digits sums eight digit values (the first byte most
   significant) in three multiplies, ld_top_digits moves the first k (0..8) digits of w, as
   values, to the top of the word (zeros below: leading zeros). */
LD_ALWAYS_INLINE uint64_t ld_non_digits(uint64_t w) {
    return ((w + 0x4646464646464646ULL) | (w - 0x3030303030303030ULL)) & 0x8080808080808080ULL;
}
LD_ALWAYS_INLINE uint64_t ld_eight_digits(uint64_t x) {
    x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFULL;
    x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFULL;
    return (x * 10000 + (x >> 32)) & 0xFFFFFFFFULL;
}
LD_ALWAYS_INLINE uint64_t ld_top_digits(uint64_t w, int k) {
    return ((w - 0x3030303030303030ULL) << (4 * (8 - k))) << (4 * (8 - k));
}

/* The digits of q[0:e - q] when it is d*(.d*)? with 1 to 19 digits (no sign): returns 1 with
   them in *mant, the count after the dot in *frac and 10 ** *frac in *div, 0 for any other
   text. The end is known, so the digits are read as words without looking for it: up to 16
   bytes by ld_span16, longer texts (or every text without SSE2) here, where the dot, if any,
   is found in the first word and cut out by joining the words around it. The 16 bytes before
   e and 40 bytes from q must be readable, and e[0] must not be a digit or a dot. */
static const int ld_span_frac[18] = {16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0};
LD_ALWAYS_INLINE int ld_span_digits(const char *q, const char *e, uint64_t *mant, int *frac,
                                    double *div) {
    ptrdiff_t n = e - q, digits;
    uint64_t w, a, b, c, nd;
    int ni, dot, na, nb, nc, nf, k;
    if (LD_HAVE_SPAN16 && (size_t)(n - 1) < 16) {
        if (!ld_span16(e, (int)n, mant, &k)) return 0;
        *div = ld_span_div[k];
        *frac = ld_span_frac[k];
        return 1;
    }
    w = ld_load_le64(q);
    nd = ld_non_digits(w);
    ni = nd ? ld_ctz64(nd) >> 3 : 8;  /* the dot, if any, is at q[ni] */
    dot = q[ni] == '.';
    digits = n - dot;
    /* the digits without the dot: a (the first eight), b (the next eight), c (the rest) */
    a = (w & ld_low_bytes[ni]) | ((ld_load_le64(q + ni + dot) << (4 * ni)) << (4 * ni));
    b = ld_load_le64(q + 8 + dot);
    nf = (int)(n - ni - 1) & -dot;
    if ((size_t)(digits - 1) < 16) {
        na = digits < 8 ? (int)digits : 8;
        nb = (int)digits - na;
        if ((ld_non_digits(a) & ld_low_bytes[na]) | (ld_non_digits(b) & ld_low_bytes[nb]))
            return 0;
        *mant = ld_eight_digits(ld_top_digits(a, na)) * ld_pow10_u64[nb]
            + ld_eight_digits(ld_top_digits(b, nb));
    } else {
        if (digits < 1 || digits > 19) return 0;
        nc = (int)digits - 16;
        c = ld_load_le64(q + 16 + dot);
        if (ld_non_digits(a) | ld_non_digits(b) | (ld_non_digits(c) & ld_low_bytes[nc]))
            return 0;
        *mant = (ld_eight_digits(ld_top_digits(a, 8)) * 100000000u
                 + ld_eight_digits(ld_top_digits(b, 8))) * ld_pow10_u64[nc]
            + ld_eight_digits(ld_top_digits(c, nc));
    }
    *frac = nf;
    *div = ld_pow10[nf];
    return 1;
}

/* The token p[0:e - p] when it is -?d*(.d*)? with 1 to 19 digits: returns 1 with its value in
   *out (Clinger's exact division: a mantissa of at most 2**53), 2 with its digits in *mant
   and the count after the dot in *frac when the mantissa is larger (the caller asks
   Eisel-Lemire); short exponent tokens are read by ld_span_exp, which returns the same way;
   0 for any other token (ld_span_digits reads the digits). The 16 bytes
   before e and 40 bytes from p must be readable, and e[0] must not be a digit or a dot. */
LD_ALWAYS_INLINE int ld_span_exp(const char *q, const char *e, int neg, double *out,
                                 uint64_t *mant, int *frac);
LD_ALWAYS_INLINE int ld_span(const char *p, const char *e, double *out, uint64_t *mant,
                             int *frac) {
    int neg = p[0] == '-', nf;
    uint64_t m;
    double div;
    if (!ld_span_digits(p + neg, e, &m, &nf, &div)) return ld_span_exp(p + neg, e, neg, out, mant, frac);
    if (m <= LD_TWO_53) {  /* at most 19 fraction digits: an exact power of ten */
        *out = (double)(int64_t)m / div * ld_sign[neg];
        return 1;
    }
    *mant = m;
    *frac = nf;
    return 2;
}

/* The exponent tokens of at most 16 bytes after the sign, -?d*(.d*)?[eE][+-]?d{1,4} (%g and
   %E texts), for ld_span, which calls this when its digits were not all digits: one 16-byte
   load ending at e finds the first e or E of q[0:e - q], the 1 to 4 exponent digits after its
   sign are read as one word, and ld_span16 reads the digits before it; then one Clinger step
   (a mantissa of at most 2**53, a decimal exponent of at most 22 in magnitude) gives 1 and
   the value in *out, or 2 with the digits in *mant and the decimal exponent negated in *frac
   (the caller asks Eisel-Lemire). Any other token gives 0 (ld_span_more reads the rest). */
LD_ALWAYS_INLINE int ld_span_exp(const char *q, const char *e, int neg, double *out,
                                 uint64_t *mant, int *frac) {
#if LD_HAVE_SPAN16
    ptrdiff_t n = e - q, xn;
    __m128i r;
    unsigned int xm;
    const char *me, *s;
    uint64_t m, w;
    int k, x, xneg;
    if ((size_t)(n - 1) >= 16) return 0;
    r = _mm_loadu_si128((const __m128i *)(e - 16));
    xm = (unsigned int)_mm_movemask_epi8(
        _mm_cmpeq_epi8(_mm_or_si128(r, _mm_set1_epi8(0x20)), _mm_set1_epi8('e')));
    xm = (xm >> (16 - n)) << (16 - n);  /* the token's own */
    if (!xm) return 0;
    me = e - 16 + ld_ctz64((uint64_t)xm);
    s = me + 1;  /* s[0] is readable: e[0] at worst */
    xneg = s[0] == '-';
    s += xneg | (s[0] == '+');
    xn = e - s;
    if ((size_t)(xn - 1) >= 4) return 0;
    w = ld_load_le64(s);  /* within the 40 bytes from q */
    if (ld_non_digits(w) & ld_low_bytes[xn]) return 0;
    x = (int)ld_eight_digits(ld_top_digits(w, (int)xn));
    if (!ld_span16(me, (int)(me - q), &m, &k)) return 0;
    x = (xneg ? -x : x) - ld_span_frac[k];
    if (m <= LD_TWO_53 && x >= -22 && x <= 22) {
        *out = (x >= 0 ? (double)(int64_t)m * ld_pow10[x] : (double)(int64_t)m / ld_pow10[-x])
            * ld_sign[neg];
        return 1;
    }
    *mant = m;
    *frac = -x;
    return 2;
#else
    (void)q; (void)e; (void)neg; (void)out; (void)mant; (void)frac;
    return 0;
#endif
}

/* The plain decimal tokens p[0:e - p] that ld_span declines: -?d*(.d*)?([eE][+-]?d{1,4})? with
   1 to 19 digits once the zeros right after a leading "0." are left out (%g and %E texts,
   repr's 0.00012345678901234567). Returns as ld_span does: 1 with the value in *out when
   Clinger's single multiply or divide is exact (a mantissa of at most 2**53, a decimal
   exponent of at most 22 in magnitude), 2 with the digits in *mant and the decimal exponent
   negated in *frac otherwise (the caller asks Eisel-Lemire), 0 for any other token. The same
   bytes as for ld_span must be readable. Never inlined: it is called only after ld_span
   declined, and the callers' loops stay as small as without it. */
#if defined(__GNUC__) || defined(__clang__)
#define LD_COLD static __attribute__((noinline, cold, unused))
#else
#define LD_COLD static
#endif
LD_COLD int ld_span_more(const char *p, const char *e, double *out, uint64_t *mant, int *frac) {
    int neg = p[0] == '-', nf = 0, nz, x = 0, xneg;
    const char *q = p + neg, *m_end = q, *r;
    uint64_t m = 0;
    double div;
    unsigned int d;
    while (m_end < e && *m_end != 'e' && *m_end != 'E') m_end++;
    if (m_end < e) {  /* the exponent: a sign, 1 to 4 digits */
        r = m_end + 1;
        xneg = r < e && *r == '-';
        r += r < e && (*r == '-' || *r == '+');
        if (e - r < 1 || e - r > 4) return 0;
        for (; r < e; r++) {
            d = (unsigned int)(unsigned char)*r - 48u;
            if (d > 9) return 0;
            x = 10 * x + (int)d;
        }
        if (xneg) x = -x;
    }
    if (m_end - q >= 2 && q[0] == '0' && q[1] == '.') {  /* 0.000ddd: the zeros are not digits */
        for (r = q + 2; r < m_end && *r == '0'; r++) {}
        nf = (int)(m_end - q - 2);
        for (q = r; r < m_end; r++) {
            if ((unsigned int)(unsigned char)*r - 48u > 9) return 0;
        }
        if (q < m_end && !ld_span_digits(q, m_end, &m, &nz, &div))  /* digits only: nz is 0 */
            return 0;
    } else if (!ld_span_digits(q, m_end, &m, &nf, &div)) {
        return 0;
    }
    x -= nf;
    if (m <= LD_TWO_53 && x >= -22 && x <= 22) {
        *out = (x >= 0 ? (double)(int64_t)m * ld_pow10[x] : (double)(int64_t)m / ld_pow10[-x])
            * ld_sign[neg];
        return 1;
    }
    *mant = m;
    *frac = -x;
    return 2;
}

#endif
