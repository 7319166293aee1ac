# cython: language_level=3
"""A small last-in, first-out pool of output buffers, usable without the GIL.

Why
---
A padded batch is mostly padding and a few MiB in size, and writing it is most
of the cost of building it. A buffer freed a moment ago is still in the CPU
caches and its pages in the TLB; a fresh one is neither, and its first writes
also fault its pages in. So the buffers of dead batches come back here and the
next batch takes the one freed last.

Huge pages, per allocation
--------------------------
Large blocks may be backed by transparent huge pages (``ld_alloc_block`` in
``platform.h``): fewer TLB misses for a buffer written again and again, but a
fresh huge page costs more to fault in than its 512 small pages (on a virtual
machine several times more: the host backs the 2 MiB at once, and with
``defrag=madvise`` the kernel may compact memory first). So a new block asks for
huge pages only while the pool's buffers in use and idle stay within
``POOL_MAX_BYTES``: those are the buffers the pool keeps and reuses, a bounded
amount, paid once. Beyond that (a consumer keeping many batches: a deep queue, a
list of an epoch's batches) blocks are plain pages, costing what a NumPy
allocation costs, and when the pool is full it drops plain blocks before huge
ones. (Making a block huge only after it proved reused, with ``MADV_COLLAPSE``,
measured slower: the collapse copies, and the pool's first buffers are reused
anyway.)

Keeping what a consumer gave back
---------------------------------
A consumer that keeps many batches (48 in a queue, an epoch in a list) gives
them all back at once when it lets go, and asks for as many again in its next
pass. Freed, that memory would go back to the system (glibc trims the heap top,
unmaps large blocks) and the next pass would fault every page in again. So the
pool keeps up to ``POOL_RETAIN_BYTES`` idle, and lets idle memory decay: at the
end of every window of ``POOL_DECAY_TAKES`` takes, the idle bytes beyond
``POOL_MAX_BYTES`` that were never needed during the window are freed, and the
heap's free pages are handed back (``ld_trim_heap``): what decays leaves the
process's resident memory, wherever the allocator had placed it.

How
---
One pool serves the whole process (``gather.pyx`` owns it), so the buffers
carry over from one ``BatchGather`` to the next, as block shuffling makes one
per window. Each buffer starts with a :c:type:`BlockHeader` (one cache line)
holding its capacity, so a NumPy array can own the buffer through a capsule
whose destructor gives it back (:c:func:`pool_give`). Its lock guards only the
bookkeeping, never an allocation or a ``free`` (which may unmap memory):
:c:func:`pool_give` returns the blocks to free, and the caller frees them, if it
holds the GIL, with the GIL released. No lock is held while a batch is built.
"""
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
    void *ld_alloc_block(size_t size, size_t *capacity, int *huge)
    void ld_trim_heap()


cdef enum:
    POOL_SLOTS = 256  # idle buffers kept at most
    POOL_HEADER = 64  # one cache line: the data stays cache-line aligned
    POOL_MAX_BYTES = 64 * 1024 * 1024  # in use + idle on huge pages; idle bytes always kept
    POOL_RETAIN_BYTES = 512 * 1024 * 1024  # idle bytes kept at most
    POOL_DECAY_TAKES = 256  # idle bytes beyond POOL_MAX_BYTES unused this many takes are freed


ctypedef struct BufferPool:
    PyThread_type_lock lock
    Py_ssize_t n_idle
    size_t idle_bytes
    size_t live_bytes  # capacity of the buffers handed out and not given back
    size_t idle_low  # the fewest idle bytes since the decay window began
    Py_ssize_t takes  # takes since the decay window began
    void *idle[POOL_SLOTS]  # block starts, the most recently freed last


ctypedef struct BlockHeader:
    size_t capacity  # usable bytes after the header
    int huge  # advised for transparent huge pages (kept by the pool in preference)


cdef inline int pool_init(BufferPool *pool) noexcept nogil:
    """Set up an empty pool; 0, or -1 when no lock can be made."""
    pool.lock = PyThread_allocate_lock()
    pool.n_idle = 0
    pool.idle_bytes = 0
    pool.live_bytes = 0
    pool.idle_low = 0
    pool.takes = 0
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
    if pool.idle_bytes < pool.idle_low:
        pool.idle_low = pool.idle_bytes


