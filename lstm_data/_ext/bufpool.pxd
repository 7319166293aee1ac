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
makes worthwhile: the cost of faulting in a huge page is paid once per block,
not once per batch.

How
---
Each buffer starts with a :c:type:`BlockHeader` (one cache line) naming its
pool and capacity, so a NumPy array can own the buffer through a capsule whose
destructor returns it (:c:func:`pool_give`). The pool counts its owner (a
``BatchGather``) and every buffer on loan, and frees itself when both are gone,
so arrays may outlive the object that made them. It keeps at most
``POOL_SLOTS`` idle buffers and ``POOL_MAX_BYTES`` bytes, the oldest going first.
"""
from libc.stdlib cimport free, malloc


cdef extern from "pythread.h":
    # CPython's portable locks. None of these touch Python objects, so (unlike
    # Cython's declarations of the first two) they are declared ``nogil``.
    ctypedef void *PyThread_type_lock
    PyThread_type_lock PyThread_allocate_lock() nogil
    void PyThread_free_lock(PyThread_type_lock) nogil
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
    Py_ssize_t refs  # the owner (while alive) + buffers on loan
    bint owned  # the owner is alive: idle buffers are worth keeping
    Py_ssize_t n_idle
    size_t idle_bytes
    void *idle[POOL_SLOTS]  # block starts, the most recently freed last


ctypedef struct BlockHeader:
    BufferPool *pool
    size_t capacity  # usable bytes after the header


cdef inline BufferPool *pool_new() noexcept nogil:
    """A pool owned by the caller (who releases it with :func:`pool_disown`), or NULL."""
    cdef BufferPool *pool = <BufferPool *> malloc(sizeof(BufferPool))
    if pool == NULL:
        return NULL
    pool.lock = PyThread_allocate_lock()
    if pool.lock == NULL:
        free(pool)
        return NULL
    pool.refs = 1
    pool.owned = True
    pool.n_idle = 0
    pool.idle_bytes = 0
    return pool


cdef inline size_t _capacity(void *block) noexcept nogil:
    return (<BlockHeader *> block).capacity


cdef inline void _remove_idle(BufferPool *pool, Py_ssize_t i) noexcept nogil:
    """Take idle slot ``i`` out of the stack (caller holds the lock)."""
    cdef Py_ssize_t j
    pool.idle_bytes -= _capacity(pool.idle[i])
    for j in range(i + 1, pool.n_idle):
        pool.idle[j - 1] = pool.idle[j]
    pool.n_idle -= 1


cdef inline void _drop_oldest(BufferPool *pool) noexcept nogil:
    """Free the idle buffer freed longest ago (caller holds the lock; ``n_idle > 0``)."""
    cdef void *block = pool.idle[0]
    _remove_idle(pool, 0)
    free(block)


cdef inline void _free_pool(BufferPool *pool) noexcept nogil:
    while pool.n_idle:
        _drop_oldest(pool)
    PyThread_free_lock(pool.lock)
    free(pool)


cdef inline void _unref(BufferPool *pool) noexcept nogil:
    """Drop one reference (caller holds the lock, which this releases)."""
    pool.refs -= 1
    cdef bint last = pool.refs == 0
    PyThread_release_lock(pool.lock)
    if last:
        _free_pool(pool)


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
    pool.refs += 1  # counted now; handed back below if the allocation fails
    PyThread_release_lock(pool.lock)
    if block == NULL:
        if size > <size_t> -1 - POOL_HEADER:
            block = NULL
        else:
            block = ld_alloc_block(POOL_HEADER + size, &cap)
        if block == NULL:
            PyThread_acquire_lock(pool.lock, WAIT_LOCK)
            _unref(pool)
            return NULL
        (<BlockHeader *> block).pool = pool
        (<BlockHeader *> block).capacity = cap - POOL_HEADER
    return <char *> block + POOL_HEADER


cdef inline void pool_give(void *data) noexcept nogil:
    """Give back a buffer from :func:`pool_take` (NULL is ignored)."""
    if data == NULL:
        return
    cdef void *block = <char *> data - POOL_HEADER
    cdef BufferPool *pool = (<BlockHeader *> block).pool
    cdef size_t cap = _capacity(block)
    PyThread_acquire_lock(pool.lock, WAIT_LOCK)
    if pool.owned and cap <= POOL_MAX_BYTES:
        while pool.n_idle and (pool.n_idle == POOL_SLOTS or pool.idle_bytes + cap > POOL_MAX_BYTES):
            _drop_oldest(pool)
        pool.idle[pool.n_idle] = block
        pool.n_idle += 1
        pool.idle_bytes += cap
    else:
        free(block)
    _unref(pool)


cdef inline void pool_disown(BufferPool *pool) noexcept nogil:
    """The owner is gone: free the idle buffers now, the rest as they come back."""
    if pool == NULL:
        return
    PyThread_acquire_lock(pool.lock, WAIT_LOCK)
    pool.owned = False
    while pool.n_idle:
        _drop_oldest(pool)
    _unref(pool)
