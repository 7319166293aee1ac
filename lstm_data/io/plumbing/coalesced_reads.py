"""Chunk-aware gathering of ragged rows from a chunked on-disk ``values`` array.

A batch asks for rows in any order. We sort the value indices it needs, find the
chunks they touch, read each touched chunk once (contiguous touched chunks in one
read), and scatter the records back into the requested order. Everything is
vectorised; the only Python loop is over runs of touched chunks.

Requests made of long runs of consecutive rows (a block-shuffle window, a whole
dataset, a contiguous slice) take a faster path: one slice copy per run, or no
copy at all when the reader can decode a run straight into the output
(``read_into``). Then no per-value index is ever built.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["IOStats", "gather_ranges", "chunk_runs", "value_runs", "RUN_MIN_ROWS"]

#: mean rows per run of consecutive rows from which the run path beats per-value indexing
RUN_MIN_ROWS = 8


@dataclass
class IOStats:
    """Counters of on-disk reads, shared by a dataset's groups (thread-safe).

    Attributes
    ----------
    chunks_read : int
        Chunks read and decompressed so far.
    reads : int
        Read calls (one per run of contiguous chunks).
    bytes_read : int
        Decompressed bytes returned by those reads.
    per_chunk : dict or None
        ``(array key, chunk index) -> times read`` when ``track_chunks`` is on, so a
        test can check "each chunk at most twice per epoch".
    hook : callable or None
        Called as ``hook(array_key, first_chunk, stop_chunk)`` after every read.
    """

    chunks_read: int = 0
    reads: int = 0
    bytes_read: int = 0
    per_chunk: dict[tuple[str, int], int] | None = None
    hook: Callable[[str, int, int], None] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def track_chunks(self, on: bool = True) -> None:
        """Start (or stop) counting reads per chunk in :attr:`per_chunk`."""
        self.per_chunk = {} if on else None

    def reset(self) -> None:
        """Zero every counter (the per-chunk table too, when tracked)."""
        with self._lock:
            self.chunks_read = self.reads = self.bytes_read = 0
            if self.per_chunk is not None:
                self.per_chunk = {}

    def record(self, key: str, first: int, stop: int, nbytes: int) -> None:
        with self._lock:
            self.chunks_read += stop - first
            self.reads += 1
            self.bytes_read += nbytes
            if self.per_chunk is not None:
                for c in range(first, stop):
                    self.per_chunk[(key, c)] = self.per_chunk.get((key, c), 0) + 1
        if self.hook is not None:
            self.hook(key, first, stop)

    def __getstate__(self) -> dict[str, Any]:
        return {"chunks_read": 0, "reads": 0, "bytes_read": 0, "per_chunk": None, "hook": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, **state)


def chunk_runs(chunk_ids: np.ndarray, max_run: int) -> tuple[np.ndarray, np.ndarray]:
    """Split sorted unique chunk indices into runs of consecutive chunks.

    Returns
    -------
    first, stop : ndarray of int64
        Run ``k`` covers chunks ``first[k] <= c < stop[k]``, at most ``max_run`` long.
    """
    if len(chunk_ids) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    brk = np.ones(len(chunk_ids), dtype=bool)
    brk[1:] = np.diff(chunk_ids) != 1
    run_start = np.flatnonzero(brk)
    run_of = np.cumsum(brk) - 1
    within = np.arange(len(chunk_ids)) - run_start[run_of]
    brk |= (within % max_run) == 0
    starts = np.flatnonzero(brk)
    ends = np.append(starts[1:], len(chunk_ids))
    return chunk_ids[starts].astype(np.int64), chunk_ids[ends - 1].astype(np.int64) + 1


def value_runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split requested rows into runs whose value ranges follow each other on disk.

    Row ``i`` continues the run of row ``i - 1`` when ``starts[i] == ends[i - 1]``.

    Returns
    -------
    lo, hi : ndarray of int64
        Value range ``[lo[k], hi[k])`` of run ``k`` (empty runs dropped).
    dst : ndarray of int64
        Where run ``k`` starts in the compact output.
    """
    n = len(starts)
    if n == 0:
        return (np.zeros(0, np.int64),) * 3
    brk = np.ones(n, dtype=bool)
    brk[1:] = starts[1:] != ends[:-1]
    first = np.flatnonzero(brk)
    last = np.append(first[1:], n) - 1
    lo, hi = starts[first], ends[last]
    lens = ends - starts
    dst = np.cumsum(lens)[first] - lens[first]
    keep = hi > lo
    return lo[keep], hi[keep], dst[keep]


def _count_runs(starts: np.ndarray, ends: np.ndarray) -> int:
    return 1 + int(np.count_nonzero(starts[1:] != ends[:-1])) if len(starts) else 0


