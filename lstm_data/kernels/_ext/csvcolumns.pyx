# cython: language_level=3
"""Column layout and growing buffers of the compiled CSV parser (base of ``CsvBlockParser``).

:class:`CsvColumns` validates the column kinds and groups (with the twin's
rules), owns one :c:type:`ColStore` per scalar column and two per ragged group
(values and offsets), commits records and hands the buffers to numpy arrays
without a copy in :meth:`CsvColumns.finish`. It also keeps where the last
error was found (:meth:`_fail`, without the GIL) and turns it into the twin's
exception (:meth:`_raise`). The tokenizer lives in ``csvblock.pyx``.
"""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy

cimport numpy as cnp
import numpy as np

from lstm_data.errors import TOKEN_QUOTE, ParseError, SchemaError
from .._args import (KINDS, check_csv_extend, check_csv_seps, check_dtype, check_max_line, csv_layout,
                     long_line_message)
from .colstore cimport ColStore, cs_at, cs_free, cs_init, cs_reserve, cs_to_array
from .numparse cimport int_token_changed, is_space

cnp.import_array()

__all__ = ["CsvColumns"]


cdef class CsvColumns:
    """Columns of a CSV being parsed: kinds, groups, buffers (see ``CsvBlockParser``).

    Its C arrays start as NULL (Cython zeroes a new object's C attributes), so
    ``__dealloc__`` frees only what ``_alloc`` made.
    """

    def __init__(self, names, kinds, groups, *, dtype=np.float32, sep=",", list_sep=",",
                 first_line=1, max_line=None):
        self.dtype = check_dtype(dtype)
        self.max_line = check_max_line(max_line)
        self.f32 = self.dtype == np.dtype(np.float32)
        self.int_limit = 16777216.0 if self.f32 else 9007199254740992.0  # 2**24, 2**53
        self.itemsize = self.dtype.itemsize
        csep, clsep = check_csv_seps(sep, list_sep)
        self.sep = <char> csep
        self.lsep = <char> clsep
        self.names = [str(n) for n in names]
        kinds, group_of, leaders = csv_layout(self.names, list(kinds), groups)
        self.ncols = len(self.names)
        self.group_names = list(groups)
        self.group_cols = [list(members) for members in groups.values()]
        self.ngroups = len(self.group_cols)
        self._alloc()
        cdef Py_ssize_t c, g, j
        for c in range(self.ncols):
            self.kind[c] = KINDS.index(kinds[c])
            self.group_of[c] = group_of[c]
            if self.kind[c] == K_SCALAR:
                cs_init(&self.scalar_store[c], self.itemsize)
        for g in range(self.ngroups):
            for j, c in enumerate(self.group_cols[g]):
                self.var_of[c] = j
            self.leader[g] = leaders[g]
        self.layout = (tuple(self.names), tuple(kinds),
                       tuple((g, tuple(c)) for g, c in zip(self.group_names, self.group_cols)),
                       self.dtype.str, csep, clsep)
        self._line = first_line
        self._start()

    cdef _start(self):
        """Empty buffers: no rows yet, each group's offsets start with a 0."""
        cdef Py_ssize_t g
        cdef char *first
        self._rows = 0
        for g in range(self.ngroups):
            cs_init(&self.value_store[g], self.itemsize * len(self.group_cols[g]))
            cs_init(&self.offset_store[g], sizeof(int64_t))
            first = cs_at(&self.offset_store[g], 0)
            if first == NULL:
                raise MemoryError()
            (<int64_t *> first)[0] = 0
            self.total[g] = 0

    cdef _alloc(self):
        n, g = self.ncols, max(self.ngroups, 1)
        self.kind = <uint8_t *> calloc(n, 1)
        self.flags = <uint8_t *> calloc(n, 1)
        self.rec_flags = <uint8_t *> calloc(n, 1)
        self.group_of = <int *> calloc(n, sizeof(int))
        self.var_of = <int *> calloc(n, sizeof(int))
        self.leader = <int *> calloc(g, sizeof(int))
        self.scalar_store = <ColStore *> calloc(n, sizeof(ColStore))
        self.value_store = <ColStore *> calloc(g, sizeof(ColStore))
        self.offset_store = <ColStore *> calloc(g, sizeof(ColStore))
        self.total = <int64_t *> calloc(g, sizeof(int64_t))
        self.current = <int64_t *> calloc(g, sizeof(int64_t))
        self.first_line = <int64_t *> calloc(n, sizeof(int64_t))
        self.first_len = <int64_t *> calloc(n, sizeof(int64_t))
        self.first_tok = <char *> calloc(n, INT_KEPT)
        self.pend_line = <int64_t *> calloc(n, sizeof(int64_t))
        self.pend_len = <int64_t *> calloc(n, sizeof(int64_t))
        self.pend_tok = <char *> calloc(n, INT_KEPT)
        if (self.first_line == NULL or self.first_len == NULL or self.first_tok == NULL
                or self.pend_line == NULL or self.pend_len == NULL or self.pend_tok == NULL):
            raise MemoryError()
        if (self.kind == NULL or self.flags == NULL or self.rec_flags == NULL
                or self.group_of == NULL or self.var_of == NULL or self.leader == NULL
                or self.scalar_store == NULL or self.value_store == NULL
                or self.offset_store == NULL or self.total == NULL or self.current == NULL):
            raise MemoryError()

    def __dealloc__(self):
        self._free_stores()
        free(self.kind)
        free(self.flags)
        free(self.rec_flags)
        free(self.group_of)
        free(self.var_of)
        free(self.leader)
        free(self.scalar_store)
        free(self.value_store)
        free(self.offset_store)
        free(self.total)
        free(self.current)
        free(self.first_line)
        free(self.first_len)
        free(self.first_tok)
        free(self.pend_line)
        free(self.pend_len)
        free(self.pend_tok)

    cdef void _free_stores(self) noexcept:
        cdef Py_ssize_t i
        if self.scalar_store != NULL:
            for i in range(self.ncols):
                cs_free(&self.scalar_store[i])
        if self.value_store != NULL:
            for i in range(self.ngroups):
                cs_free(&self.value_store[i])
                cs_free(&self.offset_store[i])

    @property
    def rows(self):
        """Committed data rows so far."""
        return self._rows

    @property
    def line(self):
        """Line number of the next byte to be fed."""
        return self._line

    @line.setter
    def line(self, value):
        self._line = int(value)

    def column_flags(self):
        """Per column, OR of ``QUOTED``, ``MULTI``, ``BARE``, ``INEXACT`` and ``LISTED`` over
        committed records."""
        return np.array([self.flags[c] for c in range(self.ncols)], dtype=np.uint8)

    def inexact_ints(self):
        """Column name -> ``(line, token, token length)`` of the first committed integer token
        the dtype changes (see the twin)."""
        out = {}
        for c in range(self.ncols):
            if self.flags[c] & F_INEXACT:
                kept = min(self.first_len[c], INT_KEPT)
                out[self.names[c]] = (self.first_line[c],
                                      self.first_tok[c * INT_KEPT:c * INT_KEPT + kept].decode("ascii"),
                                      self.first_len[c])
        return out

    cdef void _note_int(self, const char *s, Py_ssize_t n, Py_ssize_t col, double v,
                        Py_ssize_t line) noexcept nogil:
        """Flag column ``col`` when the token ``s[:n]``, of value ``v`` (beyond the dtype's
        exact integers), is an integer that the stored value changes; keep the record's first."""
        cdef double stored = <double> (<float> v) if self.f32 else v
        cdef Py_ssize_t a = 0, b = n
        if self.rec_flags[col] & F_INEXACT or not int_token_changed(s, n, stored):
            return
        self.rec_flags[col] |= F_INEXACT
        self.rec_inexact = True
        while b > a and is_space(s[b - 1]):
            b -= 1
        while a < b and is_space(s[a]):
            a += 1
        self.pend_line[col] = line
        self.pend_len[col] = b - a
        memcpy(self.pend_tok + col * INT_KEPT, s + a, min(b - a, <Py_ssize_t> INT_KEPT))

    cdef int _commit(self) noexcept nogil:
        cdef Py_ssize_t g, c
        cdef char *slot
        for g in range(self.ngroups):
            self.total[g] += self.current[g]
            slot = cs_at(&self.offset_store[g], self._rows + 1)
            if slot == NULL:
                return -1
            (<int64_t *> slot)[0] = self.total[g]
        if self.rec_inexact:
            self._commit_inexact()
        for c in range(self.ncols):
            self.flags[c] |= self.rec_flags[c]
            self.rec_flags[c] = 0
        self._rows += 1
        return 0

    cdef void _commit_inexact(self) noexcept nogil:
        """Keep the current record's changed integers of columns that had none yet."""
        cdef Py_ssize_t c
        for c in range(self.ncols):
            if self.rec_flags[c] & F_INEXACT and not self.flags[c] & F_INEXACT:
                self._keep_first(c, self.pend_line[c], self.pend_len[c], self.pend_tok)
        self.rec_inexact = False

    cdef inline void _keep_first(self, Py_ssize_t c, int64_t line, int64_t length,
                                 const char *toks) noexcept nogil:
        self.first_line[c] = line
        self.first_len[c] = length
        memcpy(self.first_tok + c * INT_KEPT, toks + c * INT_KEPT, INT_KEPT)

    def extend(self, other):
        """Append the committed rows of ``other`` and leave it empty (see the twin).

        The copy runs without the GIL.
        """
        if not isinstance(other, CsvColumns):
            raise TypeError(f"extend expects a CsvBlockParser, got {type(other).__name__}")
        cdef CsvColumns src = <CsvColumns> other
        check_csv_extend(self.layout, src.layout, src is self)
        cdef int st
        with nogil:
            st = self._append(src)
            if st == 0:
                src._clear()
        if st < 0:
            raise MemoryError("out of memory while joining CSV blocks")

    cdef int _append(self, CsvColumns other) noexcept nogil:
        """Copy ``other``'s committed rows after this parser's; 0, or -1 when out of memory."""
        cdef Py_ssize_t c, g, i, n = other._rows
        cdef int64_t shift, tot
        cdef int64_t *dst
        cdef int64_t *src
        cdef ColStore *store
        for c in range(self.ncols):
            if other.flags[c] & F_INEXACT and not self.flags[c] & F_INEXACT:
                self._keep_first(c, other.first_line[c] + self._line, other.first_len[c],
                                 other.first_tok)
            self.flags[c] |= other.flags[c]
            if self.kind[c] == K_SCALAR and n > 0:
                store = &self.scalar_store[c]
                if cs_reserve(store, self._rows + n) < 0:
                    return -1
                memcpy(store.data + self._rows * self.itemsize, other.scalar_store[c].data,
                       n * self.itemsize)
        for g in range(self.ngroups):
            tot = other.total[g]
            store = &self.value_store[g]
            if tot > 0:
                if cs_reserve(store, self.total[g] + tot) < 0:
                    return -1
                memcpy(store.data + self.total[g] * store.rec_size, other.value_store[g].data,
                       tot * store.rec_size)
            if n > 0:
                if cs_reserve(&self.offset_store[g], self._rows + n + 1) < 0:
                    return -1
                dst = (<int64_t *> self.offset_store[g].data) + self._rows + 1
                src = (<int64_t *> other.offset_store[g].data) + 1
                shift = self.total[g]
                for i in range(n):
                    dst[i] = src[i] + shift
            self.total[g] += tot
        self._rows += n
        return 0

    cdef void _clear(self) noexcept nogil:
        """Drop the committed rows and the column flags, keeping the buffers for reuse."""
        cdef Py_ssize_t c, g
        self._rows = 0
        for g in range(self.ngroups):
            self.total[g] = 0
        self.rec_inexact = False
        for c in range(self.ncols):
            self.flags[c] = 0
            self.rec_flags[c] = 0  # of a record left incomplete at the end of the last block

    def finish(self):
        """Return ``(scalars, groups)`` of the committed rows and free the buffers (see the twin).

        The arrays take over the parser's buffers: nothing is copied.
        """
        scalars = {}
        groups = {}
        cdef Py_ssize_t c, g
        cdef cnp.npy_intp dims[2]
        cdef int typenum = cnp.NPY_FLOAT32 if self.f32 else cnp.NPY_FLOAT64
        try:
            dims[0] = self._rows
            for c in range(self.ncols):
                if self.kind[c] == K_SCALAR:
                    scalars[self.names[c]] = cs_to_array(&self.scalar_store[c], self._rows, 1,
                                                         dims, typenum)
            for g in range(self.ngroups):
                dims[0] = self.total[g]
                dims[1] = len(self.group_cols[g])
                values = cs_to_array(&self.value_store[g], self.total[g], 2, dims, typenum)
                dims[0] = self._rows + 1
                offsets = cs_to_array(&self.offset_store[g], self._rows + 1, 1, dims,
                                      cnp.NPY_INT64)
                groups[self.group_names[g]] = (values, offsets)
        finally:
            self._free_stores()
        self._start()
        return scalars, groups

    # -- errors ----------------------------------------------------------------------
    cdef int _fail(self, int status, Py_ssize_t line, Py_ssize_t col, Py_ssize_t tok=0,
                   Py_ssize_t end=0, Py_ssize_t cell=0, bint quoted=False) noexcept nogil:
        """Record where error ``status`` was found (``col`` 0-based; token bytes
        ``tok:end`` of the cell starting at ``cell``) and return it."""
        self.e_line = line
        self.e_col = col + 1
        self.e_tok = tok
        self.e_end = end
        self.e_cell = cell
        self.e_quoted = quoted
        return status

    cdef _raise(self, int status, object data):
        """Raise the exception of error ``status``, found in ``data`` as :meth:`_fail` recorded."""
        where = dict(line=self.e_line, column=self.e_col, row=self._rows)
        if status == E_NOMEM:
            raise MemoryError("out of memory while parsing CSV")
        if status == E_TOO_MANY:
            raise ParseError(f"too many fields: expected {self.ncols}", line=self.e_line,
                             column=self.ncols + 1, row=self._rows)
        if status == E_TOO_FEW:
            raise ParseError(f"too few fields: expected {self.ncols}, got {self.e_col}",
                             line=self.e_line, column=self.e_col + 1, row=self._rows)
        if status == E_LONG:
            raise ParseError(long_line_message(self.max_line), line=self.e_line, row=self._rows)
        col = self.e_col - 1
        where["variable"] = self.names[col]
        if status == E_UNTERMINATED:
            raise ParseError("unterminated quote", **where)
        if status == E_MISMATCH:
            g = self.group_of[col]
            lead = self.leader[g]
            raise SchemaError(
                f"group {self.group_names[g]!r}: {self.names[col]!r} has {self.e_count} values "
                f"but {self.names[lead]!r} has {self.current[g]}", **where)
        span, cut = self.e_end - self.e_tok, 4 * TOKEN_QUOTE
        raw = bytes(data[self.e_tok:self.e_tok + min(span, cut)])  # a huge token is not copied
        if span > cut:
            where["token_length"] = span
        if status == E_AFTER_QUOTE:
            raise ParseError("unexpected character after a closing quote",
                             token=raw.decode("utf-8", "replace"), **where)
        if self.e_quoted:
            raw = raw.replace(b'""', b'"')
        where.update(offset=self.e_tok - self.e_cell, token=raw.decode("utf-8", "replace"))
        if status == E_BRACKET:
            raise ParseError("a list opened with '[' does not end with ']'", **where)
        if status == E_EMPTY:
            raise ParseError("empty token", **where)
        if status == E_INVALID:
            raise ParseError("invalid number", **where)
        raise SchemaError("several values in a scalar column", **where)
