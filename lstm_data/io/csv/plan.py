"""Which CSV column is scalar, ragged or skipped, and how ragged columns group.

Inference rule (columns a schema does not declare)
--------------------------------------------------
Quoting is how a writer spells text, not a type, so a quoted number is a
number. An undeclared column is **ragged** when, anywhere in the input (all
blocks of all files):

1. one of its cells holds more than one number (``"1,2"``), or is a bracketed
   list (``"[0.2]"``, ``[]``: pandas' spelling of a list); or
2. one of its cells is quoted and another undeclared column of its name prefix
   (the part before the first ``.``) is ragged by rule 1: a prong variable whose
   cells happen to hold single numbers (or ``""``, an empty list) next to its
   list-valued siblings; or
3. one of its cells is quoted, none of its unquoted cells holds a number, and
   some other cell of the input holds an unquoted number. Such a writer quotes
   text only, and a column it always quotes was written as text: a list. This is
   lstm_ee's style (bare scalars, every prong cell quoted: ``"0.2,0.334"``,
   ``"0.2"``, ``""``) and ``QUOTE_NONNUMERIC`` with lists as strings, so a prong
   column stays ragged even when every row holds at most one prong.

Otherwise the column is **scalar**, and an empty cell (``""`` too) is NaN. So in
a ``QUOTE_ALL`` file (no unquoted number anywhere) a column of single numbers is
scalar; a scalar column with missing values that ``QUOTE_NONNUMERIC`` or
pandas writes as ``""`` among bare numbers is scalar; a file without quotes is
decided by rule 1 alone. A column of single numbers that is only ever quoted
and has no list-valued sibling is ambiguous in a file that writes numbers bare
elsewhere (rule 3 makes it ragged): declare it in a
:class:`~lstm_data.io.schema.Schema` to read it as a scalar.

Ragged columns group by their name's prefix before the first ``.``
(``png.calE`` -> ``png``; a name without a dot is its own prefix). When the
columns of one prefix do not share their per-row lengths, the prefix splits
into groups of identical lengths named ``prefix``, ``prefix_2``, ... When the
lengths of such a split differ in only a few rows (at most 1%), those rows are
more likely broken than the columns unrelated: :func:`near_splits` says so,
and the reader warns, naming the first such row.

The parser collects the facts the rule needs per column, in the kernel, as
column flags (:data:`~lstm_data.kernels.QUOTED`, :data:`~lstm_data.kernels.MULTI`,
:data:`~lstm_data.kernels.BARE`). The reader first infers the plan from a sample
at the start of the first file, then parses all files with it. Should the flags
of the whole input decide any column differently (or a later row contradict the
sample's groups), the input is parsed again in the *general* plan (every
undeclared column its own ragged group), and the rule is applied to the whole
input's flags: the result does not depend on where blocks or files end.
"""
from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, overload

import numpy as np

from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import FormatError, ParseError, SchemaError
from lstm_data.io.columns.groups import group_prefix
from lstm_data.io.schema import Schema
from lstm_data.kernels import BARE, LISTED, MULTI, QUOTED, long_line_message

__all__ = ["Plan", "ParserOptions", "dtype_of", "parser_options", "MAX_LINE_BYTES", "max_line_of", "MAX_COLUMNS", "max_columns_of", "long_line", "HeaderScan", "Scalars", "Groups", "split_header", "header_bounds", "header_names", "sep_of", "declared_plan", "plan_from_sample",
           "assemble", "near_splits", "choose_sep", "SEPARATORS", "LIST_SEP", "check_decimal_commas"]

#: field separators recognised in a header, in the order that breaks a tie
SEPARATORS = (",", ";", "\t", "|")
#: the separator of the numbers inside a list cell unless one is given
LIST_SEP = ","


#: the parser's output: scalar column -> values; group -> (values (total, V), offsets (rows + 1,))
Scalars = dict[str, np.ndarray]
Groups = dict[str, tuple[np.ndarray, np.ndarray]]


#: the longest line (or record) of CSV text unless ``max_line_bytes`` is given
MAX_LINE_BYTES = 64 << 20
#: the most columns a CSV header may name unless ``max_columns`` is given (each costs the
#: parser about 13 KB of memory, most of it one page of its own buffer)
MAX_COLUMNS = 10_000


class ParserOptions(TypedDict):
    """The keywords a :class:`~lstm_data.kernels.CsvBlockParser` is made with, besides its plan."""

    dtype: np.dtype[Any]
    sep: str
    list_sep: str
    max_line: int


