"""The start of a CSV input, read once: header, separator, and the sample that decides the plan.

:func:`read_head` locates the header line once and takes the text after it (up
to :data:`SAMPLE_SIZE` bytes) as the sample; :func:`parse_sample` parses that
sample once with the general plan and says which plan the whole input gets
(:func:`~lstm_data.io.csv.plan.plan_from_sample`). When the sample is all of
the file's text, its parse is the file's parse: the reader assembles it and
does not parse the file again.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

import numpy as np

from lstm_data import kernels
from lstm_data.errors import ParseError, SchemaError
from lstm_data.io.plumbing.byte_blocks import BlockReader, compression_of
from lstm_data.io.csv.plan import (
    MAX_COLUMNS,
    MAX_LINE_BYTES,
    HeaderScan,
    ParserOptions,
    Plan,
    declared_plan,
    header_names,
    parser_options,
    plan_from_sample,
    sep_of,
)
from lstm_data.io.schema import Schema

__all__ = ["SAMPLE_SIZE", "PEEK_EXTRA", "Head", "Sample", "read_head", "parse_sample", "sample_plan",
           "peek_sample", "FirstPlan", "first_plan"]

#: decompressed bytes at the start of the first file used to infer the plan
SAMPLE_SIZE = 1 << 20
#: read beyond SAMPLE_SIZE at a time from a plain file, for its header
PEEK_EXTRA = 1 << 16

_log = logging.getLogger("lstm_data")


@dataclass
class Head:
    """The header of a CSV text and the sample after it.

    Attributes
    ----------
    names : list of str
        The column names.
    sep : str
        The field separator (given, or the one the header shows).
    end : int
        Offset of the first record in the (decompressed) text: past the header's newline.
    line : int
        Line number of the first record.
    sample : bytes
        The text from ``end`` on, at most :data:`SAMPLE_SIZE` bytes.
    final : bool
        Whether ``sample`` is all of the text.
    """

    names: list[str]
    sep: str
    end: int
    line: int
    sample: bytes
    final: bool


def read_head(path: str, sep: str | None, ahead: BlockReader | None = None,
              max_line: int = MAX_LINE_BYTES, max_columns: int = MAX_COLUMNS) -> Head:
    """The :class:`Head` of ``path``; the header line is located once, in time linear in its length.

    With ``ahead`` (a started reader of ``path``, which is compressed) the text
    comes from its first blocks, which it keeps for the parse; a plain file is
    read directly.

    Raises
    ------
    FormatError
        Empty file, a header that is not UTF-8 CSV, repeated names, a given
        ``sep`` the header lacks while it holds another separator.
    ParseError
        A header longer than ``max_line`` bytes (named as line 1 of ``path``), raised
        once that many bytes came without its end; one of more than ``max_columns`` names.
    """
    scan, final = HeaderScan(max_line), False
    bounds: tuple[int, int] | None = None
    with contextlib.ExitStack() as stack:
        fh = stack.enter_context(open(path, "rb")) if ahead is None else None
        while bounds is None or not final and len(scan.data) - bounds[1] < SAMPLE_SIZE:
            block = fh.read(SAMPLE_SIZE + PEEK_EXTRA) if fh is not None else \
                ahead.peek() if ahead is not None else b""
            final = not block
            try:
                found = scan.add(block or b"", final)
            except ParseError as exc:
                raise exc.located(file=path) from None
            bounds = bounds or found
    data = bytes(scan.data)
    chosen = sep_of(data[bounds[0]:bounds[1]], sep, path)
    names = header_names(data, bounds, chosen, path, max_columns)
    end = bounds[1]
    line = 1 + data.count(b"\n", 0, end)
    if len(data) - end > SAMPLE_SIZE:  # a whole xz block may have come at once
        return Head(names, chosen, end, line, data[end:end + SAMPLE_SIZE], False)
    return Head(names, chosen, end, line, data[end:], final)


@dataclass
class Sample:
    """The sample parsed once with the general plan.

    Attributes
    ----------
    plan : Plan
        The plan the whole input gets: the sample's fast plan, or ``general`` when the
        sample does not parse (the full parse then reports the error where it is).
    parser : CsvBlockParser or None
        The general plan's parser holding the sample's rows, when the sample parsed.
    whole : bool
        The sample is all of the file's text and parsed: ``parser`` holds the file's rows.
    """

    plan: Plan
    parser: kernels.CsvBlockParser | None
    whole: bool


def parse_sample(general: Plan, head: Head, options: ParserOptions) -> Sample:
    """Parse ``head.sample`` once with ``general`` and decide the plan (see :class:`Sample`).

    Parsed on one thread: a thread pool costs more than the sample's parse (about 5 ms a MiB).
    The sample's arrays are built only when some column is ragged: its offsets group it.
    """
    parser = kernels.CsvBlockParser(general.names, general.kinds, general.groups, **options)
    parser.line = head.line
    try:
        used = parser.feed(head.sample, final=head.final)
    except (SchemaError, ValueError):
        return Sample(general, None, False)  # the full parse reports errors in the right file and line
    flags: np.ndarray = parser.column_flags()
    if head.final and used == len(head.sample):
        _log.debug("CSV sample is the whole file (%d bytes): parsed once", len(head.sample))
        return Sample(general, parser, True)
    return Sample(plan_from_sample(general, flags, lambda: parser.finish()[1]), None, False)


def sample_plan(general: Plan, sample: bytes, final: bool, options: ParserOptions) -> Plan:
    """The fast plan that parsing ``sample`` (text after the header) with ``general`` shows.

    ``general`` itself when the sample does not parse: the full parse then reports
    the error in the right file and line.
    """
    parser = kernels.CsvBlockParser(general.names, general.kinds, general.groups, **options)
    try:
        parser.feed(sample, final=final)
    except (SchemaError, ValueError):
        return general
    return plan_from_sample(general, parser.column_flags(), lambda: parser.finish()[1])


def peek_sample(path: str, sep: str | None, ahead: BlockReader | None = None,
                max_line: int = MAX_LINE_BYTES) -> tuple[list[str], bytes, bool, str]:
    """``(names, sample, final, sep)`` of :func:`read_head`."""
    head = read_head(path, sep, ahead, max_line)
    return head.names, head.sample, head.final, head.sep


@dataclass(frozen=True)
class FirstPlan:
    """The plan that the first MiB of a CSV file decides, and what it is decided from.

    Attributes
    ----------
    names : list of str
        The header's column names.
    sample : bytes
        The text after the header, at most :data:`SAMPLE_SIZE` bytes.
    options : ParserOptions
        The parser keywords, with the separator the header shows.
    general : Plan
        The declared plan (:func:`~lstm_data.io.csv.plan.declared_plan`).
    plan : Plan
        The plan the sample shows (:func:`sample_plan`), ``general`` when the
        declarations decide every column or the sample cannot.
    """

    names: list[str]
    sample: bytes
    options: ParserOptions
    general: Plan
    plan: Plan


def first_plan(path: str, schema: Schema | None, dtype: np.dtype, sep: str | None, list_sep: str | None,
               max_line: int = MAX_LINE_BYTES, block_size: int = SAMPLE_SIZE, threads: int = 1) -> FirstPlan:
    """The plan of ``path`` from its first MiB, decided as the reader decides it.

    A compressed file's first MiB is decompressed here (in blocks of ``block_size``
    on ``threads``) and again by the parse: a stream cannot keep it for later.
    """
    ahead = BlockReader(path, block_size, threads=threads) if compression_of(path) else None
    try:
        names, sample, final, sep = peek_sample(path, sep, ahead, max_line)
    finally:
        if ahead is not None:
            ahead.close()
    options = parser_options(dtype, sep, list_sep, max_line)
    general = declared_plan(names, schema)
    plan = sample_plan(general, sample, final, options) if general.general else general
    return FirstPlan(names, sample, options, general, plan)
