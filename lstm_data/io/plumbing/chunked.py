"""Datasets read on demand by row ranges (ROOT clusters, RNTuple clusters): :class:`ChunkedDataset`.

A file that is cut into row ranges which are decoded whole (a TTree's basket
clusters, an RNTuple's clusters) becomes a dataset whose group offsets sit in RAM
and whose values (scalars too) are read on demand, one range ("chunk") at a time:

* a request for rows (a batch, a block-shuffle window) decodes each chunk it
  touches once, copies the asked-for rows out of it and lets it go, so memory
  holds the result plus one decoded chunk;
* the chunks are the dataset's on-disk chunks (:meth:`value_chunk_starts`), so
  ``shuffle="block"`` cuts its blocks at them and decodes each chunk at most twice
  per epoch, memory bounded by the read-ahead windows;
* the last ``cache_chunks`` chunks decoded for whole-column requests are kept,
  and (per thread) the last rows asked for with all their columns until each column
  was given out, so a caller that asks column by column (a batch, a multi-file dataset's
  ``take``) decodes each chunk once for all of them.

:attr:`io_stats` counts chunk decodes under the key ``"<group>/values"`` (or
``"scalars"`` for a dataset without groups), chunk index = the chunk's number.
"""
from __future__ import annotations

import threading
from typing import Mapping

import numpy as np

from lstm_data._util import forksafe
from lstm_data._util.lru import Lru
from lstm_data.data.dataset import Dataset, InMemoryDataset, RowSelection, as_rows
from lstm_data.data.ragged import RaggedGroup, put_ragged, take_ragged
from lstm_data.errors import FormatError
from lstm_data.io.ours.ondisk import OnDiskDataset

__all__ = ["ChunkedDataset", "CACHE_CHUNKS"]

#: decoded chunks kept for requests of single columns
CACHE_CHUNKS = 2


