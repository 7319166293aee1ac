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
