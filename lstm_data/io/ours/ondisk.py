"""Base for datasets whose scalars and offsets sit in RAM and whose values stay on disk."""
from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable, Mapping, Optional, TypeVar

import numpy as np

from lstm_data.data.dataset import Dataset
from lstm_data.io.plumbing.coalesced_reads import IOStats, gather_ranges

__all__ = ["DiskGroup", "OnDiskDataset"]

D = TypeVar("D", bound="OnDiskDataset")


@dataclass
class DiskGroup:
    """A ragged group whose ``values`` are read on demand.

    Attributes
    ----------
    names : list of str
    starts, ends : ndarray of int64, shape (N,)
        Value range ``[starts[i], ends[i])`` of row ``i`` in the on-disk array
        (``offsets[:-1]`` and ``offsets[1:]`` for our layout; L5Kit intervals may skip).
    n_values : int
        Records in the on-disk array.
    chunk_len : int
        Records per on-disk chunk.
    read : callable
        ``read(lo, hi) -> ndarray (hi - lo, V)``.
    dtype : numpy dtype
    key : str
        Name of the array, for :class:`IOStats`.
    read_into : callable or None
        Optional ``read_into(lo, hi, out)``: decode records ``lo:hi`` (any bounds)
        straight into ``out``, each touched chunk once. Readers that can offer it
        make runs of consecutive rows cost one decode and no copy.
    """

    names: list[str]
    starts: np.ndarray
    ends: np.ndarray
    n_values: int
    chunk_len: int
    read: Callable[[int, int], np.ndarray]
    dtype: np.dtype
    key: str
    read_into: Optional[Callable[[int, int, np.ndarray], None]] = None

    def offsets(self) -> np.ndarray:
        """Compact offsets (N + 1) of the group's rows."""
        out = np.zeros(len(self.starts) + 1, dtype=np.int64)
        np.cumsum(self.ends - self.starts, out=out[1:])
        return out

    def tiles(self) -> bool:
        """Whether rows tile the on-disk array from 0 (then a whole read is one slice)."""
        n = len(self.starts)
        return (n == 0 and self.n_values == 0) or (
            n > 0 and self.starts[0] == 0 and self.ends[-1] == self.n_values
            and bool(np.array_equal(self.starts[1:], self.ends[:-1])))