def dtype_of(dtype: Any, schema: Schema | None) -> np.dtype[Any]:
    """A reader's ``dtype``: the one given, else the schema's, else float32."""
    return np.dtype(dtype if dtype is not None else (schema.dtype if schema else np.float32))


def parser_options(dtype: np.dtype[Any], sep: str, list_sep: str | None, max_line: int) -> ParserOptions:
    """The parser keywords of a reader's options (``list_sep=None``: :data:`LIST_SEP`)."""
    return ParserOptions(dtype=dtype, sep=sep, list_sep=LIST_SEP if list_sep is None else list_sep,
                         max_line=max_line)


def max_line_of(max_line_bytes: Any) -> int:
    """``max_line_bytes`` of a reader as a count of bytes (``None``: :data:`MAX_LINE_BYTES`)."""
    if max_line_bytes is None:
        return MAX_LINE_BYTES
    if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, (int, np.integer)) \
            or max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be a positive number of bytes, got {max_line_bytes!r}")
    return int(max_line_bytes)


def max_columns_of(max_columns: Any) -> int:
    """``max_columns`` of a reader as a count (``None``: :data:`MAX_COLUMNS`)."""
    if max_columns is None:
        return MAX_COLUMNS
    if isinstance(max_columns, bool) or not isinstance(max_columns, (int, np.integer)) or max_columns < 1:
        raise ValueError(f"max_columns must be a positive number of columns, got {max_columns!r}")
    return int(max_columns)


def _too_many(count: int, max_columns: int, path: str, line: int) -> ParseError:
    return ParseError(f"the header names {count:,} columns, more than max_columns = {max_columns:,}; if the "
                      "data holds that many, raise max_columns (lstm_data.ReadOptions)", file=path, line=line)


def long_line(max_line: int, line: int, row: int | None = None) -> ParseError:
    """The error for a line (or quoted record) from ``line`` on that is longer than ``max_line`` bytes."""
    return ParseError(long_line_message(max_line), line=line, row=row)


_BOM = b"\xef\xbb\xbf"
_SHOWN_ROWS = 5  # bad rows listed by near_splits' warning


@dataclass
class Plan:
    """Column kinds and groups handed to the block parser.

    Attributes
    ----------
    names : list of str
    kinds : list of str
        ``"scalar"``, ``"ragged"`` or ``"skip"`` per column.
    groups : dict
        Group name -> column indices, in values order.
    inferred : set of str
        Columns whose kind and group come from the data, not the schema.
    general : bool
        Every inferred column is its own ragged group (the fallback plan).
    """

    names: list[str]
    kinds: list[str]
    groups: dict[str, list[int]]
    inferred: set[str] = field(default_factory=set)
    general: bool = False


class HeaderScan:
    """The header line of text that comes in blocks, found in time linear in its length.

    :meth:`add` each block; it returns :func:`header_bounds` of the text so far once
    they are known. A header longer than ``max_line`` bytes (its newline not
    counted) is a ``ParseError`` naming line 1, raised as soon as that many bytes
    came without its end: the text held is at most ``max_line`` plus a block.

    Attributes
    ----------
    data : bytearray
        The text so far.
    """

    def __init__(self, max_line: int) -> None:
        self.data = bytearray()
        self.max_line = max_line
        self._start: int | None = None
        self._pos = 0  # quotes counted up to here
        self._quotes = 0
        #: the header's ``(start, end)`` once found
        self.found: tuple[int, int] | None = None

    def add(self, block: bytes | bytearray | memoryview, final: bool = False) -> tuple[int, int] | None:
        """The header's ``(start, end)`` once ``data`` holds it (always with ``final``), else ``None``."""
        data = self.data
        data += block
        if self.found is not None:
            return self.found
        if self._start is None:
            if len(data) < len(_BOM) and not final:
                return None
            self._start = self._pos = len(_BOM) if data.startswith(_BOM) else 0
        start = self._start
        while True:
            nl = data.find(b"\n", self._pos)
            if nl < 0:
                self._quotes += data.count(b'"', self._pos)
                self._pos = len(data)
                if len(data) - start > self.max_line:
                    raise long_line(self.max_line, 1)
                if final:
                    self.found = (start, len(data))
                return self.found
            self._quotes += data.count(b'"', self._pos, nl)
            self._pos = nl + 1
            if self._quotes % 2 == 0:
                if nl - start > self.max_line:
                    raise long_line(self.max_line, 1)
                self.found = (start, nl + 1)
                return self.found


