"""Column datasets read in whole-chunk blocks into their places in the output (see :mod:`.reader`).

A per-slice table's column is written into its scalar at the slices of the
table's rows (NaN elsewhere); a group's columns are written block by block into
the interleaved ``(total, V)`` values, each block of rows filled by every
column before the next. Integers are cast to the float dtype asked for; a value
that does not survive the cast raises one :class:`PrecisionWarning` per variable.
"""
from __future__ import annotations

from typing import Sequence

import h5py
import numpy as np

from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import SchemaError, warn_user
from lstm_data.io.columns.exact_ints import PrecisionWarning
from lstm_data.io.hdf5.reader import read_rows
from lstm_data.io.nova.keys import TableKeys, blocks
from lstm_data.io.nova.tables import Table, table_of

__all__ = ["ColumnReader", "PrecisionWarning"]

#: bytes of interleaved group values filled per block (few HDF5 calls, mostly in the CPU cache)
_GROUP_BLOCK_BYTES = 8 << 20


class ColumnReader:
    """Reads column datasets in whole-chunk blocks into their places in the output.

    Parameters
    ----------
    fh
        The open file.
    tbls
        The tables read, their variables named.
    dt
        The float dtype of the output.
    n
        The number of slices.
    file
        The file's name, for messages.
    """

    def __init__(self, fh: h5py.File, tbls: list[Table], dt: np.dtype, n: int, file: str) -> None:
        self.fh, self.dt, self.n, self.file = fh, dt, n, file
        self.where = table_of(tbls)
        self.warned: set[str] = set()

    def _columns(self, names: Sequence[str]) -> dict[tuple[str, str], list[tuple[int, int]]]:
        """(table, column) -> [(index in column, output slot)] for ``names``, in first-use order."""
        out: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for slot, v in enumerate(names):
            t, c, j = self.where[v]
            out.setdefault((t.name, c.name), []).append((j, slot))
        return out

    def _check_exact(self, block: np.ndarray, j: int, a: int, var: str) -> None:
        """Warn once per variable when integers of column ``j`` of ``block`` (rows from ``a``) do not
        survive the cast to the output dtype; cheap (a min and a max) while they are small."""
        col = block[:, j]
        if col.dtype.kind not in "iu" or var in self.warned:
            return
        limit = 1 << (np.finfo(self.dt).nmant + 1)
        if col.dtype.itemsize * 8 <= np.finfo(self.dt).nmant + 1 or (
                len(col) == 0 or max(abs(int(col.min())), int(col.max())) <= limit):
            return
        with np.errstate(invalid="ignore", over="ignore"):
            back = col.astype(self.dt).astype(col.dtype)
        bad = np.flatnonzero(back != col)
        if len(bad):
            self.warned.add(var)
            r = int(bad[0])
            warn_user(f"{self.file}: variable {var!r} holds integers that {self.dt} does not hold "
                      f"exactly (first at row {a + r}: {int(col[r])} reads as "
                      f"{col[r:r + 1].astype(self.dt)[0]!r}); open with dtype=numpy.float64 (exact "
                      "below 2**53)", PrecisionWarning)

    def key_scalar(self, i: int, keys: dict[str, TableKeys], positions: dict[str, np.ndarray | None],
                   sources: list[str]) -> np.ndarray:
        """Key column ``i`` of every slice, from the runs of the tables that define the slices."""
        out = np.empty(self.n, np.int64)
        for s in sources:
            native = keys[s].native
            assert native is not None
            pos = positions[s]
            out[slice(None) if pos is None else pos] = native[i]
        return out

    def scalars(self, names: list[str], key_scalars: dict[str, np.ndarray], keys: dict[str, TableKeys],
                positions: dict[str, np.ndarray | None], ragged: set[str]) -> dict[str, np.ndarray]:
        """Every scalar of ``names``: key columns as given, table columns read into place."""
        out = dict(key_scalars)
        columns = [v for v in names if v not in key_scalars]
        for v in columns:
            t = self.where[v][0]
            if t.name in ragged:
                raise SchemaError(f"{v!r} is declared a scalar, but its table {t.name!r} "
                                  f"{keys[t.name].describe_repeat()}: declare it in a group", file=self.file,
                                  variable=v)
            identity = positions[t.name] is None
            out[v] = np.empty(self.n, self.dt) if identity else np.full(self.n, np.nan, self.dt)
        for (table, column), slots in self._columns(columns).items():
            pos = positions[table]
            ds = self.fh[table][column]
            for a, b in blocks(ds):
                block = self._read(ds, a, b, f"{table}.{column}")
                for j, v in ((j, columns[s]) for j, s in slots):
                    self._check_exact(block, j, a, v)
                    out[v][slice(a, b) if pos is None else pos[a:b]] = block[:, j]
        return {v: out[v] for v in names}

    def group(self, names: list[str], keys: dict[str, TableKeys],
              positions: dict[str, np.ndarray | None]) -> RaggedGroup:
        """A ragged group: offsets from the first table's runs, values read block by block.

        Each block of rows (whole chunks, about 8 MiB of the interleaved values) is
        filled column by column, then the next.
        """
        first = self.where[names[0]][0].name
        k, pos = keys[first], positions[first]
        lengths = np.zeros(self.n, np.int64)
        lengths[slice(None) if pos is None else pos] = k.run_counts()
        offsets = np.zeros(self.n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        values = np.empty((total, len(names)), self.dt)
        columns = [(self.fh[table][column], f"{table}.{column}", slots)
                   for (table, column), slots in self._columns(names).items()]
        if columns:
            first_ds = columns[0][0]
            scale = first_ds.dtype.itemsize * max(1, first_ds.shape[1] if first_ds.ndim == 2 else 1)
            for a, b in blocks(first_ds, _GROUP_BLOCK_BYTES * scale // (len(names) * self.dt.itemsize),
                               n=total):
                for ds, column, slots in columns:
                    block = self._read(ds, a, b, column)
                    for j, s in slots:
                        self._check_exact(block, j, a, names[s])
                        values[a:b, s] = block[:, j]
        return RaggedGroup(names, values, offsets)

    def _read(self, ds: h5py.Dataset, a: int, b: int, column: str) -> np.ndarray:
        """Rows ``a:b`` of the dataset of ``column`` (``table.column``) as ``(b - a, k)``."""
        return read_rows(ds, a, b, file=self.file, variable=column).reshape(b - a, -1)
