# cython: language_level=3
"""Compiled ``BatchGather``: all of a batch's kernel work in one section without the GIL.

The readable specification is the twin :class:`lstm_data.kernels._py.gather.BatchGather`;
the outputs are bitwise equal and the exceptions of the same types.

Why one section
---------------
Threads that build batches share the GIL for the little Python work between
kernel calls. Each time a thread comes back from a ``nogil`` section while the
other holds the GIL, it sleeps and must be woken, which costs tens of
microseconds on a virtual machine. A batch built from five separate kernel calls
crosses that boundary about ten times; here it crosses it once: row checks,
output allocation (handed to NumPy afterwards), padding and table gathers all
run in one ``nogil`` call. The padded outputs' buffers come from, and go back
to, the process-wide pool of ``bufpool.pxd``, so a new batch is written into
the cache-warm buffer of one that just died; no lock is held while a batch is
built, and a buffer the pool drops is freed with the GIL released.

Rows in chunks
--------------
The outputs of a batch often read the same records (weaver's inputs are four
outputs of one group's columns). Formed one output after another, each would read
every row's records again, after the outputs written meanwhile (megabytes of
padding) pushed them out of the cache. So the padded outputs of one source are
formed ``ROW_CHUNK`` rows at a time, every output in turn: a chunk's records are
read from memory once. Each output row depends only on its own records, so the
bits are those of one output at a time.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_New
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy

cimport numpy as cnp
import numpy as np

from .._args import arena_array, prepare_table, raise_bad_row, source_kind
from .._ragged import prepare_ragged

from .bufpool cimport POOL_SLOTS, BufferPool, ld_trim_heap, pool_give, pool_init, pool_take
from .formrows cimport LAYOUT_CHANNELS_FIRST, LAYOUT_PACKED, Form, form_rows_any
from .padrows cimport BAD_OFFSETS, BAD_ROW, LD_PREFETCH, NO_MEMORY

cdef enum:
    TABLE_AHEAD = 16  # table rows prefetched this far ahead of the copy
    ARENA_ALIGN = 64  # outputs placed in an arena start at multiples of this from its start
    ROW_CHUNK = 64  # batch rows formed for every output in turn (see _gather)

cnp.import_array()

cdef object _F64 = np.dtype(np.float64)
cdef object _I64 = np.dtype(np.int64)


ctypedef struct RaggedSpec:
    const char **bases  # the values of each part
    const void **offsets  # the offsets of each part (all int64 or all int32)
    const int64_t *totals  # the records of each part
    const int64_t *part_rows  # (n_parts + 1): the first row of each part, then the number of rows
    Py_ssize_t n_parts, max_len, multiple
    bint off64, flat, fixed
    Form form  # the records and what the output makes of them
    Py_ssize_t n_more  # further sources of the same output (rows of other counts), each padded
    RaggedSpec *more  # by its own counts into its columns (``form.at``); their width settings unused


ctypedef struct TableSpec:
    const char *base
    Py_ssize_t n_rows, row_bytes


ctypedef struct Output:
    void *data
    int64_t *lengths
    Py_ssize_t width
    int64_t total  # packed: the rows' kept elements
    bint data_placed, lengths_placed  # in the caller's arena (not ours to free)
    int64_t longest  # formed in chunks of rows (see _gather): the longest row; else -1


ctypedef struct Arena:
    char *base  # NULL: no arena
    Py_ssize_t size, cursor


cdef inline void *_place(Arena *arena, Py_ssize_t size) noexcept nogil:
    """The next ``size`` bytes of the arena (then the cursor moves to a multiple of
    ``ARENA_ALIGN``), or NULL when there is no arena, ``size`` is 0 or it does not fit."""
    cdef void *at
    if arena.base == NULL or size <= 0 or size > arena.size - arena.cursor:
        return NULL
    at = arena.base + arena.cursor
    arena.cursor += size
    if arena.cursor % ARENA_ALIGN:  # (C's % of a negative number is negative: not used here)
        arena.cursor += ARENA_ALIGN - arena.cursor % ARENA_ALIGN
    if arena.cursor > arena.size:
        arena.cursor = arena.size
    return at


cdef void _free_capsule(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, NULL))


cdef BufferPool _POOL  # the padded outputs' buffers of every BatchGather, reused while cache-warm
if pool_init(&_POOL):
    raise MemoryError("BatchGather: cannot create the buffer pool's lock")


cdef void _give_back(void *data) noexcept:
    """Return a pooled buffer (GIL held); free what the pool drops with the GIL released:
    ``free`` of a large block unmaps it, and other threads need not wait for that."""
    cdef void *to_free[POOL_SLOTS + 1]
    cdef bint decayed
    cdef Py_ssize_t n = pool_give(&_POOL, data, to_free, &decayed), k
    if n:
        with nogil:
            for k in range(n):
                free(to_free[k])
            if decayed:
                ld_trim_heap()


cdef void _give_capsule(object capsule) noexcept:
    _give_back(PyCapsule_GetPointer(capsule, NULL))


cdef object _adopt(void *data, int nd, cnp.npy_intp *dims, int typenum, bint pooled=False,
                   object owner=None):
    """A NumPy array over ``data`` that frees it (or gives it back to its pool) when it dies;
    with ``owner`` (the arena ``data`` lies in), a view that keeps ``owner`` alive."""
    arr = cnp.PyArray_SimpleNewFromData(nd, dims, typenum, data)
    if owner is not None:
        cnp.set_array_base(arr, owner)
    else:
        cnp.set_array_base(arr, PyCapsule_New(data, NULL, _give_capsule if pooled else _free_capsule))
    return arr


cdef inline Py_ssize_t _out_cols(const Form *form) noexcept nogil:
    """The columns of the output ``form`` writes (all of them, when it is one source of several)."""
    return form.out_cols if form.at != NULL else form.n_cols


cdef inline Py_ssize_t _batch_width(const RaggedSpec *job, int64_t longest) noexcept nogil:
    """The padded width of a batch whose longest row is ``longest``: the rule of the twin's
    ``batch_width`` (packed: the twin's ``formed``, the longest kept row)."""
    cdef Py_ssize_t width = longest
    if job.form.layout != LAYOUT_PACKED:
        if job.max_len >= 0 and job.fixed:
            return job.max_len
        if job.multiple > 1 and width % job.multiple:
            width += job.multiple - width % job.multiple
    if job.max_len >= 0 and job.max_len < width:
        width = job.max_len
    return width


cdef inline int _place_data(Arena *arena, Output *out, Py_ssize_t size) noexcept nogil:
    """``size`` bytes for ``out.data``: in the arena, else from the pool; a status."""
    out.data = _place(arena, size)
    out.data_placed = out.data != NULL
    if not out.data_placed:
        out.data = pool_take(&_POOL, size)
    return NO_MEMORY if out.data == NULL else 0


cdef inline void _cap_lengths(int64_t *lengths, Py_ssize_t n_batch, Py_ssize_t width,
                              int64_t longest) noexcept nogil:
    """Lengths over ``width`` cut to it (none is when ``longest`` fits)."""
    cdef Py_ssize_t b
    if width < longest:
        for b in range(n_batch):
            if lengths[b] > width:
                lengths[b] = width


cdef inline Py_ssize_t _part_of(const int64_t *part_rows, Py_ssize_t n_parts, int64_t r,
                                double scale) noexcept nogil:
    """The last part that starts at or before row ``r`` (``0 <= r < part_rows[n_parts]``).

    Files are often of similar size, so the part ``r`` would be in were all parts
    equal is the first guess and a few steps from it usually end the search; parts
    of very different sizes fall back to a binary search between the bounds found.
    """
    cdef Py_ssize_t p = <Py_ssize_t> (r * scale), lo, hi, mid, steps = 0
    if p >= n_parts:
        p = n_parts - 1
    while steps < 4:
        if part_rows[p] > r:
            p -= 1
        elif part_rows[p + 1] <= r:
            p += 1
        else:
            return p
        steps += 1
    if part_rows[p] > r:
        lo, hi = 0, p
    else:
        lo, hi = p, n_parts
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if part_rows[mid] <= r:
            lo = mid
        else:
            hi = mid
    return lo


cdef inline int _part_bounds(const RaggedSpec *job, const Py_ssize_t *rows, Py_ssize_t n_batch,
                             const char **rowp, int64_t *lens, Py_ssize_t *bad,
                             int64_t *longest) noexcept nogil:
    """Find each batch row's part (:func:`_part_of`), check its
    offsets and record its first record (``rowp``) and length; 0, ``BAD_ROW`` or
    ``BAD_OFFSETS`` with the batch position in ``bad``."""
    cdef Py_ssize_t b, p
    cdef int64_t r, local, s, e, top = 0
    cdef int64_t n_rows = job.part_rows[job.n_parts]
    cdef double scale = job.n_parts / <double> n_rows if n_rows > 0 else 0.0
    for b in range(n_batch):
        r = rows[b]
        if r < 0 or r >= n_rows:
            bad[0] = b
            return BAD_ROW
        p = _part_of(job.part_rows, job.n_parts, r, scale)
        local = r - job.part_rows[p]
        if job.off64:
            s = (<const int64_t *> job.offsets[p])[local]
            e = (<const int64_t *> job.offsets[p])[local + 1]
        else:
            s = (<const int32_t *> job.offsets[p])[local]
            e = (<const int32_t *> job.offsets[p])[local + 1]
        if s < 0 or e < s or e > job.totals[p]:
            bad[0] = b
            return BAD_OFFSETS
        rowp[b] = job.bases[p] + s * job.form.row_stride
        lens[b] = e - s
        if e - s > top:
            top = e - s
    longest[0] = top
    return 0


ctypedef struct MoreBounds:  # the rows of a job's further sources in one batch
    const char **rowp  # source k's: rowp[k * n_batch + b]
    int64_t *lens  # source k's: lens[k * n_batch + b]; then each source's longest row
    Py_ssize_t n


cdef int _bound_more(const RaggedSpec *job, const Py_ssize_t *rows, Py_ssize_t n_batch,
                     MoreBounds *more, int64_t *top, Py_ssize_t *err_source,
                     Py_ssize_t *err_pos) noexcept nogil:
    """Check the rows of ``job``'s further sources (:func:`_part_bounds`, in order, the failing
    one in ``err_source``), raising ``top`` to the longest row of any; a status."""
    cdef Py_ssize_t k, n = n_batch if n_batch else 1
    cdef int status
    more.n = n
    more.rowp = <const char **> malloc(job.n_more * n * sizeof(char *))
    more.lens = <int64_t *> malloc(job.n_more * (n + 1) * sizeof(int64_t))
    if more.rowp == NULL or more.lens == NULL:
        return NO_MEMORY
    for k in range(job.n_more):
        err_source[0] = k + 1
        status = _part_bounds(&job.more[k], rows, n_batch, more.rowp + k * n, more.lens + k * n,
                              err_pos, more.lens + job.n_more * n + k)
        if status:
            return status
        if more.lens[job.n_more * n + k] > top[0]:
            top[0] = more.lens[job.n_more * n + k]
    err_source[0] = 0
    return 0


cdef int _gather(const RaggedSpec *ragged, Py_ssize_t n_ragged, const TableSpec *tables,
                 Py_ssize_t n_tables, const Py_ssize_t *rows, Py_ssize_t n_batch,
                 const char **rowp, Output *outs, void **table_outs, bint *table_placed,
                 Arena *arena, Py_ssize_t *err_job, Py_ssize_t *err_source,
                 Py_ssize_t *err_pos) noexcept nogil:
    """Every output of one batch; 0, or a status with the failing job, source and batch position.

    ``rowp`` holds ``n_batch`` row pointers per job. Every job's rows are checked and its
    output placed first; then the outputs of one source each, padded (not packed), are
    formed ``ROW_CHUNK`` rows at a time, every such output in turn, so that the records of
    those rows, which the outputs of a group all read, are read from memory once and
    stay in the cache for the others (each output's rows are its own: the same values)."""
    cdef Py_ssize_t j, b, r, width, size, n = n_batch if n_batch else 1
    cdef int64_t longest, top
    cdef MoreBounds more
    cdef int status
    cdef const RaggedSpec *job
    cdef const TableSpec *tab
    cdef char *dst
    cdef const char **jrowp
    for j in range(n_ragged):
        job = &ragged[j]
        jrowp = rowp + j * n
        err_job[0] = j
        outs[j].longest = -1
        outs[j].lengths = <int64_t *> _place(arena, n_batch * sizeof(int64_t))
        outs[j].lengths_placed = outs[j].lengths != NULL
        if not outs[j].lengths_placed:
            outs[j].lengths = <int64_t *> malloc((n_batch if n_batch else 1) * sizeof(int64_t))
        if outs[j].lengths == NULL:
            return NO_MEMORY
        status = _part_bounds(job, rows, n_batch, jrowp, outs[j].lengths, err_pos, &longest)
        if status:
            return status
        top = longest
        if job.n_more:  # the longest row of any source sets the width
            more.rowp, more.lens = NULL, NULL
            status = _bound_more(job, rows, n_batch, &more, &top, err_source, err_pos)
            if status:
                free(more.rowp)
                free(more.lens)
                return status
            status = _gather_sources(job, jrowp, outs[j].lengths, longest, n_batch, top, &more,
                                     arena, &outs[j])
            free(more.rowp)
            free(more.lens)
            if status:
                return status
            continue
        width = _batch_width(job, longest)
        outs[j].width = width
        outs[j].total = n_batch * width
        if job.form.layout == LAYOUT_PACKED:
            outs[j].total = 0
            for b in range(n_batch):
                outs[j].total += outs[j].lengths[b] if outs[j].lengths[b] < width else width
        size = outs[j].total * job.form.n_cols * (8 if job.form.out64 else 4)
        if _place_data(arena, &outs[j], size):
            return NO_MEMORY
        if not size:
            _cap_lengths(outs[j].lengths, n_batch, width, longest)
            continue
        if job.form.layout != LAYOUT_PACKED:  # formed below, a chunk of rows at a time
            outs[j].longest = longest
            continue
        status = form_rows_any(&job.form, jrowp, outs[j].lengths, n_batch, width, longest,
                               outs[j].data)
        if status:
            return status
        _cap_lengths(outs[j].lengths, n_batch, width, longest)
    status = _form_chunks(ragged, n_ragged, rowp, n, n_batch, outs)
    if status:
        return status
    for j in range(n_tables):
        tab = &tables[j]
        err_job[0] = n_ragged + j
        for b in range(n_batch):
            if rows[b] < 0 or rows[b] >= tab.n_rows:
                err_pos[0] = b
                return BAD_ROW
        size = n_batch * tab.row_bytes
        dst = <char *> _place(arena, size)
        table_placed[j] = dst != NULL
        if not table_placed[j]:
            dst = <char *> malloc(size if size else 1)
        if dst == NULL:
            return NO_MEMORY
        table_outs[j] = dst
        _take_rows(tab.base, tab.row_bytes, rows, n_batch, dst)
    return 0


cdef int _form_chunks(const RaggedSpec *ragged, Py_ssize_t n_ragged, const char **rowp,
                      Py_ssize_t n, Py_ssize_t n_batch, Output *outs) noexcept nogil:
    """Form the outputs left to form (``outs[j].longest >= 0``: padded, one source, placed)
    ``ROW_CHUNK`` batch rows at a time, every output in turn; then cap their lengths. A status."""
    cdef Py_ssize_t j, b0 = 0, count
    cdef size_t row_bytes
    cdef int status
    while b0 < n_batch:
        count = n_batch - b0 if n_batch - b0 < ROW_CHUNK else ROW_CHUNK
        for j in range(n_ragged):
            if outs[j].longest < 0:
                continue
            row_bytes = outs[j].width * ragged[j].form.n_cols * (8 if ragged[j].form.out64 else 4)
            status = form_rows_any(&ragged[j].form, rowp + j * n + b0, outs[j].lengths + b0, count,
                                   outs[j].width, outs[j].longest,
                                   <char *> outs[j].data + b0 * row_bytes)
            if status:
                return status
        b0 += count
    for j in range(n_ragged):
        if outs[j].longest >= 0:
            _cap_lengths(outs[j].lengths, n_batch, outs[j].width, outs[j].longest)
    return 0


cdef int _gather_sources(const RaggedSpec *job, const char **rowp, int64_t *lengths,
                         int64_t longest, Py_ssize_t n_batch, int64_t top, const MoreBounds *more,
                         Arena *arena, Output *out) noexcept nogil:
    """The output of a job of several sources (its first source's rows in ``rowp``, ``lengths``
    and ``longest``; the others' in ``more``), ``top`` the longest row of any: each source
    writes its own columns, padded by its own counts. A status; the lengths are the first
    source's, capped at the width."""
    cdef Py_ssize_t width = _batch_width(job, top), size, k  # a job of sources is never packed
    cdef int status = 0
    out.width = width
    out.total = n_batch * width
    size = out.total * _out_cols(&job.form) * (8 if job.form.out64 else 4)
    if _place_data(arena, out, size):
        return NO_MEMORY
    if size:
        status = form_rows_any(&job.form, rowp, lengths, n_batch, width, longest, out.data)
        for k in range(job.n_more):
            if status:
                break
            status = form_rows_any(&job.more[k].form, more.rowp + k * more.n, more.lens + k * more.n,
                                   n_batch, width, more.lens[job.n_more * more.n + k], out.data)
    _cap_lengths(lengths, n_batch, width, longest)
    return status


cdef inline void _take_rows(const char *base, Py_ssize_t row_bytes, const Py_ssize_t *rows,
                            Py_ssize_t n_batch, char *dst) noexcept nogil:
    """``dst[b] = base[rows[b]]`` for rows already checked. Random rows miss the cache, so
    each is prefetched ``TABLE_AHEAD`` rows early; one-value rows skip the ``memcpy`` call."""
    cdef Py_ssize_t b
    for b in range(min(TABLE_AHEAD, n_batch)):
        LD_PREFETCH(base + rows[b] * row_bytes)
    for b in range(n_batch):
        if b + TABLE_AHEAD < n_batch:
            LD_PREFETCH(base + rows[b + TABLE_AHEAD] * row_bytes)
        if row_bytes == 4:  # the same for every row: a perfectly predicted branch
            (<uint32_t *> dst)[b] = (<const uint32_t *> base)[rows[b]]
        else:
            memcpy(dst + b * row_bytes, base + rows[b] * row_bytes, row_bytes)


cdef void _free_spec(RaggedSpec *spec) noexcept:
    """Free what ``spec`` (and each of its further sources) points to."""
    cdef Py_ssize_t k
    free(spec.bases)
    free(spec.offsets)
    if spec.more != NULL:
        for k in range(spec.n_more):
            free(spec.more[k].bases)
            free(spec.more[k].offsets)
    free(spec.more)


cdef class BatchGather:
    """Padded ragged fields and scalar-table rows for the same batch rows, in one call (compiled).

    See :class:`lstm_data.kernels._py.gather.BatchGather` for the specification.
    """

    cdef RaggedSpec *_ragged
    cdef TableSpec *_tables
    cdef Py_ssize_t _n_ragged, _n_tables
    cdef readonly list ragged
    cdef readonly list tables
    cdef list _columns  # keeps the column index arrays the specs point into

    def __cinit__(self):
        self._ragged = NULL
        self._tables = NULL

    def __dealloc__(self):
        cdef Py_ssize_t j
        if self._ragged != NULL:
            for j in range(self._n_ragged):
                _free_spec(&self._ragged[j])
        free(self._ragged)
        free(self._tables)

    def __init__(self, ragged=(), tables=()):
        self.ragged = [prepare_ragged(job) for job in ragged]
        self.tables = [prepare_table(t) for t in tables]
        self._n_ragged = len(self.ragged)
        self._n_tables = len(self.tables)
        self._ragged = <RaggedSpec *> calloc(max(self._n_ragged, 1), sizeof(RaggedSpec))
        self._tables = <TableSpec *> calloc(max(self._n_tables, 1), sizeof(TableSpec))
        if self._ragged == NULL or self._tables == NULL:
            raise MemoryError()
        self._columns = []
        for j, job in enumerate(self.ragged):
            self._describe(&self._ragged[j], job)
        for j, table in enumerate(self.tables):
            self._tables[j].base = <const char *> cnp.PyArray_DATA(table)
            self._tables[j].n_rows = table.shape[0]
            self._tables[j].row_bytes = table.shape[1] * table.itemsize

    cdef int _describe(self, RaggedSpec *spec, object job) except -1:
        """``spec`` of ``job``; a job of several sources: its first, then ``spec.more`` the others."""
        cdef Py_ssize_t k
        if not job.sources:
            return self._describe_source(spec, job)
        self._describe_source(spec, job.sources[0])
        spec.flat = False  # (B, P, V) whatever the sources' values
        spec.n_more = len(job.sources) - 1
        spec.more = <RaggedSpec *> calloc(max(spec.n_more, 1), sizeof(RaggedSpec))
        if spec.more == NULL:
            raise MemoryError()
        for k in range(spec.n_more):
            self._describe_source(&spec.more[k], job.sources[k + 1])
        return 0

    cdef int _describe_source(self, RaggedSpec *spec, object job) except -1:
        cdef Py_ssize_t p, n_parts = len(job.parts)
        cdef cnp.ndarray part_rows = job.part_rows
        cdef cnp.ndarray totals = np.array([len(v) for v, _ in job.parts], dtype=np.int64)
        self._columns.append(totals)
        spec.bases = <const char **> malloc(n_parts * sizeof(char *))
        spec.offsets = <const void **> malloc(n_parts * sizeof(void *))
        if spec.bases == NULL or spec.offsets == NULL:
            raise MemoryError()
        for p in range(n_parts):
            spec.bases[p] = <const char *> cnp.PyArray_DATA(job.parts[p][0])
            spec.offsets[p] = cnp.PyArray_DATA(job.parts[p][1])
        spec.totals = <const int64_t *> cnp.PyArray_DATA(totals)
        spec.part_rows = <const int64_t *> cnp.PyArray_DATA(part_rows)
        spec.n_parts = n_parts
        spec.off64 = job.offsets.dtype == _I64
        spec.flat = job.flat
        spec.max_len = -1 if job.max_len is None else job.max_len
        spec.fixed = job.fixed
        spec.multiple = 1 if job.multiple_of is None else job.multiple_of
        self._describe_form(&spec.form, job, n_parts > 1)
        return 0

    cdef int _describe_form(self, Form *form, object job, bint parts) except -1:
        """The records of ``job`` and the form of its output (``parts``: several parts)."""
        cdef cnp.ndarray values = job.values
        cdef cnp.ndarray cols
        form.in_kind = source_kind(values)
        form.same_type = values.dtype == job.dtype
        form.itemsize = values.itemsize
        form.n_vars = 1 if job.flat else values.shape[1]
        form.row_stride = values.strides[0]
        form.col_stride = values.itemsize if job.flat else values.strides[1]
        if parts:  # every part C-contiguous (an empty one may report zero strides)
            form.row_stride = values.itemsize * form.n_vars
            form.col_stride = values.itemsize
        form.cols = NULL
        form.n_cols = form.n_vars
        if job.columns is not None:
            cols = np.ascontiguousarray(job.columns, dtype=np.intp)
            self._columns.append(cols)
            form.cols = <const Py_ssize_t *> cnp.PyArray_DATA(cols)
            form.n_cols = cols.shape[0]
        form.sort_col = -1 if job.sort_by is None else job.sort_by
        form.descending = job.descending
        form.pre_pad = job.padding == "pre"
        form.pre_trunc = job.truncating == "pre"
        form.out64 = job.dtype == _F64
        form.pad = job.pad_value
        form.center = form.scale = form.low = form.high = form.pads = NULL
        if job.center is not None:  # the job keeps these float64 arrays alive
            form.center = <const double *> cnp.PyArray_DATA(job.center)
            form.scale = <const double *> cnp.PyArray_DATA(job.scale)
            form.low = <const double *> cnp.PyArray_DATA(job.clip_min)
            form.high = <const double *> cnp.PyArray_DATA(job.clip_max)
        if job.pad_values is not None:
            form.pads = <const double *> cnp.PyArray_DATA(job.pad_values)
        form.wrap = job.pad_mode == "wrap"
        form.layout = job.layout  # a code of KERNEL_LAYOUTS, the LAYOUT_* enum generated from it
        form.at = NULL
        form.out_cols = form.n_cols
        if job.at is not None:  # one source of several: its output columns
            cols = np.ascontiguousarray(job.at, dtype=np.intp)
            self._columns.append(cols)
            form.at = <const Py_ssize_t *> cnp.PyArray_DATA(cols)
            form.out_cols = job.out_cols
        return 0

    def __call__(self, rows, arena=None):
        """Build every output for ``rows``; returns ``(ragged, tables)`` as the twin does,
        placing outputs in ``arena`` by the twin's rule."""
        arr = np.asarray(rows)
        if arr.size and (arr.ndim != 1 or arr.dtype.kind not in "iu"):
            raise ValueError(f"rows must be a 1-D array of integers, got {arr.dtype} shape {arr.shape}")
        cdef cnp.ndarray picked = np.ascontiguousarray(arr.reshape(-1), dtype=np.intp)
        if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.intp).max:
            raise ValueError(f"row {arr.max()} out of range")
        cdef Arena place
        cdef cnp.ndarray owner = None
        place.base, place.size, place.cursor = NULL, 0, 0
        if arena is not None:
            owner = arena_array(arena)
            place.size = owner.shape[0]
            if place.size:
                place.base = <char *> cnp.PyArray_DATA(owner)
        cdef const Py_ssize_t *row_ptr = <const Py_ssize_t *> cnp.PyArray_DATA(picked)
        cdef Py_ssize_t n_batch = picked.shape[0]
        cdef Output *outs = <Output *> calloc(max(self._n_ragged, 1), sizeof(Output))
        cdef void **table_outs = <void **> calloc(max(self._n_tables, 1), sizeof(void *))
        cdef bint *table_placed = <bint *> calloc(max(self._n_tables, 1), sizeof(bint))
        cdef const char **rowp = <const char **> malloc(max(n_batch, 1) * max(self._n_ragged, 1)
                                                        * sizeof(char *))
        cdef Py_ssize_t err_job = 0, err_source = 0, err_pos = 0, j
        cdef int status = NO_MEMORY
        try:
            if outs != NULL and table_outs != NULL and table_placed != NULL and rowp != NULL:
                with nogil:
                    status = _gather(self._ragged, self._n_ragged, self._tables, self._n_tables,
                                     row_ptr, n_batch, rowp, outs, table_outs, table_placed,
                                     &place, &err_job, &err_source, &err_pos)
            if status:
                self._raise(status, err_job, err_source, row_ptr[err_pos] if n_batch else 0)
            return self._adopt_all(outs, table_outs, table_placed, n_batch, owner)
        finally:  # whatever was not handed to NumPy (nor lies in the caller's arena)
            if outs != NULL:
                for j in range(self._n_ragged):
                    if not outs[j].data_placed:
                        _give_back(outs[j].data)
                    if not outs[j].lengths_placed:
                        free(outs[j].lengths)
            if table_outs != NULL and table_placed != NULL:
                for j in range(self._n_tables):
                    if not table_placed[j]:
                        free(table_outs[j])
            free(outs)
            free(table_outs)
            free(table_placed)
            free(rowp)

    cdef object _raise(self, int status, Py_ssize_t job, Py_ssize_t source, Py_ssize_t r):
        if status == NO_MEMORY:
            raise MemoryError("BatchGather: no memory for the batch")
        if job >= self._n_ragged:
            raise ValueError(f"row {r} out of range for {self.tables[job - self._n_ragged].shape[0]} rows")
        checked = self.ragged[job]
        raise_bad_row(checked.sources[source] if source else checked, r, status == BAD_ROW)

    cdef object _adopt_all(self, Output *outs, void **table_outs, const bint *table_placed,
                           Py_ssize_t n_batch, object owner):
        """Hand every buffer to NumPy (a buffer in the arena: a view whose base is ``owner``);
        a handed-over pointer is cleared so it is not freed."""
        cdef cnp.npy_intp dims[3]
        cdef Py_ssize_t j
        cdef int nd
        cdef const RaggedSpec *spec
        ragged = []
        tables = []
        dims[0] = n_batch
        for j in range(self._n_ragged):
            spec = &self._ragged[j]
            dims[0] = n_batch
            dims[1] = outs[j].width
            dims[2] = _out_cols(&spec.form)
            nd = 2 if spec.flat else 3
            if spec.form.layout == LAYOUT_PACKED:  # (T, V) or (T,)
                dims[0] = outs[j].total
                dims[1] = spec.form.n_cols
                nd -= 1
            elif spec.form.layout == LAYOUT_CHANNELS_FIRST and not spec.flat:  # (B, V, P)
                dims[1] = _out_cols(&spec.form)
                dims[2] = outs[j].width
            batch = _adopt(outs[j].data, nd, dims,
                           cnp.NPY_FLOAT64 if spec.form.out64 else cnp.NPY_FLOAT32, True,
                           owner if outs[j].data_placed else None)
            dims[0] = n_batch
            outs[j].data = NULL
            outs[j].data_placed = False
            lengths = _adopt(outs[j].lengths, 1, dims, cnp.NPY_INT64, False,
                             owner if outs[j].lengths_placed else None)
            outs[j].lengths = NULL
            outs[j].lengths_placed = False
            ragged.append((batch, lengths))
        for j in range(self._n_tables):
            dims[1] = self._tables[j].row_bytes // self.tables[j].itemsize
            tables.append(_adopt(table_outs[j], 2, dims,
                                 cnp.NPY_FLOAT64 if self.tables[j].dtype == _F64 else cnp.NPY_FLOAT32,
                                 False, owner if table_placed[j] else None))
            table_outs[j] = NULL
        return ragged, tables