def header_bounds(data: bytes, final: bool) -> tuple[int, int] | None:
    """``(start, end)`` of the header line (after a BOM; ``end`` past its newline), or
    ``None`` when ``data`` does not hold all of it yet (never with ``final=True``)."""
    start = len(_BOM) if data.startswith(_BOM) else 0
    end = start
    while True:
        nl = data.find(b"\n", end)
        if nl < 0:
            return (start, len(data)) if final else None
        end = nl + 1
        if data.count(b'"', start, nl) % 2 == 0:
            return start, end


def _sniff(line: bytes) -> tuple[str | None, int]:
    """The candidate separator found most often outside quotes in ``line``, and how often."""
    outside = b"".join(bytes(line).split(b'"')[0::2])  # each quote toggles: every other piece is outside
    counts = {c: outside.count(c.encode("latin-1")) for c in SEPARATORS}
    best = max(SEPARATORS, key=lambda c: counts[c])  # max keeps the first of a tie
    return (best, counts[best]) if counts[best] else (None, 0)


def _shown(sep: str) -> str:
    return {"\t": "tab ('\\t')"}.get(sep, repr(sep))


def choose_sep(data: bytes, final: bool, sep: str | None, path: str) -> str | None:
    """The field separator of the CSV text starting with ``data`` (its header line).

    :func:`sep_of` the header line; ``None`` when ``data`` does not yet hold all of it.
    """
    bounds = header_bounds(data, final)
    return None if bounds is None else sep_of(data[bounds[0]:bounds[1]], sep, path)


def sep_of(line: bytes, sep: str | None, path: str) -> str:
    """The field separator of the header ``line``.

    ``sep`` when given, else the one of :data:`SEPARATORS` that the header line
    holds most often outside quotes (``","`` when it holds none).

    Raises
    ------
    FormatError
        ``sep`` is given, the header holds no ``sep`` but another separator: it
        would read as one column, so the message names the one it looks like.
    """
    found, count = _sniff(line)
    if sep is None:
        return found or ","
    if found is not None and found != sep and sep.encode("latin-1") not in line:
        raise FormatError(
            f"the header holds no {_shown(sep)} but {count} {_shown(found)}: this file looks "
            f"{_shown(found)}-separated; pass sep={found!r} (CLI: --sep {found!r}), or leave sep "
            "unset to detect it", file=path, line=1)
    return sep


def check_decimal_commas(names: list[str], flags: np.ndarray, sep: str, list_sep: str | None,
                         path: str) -> None:
    """Refuse bare ``1,5`` cells in a file not separated by ``,`` when ``list_sep`` was not given.

    Such a file may be written with decimal commas (``0,25;1,5``): read as lists at
    ``,`` they would be other numbers. Lists that are quoted or bracketed are lists.

    Raises
    ------
    FormatError
        Some column's cells with several numbers are all bare (neither quoted nor
        bracketed): names the column and how to choose.
    """
    if list_sep is not None or sep == LIST_SEP:
        return
    for c, name in enumerate(names):
        if flags[c] & MULTI and not flags[c] & (QUOTED | LISTED):
            raise FormatError(
                f"column {name!r} holds bare cells with a ',' (like 0,25) in a {_shown(sep)}-"
                "separated file: decimal commas are not read. If they are lists of numbers, pass "
                "list_sep=',' (CLI: --list-sep ','); if they are decimal commas, convert them to "
                "points first", file=path, variable=name)


@overload
def split_header(data: bytes, final: Literal[True], sep: str, path: str) -> tuple[list[str], int]: ...
@overload
def split_header(data: bytes, final: bool, sep: str, path: str) -> tuple[list[str], int] | None: ...


def split_header(data: bytes, final: bool, sep: str, path: str) -> tuple[list[str], int] | None:
    """Parse the header at the start of ``data``.

    Returns
    -------
    (names, end) or None
        ``end`` is the offset just past the header's newline (and a leading
        UTF-8 BOM). ``None`` when ``data`` does not yet hold the whole header
        (never with ``final=True``).

    Raises
    ------
    FormatError
        See :func:`header_names`.
    """
    bounds = header_bounds(data, final)
    if bounds is None:
        return None
    return header_names(data, bounds, sep, path), bounds[1]


