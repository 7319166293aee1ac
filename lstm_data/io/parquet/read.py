"""Parquet files into RAM: reading overlapped with interleaving, one pass over the values.

A background thread streams the file in record batches of 2 to 16 MiB uncompressed
(1/16 of the data: see :func:`_batch_rows`) with pyarrow's ``iter_batches``, which
decodes the columns on its own threads, page by page, without the GIL, and never
materialises a whole row group (pyarrow writes row groups of a million rows by
default), so its buffers are reused batch after batch. Meanwhile the caller's thread
takes the previous batch apart: scalars are kept, the list columns of a group are
checked and written side by side into the group's ``(total, V)`` block by the compiled
interleave, straight from Arrow's buffers, at the block's running end. Each batch
holds all columns of its rows, so the block is written once, front to back.

The block is allocated once, with the upper bound that the file's metadata gives
(``num_values`` of a list column counts its values plus one per empty or null list);
pages never written are never touched, and the values are the block's leading rows.
Plain list columns are grouped by their lengths when the first batch arrives (see
:mod:`lstm_data.io.parquet.grouping`), before any block is allocated.
"""
from __future__ import annotations

import errno
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager

import numpy as np

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import FormatError
from lstm_data.io.columns.build import interleave_pieces
from lstm_data.io.parquet.columns import (
    check_list_columns,
    import_pyarrow,
    join_scalar_pieces,
    leaf_index,
    list_column,
    scalar_column,
)
from lstm_data.io.parquet.grouping import settle_plan
from lstm_data.io.parquet.plan import ColumnPlan
from lstm_data.io.plumbing.open_files import PooledFile
from lstm_data.io.plumbing.remote import is_url, open_remote_file, remote_read_error
from lstm_data.io.plumbing.remote_errors import TRANSPORT_ERRORS, RemoteSettings

__all__ = ["parquet_files", "ParquetSource", "open_sources", "read_in_ram", "read_columns",
           "decoded_bytes", "BATCH_BYTES", "batch_rows", "settle_on_first_rows"]

#: uncompressed bytes of one streamed record batch (at most; see :func:`_batch_rows`)
BATCH_BYTES = 16 << 20
MIN_BATCH_BYTES = 2 << 20
#: batches decoded ahead of the one being interleaved
_READ_AHEAD = 2
_PARQUET_SUFFIXES = (".parquet", ".pq")


def parquet_files(path: str | os.PathLike[str]) -> list[str]:
    """``[path]`` for a file; for a directory, its ``.parquet``/``.pq`` files, sorted by name.

    Names starting with ``.`` or ``_`` (temporaries, Spark's ``_SUCCESS``/``_metadata``)
    are left out; subdirectories are not searched.

    Raises
    ------
    FormatError
        A directory without Parquet files.
    """
    if is_url(path):
        return [str(path)]
    p = Path(path)
    if not p.is_dir():
        return [str(p)]
    files = sorted(str(f) for f in p.iterdir() if f.is_file() and f.suffix.lower() in _PARQUET_SUFFIXES
                   and not f.name.startswith((".", "_")))
    if not files:
        raise FormatError("directory holds no .parquet or .pq file", file=str(p))
    return files


@dataclass
class ParquetSource:
    """One Parquet file: its metadata and Arrow schema, and its reader (``pyarrow.parquet.ParquetFile``)
    opened for each read, and closed when idle and other files need the room (see
    :mod:`lstm_data.io.plumbing.open_files`)."""

    path: str
    reader: PooledFile[Any]
    schema: Any
    metadata: Any

    @property
    def num_row_groups(self) -> int:
        return int(self.metadata.num_row_groups)

    def row_group_rows(self) -> np.ndarray:
        md = self.metadata
        return np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)], dtype=np.int64)

    def use(self) -> ContextManager[Any]:
        """The open ``ParquetFile``, for the duration of a read."""
        return self.reader.use()

    def close(self) -> None:
        """Close the file (a later read opens it again)."""
        self.reader.close()


