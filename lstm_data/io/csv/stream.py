"""CSV text as blocks of rows, parsed as it is read, in bounded memory: :func:`csv_blocks`.

The file is parsed exactly as :func:`~lstm_data.io.csv.reader.read_csv` parses it
(same plan from the first MiB, same parser, threads and decompression), on a
producer thread; every time the parser holds about ``block_bytes`` of rows they
are taken out (:meth:`CsvBlockParser.finish`), assembled into an
:class:`~lstm_data.data.dataset.InMemoryDataset` and handed over through a queue
of two blocks. Memory is one block being parsed plus the blocks in the queue,
whatever the file's size. Errors are the reader's, with the row counted from the
start of the file.

The plan decided from the first MiB holds for the whole file in the common case.
When a later row contradicts it (a column first seen as one number per cell
turns out to hold lists), the reader parses again with the general plan; a
stream cannot take back the blocks it handed out, so it raises
:class:`~lstm_data.io.ours.row_blocks.RestartStream`, and the writer starts over with
a stream that reads this file whole (the general plan decides every column from
the whole file). Files whose first MiB already cannot decide are read whole too.
Both are logged.
"""
from __future__ import annotations

import logging
import os
import queue
import threading
from typing import Any, Callable, Iterator

import numpy as np

from lstm_data import kernels
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import _Located
from lstm_data.io.plumbing.byte_blocks import DEFAULT_BLOCK_SIZE
from lstm_data.io.csv import head, reader
from lstm_data.io.csv.plan import (
    Groups,
    ParserOptions,
    Plan,
    Scalars,
    assemble,
    check_decimal_commas,
    dtype_of,
    max_line_of,
    surprised,
)
from lstm_data.io.ours.row_blocks import (
    BLOCK_BYTES,
    RestartStream,
    RowBlocks,
    dataset_blocks,
)
from lstm_data.io.csv.precision import Inexact, note_inexact, warn_inexact
from lstm_data.io.schema import Schema
from lstm_data.io.plumbing.special import is_stream

__all__ = ["csv_blocks"]

_log = logging.getLogger("lstm_data")
_DONE = object()


class _Flushing:
    """A parser that hands its rows on whenever it holds ``rows`` of them (see the module notes)."""

    def __init__(self, parser: kernels.CsvBlockParser, rows: int, plan: Plan, dtype: np.dtype[Any],
                 put: Callable[[tuple[InMemoryDataset, int]], object], position: list[int]) -> None:
        self._parser, self._rows, self._plan, self._dtype = parser, rows, plan, dtype
        self._put, self._position = put, position
        self.emitted = 0
        # called with the column flags before rows are handed on
        self.check: Callable[[np.ndarray], object] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)

    @property
    def line(self) -> int:
        return int(self._parser.line)

    @line.setter
    def line(self, value: int) -> None:
        self._parser.line = value

    @property
    def rows(self) -> int:
        """Rows held (not yet handed on)."""
        return int(self._parser.rows)

    def feed(self, data: bytes | bytearray | memoryview, final: bool = False) -> int:
        used = self._parser.feed(data, final=final)
        self._maybe_flush()
        return int(used)

    def column_flags(self) -> np.ndarray:
        return self._parser.column_flags()

    def inexact_ints(self) -> dict[str, tuple[int, str, int]]:
        return self._parser.inexact_ints()

    def extend(self, other: kernels.CsvBlockParser | _Flushing) -> None:
        self._parser.extend(other._parser if isinstance(other, _Flushing) else other)
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if self._parser.rows >= self._rows:
            self.flush()

    def flush(self) -> None:
        """Hand the rows held so far on as one block (nothing when there are none)."""
        if not self._plan.general and surprised(self._plan, self._parser.column_flags()):
            raise RestartStream("the CSV plan from the first MiB does not fit a later row")
        if self.check is not None:
            self.check(self._parser.column_flags())
        n = self._parser.rows
        if not n:
            return
        scalars, groups = self._parser.finish()
        flags = self._parser.column_flags()
        scalar_cols, group_cols = assemble(self._plan, scalars, groups, flags, self._dtype)
        self._put((InMemoryDataset(scalar_cols, group_cols), self._position[0]))
        self.emitted += n

    def finish(self) -> tuple[Scalars, Groups]:
        self.flush()
        return {}, {}