cdef inline void *pool_take(BufferPool *pool, size_t size) noexcept nogil:
    """A buffer of at least ``size`` bytes (contents undefined), or NULL without memory.

    Takes the most recently freed idle buffer that fits and would be at least
    half used; otherwise allocates a new one, on huge pages only while the
    pool's buffers (in use and idle) stay within ``POOL_MAX_BYTES``.
    """
    cdef Py_ssize_t i
    cdef size_t cap
    cdef void *block = NULL
    cdef int huge
    PyThread_acquire_lock(pool.lock, WAIT_LOCK)
    pool.takes += 1
    i = pool.n_idle - 1
    while i >= 0:
        cap = _capacity(pool.idle[i])
        if size <= cap and size >= cap // 2:
            block = pool.idle[i]
            _remove_idle(pool, i)
            pool.live_bytes += cap
            break
        i -= 1
    huge = pool.live_bytes + pool.idle_bytes + size <= POOL_MAX_BYTES
    PyThread_release_lock(pool.lock)
    if block == NULL:
        if size > <size_t> -1 - POOL_HEADER:
            return NULL
        block = ld_alloc_block(POOL_HEADER + size, &cap, &huge)
        if block == NULL:
            return NULL
        (<BlockHeader *> block).capacity = cap - POOL_HEADER
        (<BlockHeader *> block).huge = huge
        PyThread_acquire_lock(pool.lock, WAIT_LOCK)
        pool.live_bytes += cap - POOL_HEADER
        PyThread_release_lock(pool.lock)
    return <char *> block + POOL_HEADER


cdef inline Py_ssize_t _victim(BufferPool *pool, bint huge) noexcept nogil:
    """The idle slot to drop for a block coming back: the oldest plain one, else (for a
    huge block) the oldest; -1: drop the returning block itself (caller holds the lock)."""
    cdef Py_ssize_t i
    for i in range(pool.n_idle):
        if not (<BlockHeader *> pool.idle[i]).huge:
            return i
    return 0 if huge and pool.n_idle else -1


cdef inline Py_ssize_t _decay(BufferPool *pool, void **to_free, Py_ssize_t n) noexcept nogil:
    """End a decay window: drop the idle bytes beyond ``POOL_MAX_BYTES`` that stayed idle
    throughout it, plain blocks and the oldest first; returns the new count in ``to_free``
    (caller holds the lock)."""
    cdef size_t surplus = pool.idle_low - POOL_MAX_BYTES if pool.idle_low > POOL_MAX_BYTES else 0
    cdef size_t dropped = 0
    cdef Py_ssize_t i
    while dropped < surplus and pool.n_idle and n < POOL_SLOTS + 1:
        i = _victim(pool, True)
        dropped += _capacity(pool.idle[i])
        to_free[n] = pool.idle[i]
        n += 1
        _remove_idle(pool, i)
    pool.takes = 0
    pool.idle_low = pool.idle_bytes
    return n


cdef inline Py_ssize_t pool_give(BufferPool *pool, void *data, void **to_free,
                                  bint *decayed) noexcept nogil:
    """Give back a buffer from :func:`pool_take` (NULL is ignored).

    Returns how many blocks the caller must ``free`` (stored in ``to_free``, room
    for ``POOL_SLOTS + 1``): idle buffers dropped to make room or by the decay,
    or this one. ``decayed`` is set when the decay dropped kept memory: the caller
    then trims the heap once the blocks are freed.
    """
    if data == NULL:
        return 0
    cdef void *block = <char *> data - POOL_HEADER
    cdef size_t cap = _capacity(block)
    cdef bint huge = (<BlockHeader *> block).huge
    cdef Py_ssize_t n = 0, i, before
    decayed[0] = False
    PyThread_acquire_lock(pool.lock, WAIT_LOCK)
    pool.live_bytes -= cap
    if cap > POOL_RETAIN_BYTES:
        to_free[n] = block
        n += 1
    else:
        while pool.n_idle == POOL_SLOTS or pool.idle_bytes + cap > POOL_RETAIN_BYTES:
            i = _victim(pool, huge)
            if i < 0:
                to_free[n] = block
                n += 1
                break
            to_free[n] = pool.idle[i]
            n += 1
            _remove_idle(pool, i)
        if n == 0 or to_free[n - 1] != block:
            pool.idle[pool.n_idle] = block
            pool.n_idle += 1
            pool.idle_bytes += cap
    if pool.takes >= POOL_DECAY_TAKES:
        before = n
        n = _decay(pool, to_free, n)
        decayed[0] = n > before
    PyThread_release_lock(pool.lock)
    return n