def arrow_error(exc: Exception, path: str, where: str = "") -> FormatError:
    """A ``FormatError`` naming the file (and ``where``) for an error raised inside pyarrow."""
    at = f" ({where})" if where else ""
    return FormatError(f"cannot read this Parquet file{at}, damaged or incomplete? "
                       f"({type(exc).__name__}: {exc})", file=path)


def open_sources(files: list[str], remote: RemoteSettings | None = None) -> list[ParquetSource]:
    """Open every file; they must hold the same columns with the same types (``remote``: the
    timeouts and retries of files at URLs).

    Raises
    ------
    FormatError
        A file is not Parquet or is damaged (names the file), or its columns differ
        from the first file's (names the file and the column).
    """
    sources: list[ParquetSource] = []
    for path in files:
        reader: PooledFile[Any] = PooledFile(_opener(path, remote), _close_parquet, path)
        try:
            with reader.use() as pf:
                schema, metadata = pf.schema_arrow, pf.metadata
        except Exception as exc:  # noqa: BLE001 - a URL's cause is told; else pyarrow's errors only
            reader.close()
            for s in sources:
                s.close()
            cause = remote_read_error(exc, path) if is_url(path) else None
            if cause is not None:  # nothing there, no server, an HTTP error, no byte ranges: said as such
                raise cause from None
            if isinstance(exc, OSError) and exc.errno == errno.EMFILE:  # not damage: said as such
                raise
            if isinstance(exc, (import_pyarrow().ArrowException, OSError)):
                raise arrow_error(exc, path) from exc
            raise
        sources.append(ParquetSource(path, reader, schema, metadata))
    first = sources[0]
    for s in sources[1:]:
        if not s.schema.equals(first.schema, check_metadata=False):
            names = dict(zip(first.schema.names, first.schema.types))
            odd = next((f.name for f in s.schema if names.get(f.name) != f.type),
                       next((n for n in first.schema.names if n not in s.schema.names), None))
            raise FormatError(f"columns differ from those of {first.path} (column {odd!r}); "
                              "the files of one dataset must hold the same columns and types",
                              file=s.path, variable=odd)
    return sources


def _opener(path: str, remote: RemoteSettings | None) -> Callable[[], Any]:
    """Opens ``path`` as a ``ParquetFile``: the first time reading its footer, after that with
    the metadata read then (a URL: through a file without read-ahead, so only the needed
    column chunks are fetched, coalesced by pyarrow's pre-buffering). A local file is read
    without pre-buffering: as fast here, and the reader would otherwise keep the last row
    group's column chunks (each open file of a dataset read on demand holding one)."""
    known: list[Any] = []

    def open_file() -> Any:
        remote_file = is_url(path)
        source = open_remote_file(path, remote) if remote_file else path
        pf = import_pyarrow().parquet.ParquetFile(source, page_checksum_verification=True,
                                                  metadata=known[0] if known else None,
                                                  pre_buffer=remote_file)
        if not known:
            known.append(pf.metadata)
        return pf
    return open_file


def _close_parquet(pf: Any) -> None:
    pf.close(force=True)


def decoded_bytes(sources: list[ParquetSource], plan: ColumnPlan) -> int:
    """Uncompressed bytes of the plan's columns in every file (from the metadata)."""
    total = 0
    for s in sources:
        leaf = leaf_index(s.schema)
        md = s.metadata
        for rg in range(md.num_row_groups):
            meta = md.row_group(rg)
            total += sum(meta.column(leaf[c]).total_uncompressed_size for c in plan.columns)
    return total


def read_columns(source: ParquetSource, rg: int, columns: list[str], *, use_threads: bool = True) -> Any:
    """Columns of row group ``rg`` as a ``pyarrow.Table``; damage is a ``FormatError``."""
    pa = import_pyarrow()
    try:
        with source.use() as pf:
            table = pf.read_row_group(rg, columns=columns, use_threads=use_threads)
    except TRANSPORT_ERRORS:  # a server's failure, said as such: not damage
        raise
    except (pa.ArrowException, OSError) as exc:
        raise arrow_error(exc, source.path, f"row group {rg}") from exc
    return table if table.column_names == columns else table.select(columns)


