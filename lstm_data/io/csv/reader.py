"""Read lstm_ee-style CSV files (plain, gzip, xz, bzip2) into an in-RAM dataset.

Scalar columns hold one number per cell; prong variables hold a quoted list
per cell (``"0.2,0.334,0.564"``). This module is pure Python: it opens and
decompresses the files (in a helper thread), reads the header, decides the
column plan (:mod:`lstm_data.io.csv.plan`), reports progress and feeds
blocks of text to the compiled :class:`~lstm_data.kernels.CsvBlockParser`,
which does the tokenizing and number parsing in one pass without the GIL.
With ``threads > 1`` the text is cut into pieces parsed on worker threads and
stitched in file order (:mod:`lstm_data.io.csv.parallel`, which states the rule
for multi-line quoted cells); the result and the errors are the one-thread ones.

Numbers follow the number semantics of the docs (formats page): float64 values are bitwise equal to ``float(token)``,
float32 values to ``numpy.float32(float(token))`` (lstm_ee's double rounding).
Missing scalars are NaN, empty ragged cells empty lists, a single unquoted
number in a ragged column a one-element list. Errors name the file, line,
column, variable, row and token; no error returns a partial dataset.
"""
from __future__ import annotations

import mmap
import os
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from lstm_data import kernels
from lstm_data._util.deprecation import refuses_renamed
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import BrokenRowsWarning, SchemaError, _Located, warn_user
from lstm_data.io.plumbing.byte_blocks import DEFAULT_BLOCK_SIZE, BlockReader, compression_of
from lstm_data.io.csv.parallel import (
    MIN_PIECE,
    PIECE,
    Chunks,
    LongLine,
    ParallelFeed,
    Parser,
    Region,
    chunk_pieces,
    region_pieces,
    resolve_threads,
)
from lstm_data.io.csv.head import SAMPLE_SIZE, Head, parse_sample, peek_sample, read_head, sample_plan
from lstm_data.io.csv.plan import (
    MAX_LINE_BYTES,
    Groups,
    HeaderScan,
    ParserOptions,
    Plan,
    Scalars,
    assemble,
    check_decimal_commas,
    declared_plan,
    dtype_of,
    header_names,
    long_line,
    max_line_of,
    MAX_COLUMNS,
    max_columns_of,
    near_splits,
    parser_options,
    surprised,
)
from lstm_data.io.csv.precision import Inexact, note_inexact, warn_inexact
from lstm_data.io.schema import Schema
from lstm_data.io.plumbing.special import check_readable_kind, is_stream

__all__ = ["read_csv", "DEFAULT_BLOCK_SIZE", "peek_sample", "sample_plan", "resolve_threads"]

Progress = Callable[[int, int], Any]


def _size(path: str) -> int:
    """Bytes of ``path`` on disk (0 for a stream, whose size is not known)."""
    return 0 if is_stream(path) else os.path.getsize(path)


class _Replan(Exception):
    """The sample's plan does not fit the whole file: parse again with the general plan."""