class ChunkedDataset(OnDiskDataset):
    """Rows cut into chunks that are decoded whole; values read on demand (see the module).

    Subclasses call :meth:`_setup_chunks` from ``__init__`` and implement
    :meth:`_decode_chunk`.

    Attributes
    ----------
    chunk_bounds : ndarray of int64
        First row of every chunk, plus the row count at the end.
    io_stats : IOStats
        Chunk decodes (see the module).
    """

    def _setup_chunks(self, bounds: np.ndarray, scalar_dtypes: Mapping[str, np.dtype],
                      groups: Mapping[str, tuple[list[str], np.dtype, np.ndarray]],
                      source: tuple[str, ...], cache_chunks: int | None) -> None:
        """``groups``: group -> (variables, dtype, offsets (N + 1))."""
        bounds = np.asarray(bounds, dtype=np.int64)
        self.chunk_bounds = bounds
        self._setup(int(bounds[-1]), {}, {}, source)
        self._scalar_names = list(scalar_dtypes)
        self._scalar_dtypes = {s: np.dtype(d) for s, d in scalar_dtypes.items()}
        self._groups = {g: list(names) for g, (names, _, _) in groups.items()}
        self._group_dtypes = {g: np.dtype(dt) for g, (_, dt, _) in groups.items()}
        self._offsets_of = {g: np.asarray(off, dtype=np.int64) for g, (_, _, off) in groups.items()}
        self._cache: Lru[int, InMemoryDataset] = Lru(CACHE_CHUNKS if cache_chunks is None else int(cache_chunks))
        self._decode_lock = threading.Lock()
        self._recent = threading.local()
        forksafe.register(self)

    def _after_fork(self) -> None:
        self._decode_lock = threading.Lock()
        self._cache = Lru(self._cache.keep)
        self._recent = threading.local()

    # -- what subclasses give -------------------------------------------------
    def _decode_chunk(self, k: int) -> InMemoryDataset:
        """Rows ``chunk_bounds[k]:chunk_bounds[k + 1]`` with every column, decoded."""
        raise NotImplementedError

    # -- chunks ------------------------------------------------------------------
    @property
    def n_chunks(self) -> int:
        """Number of chunks."""
        return len(self.chunk_bounds) - 1

    def row_chunk_starts(self) -> np.ndarray:
        """The first row of every chunk (a chunk is decoded whole, scalars included)."""
        return self.chunk_bounds[:-1].copy()

    def value_chunk_starts(self, group: str) -> np.ndarray:
        """The first row of every chunk (a chunk is decoded whole, every group at once)."""
        super(OnDiskDataset, self).value_chunk_len(group)  # the unknown-group error
        return self.chunk_bounds[:-1].copy()

    def value_chunk_len(self, group: str) -> int:
        """Mean values per chunk of ``group`` (chunks differ in size: an approximation)."""
        super(OnDiskDataset, self).value_chunk_len(group)  # the unknown-group error
        return max(1, -(-int(self._offsets_of[group][-1]) // max(1, self.n_chunks)))

    def _offsets(self, group: str) -> np.ndarray:
        return self._offsets_of[group]

    def _chunk(self, k: int, keep: bool) -> InMemoryDataset:
        """Chunk ``k``, from the cache or decoded (and kept when ``keep``)."""
        with self._decode_lock:
            hit = self._cache.get(k)
            if hit is not None:
                return hit
            chunk = self._decode_chunk(k)
            self._check_chunk(k, chunk)
            nbytes = {g: chunk.ragged(g)[0].nbytes for g in self._groups}
            for g in self._groups:
                self.io_stats.record(f"{g}/values", k, k + 1, nbytes[g])
            if not self._groups:
                self.io_stats.record("scalars", k, k + 1, sum(chunk.scalar(s).nbytes for s in self._scalar_names))
            if keep:
                self._cache.put(k, chunk)
            return chunk

    def _check_chunk(self, k: int, chunk: Dataset) -> None:
        a, z = int(self.chunk_bounds[k]), int(self.chunk_bounds[k + 1])
        where = self.source[0] if self.source else None
        if len(chunk) != z - a:
            raise FormatError(f"rows {a}:{z} gave {len(chunk)} rows on a second read; was the file "
                              "changed while open?", file=where, row=a)
        for g, names in self._groups.items():
            if g not in chunk.groups or chunk.groups[g] != names:
                raise FormatError(f"rows {a}:{z} read as other groups than at open ({chunk.groups} instead "
                                  f"of {g!r}: {names}); declare the groups with a schema", file=where, row=a)
            off = chunk.offsets(g)
            mine = self._offsets_of[g]
            if not np.array_equal(off, mine[a:z + 1] - mine[a]):
                raise FormatError(f"group {g!r}, rows {a}:{z}: the lengths differ from those read at open; "
                                  "was the file changed while open?", file=where, variable=g, row=a)

    # -- gathering ---------------------------------------------------------------
    def _gather(self, rows: np.ndarray | None, scalars: list[str], groups: list[str],
                keep: bool) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
        """``scalars`` and ``groups`` at ``rows`` (any order), each touched chunk decoded once."""
        sel = np.arange(len(self), dtype=np.intp) if rows is None else rows
        out_s = {s: np.empty(len(sel), dtype=self._scalar_dtypes[s]) for s in scalars}
        out_g: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for g in groups:
            offsets = self._offsets_of[g]
            off = np.zeros(len(sel) + 1, dtype=np.int64)
            np.cumsum(offsets[sel + 1] - offsets[sel], out=off[1:])
            out_g[g] = (np.empty((int(off[-1]), len(self._groups[g])), dtype=self._group_dtypes[g]), off)
        if not len(sel):
            return out_s, out_g
        k_of = np.searchsorted(self.chunk_bounds, sel, side="right") - 1
        order = np.argsort(k_of, kind="stable")
        touched, first = np.unique(k_of[order], return_index=True)
        ends = np.append(first[1:], len(order))
        for k, a, b in zip(touched.tolist(), first.tolist(), ends.tolist()):
            pos = order[a:b]
            local = sel[pos] - self.chunk_bounds[k]
            chunk = self._chunk(k, keep)
            for s in scalars:
                out_s[s][pos] = chunk.scalar(s, local)
            run = bool(local[-1] - local[0] == len(local) - 1 and np.all(np.diff(local) == 1))
            for g in groups:
                values, off = out_g[g]
                c_values, c_off = chunk.ragged(g)
                if run:  # consecutive rows (a block of a window): a view, no copy
                    lo, hi = int(local[0]), int(local[-1]) + 1
                    block, block_off = c_values[c_off[lo]:c_off[hi]], c_off[lo:hi + 1] - c_off[lo]
                else:
                    block, block_off = take_ragged(c_values, c_off, local)
                put_ragged(values, off, pos, block, block_off)
            del chunk
        return out_s, out_g

    def _scalar(self, name: str, rows: np.ndarray | None) -> np.ndarray:
        if rows is None:
            return self._gather(rows, [name], [], keep=True)[0][name]
        return self._taken(rows, name).scalar(name)

    def _ragged(self, group: str, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if rows is None:
            return self._gather(rows, [], [group], keep=True)[1][group]
        return self._taken(rows, "\0" + group).ragged(group)

    def _taken(self, rows: np.ndarray, column: str) -> InMemoryDataset:
        """Every column at ``rows``, kept for the next requests of other columns at the same rows.

        A caller that asks column by column for one set of rows (``Dataset.take`` of a
        multi-file dataset, a batch) so decodes each chunk once for all the columns;
        the arrays given out are those kept, not copies. The rows are let go once
        every column was given out, or when other rows are asked for.
        """
        recent = self._recent  # one per thread: a read-ahead thread asks for other rows meanwhile
        last: tuple[np.ndarray | None, InMemoryDataset | None, set[str]] = getattr(
            recent, "last", (None, None, set()))
        kept_rows, kept, given = last
        if kept is not None and kept_rows is not None and column not in given and (
                kept_rows is rows or (len(kept_rows) == len(rows) and np.array_equal(kept_rows, rows))):
            taken = kept
        else:
            taken, given = self.take(rows), set()
        recent.last = (None, None, set())
        given = given | {column}
        if len(given) < len(self._scalar_names) + len(self._groups):
            recent.last = (rows.copy(), taken, given)
        return taken

    def take(self, rows: RowSelection) -> InMemoryDataset:
        """An in-RAM dataset of ``rows`` (any order): each chunk they touch is decoded once.

        Parameters
        ----------
        rows
            Row indices in any order, repeats allowed; ``None``: every row.

        Returns
        -------
        InMemoryDataset
            Those rows' scalars and groups.
        """
        sel = as_rows(rows, len(self))
        scalars, groups = self._gather(sel, list(self._scalar_names), list(self._groups), keep=False)
        return InMemoryDataset(scalars, {g: RaggedGroup(self._groups[g], *groups[g]) for g in self._groups})

    def _cast(self, chunk: InMemoryDataset) -> InMemoryDataset:
        """``chunk`` with every column at this dataset's dtypes (a no-op when they agree)."""
        scalars = {s: _as(chunk.scalar(s), self._scalar_dtypes[s]) for s in self._scalar_names}
        groups = {}
        for g, names in self._groups.items():
            values, off = chunk.ragged(g)
            groups[g] = RaggedGroup(names, _as(values, self._group_dtypes[g]), off)
        return InMemoryDataset(scalars, groups)


def _as(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return array if array.dtype == dtype else array.astype(dtype)


def chunk_bounds_of(entries: np.ndarray, n: int, rows_per_chunk: int) -> np.ndarray:
    """Chunk bounds from cluster ``entries`` (ascending, within ``0..n``): clusters merged
    until a chunk holds at least ``rows_per_chunk`` rows (a chunk never cuts a cluster)."""
    edges = np.unique(np.concatenate([[0], np.asarray(entries, dtype=np.int64), [n]]))
    edges = edges[(edges >= 0) & (edges <= n)]
    keep = [0]
    for e in edges[1:].tolist():
        if e - keep[-1] >= rows_per_chunk or e == n:
            keep.append(int(e))
    if len(keep) > 2 and keep[-1] - keep[-2] < rows_per_chunk // 4:
        del keep[-2]  # a short last chunk joins the one before
    return np.asarray(keep if n else [0], dtype=np.int64)

