"""Pure-Python twin of :mod:`lstm_data.kernels._ext.csvblock`: CSV blocks to columnar buffers.

This is the readable specification of :class:`CsvBlockParser`. The compiled
parser gives bitwise-equal arrays and raises the same exception types, in the
same order, for every input and every way of cutting it into blocks.

Text rules (RFC 4180, numbers only)
-----------------------------------
* Records end at ``\\n``; a ``\\r`` before it is whitespace. A line that is empty
  (or holds only ``\\r``) is skipped. The last record may lack its newline.
* A field is *quoted* when its first byte is ``"``. Inside, ``""`` is one ``"``
  and newlines are allowed. After the closing quote only spaces, tabs, ``\\r``,
  ``\\v`` and ``\\f`` may come before the separator or the end of the record.
  A ``"`` in the middle of an unquoted field is an ordinary byte.
* A cell holds tokens split by ``list_sep``; each token is a number in the
  grammar of :mod:`lstm_data.kernels._py.parse` (surrounding whitespace allowed).
  A cell that is empty or only whitespace holds no token. An empty token next
  to a ``list_sep`` is an error. When ``list_sep == sep`` only a quoted cell can
  hold several tokens.
* A cell whose first byte (after the opening quote, if quoted) is ``[`` is a
  bracketed list, as pandas writes lists (``"[0.2, 0.334]"``): its last token
  must end with ``]`` (whitespace may follow), which is not part of the number.
  ``[]`` is an empty list. A ``]`` anywhere else is an invalid number.

Column kinds
------------
``"scalar"``: at most one token; an empty cell is NaN.
``"ragged"``: any number of tokens (an empty cell is an empty list); every
ragged column belongs to one group, whose first column in file order (its
*leader*) sets the row length that the other members must match.
``"skip"``: the field is tokenized but not read (it may hold any text).

Integers the dtype changes
--------------------------
An *integer token* is ``[+-]digits``. When the value stored for one (in the
column's dtype) is not that integer (possible beyond 2**24 in float32, 2**53 in
float64), or it has more than 19 significant digits, the column gets the
:data:`~lstm_data.kernels.INEXACT` flag, and :meth:`CsvBlockParser.inexact_ints`
gives the first such token of each column (its line, and its first 32 bytes).

Errors are raised in stream order, as soon as the text that decides them has
been seen: a token when its terminator is seen, a group length check and the
text after a closing quote at the end of the cell, the record's length (when
``max_line`` bounds it) and then its field count at the end of the record. Only
complete records are committed: :meth:`CsvBlockParser.feed`
returns how many bytes it consumed, and the caller passes the rest again,
followed by more data, in the next call.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import DTypeLike

from lstm_data.errors import TOKEN_QUOTE, ParseError, SchemaError
from lstm_data.kernels._args import (
    BARE,
    MULTI,
    QUOTED,
    check_csv_extend,
    check_csv_seps,
    check_dtype,
    check_max_line,
    csv_layout,
    long_line_message,
)
from lstm_data.kernels._csv_flags import INEXACT, LISTED
from lstm_data.kernels._py.parse import TOKEN_RE

__all__ = ["CsvBlockParser"]

_WS = b" \t\r\n\v\f"
_AFTER_QUOTE_WS = b" \t\r\v\f"
_TOKEN = re.compile(TOKEN_RE.pattern.encode("ascii"), re.IGNORECASE)
_LF, _QUOTE, _OPEN, _CLOSE = 10, 34, 91, 93
_INT = re.compile(rb"[+-]?[0-9]+")
#: bytes kept of the first integer token per column that the dtype changes
INT_KEPT = 32
_MAX_DIGITS = 19
#: bytes of a bad token kept for its error (which quotes fewer characters and its length)
TOKEN_CUT = 4 * TOKEN_QUOTE


class _Incomplete(Exception):
    """The record runs past the end of the data: wait for more."""


class CsvBlockParser:
    """Parse CSV records, block by block, into columnar buffers.

    Parameters
    ----------
    names
        Column names in file order (used in error messages and results).
    kinds
        ``"scalar"``, ``"ragged"`` or ``"skip"`` per column.
    groups
        Group name -> column indices of its variables, in the order of the
        columns of its ``values`` block. Every ragged column is in one group.
    dtype
        ``numpy.float32`` (default) or ``numpy.float64``.
    sep, list_sep
        Field separator, and separator of the numbers inside one cell.
    first_line
        Line number of the first byte fed (the line after the header).
    max_line
        The longest record, in bytes (its newline not counted; a record is a line, or
        several when a quoted cell holds line breaks): a complete record longer than
        this is a ``ParseError`` naming its first line, raised after the record's own
        errors. ``None``: no bound.
    """

    def __init__(self, names: Sequence[str], kinds: Sequence[str],
                 groups: Mapping[str, Sequence[int]], *, dtype: DTypeLike = np.float32, sep: str = ",",
                 list_sep: str = ",", first_line: int = 1, max_line: int | None = None) -> None:
        self._dtype = check_dtype(dtype)
        self._max_line = check_max_line(max_line)
        self._sep, self._lsep = check_csv_seps(sep, list_sep)
        self._names = [str(n) for n in names]
        self._kinds, self._group_of, self._leaders = csv_layout(self._names, kinds, groups)
        self._group_names = list(groups)
        self._group_cols = [list(c) for c in groups.values()]
        self._var_of = {c: j for cols in self._group_cols for j, c in enumerate(cols)}
        self._line = int(first_line)
        self._rows = 0
        self._flags = bytearray(len(self._names))
        self._first: dict[int, tuple[int, bytes, int]] = {}  # column -> first changed integer
        self._pending: dict[int, tuple[int, bytes, int]] = {}  # the same, in the current record
        self._int_dtype = np.float32 if self._dtype == np.float32 else np.float64
        self._scalars: dict[int, list[float]] = {c: [] for c, k in enumerate(self._kinds) if k == "scalar"}
        self._values: list[list[list[float]]] = [[[] for _ in cols] for cols in self._group_cols]
        self._offsets = [[0] for _ in self._group_cols]
        seps = re.escape(bytes([self._sep, self._lsep]))
        self._in_quotes = re.compile(b'["' + re.escape(bytes([self._lsep])) + b"\n]")
        self._unquoted = re.compile(b"[" + seps + b"\n]")
        self._field_end = re.compile(b"[" + re.escape(bytes([self._sep])) + b"\n]")
        self._layout = (tuple(self._names), tuple(self._kinds),
                        tuple((g, tuple(c)) for g, c in zip(self._group_names, self._group_cols)),
                        self._dtype.str, self._sep, self._lsep)

    @property
    def rows(self) -> int:
        """Committed data rows so far."""
        return self._rows

    @property
    def line(self) -> int:
        """Line number of the next byte to be fed."""
        return self._line

    @line.setter
    def line(self, value: int) -> None:
        self._line = int(value)

    def column_flags(self) -> np.ndarray:
        """Per column, OR of the flags of its committed cells.

        A cell's flags: :data:`QUOTED` (it was quoted), :data:`BARE` (unquoted,
        holding at least one number), :data:`MULTI` (two or more numbers).

        Returns
        -------
        numpy.ndarray
            uint8, one byte of flags per column.
        """
        return np.frombuffer(bytes(self._flags), dtype=np.uint8).copy()

    def inexact_ints(self) -> dict[str, tuple[int, str, int]]:
        """The first committed integer token the dtype changes, per column.

        Returns
        -------
        dict
            Column name -> ``(line, token, token length)`` (``token``: at most its
            first 32 bytes), for every column with the
            :data:`~lstm_data.kernels.INEXACT` flag, in column order.
        """
        return {self._names[c]: (line, tok.decode("ascii"), length)
                for c, (line, tok, length) in sorted(self._first.items())}

    # -- feeding -------------------------------------------------------------
    def feed(self, data: bytes | bytearray | memoryview, final: bool = False) -> int:
        """Parse every complete record of ``data``; return the bytes consumed.

        ``data[consumed:]`` is an incomplete last record: pass it again at the
        start of the next call. With ``final=True`` the end of ``data`` ends the
        last record and everything is consumed.

        Parameters
        ----------
        data
            The next bytes of the text.
        final
            ``data`` ends the input.

        Returns
        -------
        int
            The bytes consumed.

        Raises
        ------
        ParseError
            Malformed number, empty token, wrong field count, unterminated quote
            or text after a closing quote. Names line, column, variable, row,
            offset in the cell and token.
        SchemaError
            Several values in a scalar cell, or a group member whose length
            differs from its leader's in the same row.
        """
        buf = bytes(data)
        pos = 0
        while pos < len(buf):
            line = self._line
            try:
                pos = self._record(buf, pos, final)
            except _Incomplete:
                self._line = line
                return pos
        return pos

    def _record(self, buf: bytes, pos: int, final: bool) -> int:
        n = len(buf)
        if buf[pos] == _LF or buf[pos:pos + 2] == b"\r\n":
            self._line += 1
            return buf.index(b"\n", pos) + 1
        if buf[pos:] == b"\r":
            if not final:
                raise _Incomplete
            return n
        rec_line, start = self._line, pos
        cells: list[list[float]] = []
        flags: list[int] = []
        self._pending = {}
        col, ncols = 0, len(self._names)
        while True:
            value, flag, pos = self._field(buf, pos, final, col, cells)
            cells.append(value)
            flags.append(flag)
            if pos >= n:
                if not final:
                    raise _Incomplete
                break
            if buf[pos] == _LF:
                pos += 1
                self._line += 1
                break
            if col == ncols - 1:  # a field separator after the last column
                raise ParseError(f"too many fields: expected {ncols}", line=self._line,
                                 column=ncols + 1, row=self._rows)
            col += 1
            pos += 1
        if self._max_line and pos - start - (buf[pos - 1] == _LF) > self._max_line:
            raise ParseError(long_line_message(self._max_line), line=rec_line, row=self._rows)
        if col != ncols - 1:
            raise ParseError(f"too few fields: expected {ncols}, got {col + 1}",
                             line=rec_line, column=col + 2, row=self._rows)
        self._commit(cells, flags)
        return pos

    def _commit(self, cells: list[list[float]], flags: list[int]) -> None:
        for c, value in enumerate(cells):
            kind = self._kinds[c]
            if flags[c] & INEXACT and not self._flags[c] & INEXACT:
                self._first[c] = self._pending[c]
            self._flags[c] |= flags[c]
            if kind == "scalar":
                self._scalars[c].append(value[0] if value else float("nan"))
            elif kind == "ragged":
                g = self._group_of[c]
                self._values[g][self._var_of[c]].extend(value)
        for g, leader in enumerate(self._leaders):
            self._offsets[g].append(self._offsets[g][-1] + len(cells[leader]))
        self._rows += 1

    # -- one field -----------------------------------------------------------------
    def _field(self, buf: bytes, pos: int, final: bool, col: int,
               cells: list[list[float]]) -> tuple[list[float], int, int]:
        """Read the field at ``pos``; return ``(numbers, flags, position of its terminator)``."""
        kind = self._kinds[col]
        quoted = pos < len(buf) and buf[pos] == _QUOTE
        if kind == "skip":
            return [], 0, self._skip(buf, pos, final, quoted, col)
        numbers: list[float] = []
        bracket = buf[pos + quoted:pos + quoted + 1] == b"["
        if quoted:
            pos = self._quoted(buf, pos, final, col, numbers, bracket)
        else:
            pos = self._unquoted_tokens(buf, pos, final, col, numbers, bracket)
        if kind == "ragged" and col != self._leaders[self._group_of[col]]:
            leader = self._leaders[self._group_of[col]]
            expected = len(cells[leader])
            if len(numbers) != expected:
                raise SchemaError(
                    f"group {self._group_names[self._group_of[col]]!r}: {self._names[col]!r} "
                    f"has {len(numbers)} values but {self._names[leader]!r} has {expected}",
                    line=self._line, column=col + 1, variable=self._names[col], row=self._rows)
        flag = ((QUOTED if quoted else BARE if numbers else 0)
                | (MULTI if len(numbers) > 1 else 0) | (LISTED if bracket else 0)
                | (INEXACT if col in self._pending else 0))
        return numbers, flag, pos

    def _skip(self, buf: bytes, pos: int, final: bool, quoted: bool, col: int) -> int:
        if quoted:
            open_line = self._line
            pos += 1
            while True:
                q = buf.find(b'"', pos)
                if q < 0 or q + 1 == len(buf):
                    if not final:
                        raise _Incomplete
                    if q < 0:
                        raise ParseError("unterminated quote", line=open_line, column=col + 1,
                                         variable=self._names[col], row=self._rows)
                    self._line += buf.count(b"\n", pos, q)
                    return q + 1
                self._line += buf.count(b"\n", pos, q)
                if buf[q + 1] != _QUOTE:
                    return self._after_quote(buf, q + 1, final, col)
                pos = q + 2
        m = self._field_end.search(buf, pos)
        if m is None:
            if not final:
                raise _Incomplete
            return len(buf)
        return m.start()

    def _unquoted_tokens(self, buf: bytes, pos: int, final: bool, col: int, numbers: list[float],
                         bracket: bool) -> int:
        start, n = pos, len(buf)
        pos += bracket
        while True:
            m = self._unquoted.search(buf, pos)
            end = m.start() if m is not None else n
            if m is None and not final:
                raise _Incomplete
            is_list_sep = end < n and buf[end] == self._lsep and self._lsep != self._sep
            self._token(buf[pos:end], is_list_sep, col, numbers, pos - start,
                        span=(buf, pos, end, False), closing=bracket and not is_list_sep)
            if not is_list_sep:
                return end
            pos = end + 1

    def _quoted(self, buf: bytes, pos: int, final: bool, col: int, numbers: list[float],
                bracket: bool) -> int:
        open_line = self._line
        pos += 1
        start, n = pos, len(buf)
        pos += bracket
        while True:  # one token per turn
            tok_line, parts, tok_start = self._line, [], pos
            while True:  # scan to the token's terminator, unescaping ""
                m = self._in_quotes.search(buf, pos)
                if m is None:
                    if not final:
                        raise _Incomplete
                    raise ParseError("unterminated quote", line=open_line, column=col + 1,
                                     variable=self._names[col], row=self._rows)
                q = m.start()
                if buf[q] == _LF:
                    self._line += 1
                    parts.append(buf[pos:q + 1])
                    pos = q + 1
                    continue
                if buf[q] == _QUOTE:
                    if q + 1 >= n and not final:
                        raise _Incomplete
                    if q + 1 < n and buf[q + 1] == _QUOTE:
                        parts.append(buf[pos:q + 1])
                        pos = q + 2
                        continue
                parts.append(buf[pos:q])
                break
            is_list_sep = buf[q] == self._lsep
            self._token(b"".join(parts), is_list_sep, col, numbers, tok_start - start,
                        line=tok_line, span=(buf, tok_start, q, True),
                        closing=bracket and not is_list_sep)
            pos = q + 1
            if not is_list_sep:
                return self._after_quote(buf, pos, final, col)

    def _after_quote(self, buf: bytes, pos: int, final: bool, col: int) -> int:
        n = len(buf)
        while pos < n and buf[pos] != self._sep and buf[pos] in _AFTER_QUOTE_WS:
            pos += 1
        if pos >= n:
            if not final:
                raise _Incomplete
            return pos
        if buf[pos] != self._sep and buf[pos] != _LF:
            raise ParseError("unexpected character after a closing quote", line=self._line,
                             column=col + 1, variable=self._names[col], row=self._rows,
                             token=buf[pos:pos + 1].decode("utf-8", "replace"))
        return pos

    def _token(self, raw: bytes, is_list_sep: bool, col: int, numbers: list[float], offset: int,
               line: int | None = None, span: tuple[bytes, int, int, bool] = (b"", 0, 0, False),
               closing: bool = False) -> None:
        """Validate one complete token and append its value.

        ``span`` is ``(buf, start, end, quoted)``: where the token's text lies in
        ``buf``. An error quotes at most :data:`TOKEN_CUT` bytes of it (unescaped
        when quoted) and gives the bytes it spans. ``closing``: the last token of
        a bracketed list, whose ``]`` (and the whitespace after it) is cut off first.
        """
        text_buf, a, b, quoted = span

        def located(raw: bytes, b: int) -> dict[str, Any]:
            out = dict(line=self._line if line is None else line, column=col + 1,
                       variable=self._names[col], row=self._rows, offset=offset,
                       token=raw.decode("utf-8", "replace"))
            if b - a > TOKEN_CUT:
                shown = text_buf[a:a + TOKEN_CUT]
                shown = shown.replace(b'""', b'"') if quoted else shown
                out.update(token=shown.decode("utf-8", "replace"), token_length=b - a)
            return out

        if closing:
            e = b
            while e > a and text_buf[e - 1] in _WS:
                e -= 1
            if not (e > a and text_buf[e - 1] == _CLOSE):
                raise ParseError("a list opened with '[' does not end with ']'", **located(raw, b))
            b = e - 1
            raw = text_buf[a:b].replace(b'""', b'"') if quoted else text_buf[a:b]
        where = located(raw, b)
        text = raw.strip(_WS)
        if not text:
            if is_list_sep or numbers:
                raise ParseError("empty token", **where)
            return  # an empty cell
        if not _TOKEN.fullmatch(text):
            raise ParseError("invalid number", **where)
        value = float(text)
        numbers.append(value)
        if col not in self._pending and _INT.fullmatch(text) and self._changes(text, value):
            self._pending[col] = (where["line"], text[:INT_KEPT], len(text))
        if is_list_sep and self._kinds[col] == "scalar":
            raise SchemaError("several values in a scalar column", **where)

    def _changes(self, text: bytes, value: float) -> bool:
        """Whether the integer token ``text`` is not held exactly by the dtype (or is too long)."""
        if len(text.lstrip(b"+-").lstrip(b"0")) > _MAX_DIGITS:
            return True
        with np.errstate(over="ignore"):
            return int(self._int_dtype(value)) != int(text)

    def extend(self, other: "CsvBlockParser") -> None:
        """Append the committed rows of ``other`` (a parser of the same layout) to this one.

        As if ``other``'s text had been fed here (rows, values, column flags), but
        :attr:`line` is left alone. The lines of ``other``'s first changed integers
        (:meth:`inexact_ints`) count from ``other``'s start, which is taken to be
        this parser's :attr:`line` (feed ``other`` from line 0, as the threaded
        reader does). ``other`` is left empty, ready for another block:
        this stitches blocks parsed on several threads, in order.

        Parameters
        ----------
        other
            The parser of the next block.

        Raises
        ------
        TypeError
            ``other`` is not a ``CsvBlockParser``.
        ValueError
            ``other`` is this parser, or its names, kinds, groups, dtype or
            separators differ.
        """
        if not isinstance(other, CsvBlockParser):
            raise TypeError(f"extend expects a CsvBlockParser, got {type(other).__name__}")
        check_csv_extend(self._layout, other._layout, other is self)
        for c, column in self._scalars.items():
            column.extend(other._scalars[c])
        for g, offsets in enumerate(self._offsets):
            for mine, theirs in zip(self._values[g], other._values[g]):
                mine.extend(theirs)
            shift = offsets[-1]
            offsets.extend(o + shift for o in other._offsets[g][1:])
        for c, flag in enumerate(other._flags):
            if flag & INEXACT and not self._flags[c] & INEXACT:
                line, token, length = other._first[c]
                self._first[c] = (line + self._line, token, length)
            self._flags[c] |= flag
        self._rows += other._rows
        other._clear()

    def _clear(self, flags: bool = True) -> None:
        """Drop the committed rows, and the column flags unless ``flags`` is false."""
        self._scalars = {c: [] for c in self._scalars}
        self._values = [[[] for _ in cols] for cols in self._group_cols]
        self._offsets = [[0] for _ in self._group_cols]
        self._flags = bytearray(len(self._names)) if flags else self._flags
        self._first = {} if flags else self._first
        self._rows = 0

    # -- results ---------------------------------------------------------------
    def finish(self) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
        """Return ``(scalars, groups)`` of the committed rows and reset the buffers.

        Afterwards :attr:`rows` (and the row named in errors) counts from 0 again;
        :attr:`line` goes on.

        Returns
        -------
        scalars : dict
            Scalar column name -> 1-D ``dtype`` array of length ``rows``.
        groups : dict
            Group name -> ``(values (total, V) of dtype, offsets (rows + 1,) int64)``.
        """
        with np.errstate(over="ignore"):
            scalars = {self._names[c]: np.array(v, dtype=np.float64).astype(self._dtype)
                       for c, v in self._scalars.items()}
            groups = {}
            for g, name in enumerate(self._group_names):
                offsets = np.array(self._offsets[g], dtype=np.int64)
                values = np.empty((int(offsets[-1]), len(self._group_cols[g])), self._dtype)
                for j, column in enumerate(self._values[g]):
                    values[:, j] = np.array(column, dtype=np.float64).astype(self._dtype)
                groups[name] = (values, offsets)
        self._clear(flags=False)
        return scalars, groups