class OnDiskDataset(Dataset):
    """Scalars and row ranges in RAM; values read per request, each touched chunk once.

    Subclasses call :meth:`_setup` from ``__init__`` and set ``_reopen`` to the
    ``(args, kwargs)`` that rebuild them, so pickling sends a path, not the data.

    Attributes
    ----------
    io_stats : IOStats
        Counts chunk reads of every group (see :class:`~lstm_data.io.plumbing.coalesced_reads.IOStats`).
    """

    _reopen: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})

    def _setup(self, n_rows: int, scalars: Mapping[str, np.ndarray],
               groups: Mapping[str, DiskGroup], source: tuple[str, ...]) -> None:
        self._n_rows = int(n_rows)
        self._scalars = dict(scalars)
        self._scalar_names = list(self._scalars)
        self._disk_groups = dict(groups)
        self._groups = {g: list(dg.names) for g, dg in self._disk_groups.items()}
        self._offset_cache: dict[str, np.ndarray] = {}
        self._tiles_cache: dict[str, bool] = {}
        self.source = source
        if not hasattr(self, "io_stats"):
            self.io_stats = IOStats()

    @property
    def scalars_held(self) -> bool:
        """Always ``True``: scalars are read when the store opens.

        See :attr:`lstm_data.data.dataset.Dataset.scalars_held`.
        """
        return True

    def value_chunk_len(self, group: str) -> int:
        """Records per on-disk chunk of ``group``'s values."""
        super().value_chunk_len(group)  # the unknown-group error
        return int(self._disk_groups[group].chunk_len)

    def _scalar(self, name: str, rows: np.ndarray | None) -> np.ndarray:
        col = self._scalars[name]
        return col if rows is None else col[rows]

    def _offsets(self, group: str) -> np.ndarray:
        if group not in self._offset_cache:
            self._offset_cache[group] = self._disk_groups[group].offsets()
        return self._offset_cache[group]

    def _read(self, dg: DiskGroup, lo: int, hi: int) -> np.ndarray:
        block = dg.read(lo, hi)
        first = lo // dg.chunk_len
        stop = -(-hi // dg.chunk_len) if hi > lo else first
        self.io_stats.record(dg.key, first, stop, block.nbytes)
        return block

    def _read_into(self, dg: DiskGroup, lo: int, hi: int, out: np.ndarray) -> None:
        assert dg.read_into is not None  # called only for groups that offer it
        dg.read_into(lo, hi, out)
        first = lo // dg.chunk_len
        stop = -(-hi // dg.chunk_len) if hi > lo else first
        self.io_stats.record(dg.key, first, stop, out.nbytes)

    def ragged_into(self, group: str, lo: int, hi: int, out: np.ndarray) -> None:
        """Write the values of rows ``lo .. hi - 1`` of ``group`` into ``out`` (see
        :meth:`lstm_data.data.dataset.Dataset.ragged_into`): decoded straight into it
        when the rows' values follow each other on disk in ``out``'s dtype."""
        dg = self._disk_groups.get(group)
        if dg is None or dg.read_into is None or out.dtype != dg.dtype or not out.flags.c_contiguous \
                or not 0 <= lo < hi <= self._n_rows or not self._tiled(group):
            super().ragged_into(group, lo, hi, out)
            return
        a, b = int(dg.starts[lo]), int(dg.ends[hi - 1])
        if out.shape != (b - a, len(dg.names)):
            raise ValueError(f"out has shape {out.shape}; rows {lo}..{hi} of group {group!r} "
                             f"need {(b - a, len(dg.names))}")
        if b > a:
            self._read_into(dg, a, b, out)

    def ragged_range(self, group: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo .. hi - 1`` of ``group``, decoded straight into one new array.

        See :meth:`lstm_data.data.dataset.Dataset.ragged_range`.
        """
        dg = self._disk_groups.get(group)
        if dg is None or dg.read_into is None or not 0 <= lo <= hi <= self._n_rows or not self._tiled(group):
            return super().ragged_range(group, lo, hi)  # names what is wrong, or reads
        offsets = self.offsets(group)
        first = int(offsets[lo])
        values = np.empty((int(offsets[hi]) - first, len(dg.names)), dg.dtype)
        self.ragged_into(group, lo, hi, values)
        return values, offsets[lo:hi + 1] - first

    def _tiled(self, group: str) -> bool:
        """Whether ``group``'s rows tile its on-disk array (kept: it does not change)."""
        tiled = self._tiles_cache.get(group)
        if tiled is None:
            tiled = self._tiles_cache[group] = self._disk_groups[group].tiles()
        return tiled

    def _ragged(self, group: str, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        dg = self._disk_groups[group]
        if rows is None:
            if dg.tiles() and dg.read_into is None:
                values = self._read(dg, 0, dg.n_values) if dg.n_values else \
                    np.empty((0, len(dg.names)), dg.dtype)
                return values, self._offsets(group)
            starts, ends = dg.starts, dg.ends
        else:
            starts, ends = dg.starts[rows], dg.ends[rows]
        def read(lo: int, hi: int) -> np.ndarray:
            return self._read(dg, lo, hi)

        def read_into(lo: int, hi: int, out: np.ndarray) -> None:
            self._read_into(dg, lo, hi, out)

        return gather_ranges(starts, ends, n_values=dg.n_values, chunk_len=dg.chunk_len,
                             read=read, read_into=None if dg.read_into is None else read_into,
                             dtype=dg.dtype, width=len(dg.names),
                             max_run_chunks=getattr(self, "_max_run_chunks", 32))

    def close(self) -> None:
        """Release file handles (the dataset cannot read values afterwards)."""

    def __enter__(self: D) -> D:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"_reopen": self._reopen}

    def __setstate__(self, state: dict[str, Any]) -> None:
        args, kwargs = state["_reopen"]
        type(self).__init__(self, *args, **kwargs)