@refuses_renamed("read_csv")
def read_csv(path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
             schema: Any = None, dtype: Any = None, sep: str | None = None,
             list_sep: str | None = None,
             progress: Progress | None = None, block_bytes: int = DEFAULT_BLOCK_SIZE,
             threads: int | None = None, max_line_bytes: int | None = None,
             max_columns: int | None = None) -> InMemoryDataset:
    """Read one CSV file, or several with the same header, into columns.

    Parameters
    ----------
    path_or_paths
        A path or a list of paths; compression is detected from the magic bytes.
        Several files are read as one table, rows in file order.
    schema
        A :class:`~lstm_data.io.schema.Schema`, a TOML path or a mapping: declared
        groups (and optionally the scalars to keep, and the dtype). Undeclared
        columns are inferred (see :mod:`lstm_data.io.csv.plan`).
    dtype
        ``numpy.float32`` or ``numpy.float64``; default: the schema's, else float32.
    sep
        Field separator; by default the one of ``,`` ``;`` tab ``|`` that the
        first file's header line holds most often outside quotes. A given ``sep``
        that the header lacks, while it holds another of those, is an error
        naming the one it looks like.
    list_sep
        Separator of the numbers inside one cell (default ``,``, whatever ``sep``
        is). A cell may also hold a bracketed list as pandas writes it
        (``"[0.2, 0.334]"``, ``[]``). In a file not separated by ``,``, bare
        (unquoted, unbracketed) cells like ``0,25`` may be decimal commas: unless
        ``list_sep`` is given they are a ``FormatError``.
    progress
        Called as ``progress(bytes_done, bytes_total)`` after each block, in
        bytes of the files on disk (compressed bytes for compressed files).
    block_bytes
        Decompressed bytes handed to the parser at a time (with several threads:
        the most text in one piece; small values make many pieces, as tests do).
    threads
        Cores to use: ``None`` (default) for every core this process may use
        (``os.sched_getaffinity``), ``1`` to parse on the calling thread alone.
        A compressed file is inflated on a helper thread (the blocks of a
        multi-block ``.xz`` on ``threads`` of them) and parsed on ``threads - 1``
        (on the calling thread when that is 1): parsing hides behind inflation.
    max_line_bytes
        The longest line, or record when a quoted cell holds line breaks, in bytes
        (its newline not counted; default :data:`~lstm_data.io.csv.plan.MAX_LINE_BYTES`,
        64 MiB). A longer one is a ``ParseError`` naming the file and its first line,
        from a plain file, a compressed stream or a pipe alike: the reader never
        holds more than this and a block of one record, and reads a header in time
        linear in its length.
    max_columns
        The most columns a header may name (default
        :data:`~lstm_data.io.csv.plan.MAX_COLUMNS`, 10,000; each costs the parser
        about 13 KB): more is a ``ParseError`` naming the file, the header's line
        and the count, raised before any row is parsed.

    Returns
    -------
    InMemoryDataset

    Raises
    ------
    ParseError
        A malformed number, a wrong field count, an unterminated quote, a line longer
        than ``max_line_bytes``.
    SchemaError
        A length mismatch inside a declared group, several values in a declared
        scalar, an unknown declared column, or files with different headers.
    FormatError
        An empty file, a truncated or damaged compressed stream.
    """
    block_size = block_bytes
    if isinstance(path_or_paths, (str, os.PathLike)):
        paths = [os.fspath(path_or_paths)]
    else:
        paths = [os.fspath(p) for p in path_or_paths]
    if not paths:
        raise ValueError("no CSV path given")
    schema = Schema.coerce(schema)
    dt = dtype_of(dtype, schema)
    threads = resolve_threads(threads)
    max_line = max_line_of(max_line_bytes)
    most_columns = max_columns_of(max_columns)
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_bytes must be a positive number of bytes, got {block_size!r}")
    for path in paths:
        check_readable_kind(path)  # devices and sockets are refused
    # a compressed first file (or a stream) starts decompressing for the full parse at
    # once; the peek reads its first blocks, which the parse then gets again without a
    # second decompression
    ahead = BlockReader(paths[0], block_size, threads=threads) \
        if is_stream(paths[0]) or compression_of(paths[0]) else None
    try:
        return _read(paths, schema, dt, sep, list_sep, progress, block_size, ahead, threads, max_line,
                     most_columns)
    finally:
        if ahead is not None:
            ahead.close()


