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


cdef class CsvColumns:
    cdef object names, group_names, group_cols, dtype
    cdef Py_ssize_t ncols, ngroups, _rows, _line, itemsize
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
    # where the last error was found
    cdef Py_ssize_t e_line, e_col, e_tok, e_end, e_cell, e_count
    cdef bint e_quoted

    cdef _start(self)
    cdef _alloc(self)
    cdef void _free_stores(self) noexcept
    cdef int _commit(self) noexcept nogil
