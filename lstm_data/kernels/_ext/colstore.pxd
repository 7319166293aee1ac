# cython: language_level=3
"""Growing column buffers that become numpy arrays without a copy (inline, shared).

A :c:type:`ColStore` holds fixed-size records in one contiguous region. It
grows geometrically; on Linux the region is an anonymous ``mmap`` grown with
``mremap(MREMAP_MAYMOVE)``, which moves page-table entries instead of bytes, so
growing never copies the data and untouched capacity costs no resident memory.
Large regions ask for transparent huge pages (``MADV_HUGEPAGE``), which cuts the
page faults of the first write by up to 512x. Elsewhere ``realloc`` does the
same job with the C allocator.

:func:`cs_to_array` shrinks the region to its used size and hands it to a
numpy array (its base is a capsule that unmaps the region when the array dies),
so every value is written exactly once.
"""
from cpython.pycapsule cimport PyCapsule_Destructor, PyCapsule_New
from libc.stdlib cimport free, malloc

cimport numpy as cnp

cdef extern from *:
    """
    #include <stdlib.h>
    #if defined(__linux__)
    #ifndef _GNU_SOURCE
    #define _GNU_SOURCE
    #endif
    #include <sys/mman.h>
    #define LD_HUGE_BYTES (4u << 20)
    static void *ld_region_resize(void *p, size_t old_n, size_t new_n) {
        void *q;
        if (p == NULL) {
            q = mmap(NULL, new_n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        } else {
            q = mremap(p, old_n, new_n, MREMAP_MAYMOVE);
        }
        if (q == MAP_FAILED) return NULL;
    #ifdef MADV_HUGEPAGE
        if (new_n >= LD_HUGE_BYTES) madvise(q, new_n, MADV_HUGEPAGE);
    #endif
        return q;
    }
    static void ld_region_free(void *p, size_t n) { if (p != NULL) munmap(p, n); }
    #else
    static void *ld_region_resize(void *p, size_t old_n, size_t new_n) {
        (void)old_n;
        return realloc(p, new_n);
    }
    static void ld_region_free(void *p, size_t n) { (void)n; free(p); }
    #endif

    typedef struct { void *p; size_t n; } ld_region;
    #define LD_REGION_NAME "lstm_data.region"
    static void ld_region_release(PyObject *capsule) {
        ld_region *r = (ld_region *)PyCapsule_GetPointer(capsule, LD_REGION_NAME);
        if (r != NULL) { ld_region_free(r->p, r->n); free(r); }
    }
    """
    void *ld_region_resize(void *p, size_t old_n, size_t new_n) nogil
    void ld_region_free(void *p, size_t n) nogil
    ctypedef struct ld_region:
        void *p
        size_t n
    const char *LD_REGION_NAME
    void ld_region_release(object capsule) noexcept

cdef enum:
    CS_MIN_BYTES = 1 << 16


ctypedef struct ColStore:
    char *data          # the region (NULL until the first record)
    Py_ssize_t cap      # records that fit in the region
    Py_ssize_t nbytes   # size of the region in bytes
    Py_ssize_t rec_size # bytes per record


cdef inline void cs_init(ColStore *s, Py_ssize_t rec_size) noexcept nogil:
    s.data = NULL
    s.cap = 0
    s.nbytes = 0
    s.rec_size = rec_size


cdef inline void cs_free(ColStore *s) noexcept nogil:
    ld_region_free(s.data, s.nbytes)
    s.data = NULL
    s.cap = 0
    s.nbytes = 0


cdef inline int cs_reserve(ColStore *s, Py_ssize_t recs) noexcept nogil:
    """Make room for ``recs`` records (at least doubling); 0, or -1 when out of memory."""
    cdef Py_ssize_t want = s.nbytes * 2
    cdef void *grown
    if recs <= s.cap:
        return 0
    if want < CS_MIN_BYTES:
        want = CS_MIN_BYTES
    if want < recs * s.rec_size:
        want = recs * s.rec_size
    grown = ld_region_resize(s.data, s.nbytes, want)
    if grown == NULL:
        return -1
    s.data = <char *> grown
    s.nbytes = want
    s.cap = want // s.rec_size
    return 0


cdef inline char *cs_at(ColStore *s, Py_ssize_t rec) noexcept nogil:
    """Address of record ``rec``, growing as needed (NULL: out of memory)."""
    if rec >= s.cap and cs_reserve(s, rec + 1) < 0:
        return NULL
    return s.data + rec * s.rec_size


cdef inline object cs_to_array(ColStore *s, Py_ssize_t n_recs, int ndim, cnp.npy_intp *dims,
                               int typenum):
    """Hand the first ``n_recs`` records to a new array (no copy); the store is left empty."""
    cdef Py_ssize_t used = n_recs * s.rec_size
    cdef void *shrunk
    cdef ld_region *region
    cdef cnp.ndarray arr
    if used == 0 or s.data == NULL:
        cs_free(s)
        return cnp.PyArray_ZEROS(ndim, dims, typenum, 0)
    if used < s.nbytes:
        shrunk = ld_region_resize(s.data, s.nbytes, used)
        if shrunk != NULL:
            s.data = <char *> shrunk
            s.nbytes = used
    region = <ld_region *> malloc(sizeof(ld_region))
    if region == NULL:
        raise MemoryError()
    region.p = s.data
    region.n = s.nbytes
    s.data = NULL
    s.cap = 0
    s.nbytes = 0
    try:
        capsule = PyCapsule_New(region, LD_REGION_NAME, <PyCapsule_Destructor> ld_region_release)
    except BaseException:
        ld_region_free(region.p, region.n)
        free(region)
        raise
    arr = cnp.PyArray_SimpleNewFromData(ndim, dims, typenum, region.p)
    cnp.set_array_base(arr, capsule)
    return arr
