# cython: language_level=3
"""Compiled ``CsvBlockParser``: CSV blocks straight into columnar buffers.

The readable specification (text rules, column kinds, error order) is the
pure-Python twin :mod:`lstm_data._fallback.csvblock`; this parser gives
bitwise-equal arrays and raises the same exception types in the same order.

How it is fast and lean
-----------------------
* One ``nogil`` pass per block tokenizes RFC 4180 text and parses every number
  with the exact Clinger + ``strtod_l`` parser of ``numparse.pxd``. No Python
  object is made per cell.
* Values go straight to their final interleaved place: prong ``k`` of variable
  ``j`` of a group is written to record ``total + k``, column ``j``.
* Buffers grow in fixed chunks of at most 2 MiB taken from ``mmap`` (never
  copied while growing). :meth:`CsvBlockParser.finish` copies each chunk into
  the final numpy array and unmaps it at once, so the peak stays near the final
  size.
* Only complete records are committed; an incomplete last record is left for
  the caller to pass again with the next block.
"""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy
from libc.math cimport NAN

cimport numpy as cnp
import numpy as np

from ..errors import ParseError, SchemaError
from .numparse cimport ld_init_locale, parse_number

cnp.import_array()
ld_init_locale()

cdef extern from *:
    """
    #if defined(_WIN32)
    #include <stdlib.h>
    static void *ld_chunk_alloc(size_t n) { return malloc(n); }
    static void ld_chunk_free(void *p, size_t n) { (void)n; free(p); }
    #else
    #include <sys/mman.h>
    static void *ld_chunk_alloc(size_t n) {
        void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    static void ld_chunk_free(void *p, size_t n) { munmap(p, n); }
    #endif
    """
    void *ld_chunk_alloc(size_t n) nogil
    void ld_chunk_free(void *p, size_t n) nogil

QUOTED = 1
MULTI = 2
KINDS = ("skip", "scalar", "ragged")

cdef enum:
    K_SKIP = 0
    K_SCALAR = 1
    K_RAGGED = 2
    F_QUOTED = 1
    F_MULTI = 2
    CHUNK_BYTES = 1 << 21

cdef enum Status:
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


ctypedef struct Store:
    char **chunks
    Py_ssize_t n_chunks
    Py_ssize_t cap_chunks
    Py_ssize_t rec_size
    int shift
    Py_ssize_t mask


cdef void store_init(Store *s, Py_ssize_t rec_size) noexcept nogil:
    s.chunks = NULL
    s.n_chunks = 0
    s.cap_chunks = 0
    s.rec_size = rec_size
    s.shift = 0
    while (rec_size << (s.shift + 1)) <= CHUNK_BYTES:
        s.shift += 1
    s.mask = (<Py_ssize_t> 1 << s.shift) - 1


cdef void store_free(Store *s) noexcept nogil:
    cdef Py_ssize_t c
    for c in range(s.n_chunks):
        if s.chunks[c] != NULL:
            ld_chunk_free(s.chunks[c], s.rec_size << s.shift)
    free(s.chunks)
    s.chunks = NULL
    s.n_chunks = 0
    s.cap_chunks = 0


cdef int store_grow(Store *s, Py_ssize_t chunk) noexcept nogil:
    cdef char **grown
    cdef void *mem
    while s.n_chunks <= chunk:
        if s.n_chunks == s.cap_chunks:
            grown = <char **> realloc(s.chunks, (s.cap_chunks * 2 + 8) * sizeof(char *))
            if grown == NULL:
                return -1
            s.chunks = grown
            s.cap_chunks = s.cap_chunks * 2 + 8
        mem = ld_chunk_alloc(s.rec_size << s.shift)
        if mem == NULL:
            return -1
        s.chunks[s.n_chunks] = <char *> mem
        s.n_chunks += 1
    return 0


cdef inline char *store_at(Store *s, Py_ssize_t rec) noexcept nogil:
    """Address of record ``rec``, allocating chunks as needed (NULL: out of memory)."""
    cdef Py_ssize_t chunk = rec >> s.shift
    if chunk >= s.n_chunks and store_grow(s, chunk) < 0:
        return NULL
    return s.chunks[chunk] + (rec & s.mask) * s.rec_size


