# cython: language_level=3
"""A small last-in, first-out pool of output buffers, usable without the GIL.

Why
---
A padded batch is mostly padding and a few MiB in size, and writing it is most
of the cost of building it. A buffer freed a moment ago is still in the CPU
caches and its pages in the TLB; a fresh one is neither, and its first writes
also fault its pages in. So the buffers of dead batches come back here and the
next batch takes the one freed last. Large blocks are huge-page backed where
the system allows it (``ld_alloc_block`` in ``platform.h``), which the pool
makes worthwhile: faulting in a huge page is paid once per block, not once per
batch.

How
---
One pool serves the whole process (``gather.pyx`` owns it), so the buffers
carry over from one ``BatchGather`` to the next, as block shuffling makes one
per window. Each buffer starts with a :c:type:`BlockHeader` (one cache line)
holding its capacity, so a NumPy array can own the buffer through a capsule
whose destructor gives it back (:c:func:`pool_give`). The pool keeps at most
``POOL_SLOTS`` idle buffers and ``POOL_MAX_BYTES`` bytes, the oldest going first.
"""
from libc.stdlib cimport free


cdef extern from "pythread.h":
    # CPython's portable locks. None of these touch Python objects, so (unlike
    # Cython's declarations of the first one) they are declared ``nogil``.
    ctypedef void *PyThread_type_lock
    PyThread_type_lock PyThread_allocate_lock() nogil
    int PyThread_acquire_lock(PyThread_type_lock, int mode) nogil
    void PyThread_release_lock(PyThread_type_lock) nogil
    enum:
        WAIT_LOCK


cdef extern from "platform.h" nogil:
    void *ld_alloc_block(size_t size, size_t *capacity)


cdef enum:
    POOL_SLOTS = 8
    POOL_HEADER = 64  # one cache line: the data stays cache-line aligned
    POOL_MAX_BYTES = 64 * 1024 * 1024


ctypedef struct BufferPool:
    PyThread_type_lock lock
    Py_ssize_t n_idle
    size_t idle_bytes
    void *idle[POOL_SLOTS]  # block starts, the most recently freed last


ctypedef struct BlockHeader:
    size_t capacity  # usable bytes after the header


cdef inline int pool_init(BufferPool *pool) noexcept nogil:
    """Set up an empty pool; 0, or -1 when no lock can be made."""
    pool.lock = PyThread_allocate_lock()
    pool.n_idle = 0
    pool.idle_bytes = 0
    return 0 if pool.lock != NULL else -1


cdef inline size_t _capacity(void *block) noexcept nogil:
    return (<BlockHeader *> block).capacity


cdef inline void _remove_idle(BufferPool *pool, Py_ssize_t i) noexcept nogil:
    """Take idle slot ``i`` out of the stack (caller holds the lock)."""
    cdef Py_ssize_t j
    pool.idle_bytes -= _capacity(pool.idle[i])
    for j in range(i + 1, pool.n_idle):
        pool.idle[j - 1] = pool.idle[j]
    pool.n_idle -= 1


cdef inline void *pool_take(BufferPool *pool, size_t size) noexcept nogil:
    """A buffer of at least ``size`` bytes (contents undefined), or NULL without memory.

    Takes the most recently freed idle buffer that fits and would be at least
    half used; otherwise allocates a new one.
    """
    cdef Py_ssize_t i
    cdef size_t cap
    cdef void *block = NULL
    PyThread_acquire_lock(pool.lock, WAIT_LOCK)
    i = pool.n_idle - 1
    while i >= 0:
        cap = _capacity(pool.idle[i])
        if size <= cap and size >= cap // 2:
            block = pool.idle[i]
            _remove_idle(pool, i)
            break
        i -= 1
    PyThread_release_lock(pool.lock)
    if block == NULL:
        if size > <size_t> -1 - POOL_HEADER:
            return NULL
        block = ld_alloc_block(POOL_HEADER + size, &cap)
        if block == NULL:
            return NULL
        (<BlockHeader *> block).capacity = cap - POOL_HEADER
    return <char *> block + POOL_HEADER


cdef inline void pool_give(BufferPool *pool, void *data) noexcept nogil:
    """Give back a buffer from :func:`pool_take` (NULL is ignored)."""
    if data == NULL:
        return
    cdef void *block = <char *> data - POOL_HEADER
    cdef void *oldest
    cdef size_t cap = _capacity(block)
    if cap > POOL_MAX_BYTES:
        free(block)
        return
    PyThread_acquire_lock(pool.lock, WAIT_LOCK)
    while pool.n_idle and (pool.n_idle == POOL_SLOTS or pool.idle_bytes + cap > POOL_MAX_BYTES):
        oldest = pool.idle[0]
        _remove_idle(pool, 0)
        free(oldest)  # glibc's free takes no lock of ours: holding this one is safe
    pool.idle[pool.n_idle] = block
    pool.n_idle += 1
    pool.idle_bytes += cap
    PyThread_release_lock(pool.lock)