class _StreamRun(reader._Run):
    """The reader's run, with a parser that streams its rows out."""

    def __init__(self, *args: Any, rows: int, put: Any, check: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rows_per_block, self._put, self._check = rows, put, check
        self.position = [0]
        user = self.progress

        def progress(done: int, total: int) -> None:
            self.position[0] = done
            if user is not None:
                user(done, total)

        self.progress = progress

    def parse(self, plan: Plan) -> Any:
        def make_real() -> Any:  # the worker threads' parsers (stitched into the flushing one)
            return kernels.CsvBlockParser(plan.names, plan.kinds, plan.groups, **self.options)

        parser = _Flushing(make_real(), self._rows_per_block, plan, self.options["dtype"], self._put,
                           self.position)
        parser.check = self._check
        self._make = make_real
        done = 0
        inexact: Inexact = {}
        for path in self.paths:
            try:
                self._parse_file(parser, path, done)
                parser.flush()
            except _Located as exc:
                row = None if exc.row is None else exc.row + parser.emitted
                raise exc.located(file=path, row=row) from None
            note_inexact(inexact, parser, path)
            done += os.path.getsize(path)
        warn_inexact(inexact, self.options["dtype"])
        return None


def _columns_of(plan: Plan, options: ParserOptions) -> InMemoryDataset:
    """An empty dataset with the columns the plan gives (their names, groups and dtypes)."""
    parser = kernels.CsvBlockParser(plan.names, plan.kinds, plan.groups, **options)
    flags = parser.column_flags()
    scalars, groups = parser.finish()
    scalar_cols, group_cols = assemble(plan, scalars, groups, flags, options["dtype"])
    return InMemoryDataset(scalar_cols, group_cols)


def csv_blocks(path: str, *, schema: Any = None, block_bytes: int = BLOCK_BYTES, dtype: Any = None,
               sep: str | None = None, list_sep: str | None = None, threads: int | None = None,
               block_size: int = DEFAULT_BLOCK_SIZE, max_line_bytes: int | None = None) -> RowBlocks:
    """The rows of the CSV file ``path`` in blocks of about ``block_bytes`` (see the module notes).

    Options are those of :func:`~lstm_data.io.csv.reader.read_csv`, but for its
    parse block, ``block_size`` here (``block_bytes`` is the block of rows). Progress
    units are the file's bytes on disk.
    """
    schema = Schema.coerce(schema)
    if is_stream(path):  # a pipe is read once: whole, its columns decided from all of it
        _log.info("%s: a stream: read into RAM", path)
        table = dataset_blocks(reader.read_csv(path, schema=schema, dtype=dtype, sep=sep,
                                               list_sep=list_sep, threads=threads, block_bytes=block_size,
                                               max_line_bytes=max_line_bytes),
                               block_bytes=block_bytes)
        return RowBlocks(table.scalar_dtypes, table.groups, table.group_dtypes, table.blocks, 0,
                         (path,), table.n_rows)
    block_size = min(block_size, max(1 << 16, block_bytes))  # rows leave at the end of a fed block
    dt = dtype_of(dtype, schema)
    n_threads = reader.resolve_threads(threads)
    max_line = max_line_of(max_line_bytes)
    first = head.first_plan(path, schema, dt, sep, list_sep, max_line, block_size, n_threads)
    names, sample, options, plan = first.names, first.sample, first.options, first.plan
    sep = options["sep"]
    size = os.path.getsize(path)
    read_options = dict(schema=schema, dtype=dt, sep=sep, list_sep=list_sep, threads=threads,
                        block_bytes=block_size, max_line_bytes=max_line)
    whole = plan.general and first.general.general  # the first MiB cannot decide the columns

    def read_whole() -> RowBlocks:
        _log.info("%s: columns decided from the whole file (its first MiB cannot): read into RAM", path)
        table = dataset_blocks(reader.read_csv(path, **read_options), block_bytes=block_bytes)
        return RowBlocks(table.scalar_dtypes, table.groups, table.group_dtypes,
                         lambda: ((b, int(size * at / max(table.total, 1))) for b, at in table.blocks()),
                         size, (path,), table.n_rows)

    if whole:
        return read_whole()
    empty = _columns_of(plan, options)
    row_bytes = max(1.0, len(sample) / max(1, sample.count(b"\n")) * 0.6)
    rows = max(1, int(block_bytes / row_bytes))
    state = {"restarted": False}

    def blocks() -> Iterator[tuple[InMemoryDataset, int]]:
        if state["restarted"]:
            yield from read_whole().blocks()
            return
        out: queue.Queue[Any] = queue.Queue(maxsize=1)
        stop = threading.Event()

        def produce() -> None:
            try:
                run = _StreamRun([path], names, options, None, block_size, None, n_threads,
                                 rows=rows, put=lambda item: _put(out, stop, item),
                                 check=lambda flags: check_decimal_commas(names, flags, sep, list_sep, path))
                run.parse(plan)
                _put(out, stop, (_DONE, None))
            except _Cancelled:
                return
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                if isinstance(exc, RestartStream):
                    state["restarted"] = True
                    _log.info("%s: a row past the first MiB changes the column plan: starting over, "
                              "reading the file whole", path)
                _put(out, stop, (exc, None))

        worker = threading.Thread(target=produce, daemon=True, name="lstm_data-csv-stream")
        worker.start()
        try:
            while True:
                item, at = out.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item, at
        finally:
            stop.set()  # a producer waiting on the full queue gives up; one parsing ends at its next block
            worker.join()

    return RowBlocks({s: empty.scalar(s).dtype for s in empty.scalar_names},
                     {g: list(v) for g, v in empty.groups.items()},
                     {g: empty.ragged(g)[0].dtype for g in empty.groups}, blocks, size, (path,), None)


class _Cancelled(Exception):
    """The consumer stopped reading: the producer ends."""


def _put(out: "queue.Queue[Any]", stop: threading.Event, item: Any) -> None:
    """Put ``item``, waiting while the queue is full; :class:`_Cancelled` once the consumer has gone."""
    while not stop.is_set():
        try:
            out.put(item, timeout=0.1)
            return
        except queue.Full:
            continue
    raise _Cancelled