def header_names(data: bytes, bounds: tuple[int, int], sep: str, path: str,
                 max_columns: int = MAX_COLUMNS) -> list[str]:
    """The column names of the header line ``data[bounds[0]:bounds[1]]`` (:func:`header_bounds`).

    Raises
    ------
    FormatError
        Empty file, a header that is not UTF-8 or not CSV (e.g. bare carriage
        returns for line ends), or repeated column names.
    ParseError
        More than ``max_columns`` names (counted before they are split when no quote
        can hide a separator).
    """
    start, end = bounds
    text = data[start:end]
    if not text.strip():
        raise FormatError("empty file: no header line", file=path)
    header_line = 1 + data.count(b"\n", 0, start)
    if b'"' not in text and text.count(sep.encode()) >= max_columns:
        raise _too_many(text.count(sep.encode()) + 1, max_columns, path, header_line)
    try:
        line = text.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise FormatError(f"header is not UTF-8 text: {exc}", file=path, line=1) from None
    try:
        fields = next(csv.reader([line], delimiter=sep, strict=True))
    except csv.Error as exc:
        why = ("the lines end in a bare carriage return (old Mac style), which is not read; "
               "convert them to newlines, e.g. tr '\\r' '\\n' < in.csv > out.csv"
               if "\r" in line else f"the header line is not valid CSV ({exc})")
        raise FormatError(why, file=path, line=1) from None
    names = [n.strip() for n in fields]
    if len(names) > max_columns:
        raise _too_many(len(names), max_columns, path, header_line)
    seen = set()
    for n in names:
        if n in seen:
            raise FormatError(f"column {n!r} appears twice in the header", file=path, line=1,
                              variable=n)
        seen.add(n)
    return names


def declared_plan(names: list[str], schema: Schema | None) -> Plan:
    """The general plan: declared columns as declared, every other its own ragged group."""
    groups_by_name, scalars = schema.resolve(names) if schema is not None else ({}, None)
    index = {n: i for i, n in enumerate(names)}
    kinds = ["ragged"] * len(names)
    groups: dict[str, list[int]] = {g: [index[v] for v in vs] for g, vs in groups_by_name.items()}
    in_group = {c for cols in groups.values() for c in cols}
    inferred = set()
    for c, name in enumerate(names):
        if c in in_group:
            continue
        if scalars is not None:
            kinds[c] = "scalar" if name in scalars else "skip"
        else:
            groups[f"\0{c}"] = [c]  # a private name: one inferred column
            inferred.add(name)
    return Plan(list(names), kinds, groups, inferred, general=bool(inferred))


def _group_inferred(plan: Plan, ragged: list[int], offsets: dict[int, np.ndarray]) -> dict[str, list[int]]:
    """Group inferred ragged columns by prefix, then by identical ``offsets``."""
    used = {g for g in plan.groups if not g.startswith("\0")}
    classes: dict[str, list[list[int]]] = {}
    for c in ragged:
        bucket = classes.setdefault(group_prefix(plan.names[c]), [])
        for members in bucket:
            if np.array_equal(offsets[members[0]], offsets[c]):
                members.append(c)
                break
        else:
            bucket.append([c])
    out: dict[str, list[int]] = {}
    for prefix, bucket in classes.items():
        for k, members in enumerate(bucket):
            name = prefix if k == 0 else f"{prefix}_{k + 1}"
            while name in used or name in out:
                name += "_"
            out[name] = members
    return out


def _kinds_from_flags(plan: Plan, flags: np.ndarray) -> list[int]:
    """The inferred columns that the inference rule (module docstring) makes ragged."""
    inferred = [c for c, n in enumerate(plan.names) if n in plan.inferred]
    listed = {group_prefix(plan.names[c]) for c in inferred if flags[c] & (MULTI | LISTED)}
    bare_elsewhere = bool(np.any(flags & BARE))
    return [c for c in inferred
            if flags[c] & (MULTI | LISTED) or flags[c] & QUOTED and (
                group_prefix(plan.names[c]) in listed or bare_elsewhere and not flags[c] & BARE)]