cdef object store_to_array(Store *s, Py_ssize_t n_recs, object shape, object dtype):
    """Copy the first ``n_recs`` records into a new array, unmapping each chunk after use."""
    out = np.empty(shape, dtype=dtype)
    cdef char *dst = <char *> cnp.PyArray_DATA(out)
    cdef Py_ssize_t per = (<Py_ssize_t> 1) << s.shift, c, done = 0, take
    for c in range(s.n_chunks):
        take = min(per, n_recs - done)
        if take > 0:
            memcpy(dst + done * s.rec_size, s.chunks[c], take * s.rec_size)
            done += take
        ld_chunk_free(s.chunks[c], s.rec_size << s.shift)
        s.chunks[c] = NULL
    store_free(s)
    return out


cdef extern from *:
    """
    static const double csv_pow10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
        1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    """
    const double *csv_pow10

cdef uint64_t TWO_53 = (<uint64_t> 1) << 53


cdef inline Py_ssize_t fast_number(const char *buf, Py_ssize_t pos, Py_ssize_t n,
                                   double *out) noexcept nogil:
    """Parse a plain ``-?digits[.digits][(e|E)[+-]digits]`` at ``buf[pos]`` exactly.

    Clinger's fast path only: at most 19 digits, a mantissa of at most 2**53 and a
    decimal exponent of at most 22 in magnitude, so one correctly rounded multiply
    or divide of exact doubles gives the same bits as ``numparse.parse_number``.
    Returns the position just after the number, or -1 when the token needs the
    general path (whitespace, ``+``, nan/inf, long mantissas, end of data...).
    """
    cdef const char *p = buf + pos
    cdef const char *end = buf + n
    cdef bint neg = False, eneg = False
    cdef uint64_t mant = 0
    cdef unsigned int d
    cdef int digits = 0, e = 0, edigits = 0
    cdef long exp10 = 0
    cdef double v
    if p < end and p[0] == c'-':
        neg = True
        p += 1
    while p < end:
        d = <unsigned int> (<unsigned char> p[0]) - 48u
        if d > 9:
            break
        mant = mant * 10 + d
        digits += 1
        p += 1
    if p < end and p[0] == c'.':
        p += 1
        while p < end:
            d = <unsigned int> (<unsigned char> p[0]) - 48u
            if d > 9:
                break
            mant = mant * 10 + d
            digits += 1
            exp10 -= 1
            p += 1
    if digits == 0 or digits > 19:
        return -1
    if p < end and (p[0] == c'e' or p[0] == c'E'):
        p += 1
        if p < end and (p[0] == c'+' or p[0] == c'-'):
            eneg = p[0] == c'-'
            p += 1
        while p < end:
            d = <unsigned int> (<unsigned char> p[0]) - 48u
            if d > 9:
                break
            if edigits == 4:
                return -1
            e = e * 10 + d
            edigits += 1
            p += 1
        if edigits == 0:
            return -1
        exp10 += -e if eneg else e
    if p >= end or mant > TWO_53 or exp10 < -22 or exp10 > 22:
        return -1
    if exp10 >= 0:
        v = <double> mant * csv_pow10[exp10]
    else:
        v = <double> mant / csv_pow10[-exp10]
    out[0] = -v if neg else v
    return p - buf


def check_csv_seps(sep, list_sep):
    """Validate the field and list separators; return them as byte values (see the twin)."""
    if (not isinstance(sep, str) or len(sep) != 1 or ord(sep) > 127 or sep.isalnum()
            or sep in '".+-\r\n'):
        raise ValueError(f"sep must be one ASCII character other than a quote, newline, "
                         f"letter, digit or . + -, got {sep!r}")
    if (not isinstance(list_sep, str) or len(list_sep) != 1 or ord(list_sep) > 127
            or list_sep.isalnum() or list_sep in ".+-" + " \t\r\n\v\f"):
        raise ValueError(f"sep must be one ASCII punctuation character other than . + -, "
                         f"got {list_sep!r}")
    if list_sep == '"':
        raise ValueError("list_sep cannot be a quote")
    return ord(sep), ord(list_sep)