def _gather_runs(lo: np.ndarray, hi: np.ndarray, dst: np.ndarray, out: np.ndarray, *,
                 n_values: int, chunk_len: int, read: Callable[[int, int], np.ndarray],
                 read_into: Callable[[int, int, np.ndarray], None] | None,
                 max_run_chunks: int) -> None:
    """Copy value runs ``[lo[k], hi[k])`` to ``out[dst[k]:]``, each touched chunk read once.

    Touched chunks are grouped into reads of consecutive chunks (as in the per-value
    path). A read that serves a single run goes straight into ``out`` through
    ``read_into`` when the reader offers it; otherwise the read's chunks are loaded
    once and every run overlapping them takes its slice.
    """
    order = np.argsort(lo, kind="stable")
    lo, hi, dst = lo[order], hi[order], dst[order]
    c_first, c_last = lo // chunk_len, (hi - 1) // chunk_len
    counts = c_last - c_first + 1
    starts_at = np.cumsum(counts) - counts
    touched = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(c_first - starts_at, counts)
    first, stop = chunk_runs(np.unique(touched), max_run_chunks)  # chunk runs, not rows
    for r_lo, r_hi in zip((first * chunk_len).tolist(), np.minimum(stop * chunk_len, n_values).tolist()):
        hits = np.flatnonzero((lo < r_hi) & (hi > r_lo))
        a = np.maximum(lo[hits], r_lo)
        b = np.minimum(hi[hits], r_hi)
        d = dst[hits] + (a - lo[hits])
        if read_into is not None and len(hits) == 1:
            a0, b0, d0 = int(a[0]), int(b[0]), int(d[0])
            read_into(a0, b0, out[d0:d0 + b0 - a0])
            continue
        block = read(r_lo, r_hi)
        for a0, b0, d0 in zip(a.tolist(), b.tolist(), d.tolist()):  # one slice per run piece
            out[d0:d0 + b0 - a0] = block[a0 - r_lo:b0 - r_lo]


def gather_ranges(starts: np.ndarray, ends: np.ndarray, *, n_values: int, chunk_len: int,
                  read: Callable[[int, int], np.ndarray], dtype: DTypeLike, width: int,
                  max_run_chunks: int = 32,
                  read_into: Callable[[int, int, np.ndarray], None] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Gather value ranges ``[starts[i], ends[i])`` (request order) from a chunked array.

    Parameters
    ----------
    starts, ends
        Per requested row, its first and past-the-end value index.
    n_values
        Length of the on-disk array.
    chunk_len
        Records per on-disk chunk.
    read
        ``read(lo, hi)`` returns records ``lo:hi`` as an array ``(hi - lo, width)``;
        ``lo`` is chunk-aligned and ``hi`` is chunk-aligned or ``n_values``.
    dtype, width
        Of the result.
    max_run_chunks
        Longest single read, in chunks (bounds the memory of one read).
    read_into
        Optional ``read_into(lo, hi, out)``: decode records ``lo:hi`` (any bounds)
        into ``out``, reading each chunk they touch once. Used for long runs of
        consecutive rows, so those cost one decode and no copy.

    Returns
    -------
    values : ndarray, shape ``(sum of lengths, width)``
    offsets : ndarray of int64, shape ``(len(starts) + 1,)``
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    lens = ends - starts
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    total = int(offsets[-1])
    out = np.empty((total, width), dtype=dtype)
    if total == 0:
        return out, offsets
    runs = _count_runs(starts, ends)
    lo0, hi0 = int(starts[0]), int(ends[-1])
    if runs == 1 and read_into is not None and \
            (hi0 - 1) // chunk_len - lo0 // chunk_len < max_run_chunks:
        read_into(lo0, hi0, out)  # consecutive rows, one read of at most max_run_chunks chunks
        return out, offsets
    if runs * RUN_MIN_ROWS <= len(starts):
        lo, hi, dst = value_runs(starts, ends)
        _gather_runs(lo, hi, dst, out, n_values=n_values, chunk_len=chunk_len, read=read,
                     read_into=read_into, max_run_chunks=max_run_chunks)
        return out, offsets
    src = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets[:-1], lens)
    order = np.argsort(src, kind="stable")
    src_sorted = src[order]
    chunk_of = src_sorted // chunk_len
    new_chunk = np.ones(total, dtype=bool)
    new_chunk[1:] = chunk_of[1:] != chunk_of[:-1]
    first, stop = chunk_runs(chunk_of[new_chunk], max_run_chunks)
    lo_all = first * chunk_len
    hi_all = np.minimum(stop * chunk_len, n_values)
    a_all = np.searchsorted(src_sorted, lo_all, side="left")
    b_all = np.searchsorted(src_sorted, hi_all, side="left")
    for lo, hi, a, b in zip(lo_all.tolist(), hi_all.tolist(), a_all.tolist(), b_all.tolist()):
        block = read(lo, hi)
        out[order[a:b]] = block[src_sorted[a:b] - lo]
    return out, offsets
