"""Writers of score columns, one output file at a time, chunk by chunk.

Each writer is made on a temporary path, takes the chunks of its rows in order
(:meth:`ColumnWriter.write`: name -> 1-D array, the same names and dtypes every
time) and is closed; the caller then renames it into place. Parquet writes the
input's row groups when the output holds every entry of a Parquet input; ROOT
writes a TTree of the input's name (a friend tree); HDF5 one dataset per column;
CSV a header and one line per row (floats written to round-trip exactly); zarr
the library's own store, streamed as the chunks come.
"""
from __future__ import annotations

import csv
import queue
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from lstm_data.data.dataset import InMemoryDataset

__all__ = ["ColumnWriter", "make_writer"]


class ColumnWriter:
    """Base of the writers: ``write(chunk)`` in order, then ``close()``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0

    def write(self, chunk: Mapping[str, np.ndarray]) -> None:
        """Append the rows of ``chunk``."""
        self.rows += len(next(iter(chunk.values()), ()))
        self._write(chunk)

    def _write(self, chunk: Mapping[str, np.ndarray]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Finish the file."""


class _Parquet(ColumnWriter):
    def __init__(self, path: Path, row_groups: Sequence[int] | None) -> None:
        super().__init__(path)
        self._writer: Any = None
        self._groups = list(row_groups or [])
        self._held: list[Mapping[str, np.ndarray]] = []
        self._held_rows = 0

    def _flush(self, table: Any) -> None:
        import pyarrow.parquet as pq
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema)
        self._writer.write_table(table, row_group_size=max(1, table.num_rows))

    def _write(self, chunk: Mapping[str, np.ndarray]) -> None:
        import pyarrow as pa
        if not self._groups:
            self._flush(pa.table(dict(chunk)))
            return
        self._held.append(chunk)
        self._held_rows += len(next(iter(chunk.values())))
        while self._groups and self._held_rows >= self._groups[0]:
            table = pa.concat_tables([pa.table(dict(c)) for c in self._held])
            size = self._groups.pop(0)
            self._flush(table.slice(0, size))
            rest = table.slice(size)
            self._held = [{n: rest.column(n).to_numpy() for n in rest.column_names}] if rest.num_rows else []
            self._held_rows = rest.num_rows

    def close(self) -> None:
        import pyarrow as pa
        if self._held:
            self._flush(pa.concat_tables([pa.table(dict(c)) for c in self._held]))
            self._held = []
        if self._writer is not None:
            self._writer.close()


class _Root(ColumnWriter):
    def __init__(self, path: Path, tree: str) -> None:
        super().__init__(path)
        import uproot
        self._file = uproot.recreate(path)
        self._name = tree
        self._tree: Any = None

    def _write(self, chunk: Mapping[str, np.ndarray]) -> None:
        if self._tree is None:
            self._tree = self._file.mktree(self._name, {k: v.dtype for k, v in chunk.items()})
        if len(next(iter(chunk.values()))):
            self._tree.extend(dict(chunk))

    def close(self) -> None:
        self._file.close()


class _Hdf5(ColumnWriter):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        import h5py
        self._file = h5py.File(path, "w")

    def _write(self, chunk: Mapping[str, np.ndarray]) -> None:
        for name, values in chunk.items():
            if name not in self._file:
                self._file.create_dataset(name, shape=(0,), maxshape=(None,), dtype=values.dtype,
                                          chunks=(max(1, min(1 << 16, len(values))),))
            column = self._file[name]
            start = column.shape[0]
            column.resize((start + len(values),))
            column[start:] = values

    def close(self) -> None:
        self._file.close()


class _Csv(ColumnWriter):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._fh = open(path, "w", newline="")
        self._out = csv.writer(self._fh)
        self._header = False

    def _write(self, chunk: Mapping[str, np.ndarray]) -> None:
        if not self._header:
            self._out.writerow(list(chunk))
            self._header = True
        # float32 widened to float64 is exact, and a float64's repr reads back to the same bits
        columns = [v.astype(np.int8) if v.dtype == bool else v for v in chunk.values()]
        self._out.writerows(zip(*(c.tolist() for c in columns)))

    def close(self) -> None:
        self._fh.close()


def _stored(values: np.ndarray) -> np.ndarray:
    """A column as our zarr layout keeps it (bools as int8)."""
    return values.astype(np.int8) if values.dtype == bool else values


class _Zarr(ColumnWriter):
    """Our zarr store, streamed: :func:`~lstm_data.io.ours.write.write_zarr` runs on a
    thread of its own and takes the chunks from a queue of two, as they are written."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._queue: queue.Queue[Mapping[str, np.ndarray] | None] = queue.Queue(maxsize=2)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _start(self, chunk: Mapping[str, np.ndarray]) -> None:
        from lstm_data.io.ours.row_blocks import RowBlocks
        from lstm_data.io.ours.write import write_zarr

        def blocks() -> Iterator[tuple[InMemoryDataset, int]]:
            done = 0
            while (item := self._queue.get()) is not None:
                done += 1
                yield InMemoryDataset({n: _stored(v) for n, v in item.items()}, {}), done

        stream = RowBlocks(scalar_dtypes={n: _stored(v).dtype for n, v in chunk.items()}, groups={},
                           group_dtypes={}, blocks=blocks, total=0)

        def write() -> None:
            try:
                write_zarr(stream, self.path)
            except BaseException as exc:  # handed to the caller by write() or close()
                self._error = exc

        self._thread = threading.Thread(target=write, name="lstm_data-predict-zarr", daemon=True)
        self._thread.start()

    def _put(self, item: Mapping[str, np.ndarray] | None) -> None:
        while True:  # the writer thread stopped by an error takes no more: raise it here
            if self._error is not None:
                raise self._error
            try:
                self._queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def _write(self, chunk: Mapping[str, np.ndarray]) -> None:
        if self._thread is None:
            self._start(chunk)
        self._put(dict(chunk))

    def close(self) -> None:
        if self._thread is None:
            return
        self._put(None)
        self._thread.join()
        self._thread = None
        if self._error is not None:
            raise self._error


def make_writer(fmt: str, path: Path, *, tree: str = "scores",
                row_groups: Sequence[int] | None = None) -> ColumnWriter:
    """A writer of format ``fmt`` on ``path`` (a temporary name the caller renames)."""
    if fmt == "parquet":
        return _Parquet(path, row_groups)
    if fmt == "root":
        return _Root(path, tree)
    if fmt == "hdf5":
        return _Hdf5(path)
    if fmt == "csv":
        return _Csv(path)
    return _Zarr(path)
