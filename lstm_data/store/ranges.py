"""Write a batch store's arrays by ranges of batches, on Dask workers (``precompute(client=...)``).

Every output array holds the batches one after another, and every batch's shape
is planned before anything is built (:func:`~lstm_data.store.write.precompute`),
so batch ``i`` of output ``n`` goes to the known elements
``offsets[n][i] .. offsets[n][i + 1]``. A task builds a run of consecutive
batches and writes the chunks that lie wholly inside its elements, each chunk
whole, exactly as the one-process writer does; the (at most two) chunks it
shares with its neighbours are returned as pieces, and the caller writes each
shared chunk once, from its pieces. No chunk is written twice or partly, so the
store is bitwise the one made in one process, whatever the number of tasks, and
a task that Dask runs again (its worker died) writes the same bytes again.

Tasks receive the :class:`~lstm_data.batching.batches.Batches` object, scattered
once: an on-disk dataset travels as its path, an in-RAM one as shared memory
(workers on the same machine; on a remote cluster, convert to zarr on storage
the workers share first).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

import numpy as np

from lstm_data.batching.batches import Batches

_log = logging.getLogger("lstm_data")
__all__ = ["write_ranges", "build_range", "task_ranges"]

#: a piece of a shared chunk: (first element, values)
Piece = tuple[int, np.ndarray]


def task_ranges(n_batches: int, n_tasks: int) -> list[tuple[int, int]]:
    """``n_tasks`` (at most ``n_batches``) runs of consecutive batches, as equal as possible."""
    n_tasks = max(1, min(n_tasks, n_batches))
    cuts = np.linspace(0, n_batches, n_tasks + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def build_range(batches: Batches, store: str, names: list[str], offsets: Mapping[str, np.ndarray],
                chunks: Mapping[str, int], lo: int, hi: int) -> dict[str, list[Piece]]:
    """Build batches ``lo .. hi - 1`` of epoch 0, write the chunks wholly theirs, return the others.

    Returns
    -------
    dict
        Output -> pieces ``(first element, values)`` of the chunks this run shares
        with the runs before and after it.
    """
    import zarr

    root = zarr.open_group(store, mode="r+", zarr_format=3)
    writers = {n: _RangeWriter(root[f"data/{n}"], int(offsets[n][lo]), int(offsets[n][hi]), chunks[n])
               for n in names}
    for i in range(lo, hi):
        flat = batches.spec.flatten(batches.batch(i, epoch=0), as_dict=True)
        for n in names:
            want = int(offsets[n][i + 1] - offsets[n][i])
            if flat[n].size != want:
                raise RuntimeError(f"batch {i} output {n!r} has {flat[n].size} values, planned {want}")
            writers[n].append(flat[n].reshape(-1))
    return {n: w.close(int(offsets[n][hi])) for n, w in writers.items()}


class _RangeWriter:
    """Writes the whole chunks inside elements ``[start, stop)``; keeps the shared edges as pieces.

    Elements before the first chunk boundary (the head) and after the last one
    (the tail; none when ``stop`` ends the array) belong to chunks shared with the
    neighbouring runs; everything between is written as whole chunks, as they fill.
    """

    def __init__(self, array: Any, start: int, stop: int, chunk: int) -> None:
        self.array, self.chunk, self.start = array, chunk, start
        self.head_end = min(-(-start // chunk) * chunk, stop)
        self.tail_start = max(self.head_end, stop if stop == int(array.shape[0]) else stop // chunk * chunk)
        self.pos = start
        self.head: list[np.ndarray] = []
        self.tail: list[np.ndarray] = []
        self.pending: list[np.ndarray] = []

    def append(self, values: np.ndarray) -> None:
        self.pending.append(values)
        buf = np.concatenate(self.pending) if len(self.pending) > 1 else values
        used = 0
        if self.pos < self.head_end:
            used = min(self.head_end - self.pos, len(buf))
            self.head.append(buf[:used].copy())
            self.pos += used
        if self.head_end <= self.pos < self.tail_start:  # chunk-aligned here
            end = min(self.tail_start, self.pos + len(buf) - used)
            if end < self.tail_start:
                end = self.pos + (end - self.pos) // self.chunk * self.chunk
            if end > self.pos:
                self.array[self.pos:end] = buf[used:used + end - self.pos]
                used += end - self.pos
                self.pos = end
        if self.pos >= self.tail_start and used < len(buf):
            self.tail.append(buf[used:].copy())
            self.pos += len(buf) - used
            used = len(buf)
        self.pending = [buf[used:]] if used < len(buf) else []

    def close(self, stop: int) -> list[Piece]:
        if self.pending or self.pos != stop:
            raise RuntimeError(f"range writer ended at element {self.pos}, planned {stop}")
        pieces = []
        if self.head:
            pieces.append((self.start, np.concatenate(self.head)))
        if self.tail:
            pieces.append((self.tail_start, np.concatenate(self.tail)))
        return pieces


def write_ranges(client: Any, batches: Batches, store: str, names: list[str],
                 offsets: Mapping[str, np.ndarray], chunks: Mapping[str, int],
                 on_done: Callable[[int], None] | None = None) -> None:
    """Build and write every batch of epoch 0 on the workers of the Dask ``client``.

    Parameters
    ----------
    client
        A ``distributed.Client``.
    batches, store, names, offsets, chunks
        The batch sequence, the (temporary) store, its outputs, their planned
        element offsets per batch and chunk lengths.
    on_done
        Called with the number of batches of each finished task (progress).

    Raises
    ------
    Exception
        The first task's error (e.g. a damaged chunk of the dataset), as raised on
        the worker; the store is then incomplete and the caller removes it.
    """
    from distributed import as_completed

    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    ranges = task_ranges(len(batches), 4 * n_workers)
    shared = client.scatter(batches, broadcast=True, hash=False)
    futures = {client.submit(build_range, shared, store, names, offsets, chunks, a, b,
                             key=f"lstm-data-precompute-{a}-{b}-{id(batches)}", pure=False): (a, b)
               for a, b in ranges}
    _log.info("precompute: %d batches in %d tasks on %d Dask workers", len(batches), len(ranges), n_workers)
    pieces: dict[str, list[Piece]] = {n: [] for n in names}
    try:
        for future in as_completed(futures):
            for n, got in future.result().items():
                pieces[n] += got
            if on_done is not None:
                a, b = futures[future]
                on_done(b - a)
    except BaseException:
        client.cancel(list(futures))
        raise
    import zarr

    root = zarr.open_group(store, mode="r+", zarr_format=3)
    for n in names:
        _write_shared_chunks(root[f"data/{n}"], chunks[n], pieces[n])


def _write_shared_chunks(array: Any, chunk: int, pieces: list[Piece]) -> None:
    """Write each chunk that several runs share, whole, from the runs' pieces."""
    by_chunk: dict[int, list[Piece]] = {}
    for start, values in pieces:
        by_chunk.setdefault(start // chunk, []).append((start, values))
    total = int(array.shape[0])
    for c, parts in sorted(by_chunk.items()):
        lo, hi = c * chunk, min(total, (c + 1) * chunk)
        buf = np.empty(hi - lo, dtype=array.dtype)
        covered = 0
        for start, values in parts:
            buf[start - lo:start - lo + len(values)] = values
            covered += len(values)
        if covered != hi - lo:
            raise RuntimeError(f"chunk {c} of {array.path!r}: pieces cover {covered} of {hi - lo} values")
        array[lo:hi] = buf
