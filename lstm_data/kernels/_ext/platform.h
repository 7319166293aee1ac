/* Small portability shims for the compiled core. */
#ifndef LSTM_DATA_PLATFORM_H
#define LSTM_DATA_PLATFORM_H

#if defined(__GNUC__) || defined(__clang__)
#define LD_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 1)
#define LD_LIKELY(x) __builtin_expect(!!(x), 1)
#define LD_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define LD_PREFETCH(p) ((void)(p))
#define LD_LIKELY(x) (x)
#define LD_UNLIKELY(x) (x)
#endif

/* Little-endian load of 8 unaligned bytes, and count of trailing zero bits (x != 0). */
#include <stdint.h>
#include <string.h>
static inline uint64_t ld_load_le64(const char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
static inline int ld_ctz64(uint64_t x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
#else
static inline int ld_ctz64(uint64_t x) { return __builtin_ctzll(x); }
#endif

/* Count of leading zero bits (x != 0), and the full 128-bit product of two 64-bit words:
   returns the low word, stores the high one in *hi (Eisel-Lemire in numparse.pxd). */
#if defined(_MSC_VER) && !defined(__clang__)
static inline int ld_clz64(uint64_t x) { unsigned long i; _BitScanReverse64(&i, x); return 63 - (int)i; }
#else
static inline int ld_clz64(uint64_t x) { return __builtin_clzll(x); }
#endif
#if defined(__SIZEOF_INT128__)
static inline uint64_t ld_mul128(uint64_t a, uint64_t b, uint64_t *hi) {
    unsigned __int128 r = (unsigned __int128)a * b;
    *hi = (uint64_t)(r >> 64);
    return (uint64_t)r;
}
#elif defined(_MSC_VER) && defined(_M_X64)
static inline uint64_t ld_mul128(uint64_t a, uint64_t b, uint64_t *hi) { return _umul128(a, b, hi); }
#else
/* portable: four 32x32 products */
static inline uint64_t ld_mul128(uint64_t a, uint64_t b, uint64_t *hi) {
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    *hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return (mid << 32) | (uint32_t)ll;
}
#endif

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif

/* Bit i set when byte i of the 64 at p equals a or b (every match, not only the first). */
#if defined(__SSE2__) || defined(_M_X64)
static inline uint64_t ld_match2_64(const char *p, char a, char b) {
    const __m128i va = _mm_set1_epi8(a), vb = _mm_set1_epi8(b);
    uint64_t m = 0;
    int i;
    for (i = 0; i < 4; i++) {
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
static inline uint64_t ld_match2_64(const char *p, char a, char b) {
    const uint64_t ka = 0x0101010101010101ULL * (unsigned char)a;
    const uint64_t kb = 0x0101010101010101ULL * (unsigned char)b;
    uint64_t m = 0, w, hit;
    int i;
    for (i = 0; i < 8; i++) {
        w = ld_load_le64(p + 8 * i);
        hit = (ld_zero_bytes(w ^ ka) | ld_zero_bytes(w ^ kb)) >> 7;  /* 0 or 1 per byte */
        /* gather the eight low bits of the bytes into one byte, first byte lowest */
        m |= ((hit * 0x0102040810204080ULL) >> 56) << (8 * i);
    }
    return m;
}
#endif

/* The digits of a short decimal token, 16 bytes at once (SSE2 on x86-64; LD_HAVE_SPAN16 is 0
   elsewhere and ld_span16 is never called). The token is the n (1..16) bytes before e, and
   the 16 bytes before e must be readable. A token of digits with at most one dot (and at
   least one digit) gives 1, its digits as an integer in *mant and the count of those after
   the dot in *frac; any other gives 0. The dot is cut out by taking the bytes before it
   from the same load shifted by one byte; bytes before the token are zeroed, so they count
   as leading zeros; the 16 digit values are then summed in pairs, fours and eights by
   multiply-adds. */
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
static inline int ld_span16(const char *e, int n, uint64_t *mant, int *frac) {
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
    *frac = k == 17 ? 0 : 16 - k;
    return 1;
}
#else
#define LD_HAVE_SPAN16 0
static inline int ld_span16(const char *e, int n, uint64_t *mant, int *frac) {
    (void)e; (void)n; (void)mant; (void)frac;
    return 0;
}
#endif

/* Locale-independent, correctly rounded strtod (the "C" locale, created once). */
#include <stdlib.h>
#include <locale.h>
#if defined(_WIN32)
static _locale_t ld_c_locale = NULL;
static double ld_strtod(const char *s, char **end) {
    if (ld_c_locale == NULL) ld_c_locale = _create_locale(LC_NUMERIC, "C");
    return _strtod_l(s, end, ld_c_locale);
}
#elif defined(__APPLE__)
#include <xlocale.h>
static locale_t ld_c_locale = (locale_t)0;
static double ld_strtod(const char *s, char **end) {
    if (ld_c_locale == (locale_t)0) ld_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    return strtod_l(s, end, ld_c_locale);
}
#else
static locale_t ld_c_locale = (locale_t)0;
static double ld_strtod(const char *s, char **end) {
    if (ld_c_locale == (locale_t)0) ld_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    return strtod_l(s, end, ld_c_locale);
}
#endif
/* Call once with the GIL held, before any nogil use (avoids a race on first use). */
static inline void ld_init_locale(void) { char *e; (void)ld_strtod("0", &e); }

/* A block of at least *size* bytes for a large, often-rewritten output buffer; free()
   frees it. On Linux, blocks of 1 MiB or more are aligned to 2 MiB and rounded up to whole
   2 MiB pages, and with *huge* set the kernel is asked to back them with transparent huge
   pages: writing a 3 MiB batch then needs 2 TLB entries instead of 768. That pays only for
   a block that is reused many times: faulting in a fresh huge page zeroes 2 MiB at once, which
   on a virtual machine whose free memory was handed back to the host costs several times the
   512 small pages (and, with defrag=madvise, may stall in compaction). So the caller sets
   *huge* only for blocks it expects to keep (bufpool.pxd); it is cleared when the block was
   not advised. *capacity* receives the usable size. Elsewhere, or for smaller blocks, plain
   malloc. */
#if defined(__linux__)
#include <sys/mman.h>
#endif
#define LD_HUGE_PAGE ((size_t)2 << 20)
static inline void *ld_alloc_block(size_t size, size_t *capacity, int *huge) {
    if (size == 0) size = 1;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= ((size_t)1 << 20) && size <= SIZE_MAX - LD_HUGE_PAGE) {
        void *p = NULL;
        size_t total = (size + LD_HUGE_PAGE - 1) / LD_HUGE_PAGE * LD_HUGE_PAGE;
        if (posix_memalign(&p, LD_HUGE_PAGE, total) != 0) return NULL;
        if (*huge) (void)madvise(p, total, MADV_HUGEPAGE); /* advice only: a refusal is harmless */
        *capacity = total;
        return p;
    }
#endif
    *huge = 0;
    *capacity = size;
    return malloc(size);
}


/* Hand the heap's free pages back to the system after the buffer pool freed memory it had
   kept (bufpool.pxd's decay). Large blocks freed into the middle of glibc's heap (its mmap
   threshold grows with the blocks it has seen) would otherwise stay resident until the heap
   top is free. Elsewhere a no-op: other allocators return large blocks on free. */
#if defined(__GLIBC__)
#include <malloc.h>
static inline void ld_trim_heap(void) { (void)malloc_trim(0); }
#else
static inline void ld_trim_heap(void) { }
#endif

#endif