def _read(paths: list[str], schema: Schema | None, dt: np.dtype, sep: str | None, list_sep: str | None,
          progress: Progress | None, block_size: int, ahead: BlockReader | None, threads: int = 1,
          max_line: int = MAX_LINE_BYTES, max_columns: int = MAX_COLUMNS) -> InMemoryDataset:
    """:func:`read_csv` once the options are checked (``ahead``: see :class:`_Run`)."""
    head = read_head(paths[0], sep, ahead, max_line, max_columns)  # the header is located here, once
    names = head.names
    general = declared_plan(names, schema)
    options = parser_options(dt, head.sep, list_sep, max_line)
    plan, parsed = general, None
    if general.general and not any(is_stream(p) for p in paths):  # a stream is read once
        sample = parse_sample(general, head, options)
        plan, parsed = sample.plan, (sample.parser if sample.whole and len(paths) == 1 else None)
    run = _Run(paths, names, options, progress, block_size, ahead, threads, head)
    run.max_columns = max_columns
    if parsed is not None:  # the sample is the whole file: its parse is the file's
        scalars, groups, flags = run.parsed(parsed)
    else:
        try:
            scalars, groups, flags = run.parse(plan)
            if not plan.general and surprised(plan, flags):
                raise _Replan
        except _Replan:
            plan = general
            scalars, groups, flags = run.parse(plan)
    check_decimal_commas(names, flags, head.sep, list_sep, ", ".join(paths))
    scalar_cols, group_cols = assemble(plan, scalars, groups, flags, dt)
    warn_inexact(run.inexact, dt)
    for message in near_splits(group_cols, general.inferred):
        warn_user(f"{', '.join(paths)}: {message}", BrokenRowsWarning)
    return InMemoryDataset(scalar_cols, group_cols, source=paths)


class _ParsedPages:
    """Called with how far a memory-mapped file is parsed: drops the parsed pages from this
    process's RSS (they stay in the page cache) a block at a time, and reports progress."""

    def __init__(self, mm: mmap.mmap, block_size: int, done: int, total: int,
                 progress: Progress | None) -> None:
        self.mm, self.block_size, self.done, self.total, self.progress = mm, block_size, done, total, progress
        self.drop = hasattr(mm, "madvise") and hasattr(mmap, "MADV_DONTNEED")
        self.dropped = 0
        if self.drop and hasattr(mmap, "MADV_SEQUENTIAL"):
            mm.madvise(mmap.MADV_SEQUENTIAL)

    def __call__(self, end: int) -> None:
        if self.drop and end - self.dropped >= self.block_size:
            cut = end - end % mmap.PAGESIZE
            self.mm.madvise(mmap.MADV_DONTNEED, self.dropped, cut - self.dropped)
            self.dropped = cut
        if self.progress is not None:
            self.progress(self.done + end, self.total)


