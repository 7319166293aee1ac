# cython: language_level=3
"""Compiled ``CsvBlockParser``: CSV blocks straight into columnar buffers.

The readable specification (text rules, column kinds, error order) is the
pure-Python twin :mod:`lstm_data.kernels._py.csvblock`; this parser gives
bitwise-equal arrays and raises the same exception types in the same order.

How it is fast and lean
-----------------------
* One ``nogil`` pass per block tokenizes RFC 4180 text and parses every number
  with the exact Clinger + ``strtod_l`` parser of ``numparse.pxd``. No Python
  object is made per cell.
* An integer token the dtype changes (beyond 2**24 in float32, 2**53 in float64)
  sets the column's ``INEXACT`` flag; the check costs one compare per stored
  value (plain decimals of the quoted-list fast path are below 10**7: none).
* Values go straight to their final interleaved place: prong ``k`` of variable
  ``j`` of a group is written to record ``total + k``, column ``j``.
* Plain decimals take the fast paths of ``numparse.pxd`` (up to 19 digits, 16 or
  eight bytes at a time). In a quoted list one 64-byte scan marks every list
  separator and quote ahead, so each token's end is known before it is read
  (``ld_span`` reads no byte twice to find it) and consecutive tokens parse
  overlapped instead of one after the other; list cells read to their closing quotes
  this way are stored without the general field reader, a row's consecutive ones in
  one run of the loop. A row's consecutive unquoted cells are read the same way (one
  64-byte scan of separators and newlines), empty scalar cells too; a CRLF line's
  ``\r`` is left out there, so CRLF files stay on these paths.
* Exponent tokens (``%g`` and ``%E`` texts: ``1e-05``, ``-3.2E+04``) stay on them too:
  ``ld_span`` reads one of at most 16 bytes after its sign in the same pass (one
  16-byte load finds the ``e``, the exponent digits are one word), then Clinger or
  Eisel-Lemire. Longer ones and ``repr``'s ``0.000ddd`` of more than 19 digits are
  read by ``ld_span_more`` (never inlined, called out of the list loop).
* Buffers (``colstore.pxd``, owned by the base class
  :class:`~lstm_data.kernels._ext.csvcolumns.CsvColumns`) grow by ``mremap`` without
  copying and become the final numpy arrays as they are: each value is
  written once.
* Only complete records are committed; an incomplete last record is left for
  the caller to pass again with the next block.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.math cimport NAN, fabs
from libc.stdint cimport uint8_t, uint64_t

cimport numpy as cnp
import numpy as np

from .._args import BARE, KINDS, MULTI, QUOTED, check_csv_seps
from .colstore cimport ColStore, cs_at, cs_reserve
from .csvcolumns cimport (E_AFTER_QUOTE, E_BRACKET, E_EMPTY, E_INVALID, E_LONG, E_MISMATCH, E_NOMEM,
                         E_SCALAR_LIST, E_TOO_FEW, E_TOO_MANY, E_UNTERMINATED, F_BARE,
                         F_LISTED, F_MULTI, F_QUOTED, K_RAGGED, K_SCALAR, K_SKIP, ST_INCOMPLETE,
                         ST_OK, CsvColumns)
from .numparse cimport (FAST_LONG_READ, eisel_lemire, fast_number, is_space, ld_init_locale, ld_match2_32,
                        ld_match2_64, ld_span, ld_span_more, parse_number)

cnp.import_array()
ld_init_locale()

__all__ = ["CsvBlockParser", "QUOTED", "MULTI", "BARE", "KINDS", "check_csv_seps"]

cdef extern from "platform.h":
    int ld_ctz64(uint64_t x) nogil

cdef enum:
    FAST_LIST_READ = 64  # bytes readable from a quoted list's token for the 64-byte scan
    FAST_LIST_BEFORE = 16  # and before its end, for ld_span

cdef extern from *:
    bint unlikely(bint) nogil  # Cython's __builtin_expect macro

cdef Py_ssize_t _bracket_end(const char *buf, Py_ssize_t tok, Py_ssize_t end) noexcept nogil:
    """Where the last token of a bracketed list ends: before its ``]`` and the whitespace
    after it; -1 when ``buf[tok:end]`` does not end so."""
    while end > tok and is_space(buf[end - 1]):
        end -= 1
    return end - 1 if end > tok and buf[end - 1] == c']' else -1


cdef inline void _put(char *slot, double v, bint f32) noexcept nogil:
    """Store ``v`` at ``slot`` as float32 (``f32``) or float64."""
    if f32:
        (<float *> slot)[0] = <float> v
    else:
        (<double *> slot)[0] = v


@cython.final
cdef class CsvBlockParser(CsvColumns):
    """Parse CSV records, block by block, into columnar buffers (compiled).

    Same parameters, methods and results as
    :class:`lstm_data.kernels._py.csvblock.CsvBlockParser`.
    """
    # the last 64-byte window of list separators and quotes of the text being parsed
    # (NULL before the first): bit i of the ends is base[i], those not yet passed
    cdef const char *_scan_base
    cdef uint64_t _scan_ends

    def feed(self, data, bint final=False):
        """Parse every complete record of ``data``; return the bytes consumed (see the twin)."""
        cdef Py_buffer view
        cdef Py_ssize_t consumed = 0
        cdef int status = ST_OK
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)  # any C-contiguous bytes-like object
        try:
            if view.len:
                with nogil:
                    status = self._parse(<const char *> view.buf, view.len, final, &consumed)
        finally:
            PyBuffer_Release(&view)
        if status < 0:
            self._raise(status, data)
        return consumed

    # -- the nogil parser --------------------------------------------------------
    cdef int _parse(self, const char *buf, Py_ssize_t n, bint final,
                    Py_ssize_t *consumed) noexcept nogil:
        cdef Py_ssize_t pos = 0, rec_start, rec_line, col, g
        cdef int st
        cdef char c
        self._scan_base = NULL  # a window of another text would mislead _fast_list
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
                elif not (self._quoted_lists(buf, n, &col, &pos)
                          or self._bare_numbers(buf, n, &col, &pos)):
                    st = self._numbers(buf, n, final, col, &pos)
                else:
                    st = ST_OK
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
                    return self._fail(E_TOO_MANY, self._line, col)
                col += 1
                pos += 1
            if self.max_line and pos - rec_start - (buf[pos - 1] == c'\n') > self.max_line:
                return self._fail(E_LONG, rec_line, 0)
            if col != self.ncols - 1:
                return self._fail(E_TOO_FEW, rec_line, col)
            if self._commit() < 0:
                return E_NOMEM
        consumed[0] = pos
        return ST_OK

    cdef int _numbers(self, const char *buf, Py_ssize_t n, bint final, Py_ssize_t col,
                      Py_ssize_t *ppos) noexcept nogil:
        """Read one scalar or ragged field; leave ``ppos`` at its terminator."""
        cdef Py_ssize_t pos = ppos[0], start, tok, tok_line, open_line, count = 0
        cdef Py_ssize_t end
        cdef bint quoted = pos < n and buf[pos] == c'"', is_lsep, escaped, have, closed, bracket
        cdef double v = 0.0
        cdef char c, sep = self.sep, lsep = self.lsep
        cdef int st, g
        cdef char *slot
        if not quoted:
            start = pos
            bracket = pos < n and buf[pos] == c'['
            pos += bracket
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
                end = pos
                if unlikely(bracket) and not is_lsep:  # the list's last token ends with "]"
                    end = _bracket_end(buf, tok, pos)
                    if end < 0:
                        return self._fail(E_BRACKET, self._line, col, tok, pos, start, False)
                    have = False
                st = self._token(buf, tok, end, start, is_lsep, col, count, self._line, False,
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
            bracket = pos < n and buf[pos] == c'['
            pos += bracket
            closed = False
            if self.kind[col] == K_RAGGED:
                pos = self._fast_list(buf, n, &col, pos, &count, &closed, bracket, False)
                if pos < 0:
                    return E_NOMEM
            while not closed:
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
                        return self._fail(E_UNTERMINATED, open_line, col)
                    if buf[pos] == c'"':
                        if pos + 1 >= n and not final:
                            return ST_INCOMPLETE
                        if pos + 1 < n and buf[pos + 1] == c'"':
                            escaped = True
                            pos += 2
                            continue
                    break
                is_lsep = buf[pos] == lsep
                end = pos
                if unlikely(bracket) and not is_lsep:
                    end = _bracket_end(buf, tok, pos)
                    if end < 0:
                        return self._fail(E_BRACKET, tok_line, col, tok, pos, start, escaped)
                    have = False
                st = self._token(buf, tok, end, start, is_lsep, col, count, tok_line, escaped,
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
                slot = cs_at(&self.scalar_store[col], self._rows)
                if slot == NULL:
                    return E_NOMEM
                _put(slot, NAN, self.f32)
        else:
            g = self.group_of[col]
            if self.leader[g] == col:
                self.current[g] = count
            elif count != self.current[g]:
                self.e_count = count
                return self._fail(E_MISMATCH, self._line, col)
        self.rec_flags[col] |= ((F_QUOTED if quoted else F_BARE if count > 0 else 0)
                                | (F_MULTI if count > 1 else 0) | (F_LISTED if bracket else 0))
        ppos[0] = pos
        return ST_OK

    cdef inline bint _bare_numbers(self, const char *buf, Py_ssize_t n, Py_ssize_t *pcol,
                                   Py_ssize_t *ppos) noexcept nogil:
        """The common unquoted cells whole, without :meth:`_numbers`: plain decimals that
        ``ld_span`` (or ``ld_span_more``) reads, or empty scalar cells, each right before a
        separator or a newline (a CRLF line's ``\\r`` left out), one after the other: one
        64-byte scan marks the separators and newlines ahead, and while the next column's
        cell is another unquoted one of a scalar or ragged column, the loop goes on with it.

        Returns True with those cells stored, ``pcol`` at the last one's column and
        ``ppos`` at its terminator, or False when the cell at ``pcol`` is anything else (or
        a ragged cell whose group's count differs: :meth:`_numbers`, which reads the cell
        again from its start, reports it).
        """
        cdef Py_ssize_t col = pcol[0], rows = self._rows, ncols = self.ncols
        cdef const char *p = buf + ppos[0]
        # a window scanned from here on holds no cell start without FAST_LONG_READ bytes after it
        cdef const char *limit = buf + n - FAST_LIST_READ - FAST_LONG_READ - 1
        cdef const char *base = p
        cdef const char *e
        cdef const char *end
        cdef uint64_t ends, mant
        cdef double v, int_limit = self.int_limit
        cdef char *slot
        cdef char sep = self.sep
        cdef bint booked = False, f32 = self.f32
        cdef int g, st, frac, kind
        # the parser's arrays in locals: a store through a char pointer could change the fields
        cdef const uint8_t *kinds = self.kind
        cdef uint8_t *rec_flags = self.rec_flags
        cdef ColStore *scalar_store = self.scalar_store
        if p - buf < FAST_LIST_BEFORE or p > limit or p[0] == c'"':
            return False
        ends = ld_match2_64(p, sep, c'\n')
        while True:
            if ends == 0:
                if p > limit:
                    break
                base = p
                ends = ld_match2_64(p, sep, c'\n')
                if ends == 0:
                    break
            end = base + ld_ctz64(ends)
            e = end - (end[0] == c'\n' and (end - 1)[0] == c'\r')  # a CRLF line's last cell
            kind = kinds[col]
            if e <= p:  # an empty cell: NaN in a scalar column
                if kind != K_SCALAR or e < p:
                    break
                v = NAN
            else:
                st = ld_span(p, e, &v, &mant, &frac)
                if unlikely(st == 0):  # a long exponent token, or leading zeros
                    st = ld_span_more(p, e, &v, &mant, &frac)
                if unlikely(st != 1) and not (st == 2 and eisel_lemire(mant, -frac, p[0] == c'-', &v)):
                    break
            if kind == K_SCALAR:
                slot = cs_at(&scalar_store[col], rows)
            else:
                g = self.group_of[col]
                if self.leader[g] == col:
                    self.current[g] = 1
                elif self.current[g] != 1:
                    break
                slot = cs_at(&self.value_store[g], self.total[g])
                if slot != NULL:
                    slot += self.var_of[col] * self.itemsize
            if slot == NULL:
                break  # out of memory: _numbers finds it again and reports it
            _put(slot, v, f32)
            if unlikely(fabs(v) >= int_limit):  # a long integer the dtype may change (not NaN)
                self._note_int(p, e - p, col, v, self._line)
            rec_flags[col] |= F_BARE & -<int> (e > p)  # an empty cell sets no flag
            booked = True
            pcol[0] = col
            ppos[0] = end - buf
            if (end[0] != sep or col + 1 >= ncols or kinds[col + 1] == K_SKIP
                    or end[1] == c'"'):
                break
            col += 1  # the next cell, another unquoted one
            p = end + 1
            ends &= ends - 1
        return booked

    cdef inline bint _quoted_lists(self, const char *buf, Py_ssize_t n, Py_ssize_t *pcol,
                                   Py_ssize_t *ppos) noexcept nogil:
        """The common ragged cells whole, without :meth:`_numbers`: quoted lists that
        :meth:`_fast_list` reads to their closing quotes, each right before a separator
        or a newline, one after the other (the next column's cell is read on while it is
        such a list too).

        Returns True with those cells stored, ``pcol`` at the last one's column and
        ``ppos`` at its terminator, or False when the cell at ``pcol`` is anything else
        (or its group's count differs: :meth:`_numbers`, which reads the cell again from
        its start, storing the same values, reports it).
        """
        cdef Py_ssize_t pos = ppos[0], end, count = 0
        cdef bint booked = False
        if (self.kind[pcol[0]] != K_RAGGED or pos + FAST_LIST_READ >= n or buf[pos] != c'"'
                or buf[pos + 1] == c'['):
            return False
        end = self._fast_list(buf, n, pcol, pos + 1, &count, &booked, False, True)
        if not booked:
            return False
        ppos[0] = end
        return True

    cdef inline Py_ssize_t _fast_list(self, const char *buf, Py_ssize_t n, Py_ssize_t *pcol,
                                      Py_ssize_t pos, Py_ssize_t *pcount, bint *closed,
                                      bint bracket, bint run) noexcept nogil:
        """Store the plain decimals of a quoted ragged cell from ``pos``, as far as they go.

        The common case in one tight loop: a 64-byte scan marks every list separator and
        quote ahead (the previous cell's scan is used again when it reaches this cell),
        so each token's end is known before it is read; ``ld_span`` parses it and the
        value is stored (``""`` is an empty list). Stops at the closing quote (``closed``
        set; returns the position after it), or before the first token that needs the
        general path, or near either end of the data (a window is scanned only with
        ``FAST_LIST_READ`` and ``FAST_LONG_READ`` bytes after it, and a token read only
        with ``FAST_LIST_BEFORE`` bytes before it). In a bracketed list the last token
        (before the quote) is left for the general path, which checks its ``]``.
        Returns -1 when out of memory.

        With ``run`` (``pcount`` at 0, no bracket), a cell read to its closing quote right
        before a separator or a newline is also booked as :meth:`_quoted_lists` books it
        (its group's count, its flags), and while the next column's cell is another
        quoted list of a ragged column the loop goes on with it. ``closed`` is then set
        once a cell is booked, the return value is the last booked cell's terminator and
        ``pcol`` its column (a cell not booked is left for the general path to read again).
        """
        cdef Py_ssize_t col = pcol[0]
        cdef int g = self.group_of[col]
        cdef ColStore *store = &self.value_store[g]
        cdef Py_ssize_t rec = self.total[g] + pcount[0], first = rec, count
        cdef Py_ssize_t offset = self.var_of[col] * self.itemsize, booked = pos
        cdef const char *p = buf + pos
        # a window scanned from here on holds no token start without FAST_LONG_READ bytes
        # after it, nor an end e without e[1]
        cdef const char *limit = buf + n - FAST_LIST_READ - FAST_LONG_READ - 1
        cdef const char *base = self._scan_base
        cdef const char *e
        cdef char lsep = self.lsep, sep = self.sep, c = 0
        # the store's fields in locals: a store through a char pointer could change them
        cdef char *data
        cdef Py_ssize_t size = store.rec_size
        cdef bint f32 = self.f32
        cdef double v, int_limit = self.int_limit
        cdef uint64_t ends = 0  # bit i: base[i] is a list separator or a quote not yet passed
        cdef uint64_t mant
        cdef int st, frac
        cdef bint more = False
        cdef char after = 0
        if pos < FAST_LIST_BEFORE:  # ld_span reads the 16 bytes before a token's end
            return pos
        if base != NULL and base <= p < base + FAST_LIST_READ:
            ends = self._scan_ends & (0xFFFFFFFFFFFFFFFFULL << (p - base))
        while True:  # the cells of a run
            if ends != 0 and rec + FAST_LIST_READ // 2 > store.cap:  # a window's tokens fit
                if cs_reserve(store, rec + FAST_LIST_READ // 2) < 0:
                    return -1
            data = store.data + offset
            c = 0
            while True:
                if ends == 0:
                    if p > limit:
                        break
                    base = p
                    ends = ld_match2_64(p, lsep, c'"')
                    if ends == 0:
                        break
                    # a window holds at most 32 tokens (each one byte or more, and its end)
                    if unlikely(rec + FAST_LIST_READ // 2 > store.cap):
                        if cs_reserve(store, rec + FAST_LIST_READ // 2) < 0:
                            return -1
                        data = store.data + offset
                e = base + ld_ctz64(ends)
                c = e[0]
                if c == c'"' and (e[1] == c'"' or bracket):
                    c = 0
                    break
                if e == p:  # "" is an empty list; any other empty token the general path's
                    if c == c'"' and rec == first:
                        p = e + 1
                        ends &= ends - 1
                    else:
                        c = 0
                    break
                st = ld_span(p, e, &v, &mant, &frac)
                if unlikely(st != 1) and not (st == 2 and eisel_lemire(mant, -frac, p[0] == c'-', &v)):
                    more = st == 0  # ld_span_more may read it, out of this loop
                    after = c
                    c = 0
                    break
                if unlikely(fabs(v) >= int_limit):  # a long integer the dtype may change
                    self._note_int(p, e - p, col, v, self._line)
                _put(data + rec * size, v, f32)
                rec += 1
                p = e + 1
                ends &= ends - 1
                if c == c'"':
                    break
            if unlikely(more):  # an exponent or leading zeros: called here, the loop stays lean
                more = False
                st = ld_span_more(p, e, &v, &mant, &frac)
                if st == 1 or (st == 2 and eisel_lemire(mant, -frac, p[0] == c'-', &v)):
                    if unlikely(fabs(v) >= int_limit):
                        self._note_int(p, e - p, col, v, self._line)
                    _put(data + rec * size, v, f32)
                    rec += 1
                    p = e + 1
                    ends &= ends - 1
                    c = after
                    if c != c'"':
                        continue  # the cell's next token
            if not run:
                closed[0] = c == c'"'
                pcount[0] += rec - first
                booked = p - buf
                break
            # book the cell as _quoted_lists does
            count = rec - first
            if c != c'"':
                break
            if p[0] == c'\r' and p[1] == c'\n':  # a CRLF line's last cell
                p += 1
            elif not (p[0] == sep or p[0] == c'\n'):
                break
            if self.leader[g] == col:
                self.current[g] = count
            elif count != self.current[g]:
                break
            self.rec_flags[col] |= F_QUOTED | (F_MULTI if count > 1 else 0)
            booked = p - buf
            pcol[0] = col
            closed[0] = True
            if (p[0] != sep or col + 1 >= self.ncols or self.kind[col + 1] != K_RAGGED
                    or p[1] != c'"' or p[2] == c'['):
                break
            col += 1  # the next cell, another quoted list
            p += 2
            g = self.group_of[col]
            store = &self.value_store[g]
            rec = first = self.total[g]
            offset = self.var_of[col] * self.itemsize
            size = store.rec_size
            # the separator and the quote passed
            ends = ends & (0xFFFFFFFFFFFFFFFFULL << (p - base)) if p < base + FAST_LIST_READ else 0
        self._scan_base = base
        self._scan_ends = ends
        return booked

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
        if st == 0 and not (is_lsep or count > 0):
            return 0  # an empty cell
        if st != 1:
            return self._fail(E_EMPTY if st == 0 else E_INVALID, line, col, tok, end, cell, escaped)
        if self.kind[col] == K_SCALAR:
            slot = cs_at(&self.scalar_store[col], self._rows)
        else:
            g = self.group_of[col]
            slot = cs_at(&self.value_store[g], self.total[g] + count)
            if slot != NULL:
                slot += self.var_of[col] * self.itemsize
        if slot == NULL:
            return E_NOMEM
        _put(slot, v, self.f32)
        if unlikely(fabs(v) >= self.int_limit):  # rare: only integers this large can change
            self._note_int(buf + tok, end - tok, col, v, line)
        if is_lsep and self.kind[col] == K_SCALAR:
            return self._fail(E_SCALAR_LIST, line, col, tok, end, cell, escaped)
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
            return self._fail(E_AFTER_QUOTE, self._line, col, pos, pos + 1, pos)
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
                        return self._fail(E_UNTERMINATED, open_line, col)
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
