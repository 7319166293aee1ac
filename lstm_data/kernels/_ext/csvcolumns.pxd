# cython: language_level=3
"""Declarations of :class:`CsvColumns`, the column layout and buffers of the CSV parser."""
from libc.stdint cimport int64_t, uint8_t

from .colstore cimport ColStore

cdef enum:
    K_SKIP = 0
    K_SCALAR = 1
    K_RAGGED = 2
    F_QUOTED = 1
    F_MULTI = 2
    F_BARE = 4
    F_INEXACT = 8   # = lstm_data.kernels._csv_flags.INEXACT
    F_LISTED = 16   # = lstm_data.kernels._csv_flags.LISTED
    INT_KEPT = 32   # bytes kept of the first changed integer token of a column

cdef enum Status:  # of the nogil parser: 0 or 1, else an error that _raise turns into an exception
    ST_OK = 0
    ST_INCOMPLETE = 1
    E_NOMEM = -1
    E_INVALID = -2
    E_EMPTY = -3
    E_TOO_MANY = -4
    E_TOO_FEW = -5
    E_UNTERMINATED = -6
    E_AFTER_QUOTE = -7
    E_SCALAR_LIST = -8
    E_MISMATCH = -9
    E_BRACKET = -10
    E_LONG = -11


cdef class CsvColumns:
    cdef object names, group_names, group_cols, dtype, layout
    cdef Py_ssize_t ncols, ngroups, _rows, _line, itemsize, max_line
    cdef bint f32
    cdef char sep, lsep
    cdef uint8_t *kind
    cdef uint8_t *flags
    cdef uint8_t *rec_flags
    cdef int *group_of
    cdef int *var_of
    cdef int *leader
    cdef ColStore *scalar_store
    cdef ColStore *value_store
    cdef ColStore *offset_store   # rows + 1 offsets per group, the first one 0
    cdef int64_t *total
    cdef int64_t *current
    # the first integer token per column that the dtype changes: committed, and of the current record
    cdef double int_limit
    cdef bint rec_inexact  # some column of the current record has F_INEXACT
    cdef int64_t *first_line
    cdef int64_t *first_len
    cdef char *first_tok
    cdef int64_t *pend_line
    cdef int64_t *pend_len
    cdef char *pend_tok
    # where the last error was found
    cdef Py_ssize_t e_line, e_col, e_tok, e_end, e_cell, e_count
    cdef bint e_quoted

    cdef _start(self)
    cdef _alloc(self)
    cdef void _free_stores(self) noexcept
    cdef void _note_int(self, const char *s, Py_ssize_t n, Py_ssize_t col, double v,
                        Py_ssize_t line) noexcept nogil
    cdef int _commit(self) noexcept nogil
    cdef void _commit_inexact(self) noexcept nogil
    cdef void _keep_first(self, Py_ssize_t c, int64_t line, int64_t length,
                          const char *toks) noexcept nogil
    cdef int _append(self, CsvColumns other) noexcept nogil
    cdef void _clear(self) noexcept nogil
    cdef int _fail(self, int status, Py_ssize_t line, Py_ssize_t col, Py_ssize_t tok=*,
                   Py_ssize_t end=*, Py_ssize_t cell=*, bint quoted=*) noexcept nogil
    cdef _raise(self, int status, object data)