class _Run:
    """Feed every file's blocks through one parser with a given plan."""

    _make: Callable[[], kernels.CsvBlockParser]  # an empty parser of the plan being parsed
    max_columns: int = MAX_COLUMNS  # the most columns a header may name

    def __init__(self, paths: list[str], names: list[str], options: ParserOptions,
                 progress: Progress | None, block_size: int,
                 ahead: BlockReader | None = None, threads: int = 1, head: Head | None = None) -> None:
        self.paths, self.names, self.options, self.threads = paths, names, options, threads
        self.ahead = ahead  # an already started reader of the first file (used once)
        self.head = head  # the first file's header, located once
        self.inexact: Inexact = {}
        self.progress, self.block_size = progress, block_size
        self.max_line = options["max_line"]
        self.total = sum(_size(p) for p in paths)

    def parse(self, plan: Plan) -> tuple[Scalars, Groups, np.ndarray]:
        """Return ``(scalars, groups, column flags)``; raise :class:`_Replan` on a surprise."""
        def make() -> kernels.CsvBlockParser:
            return kernels.CsvBlockParser(plan.names, plan.kinds, plan.groups, **self.options)

        self._make = make
        parser = make()
        done = 0
        self.inexact = {}
        for path in self.paths:
            try:
                self._parse_file(parser, path, done)
                note_inexact(self.inexact, parser, path)
            except SchemaError as exc:
                if not plan.general and exc.variable in plan.inferred:
                    raise _Replan from None
                raise exc.located(file=path) from None
            except _Located as exc:
                raise exc.located(file=path) from None
            done += _size(path)
        flags = parser.column_flags()
        scalars, groups = parser.finish()
        return scalars, groups, flags

    def parsed(self, parser: kernels.CsvBlockParser) -> tuple[Scalars, Groups, np.ndarray]:
        """``(scalars, groups, column flags)`` of the one file that ``parser`` has parsed whole."""
        self.inexact = {}
        note_inexact(self.inexact, parser, self.paths[0])
        if self.progress is not None:
            self.progress(self.total, self.total)
        flags = parser.column_flags()
        scalars, groups = parser.finish()
        return scalars, groups, flags

    def _header_of(self, path: str, scan: HeaderScan, block: bytes, final: bool) -> tuple[list[str], int] | None:
        """``(names, end)`` of ``path``'s header once ``scan``, fed ``block``, holds it (the first
        file's as located before); linear in the header's length, bounded by ``max_line``."""
        if self.head is not None and path == self.paths[0]:
            scan.data += block
            return (self.head.names, self.head.end) if final or len(scan.data) >= self.head.end else None
        bounds = scan.add(block, final)
        if bounds is None:
            return None
        return header_names(bytes(scan.data[:bounds[1]]), bounds, self.options["sep"], path,
                            self.max_columns), bounds[1]

    def _parse_file(self, parser: Parser, path: str, done: int) -> None:
        if not is_stream(path) and compression_of(path) is None and _size(path) > 0 and self._parse_mapped(
                parser, path, done):
            return
        scan = HeaderScan(self.max_line)  # the text up to the header's end, in whole blocks
        head = scan.data
        carry: bytes | bytearray | memoryview = b""
        header, workers = None, 1
        reader, self.ahead = self.ahead, None
        if reader is None or reader.path != os.fspath(path):
            reader = BlockReader(path, self.block_size, threads=self.threads)
        with reader as blocks:
            chunks = iter(blocks)
            for block in chunks:
                header = self._header_of(path, scan, block, False)
                if header is not None:
                    break
            # one core inflates: the others parse (on this thread alone when that is one)
            workers = self.threads - (blocks.compression is not None)
            if header is not None and workers > 1:
                self._stream_threaded(parser, path, header, head, chunks, blocks, done, workers)
            elif header is not None:
                carry = self._start(parser, path, header, head)
                for block in chunks:
                    carry = self._feed(parser, carry, block)
                    if self.progress is not None:
                        self.progress(done + blocks.position, self.total)
        if header is None:  # the text ended inside the header
            last = self._header_of(path, scan, b"", True)
            assert last is not None  # with final=True, a header or an error
            carry = self._start(parser, path, last, head)
        if header is None or workers <= 1:
            parser.feed(carry, final=True)
        if self.progress is not None:
            self.progress(done + _size(path), self.total)

    def _parse_mapped(self, parser: Parser, path: str, done: int) -> bool:
        """Parse a plain file straight from a read-only memory map: no copy, no thread.

        Returns False (nothing parsed) when the header is longer than the sample.
        """
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            parsed = _ParsedPages(mm, self.block_size, done, self.total, self.progress)
            size = len(mm)
            header = self._header_of(path, HeaderScan(self.max_line), mm[:SAMPLE_SIZE], size <= SAMPLE_SIZE)
            if header is None:
                return False
            names, pos = header
            self._check_header(path, names)
            parser.line = 1 + mm[:pos].count(b"\n")
            step = self.block_size
            with memoryview(mm) as whole:
                if self.threads > 1:
                    self._mapped_threaded(parser, mm, whole, pos, parsed)
                    return True
                while pos < size:
                    final = pos + step >= size
                    with whole[pos:pos + step] as chunk:
                        used = parser.feed(chunk, final=final)
                    pos += used
                    if not used and not final and step > self.max_line:  # no record end in max_line bytes
                        raise long_line(self.max_line, parser.line, parser.rows)
                    step = self.block_size if used else step * 2  # a record longer than a block
                    parsed(pos)
        return True

    def _mapped_threaded(self, parser: Parser, mm: mmap.mmap, whole: memoryview, pos: int,
                         parsed: "_ParsedPages") -> None:
        """The text of a memory-mapped file from ``pos`` on, parsed on ``self.threads`` workers."""
        size = len(mm)
        # pieces of at most PIECE (and block_size), small enough that every thread gets several
        step = min(self.block_size, max(MIN_PIECE, min(PIECE, (size - pos) // (4 * self.threads))))
        sent = pos  # where the text not yet handed to the workers starts
        with ParallelFeed(parser, self._make, self.threads, Region(whole), parsed, self.max_line) as feed:
            try:
                for piece, last in region_pieces(size, pos, step, mm.find, self.threads, self.max_line):
                    feed.feed(piece, last, tag=piece[1])
                    sent = piece[1]
            except LongLine as long:  # the pieces before are settled first: their errors come first
                feed.finish()
                line = parser.line if feed.carry is not None else \
                    parser.line + bytes(whole[sent:long.at]).count(b"\n")
                raise long_line(self.max_line, line, parser.rows) from None
            feed.finish()

    def _stream_threaded(self, parser: Parser, path: str, header: tuple[list[str], int],
                         data: bytes | bytearray, chunks: Iterable[bytes], blocks: BlockReader, done: int,
                         workers: int) -> None:
        """The decompressed text after ``header`` (``data``, then ``chunks``) on ``workers`` threads."""
        self._check_header(path, header[0])
        parser.line = 1 + data[:header[1]].count(b"\n")

        def text() -> Iterator[bytes]:
            yield bytes(data[header[1]:])
            yield from chunks

        def settled(position: int) -> None:
            if self.progress is not None:
                self.progress(done + position, self.total)

        with ParallelFeed(parser, self._make, workers, Chunks(), settled, self.max_line) as feed:
            try:
                for piece, last in chunk_pieces(text(), self.block_size, self.max_line):
                    feed.feed(piece, last, tag=blocks.position)
            except LongLine:  # the pieces before are settled first: their errors come first
                feed.finish()
                raise long_line(self.max_line, parser.line, parser.rows) from None
            feed.finish()

    def _check_header(self, path: str, names: list[str]) -> None:
        if names != self.names:
            raise SchemaError(f"header differs from the first file's ({self.paths[0]}): "
                              f"{len(names)} columns vs {len(self.names)}", file=path, line=1)

    def _start(self, parser: Parser, path: str, header: tuple[list[str], int],
               data: bytes | bytearray | memoryview) -> bytes | bytearray | memoryview:
        names, end = header
        self._check_header(path, names)
        parser.line = 1 + bytes(data[:end]).count(b"\n")
        rest = memoryview(data)[end:]
        used = parser.feed(rest)
        return self._bounded(parser, rest[used:])

    def _feed(self, parser: Parser, carry: bytes | bytearray | memoryview,
              block: bytes) -> bytes | bytearray | memoryview:
        """Feed ``carry + block`` without copying the block when the carry ends at its first line;
        the unfinished record that is left (at most ``max_line`` bytes: else a ``ParseError``)."""
        if len(carry):
            cut = block.find(b"\n") + 1
            if not cut:  # no line ends in the block: the record goes on, nothing to parse yet
                grown = carry if isinstance(carry, bytearray) else bytearray(carry)
                grown += block
                return self._bounded(parser, grown)
            head = bytes(carry) + block[:cut]
            used = parser.feed(head)
            if used == len(head):
                rest = memoryview(block)[cut:]
                return self._bounded(parser, rest[parser.feed(rest):])
            data: bytes | memoryview = head[used:] + block[cut:]
        else:
            data = memoryview(block)
        return self._bounded(parser, data[parser.feed(data):])

    def _bounded(self, parser: Parser, carry: bytes | bytearray | memoryview) -> bytes | bytearray | memoryview:
        """``carry``, the start of an unfinished record, unless it is longer than ``max_line``."""
        if len(carry) > self.max_line:
            raise long_line(self.max_line, parser.line, parser.rows)
        return carry