def plan_from_sample(general: Plan, flags: np.ndarray, groups: Groups | Callable[[], Groups]) -> Plan:
    """The fast plan that a sample parsed with the ``general`` plan suggests.

    ``groups`` (the sample's groups, or a callable returning them) gives the
    offsets that group the ragged columns; a callable is called only when some
    inferred column is ragged, so a sample of scalars builds no arrays.
    """
    ragged = _kinds_from_flags(general, flags)
    kinds = list(general.kinds)
    for c, n in enumerate(general.names):
        if n in general.inferred:
            kinds[c] = "ragged" if c in ragged else "scalar"
    offsets: dict[int, np.ndarray] = {}
    if ragged:
        built = groups() if callable(groups) else groups
        offsets = {c: built[f"\0{c}"][1] for c in ragged}
    declared = {g: cols for g, cols in general.groups.items() if not g.startswith("\0")}
    declared.update(_group_inferred(general, ragged, offsets))
    ordered = dict(sorted(declared.items(), key=lambda item: min(item[1])))
    return Plan(general.names, kinds, ordered, set(general.inferred), general=False)


def surprised(plan: Plan, flags: np.ndarray) -> bool:
    """Whether the whole input's ``flags`` decide an inferred column unlike the fast ``plan``."""
    ragged = set(_kinds_from_flags(plan, flags))
    return any((kind == "ragged") != (c in ragged)
               for c, kind in enumerate(plan.kinds) if plan.names[c] in plan.inferred)


def assemble(plan: Plan, scalars: Scalars, groups: Groups, flags: np.ndarray,
             dtype: np.dtype[Any]) -> tuple[Scalars, dict[str, RaggedGroup]]:
    """Turn the parser's output into ``(scalars, {group: RaggedGroup})`` in file order.

    In the general plan this applies the inference rule to the whole file.
    """
    names = plan.names
    if plan.general:
        ragged = _kinds_from_flags(plan, flags)
        for c, n in enumerate(names):
            if n in plan.inferred and c not in ragged:
                values, offsets = groups.pop(f"\0{c}")
                if len(values) == len(offsets) - 1:  # one number a row (two would be MULTI: ragged)
                    scalars[n] = values[:, 0].copy()
                    continue
                column = np.full(len(offsets) - 1, np.nan, dtype=dtype)
                column[np.diff(offsets) == 1] = values[:, 0]
                scalars[n] = column
        by_column = {c: groups[f"\0{c}"][1] for c in ragged}
        regroup = _group_inferred(plan, ragged, by_column)
        for g, cols in regroup.items():
            total = len(groups[f"\0{cols[0]}"][0])
            values = np.empty((total, len(cols)), dtype=dtype)
            for j, c in enumerate(cols):
                column, offs = groups.pop(f"\0{c}")
                values[:, j] = column[:, 0]
                del column
            groups[g] = (values, offs)
        plan = Plan(names, plan.kinds, {**{g: c for g, c in plan.groups.items()
                                           if not g.startswith("\0")}, **regroup})
    order = {n: i for i, n in enumerate(names)}
    scalar_out = {n: scalars[n] for n in sorted(scalars, key=order.__getitem__)}
    group_out: dict[str, RaggedGroup] = {}
    for g, cols in sorted(plan.groups.items(), key=lambda item: min(item[1])):
        values, offsets = groups[g]
        group_out[g] = RaggedGroup([names[c] for c in cols], values, offsets)
    if any(g.startswith("\0") for g in group_out):
        raise SchemaError("internal error: unassigned inferred column")
    return scalar_out, group_out


def near_splits(groups: dict[str, RaggedGroup], inferred: set[str]) -> list[str]:
    """Messages for inferred groups split off their prefix's group by a few rows only.

    A prefix whose columns differ in prong count in at most 1% of the rows (and at
    least one) most likely has broken rows rather than two multiplicities.
    """
    messages = []
    for name, group in groups.items():
        prefix = group_prefix(group.names[0])
        main = groups.get(prefix)
        if name == prefix or main is None or not set(group.names) <= inferred:
            continue
        lens, other = np.diff(main.offsets), np.diff(group.offsets)
        bad = np.flatnonzero(lens != other)
        if 0 < len(bad) <= max(1, len(main) // 100):
            r = int(bad[0])
            shown = ", ".join(str(int(b)) for b in bad[:_SHOWN_ROWS])
            more = f" and {len(bad) - _SHOWN_ROWS} more" if len(bad) > _SHOWN_ROWS else ""
            messages.append(
                f"the columns of prefix {prefix!r} differ in prong count in only {len(bad)} of "
                f"{len(main)} rows, first at row {r} ({main.names[0]!r} has {int(lens[r])} "
                f"values, {group.names[0]!r} has {int(other[r])}), so they were split into groups {prefix!r} "
                f"and {name!r}. Rows (0-based): {shown}{more}. If they belong together, fix those "
                "rows, or declare the group in a Schema to get an error at the first bad row, "
                "with its line and column.")
    return messages
