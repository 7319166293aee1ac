"""Parquet on disk: scalars and offsets in RAM, values read per request by row group.

A Parquet file is cut into row groups, and a row group's column chunk is the
smallest piece pyarrow reads. So a request for rows (a batch, a block-shuffle
window) finds the row groups its rows lie in and reads each of them once, only the
columns of the group asked for, then copies the requested rows' values into the
result in the requested order. :attr:`ParquetDataset.io_stats` counts those reads:
one "chunk" is one row group of one ragged group (key ``"<group>/values"``, chunk
index = the row group's number in the whole dataset).

On open the scalar columns and, per ragged group, its first list column (for the
offsets) are read; the other list columns are checked against those lengths each
time a row group is read (an error names the file, the row and the column). Plain
list columns are grouped by their lengths in the first rows and the files' metadata
(see :mod:`lstm_data.io.parquet.grouping`), as :func:`~lstm_data.io.parquet.read_parquet`
groups them in RAM.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from lstm_data._util import forksafe
from lstm_data._util.heap import empty_pages
from lstm_data.io.ours.ondisk import OnDiskDataset
from lstm_data.io.parquet.columns import (
    ListColumn,
    check_list_columns,
    join_scalar_pieces,
    list_column,
    list_lengths,
    scalar_column,
)
from lstm_data.io.parquet.plan import plan_columns
from lstm_data.io.parquet.read import open_sources, parquet_files, read_columns, settle_on_first_rows
from lstm_data.io.parquet.columns import import_pyarrow
from lstm_data.io.plumbing.remote_errors import RemoteSettings
from lstm_data.kernels import interleave_columns

__all__ = ["ParquetDataset"]


def _release_freed() -> None:
    """Hand the memory pyarrow freed back to the system: its allocator keeps freed pages for
    reuse, so the row groups read at open, or for a window, would stay resident."""
    import_pyarrow().default_memory_pool().release_unused()


def _follow(starts: np.ndarray, lens: np.ndarray) -> bool:
    """Whether the ranges ``[starts[i], starts[i] + lens[i])`` follow each other without gaps."""
    return bool(np.array_equal(starts[1:], starts[:-1] + lens[:-1]))


class ParquetDataset(OnDiskDataset):
    """Parquet files (one, or a directory's) as one dataset whose values stay on disk.

    Parameters
    ----------
    path
        A ``.parquet`` file or a directory of them (sorted by name, one dataset).
    schema, dtype
        As for :func:`lstm_data.io.parquet.read_parquet`.
    use_threads
        Let pyarrow decode a row group's columns on several threads.

    Raises
    ------
    FormatError, SchemaError
        As :func:`lstm_data.io.parquet.read_parquet`; a length mismatch inside a group in
        a row group not read at open is raised when that row group is first read.

    Attributes
    ----------
    io_stats : IOStats
        Row-group reads per ragged group (a random batch reads each touched row group once).
    row_group_rows : ndarray of int64
        First row of every row group (in the whole dataset), plus the row count at the end.
    """

    def __init__(self, path: Any, *, schema: Any = None, dtype: Any = None, use_threads: bool = True,
                 columns: Any = None, exclude: Any = None, remote: RemoteSettings | None = None) -> None:
        self._reopen = ((path,), {"schema": schema, "dtype": dtype, "use_threads": use_threads,
                                  "columns": columns, "exclude": exclude, "remote": remote})
        self._use_threads = use_threads
        self._sources = open_sources(parquet_files(path), remote)
        first = self._sources[0].path
        self._plan = settle_on_first_rows(
            self._sources, plan_columns(self._sources[0].schema, schema, dtype, file=first, columns=columns,
                                        exclude=exclude), use_threads=use_threads)
        self.skipped = dict(self._plan.skipped)
        self._rg_source, self._rg_index, counts = [], [], []
        for si, s in enumerate(self._sources):
            rows = s.row_group_rows()
            self._rg_source += [si] * len(rows)
            self._rg_index += list(range(len(rows)))
            counts.append(rows)
        counts_all = np.concatenate(counts) if counts else np.zeros(0, np.int64)
        self.row_group_rows = np.zeros(len(counts_all) + 1, dtype=np.int64)
        np.cumsum(counts_all, out=self.row_group_rows[1:])
        self._locks = [threading.Lock() for _ in self._sources]
        forksafe.register(self)
        scalars: dict[str, list[np.ndarray]] = {s: [] for s in self._plan.scalars}
        firsts = {g: names[0] for g, names in self._plan.groups.items()}
        lengths: dict[str, list[np.ndarray]] = {g: [] for g in firsts}
        for k in range(len(counts_all)):  # scalars and the first column of each group
            needed = self._plan.scalars + list(firsts.values())
            table = self._read_row_group(k, list(dict.fromkeys(self._plan.source(v)[0] for v in needed)))
            file, row0 = self._where(k)
            for name in self._plan.scalars:
                scalars[name].append(scalar_column(self._plan.column(table, name), name, self._plan.dtype,
                                                   file=file, first_row=row0, exact=self._plan.exact))
            for g, v in firsts.items():
                lengths[g].append(list_lengths(self._plan.list_source(table, v)[0]))
        self._offsets_of = {}
        for g, parts in lengths.items():
            lens = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            off = np.zeros(len(lens) + 1, dtype=np.int64)
            np.cumsum(lens, out=off[1:])
            self._offsets_of[g] = off
        self._setup(int(self.row_group_rows[-1]),
                    {s: join_scalar_pieces(p, s, exact=self._plan.exact) for s, p in scalars.items()}, {},
                    tuple(s.path for s in self._sources))
        self._groups = {g: list(names) for g, names in self._plan.groups.items()}
        _release_freed()

    def _after_fork(self) -> None:
        self._locks = [threading.Lock() for _ in self._sources]

    def _where(self, k: int) -> tuple[str, int]:
        """File and first row in that file of row group ``k``."""
        si = self._rg_source[k]
        first_of_file = self._rg_source.index(si)
        return self._sources[si].path, int(self.row_group_rows[k] - self.row_group_rows[first_of_file])

    def _read_row_group(self, k: int, columns: list[str]) -> Any:
        if not self._sources:
            raise ValueError(f"{self.source[0] if self.source else 'this dataset'} was closed")
        si = self._rg_source[k]
        with self._locks[si]:
            return read_columns(self._sources[si], self._rg_index[k], columns, use_threads=self._use_threads)

    def _list(self, table: Any, v: str, group: str, path: str, row0: int) -> ListColumn:
        """Prong variable ``v`` of ``group`` from a row group's table."""
        arr, steps = self._plan.list_source(table, v)
        return list_column(arr, v, self._plan.group_dtypes[group], file=path,
                           first_row=row0, steps=steps, exact=self._plan.exact)

    def value_chunk_len(self, group: str) -> int:
        """Mean values per row group of ``group`` (row groups differ in size: an approximation)."""
        super(OnDiskDataset, self).value_chunk_len(group)  # the unknown-group error
        n_rg = len(self.row_group_rows) - 1
        total = int(self._offsets_of[group][-1])
        return max(1, -(-total // n_rg)) if n_rg > 1 else 0

    def value_chunk_starts(self, group: str) -> np.ndarray:
        """The first row of every row group (a row group's columns are read whole).

        Block shuffle cuts its blocks there, so each row group is read at most twice
        per epoch.
        """
        super(OnDiskDataset, self).value_chunk_len(group)  # the unknown-group error
        return self.row_group_rows[:-1].copy()

    def _offsets(self, group: str) -> np.ndarray:
        return self._offsets_of[group]

    def _row_group_values(self, group: str, k: int) -> list[np.ndarray]:
        """Every list column of ``group`` in row group ``k``, as flat arrays, checked against the offsets."""
        names = self._groups[group]
        table = self._read_row_group(k, list(dict.fromkeys(self._plan.source(v)[0] for v in names)))
        path, row0 = self._where(k)
        cols = {v: self._list(table, v, group, path, row0) for v in names}
        a, b = int(self.row_group_rows[k]), int(self.row_group_rows[k + 1])
        known = ListColumn([self._offsets_of[group][a:b + 1]], [])
        check_list_columns(group, cols, ref=known, ref_name=names[0], file=path, first_row=row0,
                           hint=self._plan.hint(group))
        flats = [c.flat() for c in cols.values()]
        self.io_stats.record(f"{group}/values", k, k + 1, sum(f.nbytes for f in flats))
        return flats

    def _ragged(self, group: str, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        offsets = self._offsets_of[group]
        rows = np.arange(len(self), dtype=np.intp) if rows is None else rows
        out_off = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(offsets[rows + 1] - offsets[rows], out=out_off[1:])
        out = empty_pages((int(out_off[-1]), len(self._groups[group])), self._plan.group_dtypes[group])
        self._fill(group, rows, out, out_off)
        return out, out_off

    def ragged_into(self, group: str, lo: int, hi: int, out: np.ndarray) -> None:
        """Write the values of rows ``lo .. hi - 1`` of ``group`` into ``out`` (see
        :meth:`lstm_data.data.dataset.Dataset.ragged_into`): straight from each row group
        when ``out`` has the group's dtype (a window of several files: no copy of a file's share)."""
        offsets = self._offsets_of.get(group)
        if offsets is None or out.dtype != self._plan.group_dtypes[group] or not 0 <= lo <= hi <= len(self) \
                or out.shape != (int(offsets[hi] - offsets[lo]), len(self._groups[group])):
            super().ragged_into(group, lo, hi, out)  # names what is wrong, or reads and converts
            return
        self._fill(group, np.arange(lo, hi, dtype=np.intp), out, offsets[lo:hi + 1] - offsets[lo])

    def _fill(self, group: str, rows: np.ndarray, out: np.ndarray, out_off: np.ndarray) -> None:
        """The values of ``rows`` of ``group`` into ``out`` (``out_off``: their offsets there),
        each touched row group read once."""
        if len(out) == 0:
            return
        offsets = self._offsets_of[group]
        starts = offsets[rows]
        lens = offsets[rows + 1] - starts
        rg_of = np.searchsorted(self.row_group_rows[1:], rows, side="right")
        order = np.argsort(rg_of, kind="stable")
        touched, first = np.unique(rg_of[order], return_index=True)
        bounds = np.append(first, len(order))
        flats: list[np.ndarray] = []
        for k, a, b in zip(touched.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
            sel = order[a:b]
            sel = sel[lens[sel] > 0]
            if not len(sel):
                continue
            flats = self._row_group_values(group, k)
            base = offsets[self.row_group_rows[k]]
            n = int(lens[sel].sum())
            if _follow(starts[sel], lens[sel]) and _follow(out_off[sel], lens[sel]):  # one run of rows
                d0, s0 = int(out_off[sel[0]]), int(starts[sel[0]] - base)
                interleave_columns([f[s0:s0 + n] for f in flats], out[d0:d0 + n])
                continue
            shift = np.repeat(starts[sel] - base - out_off[sel], lens[sel])
            dst = np.arange(n, dtype=np.int64) + np.repeat(out_off[sel] - (np.cumsum(lens[sel]) - lens[sel]),
                                                           lens[sel])
            src = dst + shift
            for j, flat in enumerate(flats):
                out[dst, j] = flat[src]
        del flats  # the last row group's columns, before the memory is handed back
        _release_freed()

    def close(self) -> None:
        """Close the files (the dataset cannot read values afterwards)."""
        for source in self._sources:
            source.close()
        self._sources = []
