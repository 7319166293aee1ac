"""Slice keys of NOvA tables: read, reduced to runs, packed into sortable codes, matched.

Each table's five key columns are read in whole-chunk slices and reduced to its
runs of equal keys (a per-prong table has one run per slice with prongs). The
runs' keys are packed into one ``int64`` code per run whose order is the key
order: each key column, minus its smallest value over the file, takes as many
bits as its spread needs. When the five spreads need more than 63 bits, codes
are built column by column and replaced by their dense rank before they would
overflow (still order-preserving). Sorting checks, the union of slices and the
matching of prong rows to slices are then vectorised comparisons and
``numpy.searchsorted`` over these codes; no Python runs per row.

What stays in RAM per table after packing is one code per run (shared between
tables with the same runs) and, for tables with several rows per key, one count
per run. A key named in an error message is read back from the file.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import h5py
import numpy as np

from lstm_data.errors import FormatError
from lstm_data.io.hdf5.reader import read_rows
from lstm_data.io.nova.tables import KEY_COLUMNS

__all__ = ["TableKeys", "read_keys", "pack_codes", "check_sorted", "slice_codes", "match",
           "describe", "blocks"]

#: bytes per read of a column (rounded to whole chunks)
_BLOCK_BYTES = 8 << 20
_INT64_MAX = np.iinfo(np.int64).max


@dataclass
class TableKeys:
    """The runs of equal keys of one table.

    Attributes
    ----------
    name : str
    n_rows : int
    group : h5py.Group
        The table (to read a key back for a message).
    counts : ndarray (int64) or None
        Rows of each run; ``None`` when every row has its own key (a per-slice table).
    codes : ndarray (int64)
        The runs' packed keys (set by :func:`pack_codes`).
    native : list of ndarray or None
        Each key column's value per run, in the file's dtypes, until :meth:`release`.
    """

    name: str
    n_rows: int
    group: h5py.Group
    counts: np.ndarray | None
    native: list[np.ndarray] | None
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def per_slice(self) -> bool:
        """At most one row per key."""
        return self.counts is None

    @property
    def n_runs(self) -> int:
        return self.n_rows if self.counts is None else len(self.counts)

    def run_counts(self) -> np.ndarray:
        """Rows per run (ones for a per-slice table)."""
        return np.ones(self.n_rows, np.int64) if self.counts is None else self.counts

    def start(self, i: int) -> int:
        """The first row of run ``i``."""
        return i if self.counts is None else int(self.counts[:i].sum())

    def key(self, i: int) -> tuple[int, ...]:
        """The key of run ``i``, ``(run, subrun, cycle, evt, subevt)``, read back from the file."""
        row = self.start(i)
        return tuple(int(np.asarray(self.group[k][row]).reshape(-1)[0]) for k in KEY_COLUMNS)

    def first_repeat(self) -> int:
        """The first run of several rows (``-1`` for a per-slice table)."""
        return -1 if self.counts is None else int(np.argmax(self.counts > 1))

    def describe_repeat(self) -> str:
        """``has 3 rows for key run=... (row 7)``: the first key with several rows."""
        assert self.counts is not None
        i = self.first_repeat()
        return f"has {int(self.counts[i])} rows for key {describe(self.key(i))} (row {self.start(i)})"

    def release(self) -> None:
        """Drop the native keys (after the codes and the key scalars are made)."""
        self.native = None


def describe(key: tuple[int, ...]) -> str:
    """``run=1 subrun=2 cycle=0 evt=7 subevt=1``."""
    return " ".join(f"{n}={v}" for n, v in zip(KEY_COLUMNS, key))


def blocks(ds: h5py.Dataset, block_bytes: int = _BLOCK_BYTES, n: int | None = None
           ) -> list[tuple[int, int]]:
    """``(lo, hi)`` record ranges of ``ds`` (first ``n`` records): whole chunks, ~``block_bytes`` each."""
    n = ds.shape[0] if n is None else n
    chunk = ds.chunks[0] if ds.chunks else max(1, n)
    row_bytes = max(1, ds.dtype.itemsize * int(np.prod(ds.shape[1:], dtype=np.int64)))
    step = max(chunk, (block_bytes // row_bytes) // chunk * chunk)
    return [(a, min(n, a + step)) for a in range(0, n, step)]


def _read_key(ds: h5py.Dataset, n: int, file: str, variable: str) -> np.ndarray:
    out = np.empty(n, dtype=ds.dtype)
    for a, b in blocks(ds):
        out[a:b] = read_rows(ds, a, b, file=file, variable=variable).reshape(b - a)
    return out


def read_keys(name: str, n_rows: int, group: h5py.Group, *, file: str) -> TableKeys:
    """Read a table's key columns and reduce them to runs of equal keys.

    Raises
    ------
    FormatError
        A key beyond int64, or a damaged chunk (see :func:`read_rows`).
    """
    cols = [_read_key(group[k], n_rows, file, f"{name}.{k}") for k in KEY_COLUMNS]
    for k, c in zip(KEY_COLUMNS, cols):
        if c.dtype == np.uint64 and n_rows and c.max() > _INT64_MAX:
            row = int(np.argmax(c > _INT64_MAX))
            raise FormatError(f"key column {k!r} of table {name!r} holds {int(c[row])}, beyond int64",
                              file=file, variable=f"{name}.{k}", row=row)
    same = np.ones(max(0, n_rows - 1), dtype=bool)
    for c in cols:
        same &= c[1:] == c[:-1]
    if not same.any():
        return TableKeys(name, n_rows, group, None, cols)
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    counts = np.diff(np.append(starts, n_rows)).astype(np.int64)
    return TableKeys(name, n_rows, group, counts, [c[starts] for c in cols])


def _dense_rank(values: np.ndarray) -> np.ndarray:
    return np.unique(values, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _native(table: TableKeys) -> list[np.ndarray]:
    """The native key columns of ``table`` (kept until its codes and key scalars are made)."""
    assert table.native is not None
    return table.native


def pack_codes(tables: list[TableKeys]) -> None:
    """Set ``codes`` of every table: one int64 per run, ordered as the keys are.

    Tables whose codes come out equal share one array.
    """
    full = [t for t in tables if t.n_runs]
    if not full:
        return
    native = [_native(t) for t in full]
    lows = [min(int(keys[c].min()) for keys in native) for c in range(len(KEY_COLUMNS))]
    highs = [max(int(keys[c].max()) for keys in native) for c in range(len(KEY_COLUMNS))]
    bits = [(hi - lo).bit_length() for lo, hi in zip(lows, highs)]
    done: list[np.ndarray] = []
    if sum(bits) <= 63:
        for t, keys in zip(full, native):
            code = np.zeros(t.n_runs, dtype=np.int64)
            for k, lo, b in zip(keys, lows, bits):
                code <<= b
                code |= k.astype(np.int64) - lo
            t.codes = next((d for d in done if len(d) == len(code) and np.array_equal(d, code)), code)
            done.append(t.codes)
        return
    sizes = np.cumsum([t.n_runs for t in full])[:-1]
    code = np.zeros(int(sum(t.n_runs for t in full)), dtype=np.int64)
    used = 0
    for c, lo, b in zip(range(len(KEY_COLUMNS)), lows, bits):
        col = np.concatenate([keys[c].astype(np.int64) for keys in native])
        if b > 62 or used + b > 63:
            code, used = _dense_rank(code), int(len(code)).bit_length()
            col, b = _dense_rank(col), int(len(col)).bit_length()
        else:
            col -= lo
        code <<= b
        code |= col
        used += b
    for t, part in zip(full, np.split(code, sizes)):
        t.codes = part


def check_sorted(t: TableKeys, *, file: str) -> None:
    """Raise ``FormatError`` unless the table's rows are sorted by key, each key's rows adjacent."""
    codes = t.codes
    bad = np.flatnonzero(codes[1:] <= codes[:-1])
    if len(bad):
        i = int(bad[0]) + 1
        row = t.start(i)
        raise FormatError(f"table {t.name!r} is not sorted by ({', '.join(KEY_COLUMNS)}): row {row} has "
                          f"key {describe(t.key(i))} after key {describe(t.key(i - 1))} (row "
                          f"{row - 1}); the rows of one slice must be adjacent and slices in key order",
                          file=file, variable=t.name, row=row)


def slice_codes(sources: list[TableKeys]) -> np.ndarray:
    """Sorted unique codes of the slices: the union of the ``sources``' runs."""
    if not sources:
        return np.zeros(0, dtype=np.int64)
    out = sources[0].codes
    for s in sources[1:]:
        c = s.codes
        if c is out or (len(c) == len(out) and np.array_equal(c, out)):
            continue
        pos = np.searchsorted(out, c)
        new = pos >= len(out)
        new[~new] = out[pos[~new]] != c[~new]
        if new.any():
            out = np.concatenate([out, c[new]])
            out.sort(kind="stable")
    return out


def match(slices: np.ndarray, t: TableKeys, source: str, *, file: str) -> np.ndarray | None:
    """The slice of each run of ``t`` (``None`` when they are all the slices, in order).

    Raises
    ------
    FormatError
        A run's key is not a slice (names the table, the key and its first row).
    """
    codes = t.codes
    if codes is slices or (len(codes) == len(slices) and np.array_equal(codes, slices)):
        return None
    pos = np.searchsorted(slices, codes)
    found = pos < len(slices)
    found[found] = slices[pos[found]] == codes[found]
    if not found.all():
        i = int(np.argmin(found))
        raise FormatError(f"table {t.name!r}: row {t.start(i)} has key {describe(t.key(i))}, which is "
                          f"not a slice of {source}", file=file, variable=t.name, row=t.start(i))
    return pos