cdef object _check_dtype(object dtype):
    dt = np.dtype(dtype)
    if dt != np.dtype(np.float32) and dt != np.dtype(np.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dt}")
    return dt


cdef class CsvBlockParser:
    """Parse CSV records, block by block, into columnar buffers (compiled).

    Same parameters, methods and results as
    :class:`lstm_data._fallback.csvblock.CsvBlockParser`.
    """

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
    cdef Store *scalar_store
    cdef Store *value_store
    cdef Store *offset_store
    cdef int64_t *total
    cdef int64_t *current
    # where the last error was found
    cdef Py_ssize_t e_line, e_col, e_tok, e_end, e_cell, e_count
    cdef bint e_quoted

    def __cinit__(self, *args, **kwargs):
        self.kind = NULL
        self.scalar_store = NULL
        self.value_store = NULL
        self.offset_store = NULL

    def __init__(self, names, kinds, groups, *, dtype=np.float32, sep=",", list_sep=",",
                 first_line=1):
        self.dtype = _check_dtype(dtype)
        self.f32 = self.dtype == np.dtype(np.float32)
        self.itemsize = self.dtype.itemsize
        csep, clsep = check_csv_seps(sep, list_sep)
        self.sep = <char> csep
        self.lsep = <char> clsep
        self.names = [str(n) for n in names]
        kinds = list(kinds)
        self.ncols = len(self.names)
        if len(kinds) != self.ncols:
            raise ValueError(f"{len(kinds)} kinds for {self.ncols} columns")
        if self.ncols == 0:
            raise ValueError("a CSV needs at least one column")
        bad = [k for k in kinds if k not in KINDS]
        if bad:
            raise ValueError(f"unknown column kind {bad[0]!r}; expected one of {KINDS}")
        self.group_names = list(groups)
        self.group_cols = [list(members) for members in groups.values()]
        self.ngroups = len(self.group_cols)
        self._alloc()
        cdef Py_ssize_t c, g, j
        for c in range(self.ncols):
            self.kind[c] = KINDS.index(kinds[c])
            self.group_of[c] = -1
            if self.kind[c] == K_SCALAR:
                store_init(&self.scalar_store[c], self.itemsize)
        for g in range(self.ngroups):
            cols = self.group_cols[g]
            if not cols:
                raise ValueError(f"group {self.group_names[g]!r} has no columns")
            for j, c in enumerate(cols):
                if not 0 <= c < self.ncols or self.kind[c] != K_RAGGED or self.group_of[c] != -1:
                    raise ValueError(f"column {c} must be a ragged column of exactly one group")
                self.group_of[c] = g
                self.var_of[c] = j
            self.leader[g] = min(cols)
            store_init(&self.value_store[g], self.itemsize * len(cols))
            store_init(&self.offset_store[g], sizeof(int64_t))
        missing = [self.names[i] for i in range(self.ncols)
                   if self.kind[i] == K_RAGGED and self.group_of[i] == -1]
        if missing:
            raise ValueError(f"ragged columns without a group: {missing}")
        self._line = first_line
        self._rows = 0

    cdef _alloc(self):
        n, g = self.ncols, max(self.ngroups, 1)
        self.kind = <uint8_t *> calloc(n, 1)
        self.flags = <uint8_t *> calloc(n, 1)
        self.rec_flags = <uint8_t *> calloc(n, 1)
        self.group_of = <int *> calloc(n, sizeof(int))
        self.var_of = <int *> calloc(n, sizeof(int))
        self.leader = <int *> calloc(g, sizeof(int))
        self.scalar_store = <Store *> calloc(n, sizeof(Store))
        self.value_store = <Store *> calloc(g, sizeof(Store))
        self.offset_store = <Store *> calloc(g, sizeof(Store))
        self.total = <int64_t *> calloc(g, sizeof(int64_t))
        self.current = <int64_t *> calloc(g, sizeof(int64_t))
        if (self.kind == NULL or self.flags == NULL or self.rec_flags == NULL
                or self.group_of == NULL or self.var_of == NULL or self.leader == NULL
                or self.scalar_store == NULL or self.value_store == NULL
                or self.offset_store == NULL or self.total == NULL or self.current == NULL):
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.scalar_store != NULL:
            for i in range(self.ncols):
                store_free(&self.scalar_store[i])
        if self.value_store != NULL:
            for i in range(self.ngroups):
                store_free(&self.value_store[i])
                store_free(&self.offset_store[i])
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
        """Per column, OR of ``QUOTED`` and ``MULTI`` over committed records."""
        return np.array([self.flags[c] for c in range(self.ncols)], dtype=np.uint8)

    def feed(self, data, bint final=False):
        """Parse every complete record of ``data``; return the bytes consumed (see the twin)."""
        cdef const unsigned char[::1] view = data
        cdef Py_ssize_t n = view.shape[0], consumed = 0
        cdef const char *buf = NULL
        cdef int status = ST_OK
        if n == 0:
            return 0
        buf = <const char *> &view[0]
        with nogil:
            status = self._parse(buf, n, final, &consumed)
        if status < 0:
            self._raise(status, data)
        return consumed

    # -- the nogil parser --------------------------------------------------------
    cdef int _parse(self, const char *buf, Py_ssize_t n, bint final,
                    Py_ssize_t *consumed) noexcept nogil:
        cdef Py_ssize_t pos = 0, rec_start, rec_line, col, g
        cdef int st
        cdef char c
        while pos < n:
            rec_start = pos
            rec_line = self._line
            c = buf[pos]
            if c == c'\n':
                self._line += 1
                pos += 1
                continue
            if c == c'\r':
                if pos + 1 >= n:
                    if not final:
                        break
                    pos = n
                    continue
                if buf[pos + 1] == c'\n':
                    self._line += 1
                    pos += 2
                    continue
            col = 0
            while True:
                if self.kind[col] == K_SKIP:
                    st = self._skip(buf, n, final, col, &pos)
                else:
                    st = self._numbers(buf, n, final, col, &pos)
                if st == ST_INCOMPLETE:
                    self._line = rec_line
                    consumed[0] = rec_start
                    return ST_OK
                if st < 0:
                    return st
                if pos >= n:
                    if not final:
                        self._line = rec_line
                        consumed[0] = rec_start
                        return ST_OK
                    break
                if buf[pos] == c'\n':
                    pos += 1
                    self._line += 1
                    break
                if col == self.ncols - 1:
                    self.e_line = self._line
                    self.e_col = col + 1
                    return E_TOO_MANY
                col += 1
                pos += 1
            if col != self.ncols - 1:
                self.e_line = rec_line
                self.e_col = col + 1
                return E_TOO_FEW
            if self._commit() < 0:
                return E_NOMEM
        consumed[0] = pos
        return ST_OK

    cdef int _commit(self) noexcept nogil:
        cdef Py_ssize_t g, c
        cdef char *slot
        for g in range(self.ngroups):
            self.total[g] += self.current[g]
            slot = store_at(&self.offset_store[g], self._rows)
            if slot == NULL:
                return -1
            (<int64_t *> slot)[0] = self.total[g]
        for c in range(self.ncols):
            self.flags[c] |= self.rec_flags[c]
            self.rec_flags[c] = 0
        self._rows += 1
        return 0

    cdef int _numbers(self, const char *buf, Py_ssize_t n, bint final, Py_ssize_t col,
                      Py_ssize_t *ppos) noexcept nogil:
        """Read one scalar or ragged field; leave ``ppos`` at its terminator."""
        cdef Py_ssize_t pos = ppos[0], start, tok, tok_line, open_line, count = 0
        cdef Py_ssize_t end
        cdef bint quoted = pos < n and buf[pos] == c'"', is_lsep, escaped, have
        cdef double v = 0.0
        cdef char c, sep = self.sep, lsep = self.lsep
        cdef int st, g
        cdef char *slot
        if not quoted:
            start = pos
            while True:
                tok = pos
                end = fast_number(buf, pos, n, &v)
                have = end >= 0 and (buf[end] == sep or buf[end] == lsep or buf[end] == c'\n')
                if have:
                    pos = end
                else:
                    while pos < n:
                        c = buf[pos]
                        if c == sep or c == lsep or c == c'\n':
                            break
                        pos += 1
                    if pos >= n and not final:
                        return ST_INCOMPLETE
                is_lsep = pos < n and buf[pos] == lsep and lsep != sep
                st = self._token(buf, tok, pos, start, is_lsep, col, count, self._line, False,
                                 have, v)
                if st < 0:
                    return st
                count += st
                if not is_lsep:
                    break
                pos += 1
        else:
            open_line = self._line
            pos += 1
            start = pos
            while True:
                tok = pos
                tok_line = self._line
                escaped = False
                end = fast_number(buf, pos, n, &v)
                have = end >= 0 and (buf[end] == lsep or (
                    buf[end] == c'"' and end + 1 < n and buf[end + 1] != c'"'))
                if have:
                    pos = end
                while not have:
                    while pos < n:
                        c = buf[pos]
                        if c == c'"' or c == lsep:
                            break
                        if c == c'\n':
                            self._line += 1
                        pos += 1
                    if pos >= n:
                        if not final:
                            return ST_INCOMPLETE
                        self.e_line = open_line
                        self.e_col = col + 1
                        return E_UNTERMINATED
                    if buf[pos] == c'"':
                        if pos + 1 >= n and not final:
                            return ST_INCOMPLETE
                        if pos + 1 < n and buf[pos + 1] == c'"':
                            escaped = True
                            pos += 2
                            continue
                    break
                is_lsep = buf[pos] == lsep
                st = self._token(buf, tok, pos, start, is_lsep, col, count, tok_line, escaped,
                                 have, v)
                if st < 0:
                    return st
                count += st
                pos += 1
                if not is_lsep:
                    break
            st = self._after_quote(buf, n, final, col, &pos)
            if st != ST_OK:
                return st
        if self.kind[col] == K_SCALAR:
            if count == 0:
                slot = store_at(&self.scalar_store[col], self._rows)
                if slot == NULL:
                    return E_NOMEM
                if self.f32:
                    (<float *> slot)[0] = <float> NAN
                else:
                    (<double *> slot)[0] = NAN
        else:
            g = self.group_of[col]
            if self.leader[g] == col:
                self.current[g] = count
            elif count != self.current[g]:
                self.e_line = self._line
                self.e_col = col + 1
                self.e_count = count
                return E_MISMATCH
        self.rec_flags[col] |= (F_QUOTED if quoted else 0) | (F_MULTI if count > 1 else 0)
        ppos[0] = pos
        return ST_OK

    cdef inline int _token(self, const char *buf, Py_ssize_t tok, Py_ssize_t end, Py_ssize_t cell,
                    bint is_lsep, Py_ssize_t col, Py_ssize_t count, Py_ssize_t line,
                    bint escaped, bint parsed, double v) noexcept nogil:
        """Parse (unless ``parsed`` gives ``v``) and store one complete token.

        Returns 1 (stored), 0 (an empty cell) or an error status.
        """
        cdef int st = 1
        if not parsed:
            st = -1 if escaped else parse_number(buf + tok, end - tok, &v)
        cdef char *slot
        cdef int g
        if st != 1:
            self.e_line = line
            self.e_col = col + 1
            self.e_tok = tok
            self.e_end = end
            self.e_cell = cell
            self.e_quoted = escaped
            if st == 0:
                if is_lsep or count > 0:
                    return E_EMPTY
                return 0
            return E_INVALID
        if self.kind[col] == K_SCALAR:
            slot = store_at(&self.scalar_store[col], self._rows)
        else:
            g = self.group_of[col]
            slot = store_at(&self.value_store[g], self.total[g] + count)
            if slot != NULL:
                slot += self.var_of[col] * self.itemsize
        if slot == NULL:
            return E_NOMEM
        if self.f32:
            (<float *> slot)[0] = <float> v
        else:
            (<double *> slot)[0] = v
        if is_lsep and self.kind[col] == K_SCALAR:
            self.e_line = line
            self.e_col = col + 1
            self.e_tok = tok
            self.e_end = end
            self.e_cell = cell
            self.e_quoted = escaped
            return E_SCALAR_LIST
        return 1

    cdef inline int _after_quote(self, const char *buf, Py_ssize_t n, bint final, Py_ssize_t col,
                          Py_ssize_t *ppos) noexcept nogil:
        cdef Py_ssize_t pos = ppos[0]
        cdef char c
        while pos < n:
            c = buf[pos]
            if c == self.sep or not (c == c' ' or c == c'\t' or c == c'\r' or c == c'\v'
                                     or c == c'\f'):
                break
            pos += 1
        if pos >= n:
            if not final:
                return ST_INCOMPLETE
            ppos[0] = pos
            return ST_OK
        if buf[pos] != self.sep and buf[pos] != c'\n':
            self.e_line = self._line
            self.e_col = col + 1
            self.e_tok = pos
            self.e_end = pos + 1
            self.e_cell = pos
            self.e_quoted = False
            return E_AFTER_QUOTE
        ppos[0] = pos
        return ST_OK

    cdef int _skip(self, const char *buf, Py_ssize_t n, bint final, Py_ssize_t col,
                   Py_ssize_t *ppos) noexcept nogil:
        """Pass over one field without reading it; leave ``ppos`` at its terminator."""
        cdef Py_ssize_t pos = ppos[0], open_line = self._line
        cdef char c
        if pos < n and buf[pos] == c'"':
            pos += 1
            while True:
                while pos < n and buf[pos] != c'"':
                    if buf[pos] == c'\n':
                        self._line += 1
                    pos += 1
                if pos >= n or pos + 1 >= n:
                    if not final:
                        return ST_INCOMPLETE
                    if pos >= n:
                        self.e_line = open_line
                        self.e_col = col + 1
                        return E_UNTERMINATED
                    ppos[0] = pos + 1
                    return ST_OK
                if buf[pos + 1] == c'"':
                    pos += 2
                    continue
                pos += 1
                ppos[0] = pos
                return self._after_quote(buf, n, final, col, ppos)
        while pos < n:
            c = buf[pos]
            if c == self.sep or c == c'\n':
                break
            pos += 1
        if pos >= n and not final:
            return ST_INCOMPLETE
        ppos[0] = pos
        return ST_OK

    # -- errors and results --------------------------------------------------------
    cdef _raise(self, int status, object data):
        where = dict(line=self.e_line, column=self.e_col, row=self._rows)
        if status == E_NOMEM:
            raise MemoryError("out of memory while parsing CSV")
        if status == E_TOO_MANY:
            raise ParseError(f"too many fields: expected {self.ncols}", line=self.e_line,
                             column=self.ncols + 1, row=self._rows)
        if status == E_TOO_FEW:
            raise ParseError(f"too few fields: expected {self.ncols}, got {self.e_col}",
                             line=self.e_line, column=self.e_col + 1, row=self._rows)
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
        raw = bytes(data[self.e_tok:self.e_end])
        if status == E_AFTER_QUOTE:
            raise ParseError("unexpected character after a closing quote",
                             token=raw.decode("utf-8", "replace"), **where)
        if self.e_quoted:
            raw = raw.replace(b'""', b'"')
        where.update(offset=self.e_tok - self.e_cell, token=raw.decode("utf-8", "replace"))
        if status == E_EMPTY:
            raise ParseError("empty token", **where)
        if status == E_INVALID:
            raise ParseError("invalid number", **where)
        raise SchemaError("several values in a scalar column", **where)

    def finish(self):
        """Return ``(scalars, groups)`` of the committed rows and free the buffers (see the twin)."""
        scalars = {}
        groups = {}
        cdef Py_ssize_t c, g
        for c in range(self.ncols):
            if self.kind[c] == K_SCALAR:
                scalars[self.names[c]] = store_to_array(&self.scalar_store[c], self._rows,
                                                        (self._rows,), self.dtype)
        for g in range(self.ngroups):
            values = store_to_array(&self.value_store[g], self.total[g],
                                    (self.total[g], len(self.group_cols[g])), self.dtype)
            offsets = np.empty(self._rows + 1, dtype=np.int64)
            offsets[0] = 0
            offsets[1:] = store_to_array(&self.offset_store[g], self._rows, (self._rows,),
                                         np.int64)
            groups[self.group_names[g]] = (values, offsets)
            self.total[g] = 0
        self._rows = 0
        return scalars, groups