def batch_rows(sources: list[ParquetSource], plan: ColumnPlan, batch_bytes: int | None) -> int:
    """Rows per streamed batch: about ``batch_bytes`` of uncompressed columns (default: 1/16 of
    the data, between :data:`MIN_BATCH_BYTES` and :data:`BATCH_BYTES`, so that a small file
    still pipelines)."""
    rows = sum(int(s.row_group_rows().sum()) for s in sources)
    total = decoded_bytes(sources, plan)
    if batch_bytes is None:
        batch_bytes = min(BATCH_BYTES, max(MIN_BATCH_BYTES, total // 16))
    per_row = total / max(1, rows)
    return int(min(1 << 20, max(256, batch_bytes // max(1.0, per_row))))


def settle_on_first_rows(sources: list[ParquetSource], plan: ColumnPlan, *,
                         use_threads: bool = True) -> ColumnPlan:
    """``plan`` with its list columns grouped by their lengths in the first batch that
    :func:`read_in_ram` reads (and the files' metadata), reading only those columns."""
    if plan.settled:
        return plan
    pa = import_pyarrow()
    rows = batch_rows(sources, plan, None)
    free = [v for g, names in plan.groups.items() if plan.inferred(g) for v in names]
    columns = list(dict.fromkeys(plan.source(v)[0] for v in free))
    for s in sources:
        try:
            with s.use() as pf:
                batch = next(iter(pf.iter_batches(batch_size=rows, columns=columns, use_threads=use_threads)),
                             None)
        except TRANSPORT_ERRORS:  # a server's failure, said as such: not damage
            raise
        except (pa.ArrowException, OSError) as exc:
            raise arrow_error(exc, s.path, "the rows from row 0 on") from exc
        if batch is not None and batch.num_rows:
            return settle_plan(plan, batch, sources=sources, where=f"rows 0-{batch.num_rows - 1} of {s.path}")
    return settle_plan(plan, None, sources=sources)


def _capacity(sources: list[ParquetSource], names: list[str]) -> int:
    """Upper bound of a group's values: its largest ``num_values`` per row group, summed."""
    cap = 0
    for s in sources:
        leaf, md = leaf_index(s.schema), s.metadata
        for rg in range(md.num_row_groups):
            cap += max(md.row_group(rg).column(leaf[c]).num_values for c in names)
    return cap


def _empty(shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
    """A writeable array in pyarrow's memory pool, where the batches being read are freed.

    The pool keeps memory it was given back, so the block reuses the pages of earlier
    reads instead of faulting in fresh ones (page faults cost as much as the interleave
    itself on virtual machines); pages past what is written are not touched at all.
    """
    pa = import_pyarrow()
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.frombuffer(pa.allocate_buffer(max(nbytes, 1)), dtype=dtype, count=int(np.prod(shape))
                         ).reshape(shape)


class _Assembler:
    """Scalars and group blocks of the whole dataset, filled batch after batch.

    The blocks are allocated once the groups are known: at once for a settled plan,
    else when the first rows arrive (:func:`~lstm_data.io.parquet.grouping.settle_plan`).
    """

    def __init__(self, sources: list[ParquetSource], plan: ColumnPlan) -> None:
        self.sources = sources
        self.plan = plan
        self.scalars: dict[str, list[np.ndarray]] = {s: [] for s in plan.scalars}
        if plan.settled:
            self._allocate()

    def _allocate(self) -> None:
        plan, sources = self.plan, self.sources
        self.lengths: dict[str, list[np.ndarray]] = {g: [] for g in plan.groups}
        self.cursor = {g: 0 for g in plan.groups}
        self.blocks = {g: _empty((_capacity(sources, [plan.source(v)[0] for v in names]), len(names)),
                                 plan.group_dtypes[g])
                       for g, names in plan.groups.items()}

    def add(self, batch: Any, path: str, row0: int) -> None:
        """Append a record batch holding every planned column; ``row0`` is its first row in ``path``."""
        if not self.plan.settled:
            if not batch.num_rows:
                return
            where = f"rows {row0}-{row0 + batch.num_rows - 1} of {path}"
            self.plan = settle_plan(self.plan, batch, sources=self.sources, where=where)
            self._allocate()
        plan = self.plan
        for s in plan.scalars:
            self.scalars[s].append(scalar_column(plan.column(batch, s), s, plan.dtype, file=path,
                                                 first_row=row0, exact=plan.exact))
        for g, names in plan.groups.items():
            dt = plan.group_dtypes[g]
            cols = {}
            for v in names:
                arr, steps = plan.list_source(batch, v)
                cols[v] = list_column(arr, v, dt, file=path, first_row=row0, steps=steps, exact=plan.exact)
            ref = check_list_columns(g, cols, file=path, first_row=row0, hint=plan.hint(g))
            start, total = self.cursor[g], ref.total
            self._reserve(g, start + total)
            interleave_pieces([c.pieces for c in cols.values()], self.blocks[g][start:start + total])
            self.cursor[g] = start + total
            self.lengths[g].append(ref.lengths)

    def _reserve(self, g: str, need: int) -> None:
        """Grow a block whose metadata bound was wrong (not seen with pyarrow-written files)."""
        block = self.blocks[g]
        if need > len(block):
            bigger = _empty((max(need, len(block) + len(block) // 4), block.shape[1]), block.dtype)
            bigger[:len(block)] = block
            self.blocks[g] = bigger

    def finish(self, source: tuple[str, ...]) -> InMemoryDataset:
        if not self.plan.settled:  # no rows at all: the metadata alone
            self.plan = settle_plan(self.plan, None, sources=self.sources)
            self._allocate()
        scalars = {s: join_scalar_pieces(pieces, s, exact=self.plan.exact) for s, pieces in self.scalars.items()}
        groups = {}
        for g, names in self.plan.groups.items():
            parts = self.lengths[g]
            lengths = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            groups[g] = RaggedGroup(names, self.blocks[g][:int(offsets[-1])], offsets)
        return InMemoryDataset(scalars, groups, source=source)


_DONE = object()


def _stream(sources: list[ParquetSource], columns: list[str], batch_rows: int, use_threads: bool,
            out: queue.Queue[Any], stop: threading.Event) -> None:
    """Producer: ``(source index, batch)`` of every file in order, then ``_DONE`` (or the error).

    Every hand-over gives up once ``stop`` is set (the consumer failed and stopped taking).
    """
    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    pa = import_pyarrow()
    try:
        for si, s in enumerate(sources):
            row = 0
            try:
                with s.use() as pf:
                    for batch in pf.iter_batches(batch_size=batch_rows, columns=columns,
                                                 use_threads=use_threads):
                        row += batch.num_rows
                        if not put((si, batch)):
                            return
            except TRANSPORT_ERRORS:  # a server's failure, said as such: not damage
                raise
            except (pa.ArrowException, OSError) as exc:
                raise arrow_error(exc, s.path, f"the rows from row {row} on") from exc
        put(_DONE)
    except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
        put(exc)


def read_in_ram(sources: list[ParquetSource], plan: ColumnPlan, *, use_threads: bool = True,
                batch_bytes: int | None = None) -> InMemoryDataset:
    """Every row of ``sources`` (one dataset, in file order) into RAM, reading ahead on a thread.

    Raises
    ------
    FormatError
        A damaged file (names the file), a list value that does not convert exactly
        (names the column and row).
    SchemaError
        Columns of one group differ in length (names the file, the column and the row).
    """
    assembler = _Assembler(sources, plan)
    rows = batch_rows(sources, plan, batch_bytes)
    batches: queue.Queue[Any] = queue.Queue(maxsize=_READ_AHEAD)
    stop = threading.Event()
    producer = threading.Thread(target=_stream, args=(sources, plan.columns, rows, use_threads, batches, stop),
                                name="lstm_data-parquet", daemon=True)
    producer.start()
    row_in_file = [0] * len(sources)
    try:
        while True:
            item = batches.get()
            if item is _DONE:
                break
            if isinstance(item, BaseException):
                raise item
            si, batch = item
            assembler.add(batch, sources[si].path, row_in_file[si])
            row_in_file[si] += batch.num_rows
            del batch, item
    finally:
        stop.set()
        producer.join()
    return assembler.finish(tuple(s.path for s in sources))
